"""The planner: a short plan and exactly one directive for each user message.

Directives (the protocol of the reference assistant S0, see DESIGN.md)::

    SEARCH: <query>        search the collection and answer from the evidence
    SCAN: <document_id>    check a document against the contract playbook
    INGEST: <file_path>    add a file to the collection (needs approval)
    ANSWER:                answer from the conversation alone, without searching

:class:`LLMPlanner` asks the LLM for the plan; :class:`RulePlanner` decides by rules. Both
are generators that yield the plan as :class:`~citewise.types.ThinkingEvent` lines and
*return* a :class:`Plan` (``plan = yield from planner.run(...)``).

Which one plans a message (:func:`plans_with_llm`): ``planner=rules`` always the rules,
``planner=llm`` the LLM whenever one is configured, and ``planner=auto`` (the default) the rules
unless the message is ambiguous (:func:`is_ambiguous`) *and* the provider is a remote one, not
the bundled ``local`` model. So a plain question goes straight to the search with no planning
call. A follow-up is rewritten into a standalone question with one short LLM call when a
provider is configured (by the LLM planner's plan, or by :class:`RulePlanner` with the
provider), by the rule otherwise.

The user's query reaches the search unchanged: a SEARCH argument is used only when the
message is a follow-up (:func:`~citewise.chat.sessions.is_follow_up`), in which case it is
the rewritten standalone question. :func:`parse_plan` is forgiving: any case, spaces around
the colon, Markdown emphasis, text before and after; a missing or empty directive means
SEARCH with the user's exact query.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Generator
from dataclasses import dataclass, replace
from enum import Enum

from citewise.answer.providers import ChatProvider, Message
from citewise.chat.sessions import (
    History,
    is_follow_up,
    rewrite_follow_up,
    rewrite_with_llm,
)
from citewise.errors import ProviderError
from citewise.types import StatusEvent, ThinkingEvent

log = logging.getLogger(__name__)


class Directive(str, Enum):
    SEARCH = "SEARCH"
    SCAN = "SCAN"
    INGEST = "INGEST"
    ANSWER = "ANSWER"


@dataclass(frozen=True)
class Plan:
    """One directive and its argument (the search query, document id or file path; "" for
    ANSWER). ``thoughts`` are the plan's lines; ``rewritten`` says the query is a rewritten
    follow-up rather than the user's exact words."""

    directive: Directive
    argument: str
    thoughts: tuple[str, ...] = ()
    rewritten: bool = False


PlanStream = Generator[ThinkingEvent | StatusEvent, None, Plan]

_DIRECTIVE_LINE = re.compile(
    r"^[\s>*_#`-]*(?:directive\s*[:=-]\s*)?[*_`]*(search|scan|ingest|answer)[*_`]*\s*[:=-]"
    r"[*_`]*\s*(.*?)\s*$",
    re.IGNORECASE,
)
_PLAN_PREFIX = re.compile(r"^[\s>*_#`-]*plan[*_`]*\s*:\s*", re.IGNORECASE)


def parse_plan(text: str, query: str) -> Plan:
    """The first directive in the LLM's ``text``; SEARCH with ``query`` when there is none,
    and when a SEARCH, SCAN or INGEST has no argument. Lines before it are the thoughts."""
    thoughts: list[str] = []
    for line in text.splitlines():
        m = _DIRECTIVE_LINE.match(line)
        if m is None:
            cleaned = _PLAN_PREFIX.sub("", line).strip()
            if cleaned:
                thoughts.append(cleaned)
            continue
        directive = Directive(m.group(1).upper())
        argument = m.group(2).strip().strip("\"'`*").strip()
        if directive is Directive.ANSWER:
            return Plan(directive, "", tuple(thoughts))
        if not argument:
            break
        return Plan(directive, argument, tuple(thoughts))
    return Plan(Directive.SEARCH, query, tuple(thoughts))


_INGEST_REQUEST = re.compile(
    r"^\s*(?:please\s+)?(?:ingest|index|import|add)\s+(?:the\s+)?(?:file|folder|document|path)?"
    r"\s*:?\s*(?P<path>[\"'`]?[~./\\\w][^\s\"'`]*)[\"'`]?\s*$",
    re.IGNORECASE,
)
_SCAN_REQUEST = re.compile(
    r"^\s*(?:please\s+)?(?:scan|check|review)\s+(?:the\s+)?(?:document|contract|file)?\s*:?\s*"
    r"(?P<id>[0-9a-f]{24})\s*$",
    re.IGNORECASE,
)


_TOOL_VERB = r"(?:ingest|scan|index|import|upload|add|check|review)\b"
_TOOL_REQUEST = re.compile(
    r"^\s*(?:(?:please|kindly)\s+|(?:can|could|would|will)\s+you\s+(?:please\s+)?|"
    r"i(?:\s+would|'d)?\s+(?:want|like|need)\s+(?:you\s+)?to\s+|let'?s\s+)*" + _TOOL_VERB,
    re.IGNORECASE,
)
_TOOL_WORD = re.compile(r"\b(?:ingest\w*|scan|index|import|upload|add|check|review)\b",
                        re.IGNORECASE)
_TARGET = re.compile(
    r"(?:(?<!\S)(?:~|\.{1,2})?[/\\]\S+"  # /abs, ./rel, ~/home
    r"|\b[\w-]+\.(?:pdf|docx?|md|txt|html?|csv|xlsx?|pptx?|rtf|odt|json)\b"  # a file name
    r"|\b[0-9a-f]{24}\b)",  # a document id
    re.IGNORECASE,
)
_REFERS_TO_CONVERSATION = re.compile(
    r"\b(?:you\s+(?:just\s+)?(?:said|wrote|mentioned|told|answered|meant)|"
    r"did\s+you\s+(?:say|write|mention|mean)|"
    r"your\s+(?:last\s+|previous\s+|first\s+|earlier\s+)?(?:answer|reply|response)|"
    r"(?:said|mentioned|written)\s+(?:above|earlier|before)|"
    r"(?:this|our|the)\s+(?:chat|conversation)|"
    r"(?:summari[sz]e|repeat|rephrase|shorten|translate)\s+(?:that|this|it|the\s+above))\b",
    re.IGNORECASE,
)


def is_ambiguous(query: str, history: History) -> bool:
    """Whether the tool for ``query`` is unclear enough to ask an LLM planner; returns a bool
    and raises nothing.

    Conservative by design (a plain question is never ambiguous). True only when either

    - the message asks for a tool without matching :class:`RulePlanner`'s exact patterns
      ("ingest PATH", "scan DOCUMENT_ID"): it starts with a tool verb (ingest, scan, index,
      import, upload, add, check, review), possibly after "please", "can you", "I want to" or
      "let's", or it uses one of those words together with a path, a file name or a
      24-character document id; or
    - there are earlier turns (or a summary) and the message refers to them: a follow-up
      (:func:`~citewise.chat.sessions.is_follow_up`) or words such as "you said", "your
      answer", "this conversation", "summarise that".
    """
    if _INGEST_REQUEST.match(query) or _SCAN_REQUEST.match(query):
        return False
    if _TOOL_REQUEST.match(query) or (_TOOL_WORD.search(query) and _TARGET.search(query)):
        return True
    if history.turns or history.summary:
        return is_follow_up(query, history.last_query) or bool(
            _REFERS_TO_CONVERSATION.search(query))
    return False


def plans_with_llm(mode: str, provider_name: str, query: str, history: History) -> bool:
    """Whether the LLM planner plans ``query``; returns a bool and raises nothing.

    ``mode`` is the ``planner`` setting and ``provider_name`` the ``llm_provider`` one. False
    for ``rules`` and for the provider ``none``; True for ``llm``; for ``auto``, True only
    when the message :func:`is_ambiguous` and the provider is not the bundled ``local``
    model (whose planning call would cost more than the answer).
    """
    name = provider_name.strip().lower()
    if name == "none" or mode == "rules":
        return False
    if mode == "llm":
        return True
    return name != "local" and is_ambiguous(query, history)


class RulePlanner:
    """Plans by rules: "ingest PATH" is INGEST, "scan DOCUMENT_ID" is SCAN, everything else
    SEARCH. Only a follow-up calls a model: it is rewritten by ``provider`` when given (one
    short generation), by the rule otherwise."""

    def __init__(self, provider: ChatProvider | None = None) -> None:
        self.provider = provider

    def run(self, query: str, history: History, context_hint: str | None = None) -> PlanStream:
        """Yield the plan's thoughts (and a ``plan`` status before an LLM rewrite); return the
        :class:`Plan`. Raises nothing: a failed rewrite falls back to the rule's."""
        if m := _INGEST_REQUEST.match(query):
            plan = Plan(Directive.INGEST, m.group("path").strip("\"'`"),
                        ("The user asks to add a file to the collection.",))
        elif m := _SCAN_REQUEST.match(query):
            plan = Plan(Directive.SCAN, m.group("id"),
                        ("The user asks to check a document against the playbook.",))
        elif is_follow_up(query, history.last_query):
            assert history.last_query is not None
            if self.provider is not None:
                yield StatusEvent("rewriting the follow-up question", stage="plan")
                rewritten = rewrite_with_llm(self.provider, query, history.turns,
                                             history.last_query)
            else:
                rewritten = rewrite_follow_up(query, history.last_query)
            plan = Plan(Directive.SEARCH, rewritten,
                        (f"A follow-up: searching for \u201c{rewritten}\u201d.",), rewritten=True)
        else:
            plan = Plan(Directive.SEARCH, query, ("Search the documents for the question.",))
        for thought in plan.thoughts:
            yield ThinkingEvent(thought)
        return plan


PLANNER_PROMPT = """\
You decide how an assistant answers a message about the user's document collection.
Write one short sentence of plan, then one directive on its own line, exactly one of:
SEARCH: <the message as a standalone search query; rewrite it only if it refers to the \
conversation, otherwise copy it>
INGEST: <file path>  (only when the user asks to add a file to the collection)
SCAN: <document id>  (only when the user asks to check a document against the playbook)
ANSWER:  (only when the conversation so far already holds the answer)"""


class LLMPlanner:
    """Plans with ``provider`` (one short generation of at most ``max_tokens``). A directive
    that does not fit the message falls back to SEARCH with the exact query: INGEST and SCAN
    only when their argument appears in the message, ANSWER only when there is history. On a
    ProviderError the :class:`RulePlanner` decides."""

    def __init__(self, provider: ChatProvider, max_tokens: int = 96) -> None:
        self.provider = provider
        self.max_tokens = max_tokens

    def _messages(self, query: str, history: History,
                  context_hint: str | None) -> list[Message]:
        lines = []
        if history.summary:
            lines.append(f"Summary of the earlier conversation: {history.summary}")
        for q, a in history.turns[-3:]:
            lines += [f"User: {q}", f"Assistant: {' '.join(a.split())[:300]}"]
        convo = "\n".join(lines) or "(none)"
        hint = f"\nThe user is looking at: {context_hint}" if context_hint else ""
        return [{"role": "system", "content": PLANNER_PROMPT},
                {"role": "user", "content": f"Conversation so far:\n{convo}{hint}\n\n"
                                            f"Message: {query}"}]

    def run(self, query: str, history: History, context_hint: str | None = None) -> PlanStream:
        """Yield a ``plan`` status, then the plan's thoughts; return the checked :class:`Plan`.
        Raises nothing: on a ProviderError the rules plan."""
        yield StatusEvent("planning", stage="plan")
        try:
            text = "".join(self.provider.stream(self._messages(query, history, context_hint),
                                                max_tokens=self.max_tokens, temperature=0.0))
        except ProviderError as err:
            log.warning("planner LLM failed, planning by rules: %s", err)
            return (yield from RulePlanner().run(query, history, context_hint))
        plan = self.check(parse_plan(text, query), query, history)
        for thought in plan.thoughts:
            yield ThinkingEvent(thought)
        return plan

    @staticmethod
    def check(plan: Plan, query: str, history: History) -> Plan:
        """Keep the user's exact query unless the message is a follow-up; drop directives
        the message gives no ground for (see the class docstring)."""
        search = Plan(Directive.SEARCH, query, plan.thoughts)
        if is_follow_up(query, history.last_query):
            # a directive dropped below still leaves a follow-up that needs the earlier
            # question: with the 1.5B model as planner, "What about a service?" was once
            # searched alone, without its earlier question (tests/chat/test_follow_ups.py)
            assert history.last_query is not None
            search = Plan(Directive.SEARCH, rewrite_follow_up(query, history.last_query),
                          plan.thoughts, rewritten=True)
        if plan.directive is Directive.SEARCH:
            if is_follow_up(query, history.last_query) and plan.argument.strip() and (
                    plan.argument.strip().casefold() != query.strip().casefold()):
                return replace(plan, rewritten=True)
            if is_follow_up(query, history.last_query):
                assert history.last_query is not None
                return Plan(Directive.SEARCH, rewrite_follow_up(query, history.last_query),
                            plan.thoughts, rewritten=True)
            return search
        if plan.directive is Directive.ANSWER:
            return plan if history.turns or history.summary else search
        return plan if plan.argument and plan.argument in query else search


def make_planner(mode: str, provider: ChatProvider | None, query: str, history: History,
                 provider_name: str) -> LLMPlanner | RulePlanner:
    """The planner for ``query``: an :class:`LLMPlanner` over ``provider`` when
    :func:`plans_with_llm` says so and ``provider`` is not None, otherwise a
    :class:`RulePlanner` (with ``provider`` for rewriting follow-ups). Raises nothing."""
    if provider is not None and plans_with_llm(mode, provider_name, query, history):
        return LLMPlanner(provider)
    return RulePlanner(provider)


__all__ = ["Directive", "LLMPlanner", "Plan", "RulePlanner", "is_ambiguous", "make_planner",
           "parse_plan", "plans_with_llm"]
