"""Frozen dataclasses shared by the pipeline stages.

Stages return new values (``dataclasses.replace``) instead of mutating these. Character offsets
are Python string indices (code points) into a document's extracted text, ``end`` exclusive.
Pages and lines are 1-based, as a viewer or editor shows them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal


class BlockKind(str, Enum):
    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST = "list"
    TABLE = "table"
    CODE = "code"


@dataclass(frozen=True)
class Block:
    """One structural unit of a parsed document.

    ``text`` is what is indexed; ``start``/``end`` locate it in :attr:`ParsedDocument.text`.
    For tables, ``header`` is the header row (repeated at the top of every chunk of rows) and
    ``text`` holds one row per line. ``symbol`` names the class or function of a code block.
    """

    kind: BlockKind
    text: str
    start: int
    end: int
    section: tuple[str, ...] = ()
    page: int | None = None
    line_start: int | None = None
    line_end: int | None = None
    header: str | None = None
    symbol: str | None = None
    level: int = 0
    #: ``(offset, page)`` for each page after the first that a block spanning pages reaches
    #: (offsets into the document text), e.g. a table rejoined across a page break
    page_starts: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class ParsedDocument:
    """What a parser returns: the extracted text, its blocks, and metadata.

    ``warnings`` are per-page or per-part problems that did not stop the parse (for example
    "page 2: no extractable text, OCR needed").
    """

    text: str
    blocks: tuple[Block, ...]
    format: str
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    pages: int | None = None


@dataclass(frozen=True)
class Document:
    """An indexed file. ``id`` is stable for a file's absolute path; ``path`` is what users see
    (relative to the folder it was ingested from, prefixed by that folder's name)."""

    id: str
    path: str
    source_path: str
    title: str
    format: str
    content_hash: str
    chunk_count: int = 0
    pages: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    indexed_at: float = 0.0
    #: "indexed", or "failed" for a file that could not be read (``error`` says why); a failed
    #: document has no chunks and is kept only so users and answers can be told about it.
    status: str = "indexed"
    error: str = ""
    #: a failed document's kind of failure (:attr:`citewise.errors.DocumentError.kind`:
    #: ``empty``, ``corrupt``, ``encoding``, ``too_large``...; ``""`` when indexed, or for a
    #: failure recorded before kinds were stored that is not an empty file)
    error_kind: str = ""
    #: the collection the document belongs to; API keys are granted read access per
    #: collection (``CITEWISE_API_KEYS``) and searches filter on it before ranking
    collection: str = "default"

    def page_label(self, page: int | None) -> str | None:
        """The printed label of 1-based physical ``page`` (a PDF's /PageLabels, such as "iii"
        or "3", in ``metadata["page_labels"]``); None when the file has none for it."""
        labels = self.metadata.get("page_labels") if self.metadata else None
        if page is None or not labels or not 1 <= page <= len(labels):
            return None
        return str(labels[page - 1]) or None


@dataclass(frozen=True)
class Chunk:
    """A retrievable passage.

    ``text`` is what is embedded and searched (a table chunk starts with its header row);
    ``source_text`` is the whole original paragraph(s) it came from, for the source viewer.
    ``char_start``/``char_end`` locate ``source_text``'s cited part in the document text.
    ``page``/``page_end`` are the first and last page the chunk touches; ``page_starts`` holds
    ``(char_offset, page)`` for each page the chunk touches, in order (the document offset where
    the chunk's text on that page begins), so a cited part is given the page it is on
    (:meth:`page_at`), not the chunk's first page.
    """

    id: str
    document_id: str
    ordinal: int
    text: str
    source_text: str
    char_start: int
    char_end: int
    section: tuple[str, ...] = ()
    page: int | None = None
    page_end: int | None = None
    line_start: int | None = None
    line_end: int | None = None
    symbol: str | None = None
    content_hash: str = ""
    token_count: int = 0
    #: ISO 639-1 code of the chunk's detected language (``"und"`` when undetermined, ``""``
    #: when not recorded), see :func:`citewise.text.language.detect_language`.
    language: str = ""
    page_starts: tuple[tuple[int, int], ...] = ()

    def page_at(self, offset: int) -> int | None:
        """The page holding document character ``offset`` (within the chunk): the last page
        starting at or before it; the chunk's first page when pages were not recorded."""
        page = self.page
        for start, number in self.page_starts:
            if start > offset:
                break
            page = number
        return page


HitSource = Literal["dense", "sparse", "hybrid"]


@dataclass(frozen=True)
class Hit:
    """A chunk found by retrieval, with the score of every stage it went through.

    ``score`` is the current stage's score; higher is always more relevant. Stage scores:
    ``dense`` cosine similarity in [-1, 1]; ``sparse`` BM25 (unbounded, >= 0); ``fused`` the
    fusion strategy's score; ``rerank`` the cross-encoder's logit; ``relevance`` the final
    calibrated score in [0, 1] compared against ``Settings.min_score``.
    """

    chunk_id: str
    score: float
    source: HitSource = "dense"
    dense: float | None = None
    sparse: float | None = None
    fused: float | None = None
    rerank: float | None = None
    relevance: float | None = None
    chunk: Chunk | None = None
    document: Document | None = None
    #: other documents holding the same passage (exact or near duplicate, case C19), shown
    #: as one source with this hit instead of taking result slots of their own
    duplicates: tuple[Document, ...] = ()


@dataclass(frozen=True)
class Citation:
    """Where a statement comes from: number ``n`` as printed in the answer text ``[n]``.

    ``format`` is the cited document's :attr:`Document.format` (``"code"`` for source files);
    ``symbol`` the class or function a code chunk holds (``Class.method``), if one.
    """

    n: int
    chunk_id: str
    document_id: str
    path: str
    title: str
    section: tuple[str, ...]
    page: int | None
    line_start: int | None
    line_end: int | None
    char_start: int
    char_end: int
    score: float
    symbol: str | None = None
    format: str = ""
    #: the page as the file prints it (PDF /PageLabels: "iii", "3"), None without labels
    page_label: str | None = None
    #: the last page of a cited part that runs over a page break (None: only ``page``)
    page_end: int | None = None
    page_end_label: str | None = None
    #: paths of the other files holding the same passage (duplicates collapsed into this one)
    also_in: tuple[str, ...] = ()

    @property
    def page_text(self) -> str | None:
        """``p. 5``, or ``p. 3 (PDF page 5)`` when the printed label differs from the 1-based
        physical page; ``pp. 1-2`` (``pp. 2-3 (PDF pages 4-5)``) for a part over a page
        break; ``slide 3`` (``slides 3-4``) for a presentation; None without a page."""
        if self.page is None:
            return None
        end = self.page_end if self.page_end is not None and self.page_end > self.page else None
        if self.format == "pptx":  # a presentation's pages are its slides
            return f"slides {self.page}-{end}" if end else f"slide {self.page}"
        label = self.page_label if self.page_label and self.page_label != str(self.page) else None
        if end is None:
            return f"p. {label} (PDF page {self.page})" if label else f"p. {self.page}"
        if label or (self.page_end_label and self.page_end_label != str(end)):
            shown = f"{self.page_label or self.page}-{self.page_end_label or end}"
            return f"pp. {shown} (PDF pages {self.page}-{end})"
        return f"pp. {self.page}-{end}"

    @property
    def location(self) -> str:
        """For display: ``path`` (with the other files holding the same text, if any), then
        the page (:attr:`page_text`) or ``lines A-B`` (a spreadsheet's ``row N`` or
        ``rows A-B``, its section being the sheet), the
        symbol and the section path, joined by ", "; source code reads ``path:A-B, symbol``
        (as editors and compilers print locations)."""
        if self.format == "code" and self.line_start is not None:
            head = f"{self.path}:{self.line_start}-{self.line_end or self.line_start}"
            return ", ".join(p for p in (head, self.symbol, " > ".join(self.section)) if p)
        parts = [self.path + (f" (same text in {', '.join(self.also_in)})"
                              if self.also_in else "")]
        if self.page_text is not None:
            parts.append(self.page_text)
        elif self.line_start is not None and self.format == "xlsx":  # a sheet's rows
            end = self.line_end or self.line_start
            parts.append(f"row {end}" if end == self.line_start
                         else f"rows {self.line_start}-{end}")
        elif self.line_start is not None:
            parts.append(f"lines {self.line_start}-{self.line_end or self.line_start}")
        if self.symbol:
            parts.append(self.symbol)
        if self.section:
            parts.append(" > ".join(self.section))
        return ", ".join(parts)


@dataclass(frozen=True)
class Evidence:
    """A selected hit with its citation number, ready for an answerer."""

    citation: Citation
    hit: Hit

    @property
    def chunk(self) -> Chunk:
        assert self.hit.chunk is not None
        return self.hit.chunk


@dataclass(frozen=True)
class SentenceSupport:
    """How well one answer sentence is supported by the passages it cites.

    ``support`` in [0, 1], higher is better (see :mod:`citewise.answer.grounding`);
    ``citations`` are the passage numbers the sentence cites (empty: uncited).
    """

    text: str
    citations: tuple[int, ...]
    support: float
    supported: bool


@dataclass(frozen=True)
class Answer:
    """A finished answer. ``found`` is False when the documents do not contain the answer,
    in which case ``citations`` is empty.

    ``citations`` are the numbered sources given to the answerer (``[n]`` in ``text`` refers to
    ``citations[n - 1]``); ``cited`` the numbers the text actually uses. ``mode`` says who wrote
    it; ``fallback_reason`` is set when an LLM was configured but the extractive answer was
    given instead. ``support`` holds the per-sentence grounding check of an LLM answer.
    """

    question: str
    text: str
    citations: tuple[Citation, ...]
    found: bool
    mode: Literal["extractive", "llm", "none"]
    metrics: dict[str, float] = field(default_factory=dict)
    cited: tuple[int, ...] = ()
    support: tuple[SentenceSupport, ...] = ()
    model: str | None = None
    fallback_reason: str | None = None

    @property
    def unsupported(self) -> tuple[SentenceSupport, ...]:
        """Sentences of the answer that their citations do not support."""
        return tuple(s for s in self.support if not s.supported)


# --- events (rendered by the CLI, the SSE stream and the UI) --------------------------------


@dataclass(frozen=True)
class StatusEvent:
    message: str
    stage: str
    type: Literal["status"] = "status"


@dataclass(frozen=True)
class TokenEvent:
    content: str
    type: Literal["token"] = "token"


@dataclass(frozen=True)
class DoneEvent:
    answer: Answer
    type: Literal["done"] = "done"


@dataclass(frozen=True)
class ErrorEvent:
    message: str
    code: str
    type: Literal["error"] = "error"


@dataclass(frozen=True)
class ThinkingEvent:
    """A line of the planner's plan, shown to the user as the assistant's reasoning."""

    message: str
    type: Literal["thinking"] = "thinking"


@dataclass(frozen=True)
class ToolCallEvent:
    """The agent runs ``tool`` (search, ingest, scan) with ``input``."""

    tool: str
    input: dict[str, Any]
    type: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True)
class ToolResultEvent:
    """What ``tool`` returned, as JSON-ready data."""

    tool: str
    result: dict[str, Any]
    type: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True)
class InterruptEvent:
    """An action that changes the collection waits for approval: resume the conversation
    with ``resume_token`` to approve or reject it. The stream ends after this event."""

    action: str
    input: dict[str, Any]
    resume_token: str
    type: Literal["interrupt"] = "interrupt"


Event = (StatusEvent | TokenEvent | DoneEvent | ErrorEvent | ThinkingEvent | ToolCallEvent
         | ToolResultEvent | InterruptEvent)
