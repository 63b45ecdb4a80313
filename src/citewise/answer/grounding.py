"""Checking a generated answer against its evidence.

Two checks run on every LLM answer:

1. :class:`CitationFilter` edits the token stream as it passes: a citation ``[n]`` whose
   number is not one of the evidence passages is removed (with the space before it), ``[1, 9]``
   keeps only ``[1]``, and a placeholder such as ``[n]`` is dropped. Because the edit happens
   while streaming, the streamed tokens join to exactly the final answer text.
2. :func:`check_support` scores each answer sentence against the passages it cites:
   ``support = matched / total`` over the sentence's analysed content terms (stemmed, stop
   words removed, the tokens BM25 uses), where a number counts twice because a wrong number is
   the most harmful error. 1.0 means every term of the sentence occurs in a cited passage; a
   sentence below ``threshold`` is flagged unsupported. A sentence without a citation is
   scored against all passages and flagged as uncited. This is lexical support in the sense
   of the "attributable to identified sources" criterion (Rashkin et al., 2021, AIS): it
   cannot see paraphrase, so it errs towards flagging.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from citewise.text.analysis import tokenize
from citewise.types import Evidence, SentenceSupport

MAX_HOLD = 24  # characters held back after "[" while waiting for "]"
_CITATION = re.compile(r"\[\s*(\d{1,3}(?:\s*(?:,|;|-|–)\s*\d{1,3})*)\s*\]")
_PLACEHOLDER = re.compile(r"\[\s*(?:n|N|#|\d+\s*\?|number|source|citation|cite)\s*\]")
_ANY_CITATION = re.compile(r"\[\s*\d{1,3}(?:\s*(?:,|;|-|–)\s*\d{1,3})*\s*\]")
_SPACE_BEFORE_MARK = re.compile(r"\s+([.,;:!?)»”])")
_OPEN = re.compile(r"[ \t]*\[")


def citation_numbers(inner: str) -> list[int]:
    """Numbers in the inside of a citation: "1, 3" -> [1, 3]; "2-4" -> [2, 3, 4]."""
    out: list[int] = []
    for part in re.split(r"\s*[,;]\s*", inner.strip()):
        bounds = re.split(r"\s*[-–]\s*", part)
        if len(bounds) == 2 and bounds[0].isdigit() and bounds[1].isdigit():
            lo, hi = int(bounds[0]), int(bounds[1])
            out.extend(range(lo, hi + 1) if 0 <= hi - lo <= 20 else (lo, hi))
        elif part.isdigit():
            out.append(int(part))
    return list(dict.fromkeys(out))


class CitationFilter:
    """Streaming editor of citations; see the module docstring.

    ``feed(piece)`` returns the text that can be shown now, ``flush()`` the rest at the end.
    ``cited`` lists the valid numbers used, in order of first use; ``removed`` the invalid ones.
    """

    def __init__(self, valid: Iterable[int]) -> None:
        self.valid = set(valid)
        self.cited: list[int] = []
        self.removed: list[str] = []
        self._buf = ""

    def feed(self, piece: str) -> str:
        self._buf += piece
        out: list[str] = []
        while self._buf:
            m = _OPEN.search(self._buf)
            if m is None:
                text = self._buf.rstrip(" \t")  # trailing spaces may precede a citation
                out.append(text)
                self._buf = self._buf[len(text):]
                break
            out.append(self._buf[: m.start()])
            self._buf = self._buf[m.start():]
            bracket = self._buf.index("[")
            close = self._buf.find("]", bracket)
            if close < 0:
                if len(self._buf) - bracket <= MAX_HOLD:
                    break  # wait for the rest of a possible citation
                out.append(self._buf[: bracket + 1])  # too long to be one
                self._buf = self._buf[bracket + 1:]
                continue
            out.append(self._rewrite(self._buf[:bracket], self._buf[bracket: close + 1]))
            self._buf = self._buf[close + 1:]
        return "".join(out)

    def flush(self) -> str:
        rest, self._buf = self._buf, ""
        return rest

    def _rewrite(self, space: str, bracket: str) -> str:
        if _PLACEHOLDER.fullmatch(bracket):
            self.removed.append(bracket)
            return ""
        m = _CITATION.fullmatch(bracket)
        if m is None:
            return space + bracket  # an ordinary bracket, e.g. "[sic]"
        numbers = citation_numbers(m.group(1))
        keep = [n for n in numbers if n in self.valid]
        self.removed.extend(str(n) for n in numbers if n not in self.valid)
        for n in keep:
            if n not in self.cited:
                self.cited.append(n)
        return f"{space}[{', '.join(map(str, keep))}]" if keep else ""


_LATIN_END = ".!?"
_CJK_END = "。！？"
_SPLIT = re.compile(
    r"(?:[.!?](?=[\s\[]|$)|[。！？])"  # a sentence end ...
    r"((?:\s*\[\s*\d{1,3}(?:\s*[,;–-]\s*\d{1,3})*\s*\])*)"  # ... and citations right after it
)


def cited_sentences(text: str) -> list[tuple[str, list[int]]]:
    """Answer sentences with the citation numbers each carries, in order.

    A sentence ends at ``.``, ``!`` or ``?`` before whitespace or ``[`` (or at ``。！？``);
    citations right after the end ("... 24 months. [1]") belong to the sentence they follow.
    """
    out, start = [], 0
    for m in _SPLIT.finditer(text):
        if m.group()[0] == "." and re.search(r"\d$", text[start:m.start()]) and \
                re.match(r"\d", text[m.end():m.end() + 1]):
            continue  # 3.5
        out.append(text[start:m.end()])
        start = m.end()
    if text[start:].strip():
        out.append(text[start:])
    result = []
    for sentence in out:
        numbers: list[int] = []
        for c in _ANY_CITATION.finditer(sentence):
            numbers.extend(citation_numbers(c.group()[1:-1]))
        if sentence.strip():
            result.append((" ".join(sentence.split()), list(dict.fromkeys(numbers))))
    return result


class Attributor:
    """Streaming: gives a sentence the model left uncited the citation of the one passage that
    supports it best, when that support reaches ``threshold`` (see :func:`support_score`).

    Placed after :class:`CitationFilter`. The citation goes right after the sentence's end
    ("... 24 months. [2]"); to know a sentence has ended without a citation, the whitespace
    after its end is held until the next visible character arrives. ``added`` lists the
    numbers it added, one per attributed sentence.
    """

    def __init__(self, evidence: Sequence[Evidence], threshold: float = 0.5,
                 skip: Callable[[str], bool] | None = None, question: str = "") -> None:
        self.passages = {ev.citation.n: set(tokenize(ev.chunk.text)) for ev in evidence}
        self.known = frozenset(tokenize(question)) if question else frozenset()
        self.threshold = threshold
        self.skip = skip or (lambda _s: False)
        self.added: list[int] = []
        self._sentence = ""
        self._cited = False
        self._state = "text"  # text | cite (inside [...]) | end (after . ! ?) | closing
        self._hold = ""  # whitespace after an ended sentence
        self._bracket = ""
        self._after = False  # the open bracket follows the sentence's end

    def _attribution(self) -> str:
        sentence, self._sentence = self._sentence, ""
        cited, self._cited = self._cited, False
        if cited or not self.passages or self.skip(sentence):
            return ""
        plain = _ANY_CITATION.sub(" ", sentence)
        weights = _weights(plain, self.known)
        if not weights:
            return ""
        best = max(self.passages, key=lambda n: (support_score(weights, self.passages[n]), -n))
        if support_score(weights, self.passages[best]) < self.threshold or not (
                key_terms(plain, self.known) <= self.passages[best]):
            return ""
        self.added.append(best)
        return f" [{best}]"

    def _put(self, ch: str, out: list[str]) -> None:
        """``ch`` inside the current sentence (state text)."""
        out.append(ch)
        self._sentence += ch
        if ch == "[":
            self._state, self._bracket, self._after = "cite", "[", False
        elif ch in _CJK_END:
            self._state = "closing"
        elif ch in _LATIN_END:
            self._state = "end"

    def feed(self, text: str) -> str:
        out: list[str] = []
        for ch in text:
            state = self._state
            if state == "text":
                self._put(ch, out)
            elif state == "cite":  # inside [...]
                out.append(ch)
                self._sentence += ch
                self._bracket += ch
                if ch == "]":
                    if _ANY_CITATION.fullmatch(self._bracket):
                        self._cited = True
                    self._state = "closing" if self._after else "text"
            elif state == "end":  # just after . ! ?
                if ch.isspace():
                    self._state, self._hold = "closing", ch
                else:
                    self._state = "text"  # "3.5", "e.g.": not an end
                    if ch == "[":  # "months.[1]"
                        self._put(ch, out)
                        self._after = True
                    else:
                        self._put(ch, out)
            else:  # closing: the sentence has ended, whitespace held
                if ch.isspace():
                    self._hold += ch
                elif ch == "[":  # "... months. [1]": the ended sentence's citation
                    out.append(self._hold)
                    self._sentence += self._hold
                    self._hold = ""
                    self._state = "text"
                    self._put(ch, out)
                    self._after = True
                else:  # a new sentence begins
                    out.append(self._attribution() + self._hold)
                    self._hold, self._state = "", "text"
                    self._put(ch, out)
        return "".join(out)

    def flush(self) -> str:
        if not self._sentence.strip():
            return ""
        self._hold, self._state = "", "text"
        return self._attribution()


def support_score(weights: dict[str, float], passage_terms: set[str]) -> float:
    """Weighted share of a sentence's terms found in a passage: in [0, 1], higher is better."""
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in passage_terms) / total if total else 0.0


def _weights(text: str, known: frozenset[str] = frozenset()) -> dict[str, float]:
    """A sentence's analysed terms with their weights (2 for a number, else 1); terms in
    ``known`` (the question's own words: an answer that restates the question claims nothing
    by it) are left out, numbers excepted."""
    terms: dict[str, float] = {}
    for t in tokenize(text):
        digit = any(ch.isdigit() for ch in t)
        if (len(t) > 1 or t.isdigit()) and (digit or t not in known):
            terms[t] = 2.0 if digit else 1.0
    return terms


_KEY_WORD = re.compile(
    r"(?<![\w])(?:\w*\d\w*|\w+_\w+|(?<=[^.!?\s]\s)[A-ZА-ЯЁӘҒҚҢӨҰҮҺІ]\w+)")


def key_terms(sentence: str, known: frozenset[str] = frozenset()) -> set[str]:
    """The analysed terms of a sentence's names, numbers and identifiers: words holding a
    digit or an underscore, and capitalised words not at the sentence's start, less the
    question's own terms (``known``). A wrong number or name is the most harmful error a
    fluent answer makes, so each must occur in the cited passages (:func:`check_support`)."""
    out: set[str] = set()
    for m in _KEY_WORD.finditer(sentence):
        out.update(t for t in tokenize(m.group()) if t not in known or t.isdigit())
    return out


def check_support(answer: str, evidence: Sequence[Evidence], threshold: float = 0.5,
                  question: str = "") -> tuple[SentenceSupport, ...]:
    """One :class:`SentenceSupport` per answer sentence that has content terms of its own.

    ``support`` in [0, 1], higher is better supported (:func:`support_score` against the union
    of the cited passages; against all passages for an uncited sentence, which is never
    ``supported``). Words of ``question`` do not count either way (restating the question
    claims nothing), and a sentence is supported only when every one of its
    :func:`key_terms` (numbers, names, identifiers) occurs in its cited passages: "Anders
    Celsius's wife was Elizabeth II [1]" fails when passage 1 never names Elizabeth.
    """
    by_n = {ev.citation.n: set(tokenize(ev.chunk.text)) for ev in evidence}
    everything = set().union(*by_n.values()) if by_n else set()
    known = frozenset(tokenize(question)) if question else frozenset()
    out = []
    for sentence, numbers in cited_sentences(answer):
        numbers = [n for n in numbers if n in by_n]
        # "... in Bonn [2]." -> "... in Bonn.": no space left before the punctuation
        plain = _SPACE_BEFORE_MARK.sub(r"\1", " ".join(_ANY_CITATION.sub(" ", sentence).split()))
        weights = _weights(plain, known)
        if not weights:
            continue
        pool = set().union(*(by_n[n] for n in numbers)) if numbers else everything
        support = support_score(weights, pool)
        keys_found = key_terms(plain, known) <= pool
        out.append(SentenceSupport(plain, tuple(numbers), round(support, 4),
                                   supported=bool(numbers) and support >= threshold
                                   and keys_found))
    return tuple(out)


def citation_precision(support: Sequence[SentenceSupport]) -> float | None:
    """Share of cited sentences that their citations support (None when nothing is cited)."""
    cited = [s for s in support if s.citations]
    return sum(s.supported for s in cited) / len(cited) if cited else None


__all__ = ["Attributor", "CitationFilter", "check_support", "citation_numbers",
           "citation_precision", "cited_sentences", "key_terms", "support_score"]
