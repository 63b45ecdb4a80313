"""Context budgeting: the prompt and the answer always fit the model's context window.

A chat model reads its prompt and writes its answer in one window of ``n_ctx`` tokens; a
prompt that leaves no room makes the server refuse it (HTTP 400, as in ragflow#13549: 17,248
prompt tokens sent to a 16,384-token model) or cut it silently. :func:`fit_prompt` builds the
prompt within ``window - reserve`` tokens (``reserve``: the answer's ``max_tokens`` and any
turn that follows the prompt) and returns it (:attr:`Fitted.messages`, what the answerer
sends: the prompt is built once per answer), giving things up in this order:

1. earlier turns, oldest first (the rolling summary of a chat, its first pseudo-turn
   :data:`SUMMARY_QUESTION`, is kept while any turn is);
2. the summary;
3. evidence passages, lowest-ranked (last) first, down to one; each passage kept has the
   share of the evidence budget it had (the budget shrinks with the passages, so the ones kept
   do not grow);
4. the last passage's share, halved down to :data:`MIN_SHARE` tokens.

The rules, a caller's instructions and the question are never cut: when they alone do not
fit, :class:`~citewise.errors.ProviderError` says so (the answerer falls back to the
extractive answer). What was left out is in :attr:`Fitted.notice`, which the answer stage
emits as a ``notice`` status (the CLI prints it on stderr) and logs.

Tokens are counted with the embedding model's tokenizer (the one that sized the chunks and
the evidence budget), not the chat model's: :func:`estimate_tokens` takes the larger of that
count and a floor from the text's UTF-8 bytes, adds :data:`TOKEN_SAFETY` (a share) and
:data:`MESSAGE_OVERHEAD` tokens per message (the chat template's role markers), so the
estimate stays above the chat model's own count. Measured against llama.cpp's count of the
same chat for Qwen2.5 (estimate / real): English 1.16, Kazakh 1.18, Russian 2.47, Chinese
1.45 (``docs/llm.md``).

The window is the provider's own where it reports one
(:func:`~citewise.answer.providers.reported_context`: llama.cpp's ``/props`` ``n_ctx``; a
``/v1/models`` entry's ``context_length``, ``max_model_len``, ``context_window`` or
``max_context_length``), else the ``llm_context`` setting.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from citewise.answer.providers import Message
from citewise.errors import ProviderError
from citewise.types import Evidence

log = logging.getLogger(__name__)

#: The question of the pseudo-turn that carries a chat's rolling summary (first in a history).
SUMMARY_QUESTION = "(summary of the earlier conversation)"
#: Extra share of the embedding tokenizer's count assumed for the chat model's tokenizer.
TOKEN_SAFETY = 0.15
#: UTF-8 bytes per chat-model token assumed at least: ASCII text (English prose is about 5.3
#: bytes per Qwen2.5 token) and other text (Kazakh about 3.0, Chinese 3.5, Russian 4.7).
ASCII_BYTES_PER_TOKEN = 6.0
NON_ASCII_BYTES_PER_TOKEN = 2.8
#: Tokens per message for the chat template (role markers, separators).
MESSAGE_OVERHEAD = 8
#: Tokens for the template's start and the assistant turn's opening.
PRIMING = 16
#: The smallest share of the evidence budget a passage is cut to (as in ``evidence_block``).
MIN_SHARE = 64

#: ``build(evidence, history, evidence_tokens) -> messages``: the prompt for a choice of
#: passages and earlier turns (the question, rules and instructions bound by the caller).
PromptBuilder = Callable[[Sequence[Evidence], Sequence[tuple[str, str]], int], list[Message]]


def estimate_tokens(messages: Sequence[Message], count_tokens: Callable[[str], int]) -> int:
    """Tokens the chat model will read for ``messages``, estimated from above: each content's
    ``count_tokens`` (or the UTF-8 byte floor, whichever is larger) times
    ``1 + TOKEN_SAFETY``, rounded up, plus ``MESSAGE_OVERHEAD`` per message and ``PRIMING``."""
    return PRIMING + sum(_message_tokens(m["content"], count_tokens) for m in messages)


def _message_tokens(text: str, count_tokens: Callable[[str], int]) -> int:
    return math.ceil(_text_tokens(text, count_tokens) * (1 + TOKEN_SAFETY)) + MESSAGE_OVERHEAD


def _text_tokens(text: str, count_tokens: Callable[[str], int]) -> float:
    """The larger of ``count_tokens(text)`` and a floor from the UTF-8 bytes
    (:data:`ASCII_BYTES_PER_TOKEN`, :data:`NON_ASCII_BYTES_PER_TOKEN`): an English-only
    WordPiece vocabulary reads a word with a letter it lacks (Kazakh ә, ғ, қ) as one [UNK]
    token, where the chat model's byte-level tokenizer spends several."""
    raw = text.encode("utf-8")
    ascii_bytes = sum(1 for b in raw if b < 128)
    floor = ascii_bytes / ASCII_BYTES_PER_TOKEN + (len(raw) - ascii_bytes) / \
        NON_ASCII_BYTES_PER_TOKEN
    return max(float(count_tokens(text)), floor)


@dataclass(frozen=True)
class Fitted:
    """A prompt within the budget and its contents.

    ``history`` and ``evidence`` are what is sent (oldest turn first, best passage first);
    ``evidence_tokens`` the evidence block's budget they were built with; ``messages`` the
    prompt built from them (``build(evidence, history, evidence_tokens)``, to send as it is);
    ``prompt_tokens`` the estimate (:func:`estimate_tokens`) of ``messages``; ``window`` and
    ``reserve`` the context window and the tokens kept free for the answer; ``dropped_turns``
    how many earlier turns were left out (the summary not counted), ``dropped_summary``
    whether the summary was; ``dropped_passages`` the citation numbers of the passages left
    out, in rank order; ``cut`` whether the last passage was cut below its share."""

    history: tuple[tuple[str, str], ...]
    evidence: tuple[Evidence, ...]
    evidence_tokens: int
    messages: tuple[Message, ...]
    prompt_tokens: int
    window: int
    reserve: int
    dropped_turns: int = 0
    dropped_summary: bool = False
    dropped_passages: tuple[int, ...] = ()
    cut: bool = False

    @property
    def trimmed(self) -> bool:
        """True when anything was left out or cut."""
        return bool(self.dropped_turns or self.dropped_summary or self.dropped_passages
                    or self.cut)

    @property
    def notice(self) -> str | None:
        """One sentence saying what was left out to fit the window; None when nothing was."""
        if not self.trimmed:
            return None
        parts = []
        if self.dropped_turns:
            parts.append(f"the {_count(self.dropped_turns, 'oldest earlier turn')}"
                         if self.history else
                         f"all {_count(self.dropped_turns, 'earlier turn')}")
        if self.dropped_summary:
            parts.append("the summary of the earlier conversation")
        if self.dropped_passages:
            numbers = ", ".join(f"[{n}]" for n in self.dropped_passages)
            parts.append(f"the lowest-ranked {_count(len(self.dropped_passages), 'passage')} "
                         f"({numbers})")
        if self.cut:
            parts.append(f"part of passage [{self.evidence[0].citation.n}]")
        left = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
        return (f"the prompt had to fit the model's context of {self.window:,} tokens "
                f"({self.reserve:,} kept for the answer): left out {left}")

    def metrics(self) -> dict[str, float]:
        """``context_window``, ``prompt_budget_tokens`` (the estimate),
        ``history_dropped`` (turns, the summary counting as one) and ``passages_dropped``."""
        return {"context_window": float(self.window),
                "prompt_budget_tokens": float(self.prompt_tokens),
                "history_dropped": float(self.dropped_turns + self.dropped_summary),
                "passages_dropped": float(len(self.dropped_passages))}


def fit_prompt(evidence: Sequence[Evidence], history: Sequence[tuple[str, str]], *,
               build: PromptBuilder, count_tokens: Callable[[str], int], window: int,
               reserve: int, evidence_tokens: int) -> Fitted:
    """The prompt to send, ``build``'s for the earlier turns and passages that keep it at most
    ``window - reserve`` tokens (:func:`estimate_tokens`), in :attr:`Fitted.messages`; the
    order of what is given up is in the module docstring. ``evidence`` is best first,
    ``history`` (question, answer) pairs oldest first, a first pair whose question is
    :data:`SUMMARY_QUESTION` being the rolling summary. ``build`` must put each turn in as one
    user and one assistant message (as :func:`~citewise.answer.prompts.build_messages` does):
    a turn's cost is counted from its two texts. ``build`` is called without history for
    each choice of passages tried, then once more with the turns kept (not at all when none
    is: the last prompt tried is the one returned).

    Raises ProviderError when the prompt with no history and one passage cut to
    :data:`MIN_SHARE` tokens still does not fit (long instructions, or a window smaller
    than ``reserve``)."""
    limit = window - reserve
    passages = list(evidence)
    budget = evidence_tokens
    prompt = build(passages, (), budget)
    base = estimate_tokens(prompt, count_tokens)
    turns = list(history)
    summary = turns.pop(0) if turns and turns[0][0] == SUMMARY_QUESTION else None
    costs = [_message_tokens(q, count_tokens) + _message_tokens(a, count_tokens)
             for q, a in turns]
    summary_cost = (_message_tokens(summary[0], count_tokens)
                    + _message_tokens(summary[1], count_tokens)) if summary else 0
    dropped = 0
    while dropped < len(turns) and base + summary_cost + sum(costs[dropped:]) > limit:
        dropped += 1
    dropped_summary = False
    if summary is not None and base + summary_cost > limit:
        summary, summary_cost, dropped_summary = None, 0, True
    kept_history = ((summary,) if summary else ()) + tuple(turns[dropped:])
    history_cost = summary_cost + sum(costs[dropped:])
    share = max(evidence_tokens // max(len(passages), 1), MIN_SHARE)
    kept = len(passages)
    while kept > 1 and base + history_cost > limit:
        kept -= 1
        budget = min(evidence_tokens, share * kept)
        prompt = build(passages[:kept], (), budget)
        base = estimate_tokens(prompt, count_tokens)
    cut = False
    while kept and base + history_cost > limit and budget > MIN_SHARE:
        budget = max(budget // 2, MIN_SHARE)
        cut = True
        prompt = build(passages[:kept], (), budget)
        base = estimate_tokens(prompt, count_tokens)
    total = base + history_cost
    if total > limit:
        raise ProviderError(
            f"the prompt needs about {total:,} tokens even with no earlier turns and one short "
            f"passage, but the model's context of {window:,} tokens leaves {max(limit, 0):,} "
            f"after {reserve:,} for the answer; shorten the instructions, lower "
            "CITEWISE_LLM_MAX_TOKENS or use a model with a larger context")
    if kept_history:  # the turns go in once the passages are chosen (their cost is additive)
        prompt = build(passages[:kept], kept_history, budget)
    fitted = Fitted(kept_history, tuple(passages[:kept]), budget, tuple(prompt), total, window,
                    reserve, dropped, dropped_summary,
                    tuple(ev.citation.n for ev in passages[kept:]), cut)
    if fitted.notice:
        log.info("%s", fitted.notice)
    return fitted


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


__all__ = ["ASCII_BYTES_PER_TOKEN", "MESSAGE_OVERHEAD", "MIN_SHARE", "NON_ASCII_BYTES_PER_TOKEN",
           "PRIMING", "SUMMARY_QUESTION", "TOKEN_SAFETY", "Fitted", "PromptBuilder",
           "estimate_tokens", "fit_prompt"]
