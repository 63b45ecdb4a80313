"""Intent routing: small talk is answered at once, with no retrieval and no LLM.

Greetings are the exact set and the pattern of the reference assistant S0 (see DESIGN.md):
an exact match of the whole message (case-insensitive, trimmed, trailing ``!.?`` ignored)
against :data:`GREETINGS`, or :data:`GREETING_PATTERN`. Thanks are the exact set
:data:`THANKS`. A message with an attached document goes to the scan path; everything else
goes to the planner.
"""

from __future__ import annotations

import re
from enum import Enum

GREETINGS = frozenset({
    "hi", "hey", "hello", "yo", "sup", "howdy", "hiya", "gm", "ga", "ge",
    "good morning", "good afternoon", "good evening",
})
GREETING_PATTERN = re.compile(r"^(hi|hey|hello|yo|sup|howdy|hiya)\s*[!.?]?$")
THANKS = frozenset({
    "thanks", "thank you", "thx", "ty", "thanks a lot", "thank you very much", "many thanks",
    "cheers", "much appreciated",
})

GREETING_REPLY = ("Hello! Ask me a question about your documents and I will answer with "
                  "citations to the passages I used.")
THANKS_REPLY = "You're welcome! Ask me anything else about your documents."


class Intent(str, Enum):
    GREETING = "greeting"
    THANKS = "thanks"
    SCAN = "scan"
    QUESTION = "question"


def _normalise(message: str) -> str:
    return " ".join(message.strip().lower().split())


def classify(message: str, *, attachment: str | None = None) -> Intent:
    """The intent of one user message; ``attachment`` is an attached document's id."""
    if attachment:
        return Intent.SCAN
    text = _normalise(message)
    if GREETING_PATTERN.match(text):
        return Intent.GREETING
    bare = text.rstrip("!.?").rstrip()
    if bare in GREETINGS:
        return Intent.GREETING
    if bare in THANKS:
        return Intent.THANKS
    return Intent.QUESTION


def small_talk_reply(intent: Intent) -> str | None:
    """The instant reply for a greeting or thanks; None for any other intent."""
    return {Intent.GREETING: GREETING_REPLY, Intent.THANKS: THANKS_REPLY}.get(intent)


__all__ = ["GREETINGS", "GREETING_PATTERN", "THANKS", "Intent", "classify", "small_talk_reply"]
