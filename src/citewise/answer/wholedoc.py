"""Whole-document questions: which document a question is about, and what needs no LLM.

"Summarize install.md", "list the sections of the HTTP API doc", "quote the first sentence
of scan.md", "compare mcp.md and api.md" are not questions a similarity search answers well:
the answer is the document itself, in its own order. This module decides

- the *task* (:class:`DocumentTask`, :func:`detect_task`): by the question's words;
- the *documents*: the ones the question names (:func:`named_documents`: path, file name,
  file name without its suffix, or title, matched as whole words, letter case ignored) or the
  ones the caller pinned (:func:`resolve_pinned`: ``citewise ask --doc NAME``, the API's
  ``documents`` field);

and answers the tasks that come from the document's stored structure, with no model call and
no similarity: the outline (:func:`outline`, :func:`sections_answer`: the chunks' section
paths, the headings the parser found, in document order) and the first sentence
(:func:`first_sentence_answer`). :func:`lead_sentences` gives the first sentence of each
section: the extractive summary, and what a summary falls back to when the LLM fails. The LLM
tasks (summary, comparison) are :mod:`citewise.answer.summarize`.

Every citation points at a stored chunk of the document (a section's first chunk; a
sentence's own characters, narrowed by :func:`~citewise.answer.selection.sentence_evidence`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import PurePosixPath

from citewise.answer.answerer import to_evidence
from citewise.answer.selection import Scored, candidates, sentence_evidence
from citewise.errors import NotFoundError
from citewise.types import Answer, Chunk, Document, Evidence, Hit


class DocumentTask(str, Enum):
    """What a whole-document question asks for."""

    SUMMARY = "summary"
    SECTIONS = "sections"
    FIRST_SENTENCE = "first_sentence"
    COMPARE = "compare"


_FIRST_SENTENCE = re.compile(r"\b(?:first|opening)\s+(?:sentence|line|words)\b", re.IGNORECASE)
_SECTIONS = re.compile(
    r"\b(?:list|show|give|name|enumerate|what\s+are)\b.{0,40}?\b(?:sections?|headings?|"
    r"chapters?|headers|outline|table\s+of\s+contents|contents)\b"
    r"|\b(?:outline|table\s+of\s+contents|sections|headings|chapters)\s+(?:of|in)\b"
    r"|\bhow\s+is\b.{0,60}?\b(?:organi[sz]ed|structured)\b",
    re.IGNORECASE)
_COMPARE = re.compile(
    r"\b(?:compare|comparison|contrast|differences?\s+between|how\s+(?:does|do)\b.{0,80}?"
    r"\bdiffer|versus|vs\.?)(?!\w)", re.IGNORECASE)
_SUMMARY = re.compile(
    r"\b(?:summar(?:y|ise|ize|ising|izing)|overview|tl;?dr|gist|main\s+points|key\s+points|"
    r"what\s+(?:is|does)\b.{1,80}?\babout\b|what\s+does\b.{1,80}?\b(?:say|cover))",
    re.IGNORECASE)


def detect_task(question: str) -> DocumentTask | None:
    """The whole-document task ``question`` asks for, or None for an ordinary question. In
    this order: a first sentence ("quote the first sentence of ..."), the sections ("list the
    sections of ...", "outline of ...", "how is ... organised"), a comparison ("compare ...",
    "differences between ...", "... vs ..."), a summary ("summarize ...", "overview of ...",
    "what is ... about"). Raises nothing."""
    for task, pattern in ((DocumentTask.FIRST_SENTENCE, _FIRST_SENTENCE),
                          (DocumentTask.SECTIONS, _SECTIONS), (DocumentTask.COMPARE, _COMPARE),
                          (DocumentTask.SUMMARY, _SUMMARY)):
        if pattern.search(question):
            return task
    return None


def document_names(document: Document) -> list[str]:
    """The names a question may use for ``document``, longest first: its path, its file name,
    the file name without its suffix (three letters or more) and its title (four or more)."""
    path = PurePosixPath(document.path)
    names = [document.path, path.name]
    if len(path.stem) >= 3:
        names.append(path.stem)
    title = " ".join(document.title.split())
    if len(title) >= 4:
        names.append(title)
    return sorted(dict.fromkeys(n for n in names if n), key=len, reverse=True)


def _name_pattern(name: str) -> re.Pattern[str]:
    words = r"\s+".join(re.escape(w) for w in name.split())
    return re.compile(rf"(?<![\w/.-]){words}(?![\w-]|\.\w)", re.IGNORECASE)


def named_documents(question: str, documents: Sequence[Document]) -> list[Document]:
    """The documents ``question`` names (see :func:`document_names`), in the order the
    question names them. Where two names overlap in the question the longer one wins
    ("docs/api.md" is api.md, not also a document titled "api"); a name that several
    documents share (two files called README.md) names none of them, as it does not tell
    which. Raises nothing."""
    spans: list[tuple[int, int, str]] = []  # (start, end, document id)
    owners: dict[str, set[str]] = {}
    for doc in documents:
        for name in document_names(doc):
            owners.setdefault(name.casefold(), set()).add(doc.id)
    by_id = {d.id: d for d in documents}
    for doc in documents:
        for name in document_names(doc):
            if len(owners[name.casefold()]) > 1:
                continue
            spans += [(m.start(), m.end(), doc.id) for m in _name_pattern(name).finditer(question)]
    spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
    chosen: list[tuple[int, int, str]] = []
    for span in spans:
        if any(span[0] < end and start < span[1] for start, end, _ in chosen):
            continue
        chosen.append(span)
    return [by_id[i] for i in dict.fromkeys(doc_id for _, _, doc_id in sorted(chosen))]


def resolve_pinned(names: Sequence[str], documents: Sequence[Document]) -> list[Document]:
    """The documents pinned by ``names``, in that order: each an id, a path, the end of a path
    ("install.md", "docs/install.md"), a file name without its suffix, or a title (letter case
    ignored for all but the id). Raises NotFoundError naming the first name that matches no
    document or more than one (with the candidates)."""
    out: list[Document] = []
    for raw in names:
        name = raw.strip()
        folded = name.casefold()
        exact = [d for d in documents if d.id == name or d.path.casefold() == folded]
        matches = exact or [
            d for d in documents
            if d.path.casefold().endswith("/" + folded)
            or folded in {n.casefold() for n in document_names(d)}]
        if not matches:
            known = ", ".join(d.path for d in documents[:10]) or "none"
            raise NotFoundError(f"no indexed document is called {name!r} (documents: {known}"
                                f"{', ...' if len(documents) > 10 else ''})")
        if len(matches) > 1:
            raise NotFoundError(f"{name!r} names {len(matches)} documents: "
                                f"{', '.join(d.path for d in matches[:5])}; give its path")
        if matches[0] not in out:
            out.append(matches[0])
    return out


@dataclass(frozen=True)
class DocumentQuestion:
    """A question about whole documents: ``task`` (None: an ordinary question, searched
    within the pinned ``documents`` only), the ``documents`` in the order named or pinned,
    and ``pinned`` (the caller chose them, rather than the question naming them)."""

    task: DocumentTask | None
    documents: tuple[Document, ...]
    pinned: bool = False


def plan_question(question: str, documents: Sequence[Document],
                  pinned: Sequence[str] = ()) -> DocumentQuestion | None:
    """What to do with ``question`` over the readable ``documents``: with ``pinned`` names,
    those documents (:func:`resolve_pinned`, which raises NotFoundError), and the task the
    question asks for, if any; without, a :class:`DocumentQuestion` only when the question
    asks for a whole-document task and names a document (two for a comparison); None means
    an ordinary search over everything."""
    task = detect_task(question)
    if pinned:
        docs = resolve_pinned(pinned, documents)
        if task is DocumentTask.COMPARE and len(docs) < 2:
            task = DocumentTask.SUMMARY if len(docs) == 1 else None
        return DocumentQuestion(task, tuple(docs), pinned=True)
    if task is None:
        return None
    named = named_documents(question, documents)
    if task is DocumentTask.COMPARE:
        return DocumentQuestion(task, tuple(named)) if len(named) >= 2 else None
    return DocumentQuestion(task, tuple(named[:1])) if named else None


# --- what needs no LLM -----------------------------------------------------------------------

def document_evidence(document: Document, chunks: Sequence[Chunk], start: int = 1
                      ) -> list[Evidence]:
    """The chunks of ``document`` as numbered evidence, in document order (by ordinal),
    numbered from ``start``; each citation the whole chunk, relevance 1.0."""
    ordered = sorted(chunks, key=lambda c: c.ordinal)
    hits = [Hit(c.id, 1.0, "sparse", relevance=1.0, chunk=c, document=document) for c in ordered]
    out = to_evidence(hits)
    if start == 1:
        return out
    return [replace(ev, citation=replace(ev.citation, n=ev.citation.n + start - 1)) for ev in out]


@dataclass(frozen=True)
class Section:
    """One heading of a document: its ``path`` of headings from the top (the last is its
    own), ``depth`` (1 for a top-level heading, after a common title is dropped) and
    ``first`` (the index, in the document's evidence, of the first chunk under it)."""

    path: tuple[str, ...]
    depth: int
    first: int


def outline(evidence: Sequence[Evidence]) -> list[Section]:
    """The headings of one document's evidence (:func:`document_evidence`), in document
    order, each once: every prefix of every chunk's section path. A heading above all others
    (the document's title, when every chunk is under it and something is below it) is left
    out, so the outline starts at the document's own sections. Empty for a document whose
    parser found no headings (plain text, most PDFs)."""
    seen: dict[tuple[str, ...], int] = {}
    for i, ev in enumerate(evidence):
        path = ev.chunk.section
        for depth in range(1, len(path) + 1):
            seen.setdefault(path[:depth], i)
    roots = {p for p in seen if len(p) == 1}
    skip = 0
    if len(roots) == 1 and len(seen) > 1 and all(ev.chunk.section for ev in evidence):
        skip = 1
    return [Section(p, len(p) - skip, i) for p, i in seen.items() if len(p) > skip]


def sections_answer(question: str, document: Document, evidence: Sequence[Evidence]) -> Answer:
    """The document's headings as an indented list in document order, each citing the first
    chunk under it (numbered 1..n in that order, so ``[n]`` is ``citations[n-1]``); no model
    call. A document without headings says so (and how many chunks
    it has)."""
    sections = outline(evidence)
    if not sections:
        pages = f" over {document.pages} pages" if document.pages else ""
        text = (f"{document.path} has no headings that citewise found: it is read as "
                f"{len(evidence)} passage{'s' if len(evidence) != 1 else ''}{pages}.")
        return Answer(question, text, (), True, "extractive", metrics={"sections": 0.0})
    lines = [f"The sections of {document.path}, in document order:"]
    numbers: dict[int, int] = {}  # evidence index -> citation number, 1..n in order of use
    for s in sections:
        n = numbers.setdefault(s.first, len(numbers) + 1)
        lines.append(f"{'  ' * (s.depth - 1)}- {s.path[-1]} [{n}]")
    citations = tuple(replace(evidence[i].citation, n=n) for i, n in numbers.items())
    return Answer(question, "\n".join(lines), citations, True, "extractive",
                  cited=tuple(numbers.values()), metrics={"sections": float(len(sections))})


def _first_candidates(evidence: Sequence[Evidence]) -> list[tuple[int, Scored]]:
    """(evidence index, the first sentence of that chunk) for each chunk that has one."""
    out = []
    for i, ev in enumerate(evidence):
        found = candidates(ev, i)
        if found:
            out.append((i, Scored(found[0], 1.0, 0.0, 0.0)))
    return out


def first_sentence_answer(question: str, document: Document,
                          evidence: Sequence[Evidence]) -> Answer:
    """The first sentence of the document (headings and a bare list number are not
    sentences), quoted and cited by its own characters; no model call."""
    firsts = _first_candidates(evidence)
    if not firsts:
        return Answer(question, f"{document.path} has no sentence citewise could read.", (),
                      False, "extractive")
    narrowed = sentence_evidence(evidence, [firsts[0][1]], max_passages=1, budget_tokens=10**6)
    ev = narrowed[0]
    sentence = " ".join(firsts[0][1].candidate.text.split())
    text = f"The first sentence of {document.path} is: \u201c{sentence}\u201d [1]"
    return Answer(question, text, (ev.citation,), True, "extractive", cited=(1,))


def lead_sentences(evidence: Sequence[Evidence], max_sections: int = 12) -> list[Evidence]:
    """The document's first sentence, then the first sentence under each heading of one
    document (:func:`outline`; of each chunk when it has none), in document order, at most ``max_sections`` spread evenly over the
    document, narrowed to the sentence and renumbered 1..n in that order."""
    firsts = dict(_first_candidates(evidence))
    sections = outline(evidence)
    # the opening (the text before the first heading, when there is any), then each section
    starts = [0, *(s.first for s in sections)] if sections else list(range(len(evidence)))
    picked: list[int] = []
    for i in dict.fromkeys(starts):
        j = next((k for k in range(i, len(evidence)) if k in firsts), None)
        if j is not None and j not in picked:
            picked.append(j)
    if len(picked) > max_sections:
        step = len(picked) / max_sections
        picked = [picked[int(k * step)] for k in range(max_sections)]
    ranked = [Scored(firsts[j].candidate, 1.0 - k / (len(picked) + 1), 0.0, 0.0)
              for k, j in enumerate(picked)]
    chosen = sentence_evidence(evidence, ranked, max_passages=len(ranked) or 1,
                               budget_tokens=10**6)
    # the scores only kept the document's order through the selection: each is relevance 1.0
    return [replace(ev, citation=replace(ev.citation, score=1.0)) for ev in chosen]


def lead_answer(question: str, documents: Sequence[Document],
                per_document: Sequence[Sequence[Evidence]], max_sections: int = 12) -> Answer:
    """The extractive summary (or comparison, with several documents): each document's
    :func:`lead_sentences`, quoted in document order under its path, numbered across the
    documents; no model call."""
    lines: list[str] = []
    citations = []
    share = max(max_sections // max(len(documents), 1), 3)
    n = 0
    for doc, evidence in zip(documents, per_document, strict=True):
        leads = lead_sentences(evidence, share)
        if len(documents) > 1 or not lines:
            lines.append(f"{doc.path}:" if len(documents) > 1 else
                         f"The opening sentence of each section of {doc.path}:")
        for ev in leads:
            n += 1
            section = f"{ev.citation.section[-1]}: " if ev.citation.section else ""
            lines.append(f"- {section}{' '.join(ev.chunk.text.split())} [{n}]")
            citations.append(replace(ev.citation, n=n))
    return Answer(question, "\n".join(lines), tuple(citations), bool(citations), "extractive",
                  cited=tuple(c.n for c in citations))


__all__ = ["DocumentQuestion", "DocumentTask", "Section", "detect_task", "document_evidence",
           "document_names", "first_sentence_answer", "lead_answer", "lead_sentences",
           "named_documents", "outline", "plan_question", "resolve_pinned", "sections_answer"]
