"""Pick, then quote or write: the LLM first chooses the evidence passages by number.

A small local model writes fluent sentences that are not always in its evidence, and it says
"not found" when the answer is there (docs/benchmarks.md, "Generated answers"). Choosing is an
easier task than writing: the model reads the same numbered evidence as the writer
(:func:`~citewise.answer.prompts.pick_messages`) and replies with a few numbers, best first
("3, 1"; "0" when no passage answers). The reply is checked (:func:`parse_pick`), then:

* ``style="pick"``: the chosen passages are quoted, each with its citation, in the model's
  order (the extractive answer with the model's choice in place of the selection score's);
* ``style="pick-write"``: the same conversation goes on with "now answer from [3], [1] only"
  (:func:`~citewise.answer.prompts.write_after_pick`); the server's prompt cache holds all that
  came before, so only the new turn is read, and the written answer may cite the chosen
  passages only (:class:`~citewise.answer.llm.LLMAnswerer`: citation filter, support check,
  fallback).

A reply of "0" (or one that starts as the not-found answer does: the model said "none" in
words) gives the not-found answer; a reply with no valid number, or a provider
failure, gives the extractive answer (a ``fallback`` status), as the writer does.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Literal

from citewise.answer.answerer import NOT_FOUND
from citewise.answer.extractive import quoted
from citewise.answer.grounding import check_support
from citewise.answer.llm import LLMAnswerer, fall_back
from citewise.answer.prompts import pick_messages, write_after_pick
from citewise.answer.providers import ChatProvider, Message
from citewise.errors import ProviderError
from citewise.types import Answer, DoneEvent, Event, Evidence, StatusEvent, TokenEvent

log = logging.getLogger(__name__)

PickStyle = Literal["pick", "pick-write"]
#: Output tokens allowed for the picking reply ("3, 1, 4" is 5-7 tokens).
PICK_TOKENS = 12
_NUMBER = re.compile(r"\d+")


def parse_pick(reply: str, n: int, limit: int) -> list[int] | None:
    """The passage numbers of a picking ``reply`` (best first, at most ``limit``, each in
    ``1..n``, duplicates dropped): ``[]`` for "none" (the reply's first number is 0, or the
    reply starts as the not-found answer does and names no passage), None when the reply holds
    no number in range (not a pick: the caller falls back)."""
    numbers = [int(x) for x in _NUMBER.findall(reply)]
    if numbers and numbers[0] == 0:
        return []
    picked = list(dict.fromkeys(x for x in numbers if 1 <= x <= n))[:limit]
    if not picked and _declines(reply):
        return []
    return picked or None


#: The not-found reply's first words: a picking reply that starts with them says "none" in
#: words (seen: "The documents do not contain" for "What is the default top_k?"; its
#: :data:`PICK_TOKENS` may cut the sentence short).
_NOT_FOUND_START = " ".join(NOT_FOUND.casefold().split()[:5])


def _declines(reply: str) -> bool:
    return " ".join(reply.casefold().split()).lstrip("[(\"' ").startswith(_NOT_FOUND_START)


class PickAnswerer:
    """Answers with ``provider`` by picking evidence first (see the module docstring);
    ``fallback()`` yields the extractive answer's events. Arguments as
    :class:`~citewise.answer.llm.LLMAnswerer`'s; ``max_picked`` caps the passages quoted or
    written from (default 3, the extractive answer's sentence count)."""

    def __init__(self, provider: ChatProvider, fallback: Callable[[], Iterator[Event]], *,
                 style: PickStyle = "pick", count_tokens: Callable[[str], int],
                 context_tokens: int = 1200, max_tokens: int = 400, temperature: float = 0.0,
                 support_threshold: float = 0.5, max_sentences: int = 4,
                 max_picked: int = 3, instructions: str = "") -> None:
        self.provider = provider
        self.instructions = instructions
        self.fallback = fallback
        self.style = style
        self.count_tokens = count_tokens
        self.context_tokens = context_tokens
        self.max_picked = max_picked
        self.writer = LLMAnswerer(provider, fallback, count_tokens=count_tokens,
                                  context_tokens=context_tokens, max_tokens=max_tokens,
                                  temperature=temperature,
                                  support_threshold=support_threshold,
                                  max_sentences=max_sentences, instructions=instructions)

    def stream(self, question: str, evidence: Sequence[Evidence],
               history: Sequence[tuple[str, str]] = (), *,
               messages: Sequence[Message] | None = None) -> Iterator[Event]:
        """Status and token events, then one DoneEvent (see DESIGN.md, Events); the
        DoneEvent's metrics add ``pick_ms`` (the picking call) and ``picked`` (how many).

        ``messages`` is the picking prompt when the caller has built it (the answer stage
        sends the one :func:`~citewise.answer.budget.fit_prompt` fitted), else
        :func:`~citewise.answer.prompts.pick_messages` builds it from ``evidence`` and
        ``history``; the numbers picked are checked against ``evidence`` alone."""
        given = list(evidence)
        if messages is None:
            messages = pick_messages(question, given, history,
                                     budget_tokens=self.context_tokens,
                                     count_tokens=self.count_tokens,
                                     instructions=self.instructions)
        yield StatusEvent(f"choosing the evidence with {self.provider.name} "
                          f"({self.provider.model})", stage="pick")
        t0 = time.perf_counter()
        try:
            reply = "".join(self.provider.stream(messages, max_tokens=PICK_TOKENS,
                                                 temperature=0.0))
        except ProviderError as err:
            yield from self._fall_back(str(err))
            return
        pick_ms = (time.perf_counter() - t0) * 1000
        picked = parse_pick(reply, len(given), self.max_picked)
        if picked is None:
            yield from self._fall_back(f"{self.provider.name} ({self.provider.model}): the "
                                       f"picking reply {reply.strip()[:40]!r} named no passage")
            return
        metrics = {"pick_ms": pick_ms, "picked": float(len(picked)),
                   "prompt_tokens": float(sum(self.count_tokens(m["content"])
                                              for m in messages))}
        model = f"{self.provider.name}:{self.provider.model}"
        if not picked:
            yield TokenEvent(NOT_FOUND)
            yield DoneEvent(Answer(question, NOT_FOUND, (), False, "llm", metrics=metrics,
                                   model=model))
            return
        by_n = {ev.citation.n: ev for ev in given}
        chosen = [by_n[n] for n in picked]
        if self.style == "pick":
            yield StatusEvent("quoting the chosen sentences", stage="answer")
            text = quoted(chosen)
            for i, word in enumerate(text.split(" ")):
                yield TokenEvent(word if i == 0 else " " + word)
            yield DoneEvent(Answer(
                question, text, tuple(ev.citation for ev in given), True, "llm",
                metrics={**metrics, "llm_first_token_ms": pick_ms, "llm_ms": pick_ms},
                cited=tuple(picked), support=check_support(text, given, question=question),
                model=model))
            return
        follow = write_after_pick(messages, reply.strip(), picked, question)
        for event in self.writer.stream(question, chosen, history, messages=follow):
            if isinstance(event, DoneEvent):
                answer = event.answer
                citations = tuple(ev.citation for ev in given) if answer.found else ()
                m = {**metrics, **answer.metrics}
                if "llm_first_token_ms" in answer.metrics:
                    m["llm_first_token_ms"] = pick_ms + answer.metrics["llm_first_token_ms"]
                    m["llm_ms"] = pick_ms + answer.metrics.get("llm_ms", 0.0)
                m["prompt_tokens"] = metrics["prompt_tokens"]
                event = DoneEvent(replace(answer, citations=citations if answer.mode == "llm"
                                          else answer.citations, metrics=m))
            yield event

    def _fall_back(self, reason: str) -> Iterator[Event]:
        return fall_back(reason, self.fallback)


__all__ = ["PICK_TOKENS", "PickAnswerer", "PickStyle", "parse_pick"]
