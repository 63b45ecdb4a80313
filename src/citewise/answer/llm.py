"""Grounded answers written by an LLM, streamed token by token, checked, with a fallback.

:class:`LLMAnswerer` builds the prompt (:mod:`citewise.answer.prompts`), streams the provider's
tokens through the :class:`~citewise.answer.tags.PromptTagFilter` (the prompt's
``<evidence>``/``<passage>`` markers out), the
:class:`~citewise.answer.grounding.CitationFilter` (invalid citations out)
and the :class:`~citewise.answer.grounding.Attributor` (a verified citation for a sentence the
model left uncited), and scores each sentence
against its cited passages (:func:`~citewise.answer.grounding.check_support`). When the provider
fails at any point (unreachable, timeout, HTTP error, empty or broken output), the answer
loops (:class:`LoopGuard`: the request is stopped as soon as the same words or lines come
again, see :data:`LOOP_WORDS`), or the answer
repeats six or more consecutive words of the instructions, or none of its sentences is
supported by its citations, it logs the reason, emits a ``status`` event with stage
``fallback`` (clients discard the text streamed so far) and streams the extractive answer
instead, marked with ``fallback_reason``; the user never sees a stack trace. Metrics: ``llm_first_token_ms`` (request to first token), ``llm_ms`` (whole
generation), ``llm_tokens`` (pieces streamed), ``llm_tokens_per_s`` (after the first one) and
``prompt_tokens`` (the messages' length in the embedding model's tokens, an estimate of the
model's own count).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

from citewise.answer.answerer import NOT_FOUND
from citewise.answer.grounding import Attributor, CitationFilter, check_support
from citewise.answer.prompts import CITATION_EXAMPLE, SYSTEM_PROMPT, build_messages
from citewise.answer.providers import ChatProvider, Message
from citewise.answer.tags import PromptTagFilter
from citewise.errors import ProviderError
from citewise.types import Answer, DoneEvent, Event, Evidence, StatusEvent, TokenEvent

log = logging.getLogger(__name__)

Fallback = Callable[[], Iterator[Event]]


def _shingles(text: str, n: int = 6) -> set[tuple[str, ...]]:
    words = [w.strip(".,:;()\"'").casefold() for w in text.split()]
    words = [w for w in words if w]
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


_INSTRUCTIONS = _shingles(SYSTEM_PROMPT.split("Rules:", 1)[-1] + " " +
                          SYSTEM_PROMPT.split("Rules:", 1)[0])


def _repeats_instructions(text: str) -> bool:
    """True when the answer repeats six or more consecutive words of the system prompt."""
    return bool(_shingles(text) & _INSTRUCTIONS)


#: An answer that holds the same run of :data:`LOOP_WORDS` words :data:`LOOP_REPEATS` times,
#: or the same :data:`LOOP_LINES` lines in a row twice, is looping: the request is stopped there
#: and the answer falls back. Seen with the 1.5B model: "Which file types does citewise
#: support?" got one made-up list of formats, one a line, five times over (about 110 lines)
#: until its 400-token cap; the line rule stops it after 27 lines. Chosen on 494 answers the
#: answer benchmark's runs kept: of them only a real loop (a Kazakh answer repeating one
#: sentence) trips either rule; ten words twice also tripped two right answers that restate
#: the question and two quotes of passages that share a sentence.
LOOP_WORDS = 8
LOOP_REPEATS = 3
LOOP_LINES = 4


class LoopGuard:
    """Watches a streamed answer for a loop (see :data:`LOOP_WORDS`): ``feed(text)`` returns
    True once a run of :data:`LOOP_WORDS` consecutive words has come :data:`LOOP_REPEATS` times,
    or a run of :data:`LOOP_LINES` consecutive non-empty lines has come twice. Words and lines
    are compared in lower case without punctuation, list marks or citation marks, and counted
    once complete (the next space or line break). Linear in the answer's length."""

    def __init__(self) -> None:
        self._pending = ""
        self._line = ""
        self._words: list[str] = []
        self._lines: list[str] = []
        self._seen: dict[tuple[str, ...], int] = {}
        self._line_runs: set[tuple[str, ...]] = set()

    def feed(self, text: str) -> bool:
        self._pending += text
        *done, self._pending = re.split(r"\s+", self._pending)
        for raw in done:
            word = _CITATION_MARK.sub("", raw).strip(".,:;()[]*`\"'-").casefold()
            if not word:
                continue
            self._words.append(word)
            if len(self._words) >= LOOP_WORDS:
                run = tuple(self._words[-LOOP_WORDS:])
                self._seen[run] = self._seen.get(run, 0) + 1
                if self._seen[run] >= LOOP_REPEATS:
                    return True
        self._line += text
        *lines, self._line = self._line.split("\n")
        for raw in lines:
            line = " ".join(_CITATION_MARK.sub("", raw).strip(" \t-*.").casefold().split())
            if not line:
                continue
            self._lines.append(line)
            if len(self._lines) >= LOOP_LINES:
                run = tuple(self._lines[-LOOP_LINES:])
                if run in self._line_runs:
                    return True
                self._line_runs.add(run)
        return False


def _says_not_found(text: str) -> bool:
    core = NOT_FOUND.casefold().rstrip(".")
    return core in " ".join(text.casefold().split())


def _example_key(text: str) -> str:
    """Lower-cased letters and digits of ``text``, citations removed."""
    return "".join(ch for ch in _CITATION_MARK.sub("", text.casefold()) if ch.isalnum())


_CITATION_MARK = re.compile(r"\[[^\]]{0,12}\]")
_EXAMPLE = _example_key(CITATION_EXAMPLE)
# the example's words with anything between them, an optional citation, an optional stop
_EXAMPLE_COPY = re.compile(
    r"\s*" + r"[\W_]*".join(map(re.escape, re.findall(r"\w+", _CITATION_MARK.sub(
        "", CITATION_EXAMPLE)))) + r"\s*(?:\[[^\]]{0,12}\]\s*)?([.!?])?", re.IGNORECASE)
_PARTIAL_CITATION = re.compile(r"\s*\[[^\]]{0,12}")


class LeadingExampleFilter:
    """Streaming stage that drops a copy of the prompt's citation example
    (:data:`~citewise.answer.prompts.CITATION_EXAMPLE`) at the start of an answer.

    ``feed(piece)`` returns the text that can be shown now, ``flush()`` what is held at the
    end. While the answer so far could still be the example (compared without case,
    punctuation, spaces or citation numbers) it is held back; a complete copy (its words, any
    citation, its full stop) is dropped with the spaces after it; as soon as the text differs,
    everything held is released unchanged. After that first decision every piece passes
    through. ``dropped`` tells whether a copy was removed.

    Seen with Qwen2.5-Coder-1.5B on XQuAD: "The fee is EUR 300 [2].In 1950, Noble appointed
    Robert Kintner ..." (a right answer behind the copied example).
    """

    def __init__(self) -> None:
        self._buf = ""
        self._decided = False
        self._after_copy = False  # drop the spaces between the copy and the answer
        self.dropped = False

    def feed(self, piece: str) -> str:
        if self._decided:
            if self._after_copy:
                piece = piece.lstrip()
                self._after_copy = not piece
            return piece
        self._buf += piece
        m = _EXAMPLE_COPY.match(self._buf)
        if m is not None:
            rest = self._buf[m.end():]
            if m.group(1) is None and (not rest or _PARTIAL_CITATION.fullmatch(rest)):
                return ""  # the example's words so far; its citation or stop may follow
            self.dropped = self._decided = True
            self._buf = ""
            self._after_copy = True
            return self.feed(rest)
        key = _example_key(self._buf)
        if _EXAMPLE.startswith(key) and not _CITATION_MARK.search(self._buf):
            return ""  # could still become the example
        return self.flush()

    def flush(self) -> str:
        """Release whatever is held (an answer that ended while it could still be the
        example is given as it is)."""
        out, self._buf = self._buf, ""
        self._decided = True
        return out


_NOT_FOUND_KEY = " ".join(NOT_FOUND.casefold().split())


def _not_found_at(text: str) -> int | None:
    """Length of the not-found sentence (:data:`NOT_FOUND`, case and spacing ignored, with a
    citation and spaces after it) at the start of ``text``; -1 when ``text`` is a proper
    beginning of it (it may still become one); None when it is not."""
    key, i, j = _NOT_FOUND_KEY, 0, 0
    while i < len(text) and j < len(key):
        ch = text[i].casefold()
        if ch.isspace():
            if j and key[j - 1] != " " and key[j] == " ":
                j += 1
            i += 1
            continue
        if ch != key[j]:
            return None
        i += 1
        j += 1
    if j < len(key):
        return -1
    m = re.match(r"\s*(?:\[[^\]]{0,12}\])?\s*", text[i:])
    return i + (m.end() if m else 0)


def _sentence_starts(text: str) -> Iterator[int]:
    """Offsets in ``text`` where a sentence may start: 0, and after a stop, a closing
    citation bracket or a line break followed by space."""
    yield 0
    for m in re.finditer(r"(?<=[.!?\]:\n])\s+", text):
        yield m.end()


class NotFoundSentenceFilter:
    """Streaming stage that drops the not-found sentence from an answer that also says
    something (seen with Qwen2.5-Coder-1.5B: "`citewise reindex` re-embeds every file [1]. The
    documents do not contain an answer to this question."): the answer then reads as an
    answer, its citations are shown and checked, and it no longer contradicts itself.

    ``feed(piece)`` returns what can be shown now, ``flush()`` the rest at the end. Text that
    could be the start of the not-found sentence, at a sentence start, is held back; once it
    is the whole sentence it is dropped, and when it turns out to be something else it is
    released unchanged. An answer that is nothing but the not-found sentence is given as it is
    (at ``flush``). ``dropped`` tells whether a sentence was removed.
    """

    def __init__(self) -> None:
        self._buf = ""
        self._wrote = False
        self._pending = ""  # a dropped leading not-found sentence, kept if nothing follows
        self.dropped = False

    def feed(self, piece: str) -> str:
        self._buf += piece
        return self._release(final=False)

    def flush(self) -> str:
        out = self._release(final=True)
        if not self._wrote and self._pending:
            out, self._pending = self._pending + out, ""
            self.dropped = False
        return out

    def _release(self, final: bool) -> str:
        out: list[str] = []
        while self._buf:
            start = length = None
            for p in _sentence_starts(self._buf):
                n = _not_found_at(self._buf[p:])
                if n is not None:
                    start, length = p, n
                    break
            if start is None or length is None:
                out.append(self._buf)
                self._buf = ""
                break
            out.append(self._buf[:start])
            rest = self._buf[start:]
            if length == -1:  # could still become the sentence
                if final:
                    out.append(rest)
                    self._buf = ""
                else:
                    self._buf = rest
                break
            self.dropped = True
            shown = "".join(out)
            if not (self._wrote or shown.strip()):
                self._pending += rest[:length]
            self._buf = rest[length:]
        text = "".join(out)
        if text.strip():
            self._wrote = True
            self._pending = ""
        return text


class LLMAnswerer:
    """Answers with ``provider``; ``fallback()`` yields the extractive answer's events.

    ``count_tokens`` measures the evidence against ``context_tokens`` (the embedding model's
    tokenizer: chunks were sized with it).
    """

    def __init__(self, provider: ChatProvider, fallback: Fallback, *,
                 count_tokens: Callable[[str], int], context_tokens: int = 2400,
                 max_tokens: int = 400, temperature: float = 0.0,
                 support_threshold: float = 0.5, max_sentences: int = 4,
                 instructions: str = "") -> None:
        self.provider = provider
        self.instructions = instructions
        self.fallback = fallback
        self.count_tokens = count_tokens
        self.context_tokens = context_tokens
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.support_threshold = support_threshold
        self.max_sentences = max_sentences

    def stream(self, question: str, evidence: Sequence[Evidence],
               history: Sequence[tuple[str, str]] = (), *,
               messages: Sequence[Message] | None = None) -> Iterator[Event]:
        """Status and token events, then one DoneEvent (see DESIGN.md, Events).

        ``messages`` replaces the prompt :func:`~citewise.answer.prompts.build_messages` would
        build (the answer stage sends the prompt :func:`~citewise.answer.budget.fit_prompt`
        fitted; the pick-then-write answerer continues its picking conversation); citations
        are still checked against ``evidence`` alone."""
        if messages is None:
            messages = build_messages(
                question, evidence, history, budget_tokens=self.context_tokens,
                count_tokens=self.count_tokens, max_sentences=self.max_sentences,
                instructions=self.instructions,
            )
        given = list(evidence)
        yield StatusEvent(f"writing the answer with {self.provider.name} ({self.provider.model})",
                          stage="generate")
        example = LeadingExampleFilter()
        tags = PromptTagFilter()
        not_found = NotFoundSentenceFilter()
        citations = CitationFilter(ev.citation.n for ev in given)
        attributor = Attributor(given, self.support_threshold, skip=_says_not_found,
                                question=question)
        loop = LoopGuard()
        pieces: list[str] = []
        t0 = time.perf_counter()
        first: float | None = None
        count = 0
        try:
            stream = self.provider.stream(messages, max_tokens=self.max_tokens,
                                          temperature=self.temperature)
            for piece in stream:
                count += 1
                if first is None:
                    first = time.perf_counter()
                if loop.feed(piece):
                    close = getattr(stream, "close", None)
                    if close is not None:
                        close()  # stop the generation: the rest would loop on
                    raise ProviderError(f"{self.provider.name} ({self.provider.model}): the "
                                        "answer repeated itself (the same words or lines "
                                        "again and again); stopped")
                text = not_found.feed(example.feed(tags.feed(piece)))
                shown = attributor.feed(citations.feed(text if pieces else text.lstrip()))
                if shown:
                    pieces.append(shown)
                    yield TokenEvent(shown)
            held = not_found.feed(example.feed(tags.flush()) + example.flush())
            held += not_found.flush()
            tail = attributor.feed(citations.feed(held if pieces else held.lstrip())
                                   + citations.flush()).rstrip()
            tail += attributor.flush()
            if tail:
                pieces.append(tail)
                yield TokenEvent(tail)
            if not "".join(pieces).strip():
                raise ProviderError(f"{self.provider.name}: the answer was empty after removing "
                                    "invalid citations")
        except ProviderError as err:
            yield from self._fall_back(str(err))
            return
        t1 = time.perf_counter()
        text = "".join(pieces)
        found = not _says_not_found(text)
        if _repeats_instructions(text):
            yield from self._fall_back(f"{self.provider.name} ({self.provider.model}): the model "
                                       "repeated its instructions instead of answering")
            return
        cited = list(dict.fromkeys([*citations.cited, *attributor.added]))
        support = check_support(text, given, self.support_threshold, question) if found else ()
        if found and support and not any(x.supported for x in support):
            yield from self._fall_back(f"{self.provider.name} ({self.provider.model}): no "
                                       "sentence of the answer is supported by the passages it "
                                       "cites")
            return
        metrics = {
            "llm_ms": (t1 - t0) * 1000,
            "llm_first_token_ms": ((first or t1) - t0) * 1000,
            "llm_tokens": float(count),
            "llm_tokens_per_s": (count - 1) / (t1 - first) if first and t1 > first else 0.0,
            "prompt_tokens": float(sum(self.count_tokens(m["content"]) for m in messages)),
            "citations_added": float(len(attributor.added)),
            "citations_removed": float(len(citations.removed)),
        }
        if citations.removed:
            log.info("removed citations to missing passages: %s", ", ".join(citations.removed))
        yield DoneEvent(Answer(
            question, text, tuple(ev.citation for ev in given) if found else (), found, "llm",
            metrics=metrics, cited=tuple(cited) if found else (), support=support,
            model=f"{self.provider.name}:{self.provider.model}",
        ))

    def _fall_back(self, reason: str) -> Iterator[Event]:
        return fall_back(reason, self.fallback)


def fall_back(reason: str, fallback: Fallback) -> Iterator[Event]:
    """The extractive answer in place of an LLM's: logs ``reason``, yields a ``fallback``
    status naming it (clients discard the text streamed before it), then ``fallback()``'s
    events with the DoneEvent's answer marked ``fallback_reason=reason``. Used by every
    answerer that talks to a provider, and when the provider cannot be opened."""
    log.warning("LLM answer failed, answering extractively: %s", reason)
    yield StatusEvent(f"{reason}; answering with evidence sentences instead", stage="fallback")
    for event in fallback():
        if isinstance(event, DoneEvent):
            event = DoneEvent(replace(event.answer, fallback_reason=reason))
        yield event


__all__ = ["LLMAnswerer", "LeadingExampleFilter", "LoopGuard", "NotFoundSentenceFilter",
           "fall_back"]
