"""Sentence-level evidence: the sentences of the retrieved chunks that best answer a question.

Retrieval returns chunks of up to a few hundred tokens; most of their sentences do not answer
the question. Both answerers start here:

1. :func:`candidates` splits each chunk into answer candidates with their offsets: prose
   sentences (headings dropped), table rows given with their column names, windows of source
   code lines; and (:func:`section_lists`) the subsection headings of a section the question
   names, as one list candidate (a "which formats" question over a "Supported formats"
   section is answered by its subsections' headings, which no sentence lists).
2. :func:`rank_candidates` scores every candidate ``0.6 * cosine + 0.4 * coverage +
   0.05 / (rank + 1)``: ``cosine`` between the candidate's and the question's embeddings (in
   [-1, 1]), ``coverage`` the share of the question's analysed terms the candidate holds,
   each term weighted by its collection IDF times its IDF within the candidate's document (so
   the words that pick the document do not pick the sentence), ``rank`` the 0-based rank of
   the chunk in the retrieval. Higher is better.
3. :func:`answerable` decides from the best candidates whether the evidence answers the
   question at all (the abstention rule, see its docstring).
4. :func:`sentence_evidence` turns the best candidates into numbered :class:`Evidence`: each
   passage is one candidate, or a run of adjacent chosen candidates of one chunk, with the
   citation narrowed to that span (characters, lines) so a citation points at the sentence
   that supports the answer rather than at the whole chunk.

The extractive answer quotes the first few passages; the LLM answer reads only them (a
prompt of a few hundred tokens instead of 1,300-1,500, which sets the wait for the first
word on a CPU).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from citewise.answer.scorer import AnswerScorer
from citewise.embed import Embedder
from citewise.ingest.chunking import SOURCE_WINDOW, sentences
from citewise.retrieve.page import PAGE_PRIOR
from citewise.retrieve.retriever import question_clause
from citewise.text.analysis import (
    content_terms,
    identifier_parts,
    tokenize,
    without_known_parts,
)
from citewise.text.language import detect_language
from citewise.types import Chunk, Evidence

MAX_CANDIDATE_CHARS = 600
#: Candidates of the rule-based order the answer scorer reads (:func:`rank_candidates`).
SCORER_TOP = 24
#: Weight of the answer scorer's probability against the rule-based score (chosen on the
#: answer benchmark's dev questions: 0.5 beat 1.0 on right@1, citation precision and evidence
#: recall; docs/benchmarks.md).
SCORER_WEIGHT = 0.5
#: The answer scorer's probability below which none of the best three candidates answers
#: (:func:`answerable`).
MIN_ANSWER_PROBABILITY = 0.1
#: The answer scorer's probability from which a question is answered whatever the word and
#: match floors say (:func:`answerable`); 1.0: off. At 0.5 (of the 31 dev questions the floors
#: declined, 13 answerable and 4 unanswerable reach it) right answers moved within noise.
TRUST_ANSWER_PROBABILITY = 1.0
CODE_WINDOW = 12  # lines
#: The abstention rule's floors (see :func:`answerable`), chosen on the dev split of the
#: answer benchmark's docs questions (benchmarks/answers.py; docs/benchmarks.md).
MIN_COVERAGE = 0.25
#: The floor on the best three candidates' :func:`answer_match` below which a question is
#: declined (:func:`answerable`): a question on a topic the documents cover whose answer they do not
#: hold matches its topic's sentences only loosely. Chosen with the default embedding model
#: (minilm) on the dev articles of benchmarks/abstention.py (XQuAD-en with half of each
#: article's paragraphs held out), 0.02 below the highest floor (0.40) that costs at most 2
#: points of right answers there and no right answer of the answer benchmark's dev questions
#: (docs/benchmarks.md, Near-miss abstention).
MIN_ANSWER_MATCH = 0.38
#: A file's evidence passages (candidates) before the other files' are preferred
#: (:func:`sentence_evidence`'s ``max_per_file``): the evidence pool holds up to
#: ``evidence_per_file`` chunks of a file.
PASSAGES_PER_FILE = 3
#: Score factor of a candidate that reads as a command or code (a ``curl`` line, a shell
#: prompt, a JSON body) when the question does not ask for one: a docs page's example request
#: can hold the very words of a question and still answer nothing.
COMMAND_PENALTY = 0.7
#: Score factor of a candidate that is itself a question or quotes one ("How do I reset it?",
#: '"What is the default top_k?" also searched ...'): a question restated answers nothing,
#: however many of its words it holds (an FAQ's question lines, a log of questions asked).
QUESTION_PENALTY = 0.7
_A_QUESTION = re.compile(r"\?\s*[\"'”»“`)\]]*\s*$|\?[\"'”»“`]")
#: Score factor of a candidate that starts with the identifier or option the question names
#: (the row ``top_k | CITEWISE_TOP_K | 5 | ...`` or the bullet "top_k (default 5) is ..." for
#: "What is the default top_k?"): it defines that thing, where others only mention it.
DEFINES_PRIOR = 1.25
_IDENTIFIER = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*|\b[A-Za-z]\w*_\w+\b|\b[a-z]+[A-Z]\w*\b")
_ASKS_FOR_CODE = re.compile(
    r"\b(command|commands|curl|example|syntax|snippet|code|script|cli|flag|flags|option|"
    r"options|function|method|class|call|invoke|run|type|json|yaml|toml)\b", re.IGNORECASE)
_COMMAND_START = re.compile(
    r"^\s*(?:\$\s|>>>|curl\s|pip\s|python3?\s|export\s|cd\s|git\s|docker\s|npm\s|"
    r"[\w.-]+\s+(?:--?\w|\\$))")
_WORD = re.compile(r"\w*[^\W\d_]\w*")
#: A short "Label: value" line ("Support hotline: +43 1 555 0199", "Port: 8765"): a
#: candidate however few words it has, since the value is the answer.
_LABELLED = re.compile(r"^[^\W\d_][^:\n]{0,40}:\s*\S")
_CODE_CHARS = set("{}[]()<>=$|\\/\"'`;")


#: A question asking how to do something ("How do I ...?", "How can I avoid that?", "What
#: can I try?"); English only.
_HOW_TO = re.compile(r"\bhow\s+(?:do|can|should|could|would)\s+(?:i|we|you|one)\b|\bhow\s+to\b|"
                     r"\bwhat\s+(?:can|should|do)\s+(?:i|we)\s+(?:do|try)\b", re.IGNORECASE)
#: A sentence that gives an instruction: it names a command-line flag, an environment
#: variable, a command of a common tool, or starts with a verb in the imperative.
_INSTRUCTION = re.compile(
    r"(?<![\w-])--[a-z][\w-]*|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|"
    r"\b(?:pipx?\s+install|python3?\s+-m|export\s+[A-Z]|curl\s+-|npm\s+install|"
    r"apt-get\s+install|brew\s+install)\b")
_IMPERATIVE = re.compile(
    r"^\W*(?:install|run|set|use|add|pass|call|create|put|open|choose|change|export|give|"
    r"lower|raise|turn|start|stop|remove|delete|rephrase|fix|restart|reindex|see|check|edit|"
    r"enable|disable|configure|point|replace|upgrade|download|copy|move|select|click|type|"
    r"enter|make|keep|write|read|try|ask|list|mount|upload|import|define|declare|return)\b",
    re.IGNORECASE)


def gives_instruction(text: str) -> bool:
    """True for a sentence that tells the reader what to do: it starts with an imperative
    verb ("Install the CPU-only wheel first ...") or names a flag (``--mode``), an
    environment variable (``CITEWISE_MIN_SCORE``) or an install command (``pip install``,
    ``python -m``, ``export NAME=...``)."""
    return bool(_IMPERATIVE.match(text) or _INSTRUCTION.search(text))


def _run_after(ranked: Sequence[Scored], c: Candidate,
               evidence: Sequence[Evidence]) -> list[Scored]:
    """The candidates of ``ranked`` that follow ``c`` in its chunk, in text order, each with
    only blank text before it (so :func:`sentence_evidence` would join them to ``c``)."""
    text = evidence[c.index].chunk.text
    after = sorted((s for s in ranked if s.candidate.index == c.index
                    and s.candidate.start >= c.end), key=lambda s: s.candidate.start)
    run: list[Scored] = []
    end = c.end
    for s in after:
        if text[end:s.candidate.start].strip():
            break
        run.append(s)
        end = s.candidate.end
    return run


def _moved_behind(ranked: Sequence[Scored], anchor: Scored,
                  moved: Sequence[Scored]) -> list[Scored]:
    """``ranked`` with ``moved`` taken out and put right after ``anchor``, with its score."""
    out = [s for s in ranked if s not in moved]
    at = out.index(anchor) + 1
    out[at:at] = [replace(s, score=anchor.score) for s in moved]
    return out


def with_next_instruction(question: str, ranked: Sequence[Scored],
                          evidence: Sequence[Evidence]) -> list[Scored]:
    """``ranked`` with, for a how-to question, the sentence that follows the best one moved
    up to second place when the best sentence gives no instruction and the next one does.

    Documentation states a problem, then its fix ("From the public index alone pip picks
    torch's CUDA build ... Install the CPU-only wheel first ..."): the question repeats the
    problem's words, so the problem sentence ranks first and the fix, which shares few of
    them, ranks low. Placed second with the best one's score, the two adjacent sentences
    become one passage (:func:`sentence_evidence`). Returns a new list; ``ranked`` (best
    first) is unchanged."""
    if not ranked or not _HOW_TO.search(question):
        return list(ranked)
    best = ranked[0]
    if best.candidate.kind != "sentence" or gives_instruction(best.candidate.text):
        return list(ranked)
    run = _run_after(ranked, best.candidate, evidence)
    if not run or run[0].candidate.kind != "sentence" or \
            not gives_instruction(run[0].candidate.text):
        return list(ranked)
    return _moved_behind(ranked, best, run[:1])


def with_examples(ranked: Sequence[Scored], evidence: Sequence[Evidence], *, top: int = 3,
                  max_lines: int = 3, max_chars: int = 400) -> list[Scored]:
    """``ranked`` with the example each introducing sentence announces moved up behind it.

    Documentation introduces an example with a sentence that ends in a colon ("Requests can
    also ignore verifying the SSL certificate if you set verify to False:") and gives it as
    code on the next lines; quoted alone, the sentence promises what the quote leaves out.
    For each of the ``top`` best candidates that is such a sentence, the candidates that
    follow it in its chunk with only blank text between, while they read as code
    (:func:`looks_like_command`), at most ``max_lines`` of them and ``max_chars`` characters,
    are placed right after it with its score, so :func:`sentence_evidence` quotes them as one
    passage. Returns a new list; ``ranked`` (best first) is unchanged."""
    out = list(ranked)
    for intro in ranked[:top]:
        c = intro.candidate
        if c.kind != "sentence" or not c.text.rstrip().endswith(":"):
            continue
        taken: list[Scored] = []
        size = 0
        for s in _run_after(out, c, evidence)[:max_lines]:
            size += len(s.candidate.text)
            if not looks_like_command(s.candidate.text) or size > max_chars:
                break
            taken.append(s)
        if taken:
            out = _moved_behind(out, next(s for s in out if s.candidate == c), taken)
    return out


def looks_like_command(text: str) -> bool:
    """True for a candidate that reads as a shell command, code or a JSON/YAML body rather
    than prose: it starts like a command (``$``, ``curl``, ``pip``, a word then a flag) or
    more than 8% of its characters are code punctuation."""
    if _COMMAND_START.match(text):
        return True
    return sum(ch in _CODE_CHARS for ch in text) > 0.08 * max(len(text), 1)


@dataclass(frozen=True)
class Candidate:
    """One answer candidate of evidence ``index``: ``text`` as shown and scored; ``start`` and
    ``end`` its character offsets in that chunk's ``text`` (``end`` exclusive); ``kind`` is
    ``sentence``, ``row`` (a table row, ``text`` with its column names), ``code`` or ``list``
    (a section's subsection headings, :func:`section_lists`)."""

    index: int
    text: str
    start: int
    end: int
    kind: str = "sentence"


@dataclass(frozen=True)
class Scored:
    """A ranked candidate: ``score`` (higher is better, see the module docstring), its
    ``cosine`` in [-1, 1], its weighted term ``coverage`` in [0, 1] (collection IDF x IDF
    within its document: which sentence of a document answers) and its ``answer_coverage``
    in [0, 1], the unweighted share of the question's content terms it and its innermost
    section heading hold (whether the
    question's words are there at all; in a small collection IDF says little, a word it
    lacks outweighing all it holds; see :func:`answerable`). ``answer_probability`` in [0, 1]
    is the answer scorer's (:mod:`citewise.answer.scorer`) when it read the candidate, else
    None."""

    candidate: Candidate
    score: float
    cosine: float
    coverage: float
    answer_coverage: float = 0.0
    answer_probability: float | None = None


def _table_rows(text: str, headings: frozenset[str] = frozenset()
                ) -> tuple[list[str], list[tuple[int, str]], list[tuple[int, int]]] | None:
    """(header cells, [(offset, row line)], [(start, end) of each table line]) when the
    chunk is a pipe table with a header, possibly after lines that are among ``headings``
    (casefolded: the heading a table is chunked with, a slide's title); prose lines after
    the table are not among the spans."""
    lines: list[tuple[int, str]] = []
    pos = 0
    for line in text.split("\n"):
        if line.strip() and (lines or " | " in line
                             or " ".join(line.split()).casefold() not in headings):
            lines.append((pos, line))
        pos += len(line) + 1
    if len(lines) < 2 or " | " not in lines[0][1]:
        return None
    rows = [(p, ln) for p, ln in lines[1:] if " | " in ln and not set(ln) <= set("|-: ")]
    if not rows:
        return None
    # the table's own lines: from the header to the last row, separator lines included
    spans = [(p, p + len(ln)) for p, ln in lines
             if " | " in ln or (ln.strip() and set(ln.strip()) <= set("|-: "))]
    return [c.strip() for c in lines[0][1].split("|")], rows, spans


def _code_windows(text: str, index: int, size: int = CODE_WINDOW) -> list[Candidate]:
    """A short symbol whole, a long one as overlapping windows of ``size`` lines."""
    body = text.strip("\n")
    lead = text.index(body) if body else 0
    lines = body.split("\n")
    if len(lines) <= 2 * size:
        return [Candidate(index, body, lead, lead + len(body), "code")]
    starts, pos = [], lead
    for line in lines:
        starts.append(pos)
        pos += len(line) + 1
    step = size // 2
    out = []
    for i in range(0, len(lines) - step, step):
        window = "\n".join(lines[i:i + size])
        out.append(Candidate(index, window, starts[i], starts[i] + len(window), "code"))
    return out


def candidates(evidence: Evidence, index: int) -> list[Candidate]:
    """The answer candidates of one piece of evidence, in text order (see the module
    docstring); offsets index ``evidence.chunk.text``."""
    text = evidence.chunk.text
    doc = evidence.hit.document
    if evidence.chunk.symbol or (doc is not None and doc.format == "code"):
        return _code_windows(text, index)
    headings = {" ".join(h.split()).casefold() for h in evidence.chunk.section}
    table = _table_rows(text, frozenset(headings))
    if doc is not None:  # a sentence that is the document's title is a heading too
        headings.add(" ".join(doc.title.split()).casefold())
    if table is None:
        return _sentence_candidates(text, index, headings)
    header, rows, spans = table
    out = []
    for pos, row in rows:
        cells = [c.strip() for c in row.split("|")]
        shown = ("; ".join(f"{h}: {c}" for h, c in zip(header, cells, strict=True) if c)
                 if len(cells) == len(header) else row)
        out.append(Candidate(index, shown, pos, pos + len(row), "row"))
    # the prose around the table (an explanation after it) is answer text too: its lines,
    # with the table's blanked out so the offsets stay those of the chunk's text
    masked = list(text)
    for start, end in spans:
        masked[start:end] = " " * (end - start)
    prose = _sentence_candidates("".join(masked), index, headings)
    return sorted(out + prose, key=lambda c: c.start)


def _sentence_candidates(text: str, index: int, headings: set[str]) -> list[Candidate]:
    """The prose sentences of ``text`` as candidates: a heading line that starts a sentence
    is cut off, headings and fragments of fewer than 3 words are left out, long sentences
    are cut at ``MAX_CANDIDATE_CHARS``."""
    out, pos = [], 0
    for s in sentences(text):
        start = text.find(s, pos)
        if start < 0:  # pragma: no cover - sentences() returns substrings of text
            start = pos
        pos = start + len(s)
        first, _, rest = s.partition("\n")
        if rest and " ".join(first.split()).casefold() in headings:
            start += len(first) + 1 + (len(rest) - len(rest.lstrip()))  # the heading's line
            s = rest.strip()
        shown = " ".join(s.split())
        if shown.casefold() in headings or (len(_WORD.findall(shown)) < 3
                                            and not _LABELLED.match(shown)):
            continue  # a heading names a topic, a list number alone says nothing
        if len(shown) > MAX_CANDIDATE_CHARS:
            shown = shown[:MAX_CANDIDATE_CHARS].rsplit(" ", 1)[0] + " …"
        out.append(Candidate(index, shown, start, start + len(s)))
    return out


def _in_context(c: Candidate, evidence: Sequence[Evidence]) -> str:
    """What is embedded for a candidate: its innermost section heading, then its text (a
    sentence alone often lacks the subject its heading names)."""
    section = evidence[c.index].chunk.section
    if c.kind == "list":  # its text starts with its heading: the headings above it too
        return " > ".join([*section[:-1], c.text]) if CONTEXT else c.text
    if CONTEXT and section and c.kind != "code":
        return f"{section[-1]}: {c.text}"
    return c.text


CONTEXT = True
#: A question term found only in the candidate's section heading counts this much of a
#: term in its text toward ``coverage``.
HEADING_WEIGHT = 0.5


#: what may follow the plural noun phrase of a list question: a verb, a preposition, the end
_PHRASE_END = (r"(?=\s+(?:can|could|do|does|did|are|is|were|was|should|will|would|must|may|"
               r"might|have|has|need|needs|of|for|in|on|that|from|by|to|with)\b|\s*[?.!,;]|\s*$)")
_ASKS_FOR_LIST = re.compile(
    r"^\W*(?:(?:which|what)\s+(?:are\s+the\s+)?(?:(?:kinds?|types?|sorts?)\s+of\s+)?"
    r"((?:[\w.-]+\s+){0,2}?[\w-]+s)" + _PHRASE_END +
    r"|(?:list|name)\s+(?:all\s+)?(?:the\s+)?((?:[\w.-]+\s+){0,2}?[\w-]+s)" + _PHRASE_END +
    r"|(?:какие|каких|какими|перечислите|перечисли)\s+((?:\w+\s+){0,2}\w+))",
    re.IGNORECASE)


def list_terms(question: str) -> set[str]:
    """The analysed terms of the things ``question`` asks to be listed: the plural noun
    phrase after "which"/"what" ("Which file formats can ... ?" -> ``{file, format}``),
    "list"/"name", or Russian "какие"/"перечислите"; empty for any other question (a
    singular "Which fusion method ...?" asks for one thing, not a list)."""
    focus = question_clause(question).strip()
    m = _ASKS_FOR_LIST.match(focus)
    if not m:
        return set()
    phrase = next(g for g in m.groups() if g)
    return set(content_terms(phrase, detect_language(question)))


#: At most this many child headings make a section list (a longer one is a table of
#: contents, which the whole-document "list the sections" task answers).
MAX_LIST_ITEMS = 30


def section_lists(question: str, evidence: Sequence[Evidence],
                  chunks_of: Callable[[str], Sequence[Chunk]]) -> list[Evidence]:
    """Lists built from the documents' own structure, as more evidence for ``question``.

    A question about a thing a section is named for ("Which file formats can citewise
    ingest?" over a "Supported formats" section whose subsections are "PDF", "Word (.docx)",
    ...) is often answered by no sentence at all: the list is the subsections' headings.
    For each section ``P`` on the path of an evidence chunk whose own heading shares a
    content term with the question's asking clause and that has 2 to
    :data:`MAX_LIST_ITEMS` direct subsections in its document (``chunks_of(document_id)``:
    the document's chunks in order), one :class:`Evidence` whose chunk text is
    ``"<heading>: <child 1>; <child 2>; ..."`` and whose citation spans the section (from its
    first chunk's start to its last chunk's end: characters, lines, pages; ``chunk_id`` its
    first chunk), numbered 0 (:func:`sentence_evidence` numbers what it keeps). A section
    holding every chunk of its document (the document's own title) is left out: its outline
    is the whole-document task. Returns [] when no heading shares a term with the question.
    """
    language = detect_language(question)
    wanted = set(content_terms(question_clause(question), language))
    if not wanted:
        return []
    out: list[Evidence] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    loaded: dict[str, Sequence[Chunk]] = {}
    for ev in evidence:
        path = ev.chunk.section
        doc_id = ev.citation.document_id
        for depth in range(len(path), 0, -1):
            prefix = path[:depth]
            if (doc_id, prefix) in seen or not wanted & set(tokenize(prefix[-1], language)):
                continue
            seen.add((doc_id, prefix))
            if doc_id not in loaded:
                loaded[doc_id] = chunks_of(doc_id)
            chunks = loaded[doc_id]
            inside = [c for c in chunks if c.section[:depth] == prefix]
            if not inside or len(inside) == len(chunks):
                continue
            children = list(dict.fromkeys(c.section[depth] for c in inside
                                          if len(c.section) > depth))
            if not 2 <= len(children) <= MAX_LIST_ITEMS:
                continue
            first, last = inside[0], inside[-1]
            text = f"{prefix[-1]}: " + "; ".join(" ".join(c.split()) for c in children)
            chunk = replace(first, text=text, source_text=text, section=prefix,
                            char_end=last.char_end, page_end=last.page_end,
                            line_end=last.line_end if last.line_end is not None
                            else first.line_end, symbol=None)
            doc = ev.hit.document
            citation = replace(ev.citation, n=0, chunk_id=first.id, section=prefix,
                               char_start=first.char_start, char_end=last.char_end,
                               line_start=first.line_start, line_end=chunk.line_end,
                               page=first.page, page_end=last.page_end,
                               page_label=doc.page_label(first.page) if doc else None,
                               page_end_label=doc.page_label(last.page_end) if doc else None)
            out.append(Evidence(citation=citation, hit=replace(ev.hit, chunk=chunk,
                                                               chunk_id=first.id)))
    return out


def rank_candidates(question: str, evidence: Sequence[Evidence], embedder: Embedder, *,
                    idf: dict[str, float] | None = None,
                    document_idf: dict[str, dict[str, float]] | None = None,
                    max_embedded: int = 64,
                    known_identifiers: frozenset[str] = frozenset(),
                    prefer_document: str | None = None, dense: bool = True,
                    lists: Sequence[Evidence] = (), scorer: AnswerScorer | None = None,
                    scorer_top: int = SCORER_TOP,
                    scorer_weight: float = SCORER_WEIGHT) -> list[Scored]:
    """Every candidate of ``evidence`` (best first) scored against ``question``.

    ``lists`` (:func:`section_lists`) are scored as one candidate each (kind ``list``), their
    indexes following ``evidence``'s: pass ``[*evidence, *lists]`` to
    :func:`sentence_evidence`.

    ``idf`` is the collection IDF of the question's terms and ``document_idf`` their IDF
    within each evidence document, by document id (a term missing from either weighs 1).
    To bound the embedding cost, only the ``max_embedded`` candidates with the best lexical
    score (coverage plus the rank bonus) are embedded; the others keep a cosine of 0.
    A candidate that :func:`looks_like_command` scores ``COMMAND_PENALTY`` times less unless
    the question asks for a command or code; a sentence that is a question or quotes one
    ``QUESTION_PENALTY`` times less; a sentence or row that starts with an identifier or option
    the question names (``top_k``, ``--top-k``) ``DEFINES_PRIOR`` times more. The parts of an identifier in
    ``known_identifiers`` (analysed terms the index holds whole, such as ``top_k``) do not
    count toward ``coverage`` (:func:`~citewise.text.analysis.without_known_parts`). A
    candidate of ``prefer_document`` (a document id: the page the question is asked from) has
    a positive score multiplied by :data:`~citewise.retrieve.page.PAGE_PRIOR`. With
    ``dense=False`` (the embedding model does not know the question's language,
    :meth:`~citewise.retrieve.retriever.Retriever.dense_models`) nothing is embedded and
    ``coverage`` stands in for the cosine. When the question names a thing by a number or
    letter (:func:`named_values`: "project 14", "clause 4.2"), only candidates whose text,
    headings, document title or path hold it (:func:`holds_value`) are returned: a
    neighbouring project's figures are not its answer, and none means "not found".

    With a ``scorer`` (:class:`~citewise.answer.scorer.AnswerScorer`), the ``scorer_top``
    best candidates of that rule-based order are read by it and re-ordered by
    ``scorer_weight * probability + (1 - scorer_weight) * rule score``, placed above every
    candidate it did not read (those keep their order, below). Returns [] when there are no
    candidates.
    """
    language = detect_language(question)
    focus = question_clause(question)
    terms = without_known_parts(content_terms(focus, language),
                                identifier_parts(focus, language),
                                known_identifiers.__contains__)
    pool = [c for i, ev in enumerate(evidence) for c in candidates(ev, i)]
    pool += [Candidate(len(evidence) + j, ev.chunk.text, 0, len(ev.chunk.text), "list")
             for j, ev in enumerate(lists)]
    evidence = [*evidence, *lists]
    if not pool:
        return []
    weights = []
    for ev in evidence:
        local = (document_idf or {}).get(ev.citation.document_id, {})
        weights.append({t: (idf or {}).get(t, 1.0) * local.get(t, 1.0) for t in terms})
    collection = dict.fromkeys(terms, 1.0)
    coverage, answer_coverage = [], []
    for c in pool:
        have = set(tokenize(c.text, language))
        w = weights[c.index]
        section = evidence[c.index].chunk.section
        # the innermost heading (a list's text holds its own: the headings above it)
        shown = section[:-1] if c.kind == "list" else section[-1:]
        heading = set(tokenize(" ".join(shown), language)) - have
        coverage.append((sum(v for t, v in w.items() if t in have)
                         + HEADING_WEIGHT * sum(v for t, v in w.items() if t in heading))
                        / (sum(w.values()) or 1.0))
        # "Streaming (server-sent events)" above a sentence says what it is about
        have |= heading
        answer_coverage.append(sum(v for t, v in collection.items() if t in have)
                               / (sum(collection.values()) or 1.0))
    lexical = [0.4 * cov + 0.05 / (c.index + 1) for c, cov in zip(pool, coverage, strict=True)]
    order = sorted(range(len(pool)), key=lambda i: -lexical[i])[:max_embedded]
    cosine = np.zeros(len(pool), dtype=np.float32)
    if not dense:
        cosine[:] = coverage
    elif order:
        vectors = embedder.embed_documents([_in_context(pool[i], evidence) for i in order])
        cosine[order] = vectors @ embedder.embed_query(focus)
    penalise = not _ASKS_FOR_CODE.search(question)
    named = {_key(m.group()) for m in _IDENTIFIER.finditer(focus)} - {""}
    scored = []
    for c, cos, cov, lex, ans in zip(pool, cosine, coverage, lexical, answer_coverage,
                                     strict=True):
        score = 0.6 * float(cos) + lex
        if penalise and c.kind not in ("code", "list") and looks_like_command(c.text):
            score *= COMMAND_PENALTY
        if c.kind == "sentence" and _A_QUESTION.search(c.text):
            score *= QUESTION_PENALTY
        if named and score > 0 and c.kind in ("sentence", "row") and _subject(c) in named:
            score *= DEFINES_PRIOR
        if prefer_document is not None and score > 0 and \
                evidence[c.index].citation.document_id == prefer_document:
            score *= PAGE_PRIOR
        scored.append(Scored(c, score, float(cos), cov, ans))
    scored.sort(key=lambda s: -s.score)
    values = named_values(focus)
    if values:  # "project 14": only where 14 is (its text, headings, title or file name)
        scored = [s for s in scored if all(holds_value(_context(s.candidate, evidence), v)
                                           for v in values)]
    if scorer is not None and scored:
        scored = _rescored(question, scored, evidence, scorer, scorer_top, scorer_weight,
                           named, prefer_document)
    wanted = list_terms(question) if lists else set()
    asked = [s for s in scored if s.candidate.kind == "list" and wanted & set(tokenize(
        evidence[s.candidate.index].chunk.section[-1], language))]
    if asked and scored[0].candidate.kind != "list":
        # "Which file formats ...?" over a "Supported formats" section: the list of its
        # subsections is the answer, however well a sentence matches the words
        top = replace(asked[0], score=scored[0].score + 0.01)
        scored = [top, *(s for s in scored if s is not asked[0])]
    return scored


def _context(c: Candidate, evidence: Sequence[Evidence]) -> str:
    """A candidate's text with what names its place: its chunk's headings, its document's
    title and file path."""
    ev = evidence[c.index]
    # the path upper-cased: a file name's letter ("policy_b.txt") reads as the capital asked
    return "\n".join([c.text, *ev.chunk.section, ev.citation.title, ev.citation.path.upper()])


def _rescored(question: str, scored: Sequence[Scored], evidence: Sequence[Evidence],
              scorer: AnswerScorer, top: int, weight: float, named: set[str],
              prefer_document: str | None = None) -> list[Scored]:
    """``scored`` with its first ``top`` re-ordered by the answer scorer (see
    :func:`rank_candidates`); the rest follow with scores below the lowest of those. The
    priors the scorer cannot see (the sentence defines the named identifier; the page the
    question is asked from) apply to the blended score too."""
    head, tail = list(scored[:top]), list(scored[top:])
    # windows of source code keep the rule score: the scorer learnt prose (on the answer
    # benchmark's dev code questions it lowered right answers from 0.49 to 0.41)
    read = [i for i, s in enumerate(head) if s.candidate.kind != "code"]
    units = []
    for i in read:
        c = head[i].candidate
        section = evidence[c.index].chunk.section
        heading = section[-1] if section and c.kind in ("sentence", "row") else ""
        units.append((heading, c.text))
    focus = question_clause(question)
    probs: list[float | None] = [None] * len(head)
    for i, p in zip(read, scorer.probabilities(focus, units).tolist(), strict=True):
        probs[i] = p
    # a sentence or row that starts with an identifier the question names (``named``, as
    # rank_candidates found them) defines it: the scorer reads words, not which one is the
    # subject, so the prior applies after it too
    out = []
    for s, p in zip(head, probs, strict=True):
        if p is None:
            out.append(s)
            continue
        score = weight * p + (1 - weight) * s.score
        if named and s.candidate.kind in ("sentence", "row") and _subject(s.candidate) in named:
            score *= DEFINES_PRIOR
        if prefer_document is not None and \
                evidence[s.candidate.index].citation.document_id == prefer_document:
            score *= PAGE_PRIOR
        out.append(replace(s, score=score, answer_probability=p))
    out.sort(key=lambda s: -s.score)
    floor = min(s.score for s in out) if out else 0.0
    below = [replace(s, score=min(s.score, floor) - 1.0) for s in tail]
    return out + below


#: A thing the question names by a number or letter: "project 14", "clause 4.2", "v2",
#: "Policy B", "article 7" (Russian and Kazakh labels too). The value must be where the answer
#: is (:func:`named_values`).
_NAMED_VALUE = re.compile(
    r"\b(?:project|clause|section|article|item|policy|version|chapter|part|schedule|exhibit|"
    r"annex|appendix|invoice|order|contract|room|unit|lot|plan|tier|step|rule|paragraph|"
    r"статья|статьи|статье|пункт|пункта|глава|главы|раздел|бап|бабы|тармақ|тарау)"
    r"\s*(?:no\.?|№|#)?\s*(\d+(?:\.\d+)*[a-z]?|[A-Z])\b|\b(v\d+(?:\.\d+)*)\b",
    re.IGNORECASE)


def named_values(question: str) -> list[str]:
    """The numbers and letters ``question`` names things by (:data:`_NAMED_VALUE`: "project
    14" -> ``14``, "clause 4.2" -> ``4.2``, "v2" -> ``v2``, "Policy B" -> ``B``), in order. A
    letter counts only when written as a capital."""
    out = []
    for m in _NAMED_VALUE.finditer(question):
        value = m.group(1) or m.group(2)
        if len(value) == 1 and value.isalpha() and not value.isupper():
            continue
        out.append(value)
    return list(dict.fromkeys(out))


def holds_value(context: str, value: str) -> bool:
    """Whether ``value`` (:func:`named_values`) stands on its own in ``context``: not inside
    a longer number or word (``14`` is not in ``140`` or ``4.14``; ``_`` and ``-`` separate,
    so ``project_14.md`` holds it); a letter only as a capital."""
    flags = 0 if value.isalpha() else re.IGNORECASE
    return re.search(rf"(?<![0-9A-Za-z.]){re.escape(value)}(?![0-9A-Za-z]|\.\d)", context,
                     flags) is not None


def _key(text: str) -> str:
    """``text`` case-folded, leading dashes and quotes dropped, dashes read as ``_``
    (``--top-k`` and ``top_k`` both read ``top_k``)."""
    return re.sub(r"[-\s]+", "_", text.strip().strip("-`'\"").casefold())


def _subject(c: Candidate) -> str:
    """What a candidate starts with, normalised by :func:`_key`: a row's first cell
    (``"Setting: top_k; Default: 5"`` -> ``top_k``; the first option of ``--top-k, -k``), a
    sentence's first word after a list bullet (``"- top_k (default 5) is ..."`` -> ``top_k``)."""
    if c.kind == "row":
        first = c.text.split("; ", 1)[0]
        value = first.split(": ", 1)[1] if ": " in first else first
        return _key(value.split(",")[0])
    words = c.text.lstrip("-*•> \t").split(maxsplit=1)
    return _key(words[0].rstrip(":,;.")) if words else ""


_NAME = re.compile(r"(?<![\w.'`\"/-])([^\W\d_]{2,})(?![\w'`\"/(-]|\.\w)")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`|«[^»]*»|“[^”]*”")
_SENTENCE_START = re.compile(r"(?:^|[.!?;:]\s+|\n)\W*$")


def names(question: str) -> list[str]:
    """The words of ``question`` that read as names: with a capital after their first letter
    (``SAML``, ``SharePoint``, ``iPhone``), or capitalised and not the first word of a
    sentence (``Okta``, ``Docker``). Words inside quotes (a value the user supplies, such as
    ``'MYAPP'``), parts of identifiers (``click.edit``, ``auto_envvar_prefix``), a word
    followed by ``(`` (query syntax such as ``NEAR(``, a function) and words of fewer than 3
    letters other than acronyms are left out. Latin and Cyrillic alike."""
    masked = _QUOTED.sub(lambda m: " " * len(m.group()), question)
    out = []
    for m in _NAME.finditer(masked):
        word = m.group(1)
        inner_capital = any(ch.isupper() for ch in word[1:])
        if (inner_capital and (len(word) >= 3 or word.isupper())) or (
                word[0].isupper() and len(word) >= 3
                and not _SENTENCE_START.search(masked[:m.start()])):
            out.append(word)
    return list(dict.fromkeys(out))


def unknown_names(question: str, df: Mapping[str, int]) -> list[str]:
    """The :func:`names` of the asking clause of ``question`` (:func:`question_clause`) that
    no indexed document holds: ``df`` maps an analysed term to its document frequency in the
    collection (a term missing counts as 0);
    a name is looked up by its whole analysed form (``SharePoint`` -> ``sharepoint``). A
    question about a thing the documents never name cannot be answered from them: the
    engine declines it without a model call and says which names are missing."""
    return [name for name, term in _name_forms(question) if df.get(term, 0) == 0]


def name_terms(question: str) -> list[str]:
    """The whole analysed forms of the :func:`names` of ``question`` (the terms
    :func:`unknown_names` looks up), analysed in the question's language (a Kazakh
    "Республикасы" alone would read as Russian and miss the index's "республика")."""
    return [term for _, term in _name_forms(question)]


def _name_forms(question: str) -> list[tuple[str, str]]:
    """(name, analysed form) of each name of the question's asking clause
    (:func:`question_clause`: a long preamble may name things only to set the scene)."""
    language = detect_language(question)
    return [(n, t[-1]) for n, t in ((n, tokenize(n, language))
                                    for n in names(question_clause(question))) if t]


def answer_match(s: Scored) -> float:
    """How closely candidate ``s`` matches its question, whatever the collection's size:
    ``0.6 * cosine + 0.4 * answer_coverage`` (the unweighted share of the question's content
    terms), in [-0.6, 1]; higher is better. Unlike ``score`` it has no IDF weights, which in a
    one-document collection make every term's weight small."""
    return 0.6 * s.cosine + 0.4 * s.answer_coverage


def answerable(ranked: Sequence[Scored], question: str = "", *,
               min_coverage: float = MIN_COVERAGE,
               min_match: float = MIN_ANSWER_MATCH, dense: bool = True,
               min_probability: float = MIN_ANSWER_PROBABILITY,
               trust_probability: float = TRUST_ANSWER_PROBABILITY) -> bool:
    """Whether the best candidates may answer the question: some candidate among the best
    three holds at least ``min_coverage`` of the question's content terms
    (``answer_coverage``; question words such as "what" or "когда" left out), and, when the
    candidates were embedded (``dense``; not for a language the embedding model does not
    read), one of the best three has an :func:`answer_match` of at least ``min_match``: a
    question about a covered topic whose answer is not indexed ("What colour is the paint on
    the arches?" over a text about a bridge) shares words with the topic's sentences but
    matches none of them closely. ``ranked`` is best first, as :func:`rank_candidates` returns it.
    The floor suits the default model's cosines (minilm); a model whose unrelated texts
    score a high cosine (e5) rarely meets it. A question
    whose words are nearly all missing from the best sentences (an off-topic question, or a
    near miss such as "does the kettle pair over Bluetooth with a phone app?" over a kettle's
    manual) is declined; one that shares more words with them is left to the answerer (the
    model may still reply that the documents do not say). A keyword query of one or two
    terms (``question`` given) is declined only when no candidate holds any of them. When the
    answer scorer read the best candidates (``answer_probability`` set), one of the best three
    must also reach ``min_probability``, and one reaching ``trust_probability`` answers
    whatever the two floors say (a long question in many words shares few with its answer)."""
    if not ranked:
        return False
    best = max(s.answer_coverage for s in ranked[:3])
    if question and len(content_terms(question_clause(question))) <= 2:
        return best > 0
    probs = [s.answer_probability for s in ranked[:3] if s.answer_probability is not None]
    if probs and max(probs) < min_probability:  # the answer scorer: none of them answers
        return False
    if probs and max(probs) >= trust_probability:  # the scorer is sure one of them answers
        return True
    return best >= min_coverage and (
        not dense or max(answer_match(s) for s in ranked[:3]) >= min_match)


def _find_flexible(text: str, part: str, start: int) -> tuple[int, int] | None:
    """(start, end) of ``part`` in ``text`` at or after ``start``, any run of white space in
    ``part`` matching any run in ``text`` (chunk text joins blocks with one line break where
    the document has a blank line); None when it is not there."""
    at = text.find(part, start)
    if at >= 0:
        return at, at + len(part)
    words = part.split()
    if not words:
        return None
    m = re.compile(r"\s+".join(map(re.escape, words))).search(text, start)
    return (m.start(), m.end()) if m else None


def _narrow(ev: Evidence, start: int, end: int, n: int, shown: str | None = None,
            score: float | None = None, row: bool = False) -> Evidence:
    """``ev`` cut to ``chunk.text[start:end]``, renumbered ``n``: the chunk's text, character
    span and lines narrowed to the part. Offsets are mapped through ``chunk.source_text``,
    the document text around the chunk: characters whenever the part is found there, lines
    only when that text starts at the chunk's first block (it is not a window of a long
    block) and holds as many line breaks as the chunk's line span (no markup line such as a
    code fence was dropped), counting them from ``chunk.line_start`` (plus a table's
    separator line for a ``row``); otherwise they stay the chunk's. ``shown`` replaces the part's text (a
    table row given with its column names)."""
    chunk = ev.chunk
    part = chunk.text[start:end]
    char_start, char_end = chunk.char_start, chunk.char_end
    line_start, line_end = chunk.line_start, chunk.line_end
    src = chunk.source_text or ""
    lines = chunk.text.strip().split("\n")
    first_line, last_line = lines[0][:40], lines[-1][-40:]
    head = src.find(first_line) if src and first_line else -1
    whole = len(src) < 2 * SOURCE_WINDOW  # source_text starts where the chunk's first block does
    first: int | None = None
    # the chunk's text may start with white space (an indented line of code) that
    # ``first_line`` lost to strip(): char_start is where that white space starts
    lead = len(chunk.text) - len(chunk.text.lstrip())
    origin = head - lead if lead and head >= lead and \
        src[head - lead:head] == chunk.text[:lead] else head
    if head >= 0 and (found := _find_flexible(src, part, head)) is not None:
        at, stop = found  # anchored on the chunk's first line: char_start
        char_start = chunk.char_start - origin + at
        if line_start is not None and line_end is not None and whole:
            # the document text keeps the file's line breaks unless markup lines were dropped
            # (a code fence, a table's |---| line): count only when the chunk's own line
            # span says nothing was dropped
            sep = 1 if row else 0
            span_end = src.rfind(last_line) + len(last_line)
            if src.count("\n", 0, span_end) + sep == line_end - line_start:
                first = line_start + src.count("\n", 0, at) + (
                    sep if src.count("\n", 0, at) else 0)
    elif src and last_line and (tail := src.rfind(last_line)) >= 0 and (
            found := _find_flexible(src, part, 0)) is not None:
        # a long table's window of the document starts after its header row, which the
        # chunk repeats: anchored on the chunk's last line instead (char_end)
        at, stop = found
        char_start = chunk.char_end - (tail + len(last_line)) + at
        if (row and whole and line_start is not None and line_end is not None
                and src.count("\n", 0, len(src.rstrip())) == line_end - line_start):
            # a table whose header row is not in the document text (CSV, a spreadsheet's
            # rows), one line per row with no line dropped: a row's line (a sheet's row
            # number) counts from the block's first
            first = line_start + src.count("\n", 0, at)
        elif row and line_start is not None and line_end is not None:
            # a later window of a long table, whose lines are its own rows' (one a line,
            # ingest.chunking._row_lines): a row's line counts from the window's first row,
            # found where the window ends in the document text
            begin = tail + len(last_line) - (chunk.char_end - chunk.char_start)
            if begin >= 0 and src.count("\n", begin, tail + len(last_line)) == \
                    line_end - line_start and begin <= at:
                first = line_start + src.count("\n", begin, at)
    else:
        found = None
    if found is not None:
        char_end = char_start + (stop - at)
        if first is not None:
            last = first + src.count("\n", at, stop)
            if line_end is None or last <= line_end:
                line_start, line_end = first, last
    new_chunk = replace(chunk, text=shown or part, char_start=char_start, char_end=char_end,
                        line_start=line_start, line_end=line_end)
    # the pages holding the part, not the chunk's first (C30); a row over a break (N11)
    page, page_end = chunk.page_at(char_start), chunk.page_at(max(char_start, char_end - 1))
    doc = ev.hit.document
    citation = replace(ev.citation, n=n, char_start=char_start, char_end=char_end,
                       line_start=line_start, line_end=line_end, page=page, page_end=page_end,
                       page_label=doc.page_label(page) if doc is not None else None,
                       page_end_label=doc.page_label(page_end) if doc is not None else None,
                       score=ev.citation.score if score is None else score)
    return Evidence(citation=citation, hit=replace(ev.hit, chunk=new_chunk))


def sentence_evidence(evidence: Sequence[Evidence], ranked: Sequence[Scored], *,
                      max_passages: int = 5, budget_tokens: int = 260,
                      count_tokens: Callable[[str], int] | None = None,
                      relative_floor: float = 0.0,
                      max_per_file: int | None = None) -> list[Evidence]:
    """The best candidates as numbered evidence, best first (numbers 1..n).

    Candidates are taken in score order while they fit ``budget_tokens`` (counted with
    ``count_tokens``; about 4 characters a token without it) and score at least
    ``relative_floor`` times the best, up to ``max_passages`` passages; chosen candidates that
    are adjacent in one chunk become one passage. Identical texts are kept once. Each
    passage's ``citation.score`` is its best candidate's selection score. With
    ``max_per_file``, a file's candidates beyond that many are taken only when the other files
    leave room (the pool may hold more chunks of a file than the evidence shows, so that a
    file's best sentence is found without its other sentences crowding out the other files;
    a question about one contract still gets ``max_passages`` of it).
    """
    count = count_tokens or (lambda t: max(1, len(t) // 4))
    chosen: list[Scored] = []
    seen: set[str] = set()
    per_file: dict[str, int] = {}
    deferred: list[Scored] = []  # over a file's share: taken only if room is left
    used = 0
    best = ranked[0].score if ranked else 0.0
    for s in ranked:
        if len(chosen) >= max_passages or (chosen and s.score < relative_floor * best):
            break
        key = " ".join(s.candidate.text.split()).casefold()
        if key in seen:
            continue
        path = evidence[s.candidate.index].citation.path
        if max_per_file is not None and per_file.get(path, 0) >= max_per_file:
            deferred.append(s)
            continue
        cost = count(s.candidate.text)
        if chosen and used + cost > budget_tokens:
            continue
        seen.add(key)
        chosen.append(s)
        used += cost
        per_file[path] = per_file.get(path, 0) + 1
    for s in deferred:  # one file holds all the good candidates (a single contract)
        key = " ".join(s.candidate.text.split()).casefold()
        cost = count(s.candidate.text)
        if len(chosen) >= max_passages:
            break
        if key in seen or used + cost > budget_tokens:
            continue
        seen.add(key)
        chosen.append(s)
        used += cost
    # merge candidates adjacent in the same chunk (only the text between them is blank)
    groups: list[list[Scored]] = []
    by_place = sorted(chosen, key=lambda s: (s.candidate.index, s.candidate.start))
    for s in by_place:
        last = groups[-1][-1].candidate if groups else None
        c = s.candidate
        text = evidence[c.index].chunk.text
        if (last is not None and last.index == c.index and c.kind == last.kind == "sentence"
                and not text[last.end:c.start].strip()):
            groups[-1].append(s)
        else:
            groups.append([s])
    groups.sort(key=lambda g: -max(s.score for s in g))
    out = []
    for n, group in enumerate(groups, start=1):
        first, last = group[0].candidate, group[-1].candidate
        if first.kind == "list":  # its citation already spans the section
            ev = evidence[first.index]
            out.append(Evidence(citation=replace(ev.citation, n=n, score=round(
                max(s.score for s in group), 4)), hit=ev.hit))
            continue
        shown = first.text if first.kind == "row" else None
        out.append(_narrow(evidence[first.index], first.start, last.end, n, shown,
                           round(max(s.score for s in group), 4), first.kind == "row"))
    return out


__all__ = [
    "Candidate",
    "Scored",
    "answer_match",
    "answerable",
    "candidates",
    "gives_instruction",
    "looks_like_command",
    "rank_candidates",
    "section_lists",
    "sentence_evidence",
    "with_examples",
    "with_next_instruction",
]
