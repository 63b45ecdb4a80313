"""The contract scan: ingest a document, classify its clauses, check each playbook rule.

Steps (each reported through the progress callback as ``(step, done, total)``):

0. ``load``: the embedding model and the clause prototypes are loaded (once per scanner);
1. ``ingest``: a file that is not indexed yet (or changed since) is indexed through the
   ingest pipeline like any other document (so it can be searched and cited); an
   indexed document is read where it is, in its own collection and under its own path, and
   is never re-ingested or moved (:meth:`Scanner.scan_indexed`). Its text is then parsed;
2. ``classify``: the document is cut into clause units, each scored against every CUAD clause
   type (:mod:`citewise.scan.classify`);
3. ``check``: for each rule, the units that are at least possible clauses of its type are
   candidates, best first (classifier score, plus :data:`KEYWORD_BONUS` when one of the
   rule's keywords occurs); the checker judges up to ``candidates`` of them;
4. ``report``: one :class:`Flag` per rule, sorted by severity (high first), then verdict
   (deviates, needs review, not found, compliant), then playbook order.

The verdict rules are in :meth:`Scanner._flag` and docs/scan.md ("What each verdict
guarantees"): ``compliant`` and ``deviates`` only for a clause found with confidence and a
check that decided; ``needs review`` for a possible clause, a bare heading or a check that
could not decide; ``not found`` when nothing was cited, also for rules that forbid a clause.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from citewise.config import Settings
from citewise.embed import Embedder, load_embedder
from citewise.errors import CorruptDocumentError, DocumentError
from citewise.ingest.parsers.base import parser_for
from citewise.ingest.pipeline import Ingestor, document_id
from citewise.scan.checks import Checker, CheckResult, Clause, DeterministicChecker, Verdict
from citewise.scan.classify import (
    NEVER_CONFIDENT,
    ClauseClassifier,
    Labelled,
    document_units,
    is_bare_heading,
    load_prototypes,
)
from citewise.scan.numbering import clause_number
from citewise.scan.playbook import Playbook, Rule, Severity
from citewise.store.base import Store
from citewise.types import Block, Chunk, Citation, Document, ParsedDocument

#: Added to a candidate's score when one of the rule's keywords occurs in it.
KEYWORD_BONUS = 0.03
#: Characters of the clause quoted in a flag.
QUOTE_CHARS = 600
_VERDICT_ORDER = {Verdict.DEVIATES: 0, Verdict.NEEDS_REVIEW: 1, Verdict.NOT_FOUND: 2,
                  Verdict.COMPLIANT: 3}

ScanProgressFn = Callable[[str, int, int], None]  # (step, done, total)
STEPS = ("load", "ingest", "classify", "check", "report")


@dataclass(frozen=True)
class Flag:
    """The outcome of one rule (the verdicts are explained in docs/scan.md).

    ``citation`` locates the clause judged (``char_start``/``char_end`` are its span in the
    document text; page, section and lines where the format has them) and is None exactly
    when the verdict is NOT_FOUND; ``quote`` is the clause text (clipped to
    :data:`QUOTE_CHARS`); ``clause_number`` the contract's own number of the clause ("12.3",
    "7.2(b)"; :func:`~citewise.scan.numbering.clause_number`), None when it has none;
    ``decisive`` the span (document offsets, end exclusive) of the words the check decided on
    ("New York", "thirty (30) days") and ``decisive_quote`` those words, None and "" without
    one. ``score`` is the classifier score of the clause (a margin, higher is more typical of
    the type), None without one; ``threshold`` and ``review_threshold`` are the type's
    calibrated scores from which a passage counts as found and as a possible clause.
    """

    rule: str
    title: str
    clause_type: str
    severity: Severity
    verdict: Verdict
    explanation: str
    citation: Citation | None = None
    quote: str = ""
    score: float | None = None
    checker: str = ""
    threshold: float | None = None
    review_threshold: float | None = None
    clause_number: str | None = None
    decisive: tuple[int, int] | None = None
    decisive_quote: str = ""

    @property
    def where(self) -> str:
        """Where the cited clause is, as a lawyer cites it: "section 12.3, p. 2, chars
        4844-4964" (the parts the format has); "" without a citation."""
        c = self.citation
        if c is None:
            return ""
        parts = [f"section {self.clause_number}"] if self.clause_number else []
        if c.page is not None:
            parts.append(c.page_text or f"p. {c.page}")
        elif c.line_start is not None:
            parts.append(f"lines {c.line_start}-{c.line_end}" if c.line_end != c.line_start
                         else f"line {c.line_start}")
        parts.append(f"chars {c.char_start}-{c.char_end}")
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """The JSON shape of ``citewise scan --format json`` (one item of ``flags``)."""
        cite = None
        if self.citation is not None:
            c = self.citation
            cite = {"path": c.path, "page": c.page, "section": list(c.section),
                    "line_start": c.line_start, "line_end": c.line_end,
                    "char_start": c.char_start, "char_end": c.char_end,
                    "chunk_id": c.chunk_id, "clause_number": self.clause_number,
                    "where": self.where, "quote": self.quote,
                    "decisive": None if self.decisive is None else {
                        "char_start": self.decisive[0], "char_end": self.decisive[1],
                        "quote": self.decisive_quote}}
        return {"rule": self.rule, "title": self.title, "clause_type": self.clause_type,
                "severity": self.severity.value, "verdict": self.verdict.value,
                "verdict_label": self.verdict.label,
                "explanation": self.explanation, "citation": cite,
                "score": _round(self.score), "threshold": _round(self.threshold),
                "review_threshold": _round(self.review_threshold), "checker": self.checker}


def _round(value: float | None) -> float | None:
    """``value`` to 4 decimals; None for None and for an infinite threshold (no score
    counts as found)."""
    return None if value is None or not math.isfinite(value) else round(value, 4)


@dataclass(frozen=True)
class ScanReport:
    """Flags for one document; ``clauses`` are the classified units (types above threshold)."""

    document: Document
    playbook: str
    flags: tuple[Flag, ...]
    clauses: tuple[Labelled, ...] = ()
    timings_ms: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d = self.document
        return {"document": {"id": d.id, "path": d.path, "title": d.title, "format": d.format,
                             "pages": d.pages, "chunks": d.chunk_count},
                "playbook": self.playbook, "flags": [f.to_json() for f in self.flags],
                "timings_ms": {k: round(v, 1) for k, v in self.timings_ms.items()}}


IngestorFn = Callable[[str | None], Ingestor]  # collection (None: the default) -> Ingestor


class Scanner:
    """Scans documents of one index against one playbook with one checker (deterministic
    unless another :class:`~citewise.scan.checks.Checker` is given).

    It takes only the parts it uses: ``settings`` (threads and batch size for the classifier's
    own fp32 model), ``store`` (documents and chunks are read from it), ``embedder`` (called
    for the embedding model when the clause classifier is first needed, so loading it is
    timed as the ``load`` step) and ``ingestor`` (an :class:`~citewise.ingest.pipeline.Ingestor`
    on the same store for a collection, None meaning the default one; used when a scanned
    file is new or changed). :meth:`Engine.scanner <citewise.engine.Engine.scanner>` wires
    them.
    """

    def __init__(self, settings: Settings, store: Store, embedder: Callable[[], Embedder],
                 ingestor: IngestorFn, playbook: Playbook, checker: Checker | None = None,
                 candidates: int = 3) -> None:
        self.settings = settings
        self.store = store
        self._embedder = embedder
        self._ingestor = ingestor
        self.playbook = playbook
        self.checker: Checker = checker or DeterministicChecker()
        self.candidates = candidates

    @cached_property
    def classifier(self) -> ClauseClassifier:
        """The clause classifier. Its vectors are its own (never stored), so for ``minilm`` it
        always embeds in fp32: the shipped CUAD prototypes and thresholds were calibrated on
        fp32 vectors, and int8 ones found fewer clauses (12 against 14 of the 20 annotated
        on the fixed eval subset of tests/scan/test_scanner.py)."""
        embedder = self._embedder()
        if embedder.family == "minilm" and getattr(embedder, "precision", "fp32") != "fp32":
            s = self.settings
            embedder = load_embedder("minilm", s.threads, s.embed_batch_size, "fp32")
        examples: dict[str, list[str]] = {}
        for rule in self.playbook.rules:
            examples.setdefault(rule.clause_type, []).extend(rule.examples)
        return ClauseClassifier(embedder, load_prototypes(embedder).extended(embedder, examples))

    def scan(self, path: str | Path, progress: ScanProgressFn | None = None) -> ScanReport:
        """Check the file ``path`` against the playbook; returns the :class:`ScanReport`.

        A file already indexed with the same bytes is scanned where it is
        (:meth:`scan_indexed`); one indexed with other bytes is re-indexed in its own
        collection under its own path; a new file is ingested into the default
        collection. Raises a :class:`~citewise.errors.DocumentError` when the file cannot be
        indexed.
        """
        file = Path(path).expanduser().resolve()
        known = self.store.document(document_id(file))
        if known is not None and known.status == "indexed" and file.is_file() and \
                hashlib.sha256(file.read_bytes()).hexdigest() == known.content_hash:
            return self.scan_indexed(known, progress)
        step, timings = self._stepper(progress)
        step(0)
        self.classifier  # noqa: B018 - load the model and prototypes, timed as their own step
        step(1)
        if known is not None:  # changed since: re-index it in place, never into another one
            root = Path(known.metadata.get("_root", known.source_path))
            report = self._ingestor(known.collection).ingest_files([(file, root)])
        else:
            report = self._ingestor(None).ingest([file])
        failed = [f for f in report.files if f.status == "failed"]
        if failed:
            raise DocumentError(file, failed[0].reason)
        document = self.store.document(document_id(file))
        if document is None:  # pragma: no cover - ingest reported success
            raise CorruptDocumentError(file)
        data = file.read_bytes()
        parsed = parser_for(file, data).parse(file, data)
        chunks = self.store.chunks_of(document.id)
        return self.check_document(document, parsed, chunks, step, timings)

    def scan_indexed(self, document: Document,
                     progress: ScanProgressFn | None = None) -> ScanReport:
        """Check an indexed ``document`` where it is: its file is read, nothing is written
        (the index, its collection and its path stay as they are). Returns the
        :class:`ScanReport`.

        Raises :class:`~citewise.errors.DocumentError` when its file is gone, was not
        indexed (status failed), or changed since it was indexed (the message says to
        re-index it first).
        """
        file = Path(document.source_path)
        if document.status != "indexed":
            raise DocumentError(document.path, f"not indexed ({document.error or 'failed'}); "
                                "upload a readable version first")
        try:
            data = file.read_bytes()
        except OSError as err:
            raise DocumentError(document.path, f"its file cannot be read ({err.strerror or err})"
                                "; upload it again") from err
        if hashlib.sha256(data).hexdigest() != document.content_hash:
            raise DocumentError(document.path, "its file changed since it was indexed; "
                                "re-index it (upload it again or run citewise ingest) first")
        step, timings = self._stepper(progress)
        step(0)
        self.classifier  # noqa: B018 - load the model and prototypes, timed as their own step
        step(1)
        parsed = parser_for(file, data).parse(file, data)
        chunks = self.store.chunks_of(document.id)
        return self.check_document(document, parsed, chunks, step, timings)

    @staticmethod
    def _stepper(progress: ScanProgressFn | None
                 ) -> tuple[Callable[[int], None], dict[str, float]]:
        timings: dict[str, float] = {}
        clock = time.perf_counter()

        def step(i: int) -> None:
            nonlocal clock
            now = time.perf_counter()
            if i:
                timings[f"{STEPS[i - 1]}_ms"] = (now - clock) * 1000
            clock = now
            if progress:
                progress(STEPS[i] if i < len(STEPS) else "done", i, len(STEPS))

        return step, timings

    def check_document(self, document: Document, parsed: ParsedDocument,
                       chunks: Sequence[Chunk] = (), step: Callable[[int], None] | None = None,
                       timings: dict[str, float] | None = None) -> ScanReport:
        """Classify and check an already-indexed (or only parsed) document: the classify, check
        and report steps of :meth:`scan`. ``chunks`` tie citations to chunk ids (empty:
        ``chunk_id`` is ""). Returns the :class:`ScanReport`."""
        step = step or (lambda i: None)
        step(2)
        labelled = self.classifier.classify(document_units(parsed), chunks)
        step(3)
        flags = [self._flag(rule, labelled, document, parsed) for rule in self.playbook.rules]
        step(4)
        order = {r.id: i for i, r in enumerate(self.playbook.rules)}
        flags.sort(key=lambda f: (f.severity.rank, _VERDICT_ORDER[f.verdict], order[f.rule]))
        step(5)
        return ScanReport(document, self.playbook.name, tuple(flags),
                          tuple(lab for lab in labelled if lab.scores), dict(timings or {}))

    # --- per rule -----------------------------------------------------------------------
    def ranked(self, rule: Rule, labelled: Sequence[Labelled]) -> list[tuple[float, Labelled]]:
        """Units that are at least possible clauses of the rule's type (score at or above
        the review threshold), best first, with their ranking score."""
        words = [k.casefold() for k in rule.keywords]
        out = []
        for lab in labelled:
            score = lab.score(rule.clause_type)
            if score is None:
                continue
            text = lab.unit.text.casefold()
            bonus = KEYWORD_BONUS if any(w in text for w in words) else 0.0
            out.append((score + bonus, lab))
        out.sort(key=lambda x: (-x[0], x[1].unit.start))
        return out

    def _flag(self, rule: Rule, labelled: Sequence[Labelled], document: Document,
              parsed: ParsedDocument) -> Flag:
        """The verdict rules (docs/scan.md, "What each verdict guarantees"): the candidates
        are judged best first and the result kept is, by preference, a determinate one of a
        confidently found clause, an indeterminate one of such a clause, then the same for
        possible clauses; bare headings are never judged. COMPLIANT and DEVIATES need a
        confidently found clause and a determinate check; anything else cited is
        NEEDS_REVIEW; nothing cited is NOT_FOUND."""
        ctype = rule.clause_type
        found_at = self.classifier.threshold(ctype)
        review_at = self.classifier.review_threshold(ctype)
        base: dict[str, Any] = {"rule": rule.id, "title": rule.title, "clause_type": ctype,
                                "severity": rule.severity, "checker": self.checker.name,
                                "threshold": found_at, "review_threshold": review_at}
        judged: list[tuple[tuple[bool, bool, int], Labelled, CheckResult]] = []
        heading: Labelled | None = None
        for rank, (_, lab) in enumerate(self.ranked(rule, labelled)[: self.candidates]):
            u = lab.unit
            if is_bare_heading(u.text):
                heading = heading or lab
                continue
            score = lab.score(ctype)
            if score is None:  # pragma: no cover - ranked() keeps only scored units
                continue
            result = self.checker.check(rule, Clause(ctype, u.text, u.start, u.end, score))
            if result.verdict is Verdict.NOT_FOUND:
                continue
            confident = ctype in lab.scores
            judged.append(((not confident, not result.determinate, rank), lab, result))
            if confident and result.determinate:
                break
        if not judged:
            if heading is not None:
                return self._cited(base, Verdict.NEEDS_REVIEW, _heading_only(rule, heading),
                                   heading, document, parsed)
            return Flag(**base, verdict=Verdict.NOT_FOUND, explanation=_not_found(rule))
        (unsure, _, _), lab, result = min(judged, key=lambda j: j[0])
        score = lab.score(ctype)
        if unsure:
            why = (f"below the {found_at:.3f} from which one counts as found" if
                   found_at < NEVER_CONFIDENT else "no score finds this type reliably: on "
                   "held-apart contracts too few of the passages it found were such clauses")
            return self._cited(base, Verdict.NEEDS_REVIEW,
                               f"the finder is unsure this is {_a(ctype)} clause (score "
                               f"{score or 0.0:.3f}; {why}); if it is one: {result.reason}",
                               lab, document, parsed, result.span)
        verdict = result.verdict
        if verdict is Verdict.NEEDS_REVIEW:
            reason = f"{result.reason}; read the clause"
        elif verdict is Verdict.DEVIATES and not result.determinate:
            reason = f"{result.reason} in the {len(judged)} {ctype} passage(s) checked"
        else:
            reason = result.reason
        return self._cited(base, verdict, reason, lab, document, parsed, result.span)

    def _cited(self, base: dict[str, Any], verdict: Verdict, explanation: str, lab: Labelled,
               document: Document, parsed: ParsedDocument,
               span: tuple[int, int] | None = None) -> Flag:
        u = lab.unit
        score = lab.score(base["clause_type"])
        decisive = None
        if span is not None and u.start <= span[0] < span[1] <= u.end and span != (u.start,
                                                                                 u.end):
            decisive = span
        return Flag(**base, verdict=verdict, explanation=explanation,
                    citation=_citation(document, parsed, lab, score or 0.0),
                    quote=_clip(u.text), score=score,
                    clause_number=clause_number(parsed, u.start), decisive=decisive,
                    decisive_quote=_clip(parsed.text[decisive[0]:decisive[1]]) if decisive
                    else "")


def _a(word: str) -> str:
    """``word`` with its indefinite article: "an Anti-Assignment", "a Non-Compete"."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def _not_found(rule: Rule) -> str:
    """The explanation of a NOT_FOUND flag, saying what it means for the rule."""
    kind = rule.clause_type
    if rule.expect == "absent":
        return (f"no {kind} clause was found, which is what the rule wants ({rule.accepts}); "
                "this is not proof that the contract has none: the finder can miss a clause "
                "worded unusually, so it is not reported as compliant")
    return (f"no {kind} clause was found; expected: {rule.accepts} The contract may lack "
            "it, or word it unusually: read it before relying on this")


def _heading_only(rule: Rule, heading: Labelled) -> str:
    title = " ".join(heading.unit.text.split())
    want = "must not appear" if rule.expect == "absent" else "is expected"
    return (f"only the heading {title!r} matched {_a(rule.clause_type)} clause (which {want}); "
            "no clause text under it was judged: read the section")


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…"


def _block_at(parsed: ParsedDocument, offset: int) -> Block | None:
    return next((b for b in parsed.blocks if b.start <= offset < b.end), None)


def _citation(document: Document, parsed: ParsedDocument, lab: Labelled,
              score: float) -> Citation:
    u = lab.unit
    block = _block_at(parsed, u.start)
    chunk = lab.chunk
    line_start = line_end = None
    if block is not None and block.line_start is not None:
        line_start = block.line_start + parsed.text.count("\n", block.start, u.start)
        line_end = line_start + u.text.count("\n")
    section = block.section if block is not None and block.section else (
        chunk.section if chunk else ())
    page = block.page if block is not None and block.page is not None else (
        chunk.page if chunk else None)
    return Citation(n=1, chunk_id=chunk.id if chunk else "", document_id=document.id,
                    path=document.path, title=document.title, section=tuple(section), page=page,
                    line_start=line_start, line_end=line_end, char_start=u.start,
                    char_end=u.end, score=score)
