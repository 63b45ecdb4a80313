"""The ingest pipeline: scan, hash, diff, parse, chunk, embed, upsert, delete, with progress.

For each file under the given paths:

1. read its bytes and hash them (sha256); a file whose hash and ingest settings (model, chunk
   size) match the stored document is *unchanged* and skipped;
2. parse it (:mod:`citewise.ingest.parsers`), chunk it (:mod:`citewise.ingest.chunking`);
3. detect each chunk's language and analyse its text for BM25 with that language's stemmer
   (:mod:`citewise.text.analysis`); embed chunks whose content hash has no stored vector
   yet (batched across files);
4. write the document with all its chunks and vectors in one transaction (``upsert_document``).

A file that cannot be indexed is reported with its path and reason and the rest go on; if it
was indexed before, its old chunks are removed so nothing stale is answered from. Files under
an ingested folder that no longer exist are deleted; ``prune=True`` also deletes documents
whose files are gone anywhere.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from citewise.config import Settings
from citewise.embed import Embedder
from citewise.errors import DocumentError, EmptyDocumentError, TooLargeDocumentError
from citewise.ingest.chunking import chunk_document, content_hash, embedding_text
from citewise.ingest.confine import refusal
from citewise.ingest.parsers.base import ParseOptions, parse_options, parser_for, registered
from citewise.store.base import FileBacked, Store
from citewise.text.analysis import ANALYZER_VERSION, analyze
from citewise.text.language import detect_language
from citewise.types import Chunk, Document, ParsedDocument

#: Folders never descended into.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".tox"})
#: Suffixes of files a folder's ingest leaves out, reported as ``skipped``: images (SVG
#: included: its text is drawing instructions), audio, video, fonts, archives and compiled
#: programs, the assets a docs site or a code repository keeps beside its pages. None of them
#: has text to index (OCR reads scanned PDF pages, not image files); left in, each one would be
#: a ``failed`` line, and an SVG would be indexed as thousands of chunks of path data. A file
#: named on its own is still read and fails with its reason.
MEDIA_SUFFIXES = frozenset(
    ".png .jpg .jpeg .gif .bmp .tif .tiff .webp .ico .icns .svg .svgz .heic .avif .psd .eps "
    ".mp3 .wav .flac .ogg .oga .m4a .aac .wma .mp4 .m4v .mov .avi .mkv .webm .wmv .flv "
    ".woff .woff2 .ttf .otf .eot .zip .gz .tgz .bz2 .xz .7z .rar .tar .zst .jar .whl .egg "
    ".exe .dll .so .dylib .bin .o .a .obj .class .pyc .pyo .wasm".split())
#: The reason given for a file of :data:`MEDIA_SUFFIXES` under an ingested folder.
MEDIA_REASON = ("an image, audio, video, font, archive or program file: citewise reads "
                "documents and source code; skipped")
#: Version of what the parsers and the chunker make of a file's bytes, part of every
#: document's ingest fingerprint: raised with each change to that output, so the next ingest
#: after an upgrade re-reads files whose bytes did not change instead of keeping the older
#: version's blocks (their chunks' vectors are reused wherever a chunk's embedded text is the
#: same: the embedding cache is keyed by it). 2: Markdown headings without their attribute
#: lists (``{ #id }``); 3: Sphinx roles and directives in reStructuredText; 4: a sentence
#: does not end before a word in lower case ("PATH... adds", "e.g. the").
PARSE_VERSION = 4
#: The reason given for a 0-byte source or marker file under an ingested folder
#: (:func:`is_empty_marker`; an empty document, a file named on its own, an upload or a file
#: a watch sees change that is empty fails, naming the file).
EMPTY_REASON = "empty file (0 bytes): nothing to index; skipped"
#: Room left in each chunk for the title/section prefix of :func:`embedding_text`.
PREFIX_TOKENS = 40


@dataclass(frozen=True)
class FileResult:
    """What happened to one file: ``status`` is added, updated, unchanged, deleted, failed
    or skipped (under an ingested folder, a media file, :data:`MEDIA_SUFFIXES`, or a 0-byte
    source or marker file, :func:`is_empty_marker`)."""

    path: str
    status: str
    chunks: int = 0
    reason: str = ""
    warnings: tuple[str, ...] = ()


@dataclass
class IngestReport:
    files: list[FileResult] = field(default_factory=list)
    seconds: float = 0.0
    embedded: int = 0  # chunks embedded in this run (the others came from the cache)

    def count(self, status: str) -> int:
        return sum(1 for f in self.files if f.status == status)

    @property
    def chunks(self) -> int:
        return sum(f.chunks for f in self.files if f.status in ("added", "updated"))


ProgressFn = Callable[[str, int, int], None]  # (message, done, total)


def document_id(source_path: Path) -> str:
    """Stable id of a file: sha256 of its absolute path (two same-named files differ)."""
    return hashlib.sha256(str(source_path).encode("utf-8", "surrogatepass")).hexdigest()[:24]


def walk_files(root: Path) -> Iterator[Path]:
    """The files under ``root`` an ingest looks at, in sorted order: ``root`` itself when it
    is not a folder, else every file under it except hidden ones (a name starting with ``.``)
    and those inside hidden folders or :data:`SKIP_DIRS`. Media files (:func:`is_media`) are
    among them: the ingest reports them as skipped."""
    if not root.is_dir():
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                yield Path(dirpath) / name


def is_media(path: Path) -> bool:
    """Whether ``path`` has a suffix of :data:`MEDIA_SUFFIXES` (any case): a file a folder's
    ingest skips."""
    return path.suffix.lower() in MEDIA_SUFFIXES


def is_empty_marker(path: Path) -> bool:
    """Whether ``path`` is a 0-byte file that is no document: source code (an empty
    ``__init__.py``) or a name no document parser claims (a ``py.typed`` marker). An empty
    PDF, Word, Markdown, HTML or text file is a broken document, reported as failed (case
    C06). False when the file cannot be read: the ingest then reports why."""
    try:
        if path.stat().st_size != 0:
            return False
    except OSError:
        return False
    suffix = path.suffix.lower()
    owner = next((e.format for e in registered().values() if suffix in e.suffixes), None)
    return owner is None or owner == "code"


def skipped(path: Path, root: Path) -> bool:
    """Whether an ingest of the folder ``root`` leaves out ``path`` (a file or folder under
    it): a hidden name, a hidden or :data:`SKIP_DIRS` folder on the way to it, or a media
    file (:func:`is_media`)."""
    parts = path.relative_to(root).parts
    if any(part.startswith(".") for part in parts):
        return True
    if path != root and is_media(path) and not path.is_dir():
        return True
    return any(part in SKIP_DIRS for part in parts[:-1]) or (
        bool(parts) and parts[-1] in SKIP_DIRS and path.is_dir())


def _display_path(file: Path, root: Path, collections: Path | None = None) -> str:
    """Path shown to users: relative to the ingested folder, prefixed by its name; for a
    collection folder (a folder directly in ``collections``, where uploads are stored) the
    path inside it, so an upload's identity is its relative path in its collection."""
    if root.is_file():
        return file.name
    if collections is not None and root.parent == collections:
        return file.relative_to(root).as_posix()
    return (Path(root.name) / file.relative_to(root)).as_posix()


def parse_file(file: Path, data: bytes, display: str | None = None,
               options: ParseOptions | None = None) -> ParsedDocument:
    """``data`` (the bytes of ``file``; its suffix picks the parser) parsed for indexing,
    with ``options`` (OCR, page limit, page progress; default: none of them).

    Raises DocumentError naming ``display`` (default: the file name) when there is nothing
    to index or it cannot be parsed; ``err.detail`` is the reason the ingest records.
    """
    display = display or file.name
    try:
        if not data.strip():
            raise EmptyDocumentError(display)
        with parse_options(options or ParseOptions()):
            parsed = parser_for(file, data).parse(file, data)
        if not parsed.blocks:
            raise EmptyDocumentError(display)
    except DocumentError:
        raise
    except Exception as err:  # noqa: BLE001 - any parser failure is this file's problem
        raise DocumentError(display, f"cannot parse ({type(err).__name__}: {err}); please "
                            "report this file") from err
    return parsed


@dataclass
class _Prepared:
    document: Document
    chunks: list[Chunk]
    texts: list[str]  # what is embedded, per chunk
    status: str


class Ingestor:
    """Runs the pipeline against one store with one embedder; the documents it writes belong
    to ``collection`` (default: ``settings.collection``)."""

    def __init__(self, settings: Settings, store: Store, embedder: Embedder,
                 collection: str | None = None) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.collection = collection or settings.collection
        self.collections = (settings.home / "collections").expanduser().resolve()
        self.max_tokens = max(16, min(settings.chunk_tokens, embedder.max_tokens) - PREFIX_TOKENS)
        store.bind_model(embedder.name, embedder.dim)
        store.bind_analyzer(ANALYZER_VERSION)  # AnalyzerMismatchError: run citewise reindex
        # a change of these re-chunks unchanged files on the next ingest (turning OCR on
        # re-reads the files that had pages without text; a new PARSE_VERSION re-reads all)
        self.fingerprint = (f"{embedder.name}:{self.max_tokens}:{settings.chunk_overlap}:"
                            f"p{PARSE_VERSION}" + (
                                f":ocr{settings.ocr_dpi}" if settings.ocr else ""))
        self.ocr = None
        if settings.ocr:  # ConfigError now, before any file, when the engine is missing
            from citewise.ingest.ocr import load_ocr

            self.ocr = load_ocr(settings.threads)

    # --- public ---------------------------------------------------------------------------
    def ingest(
        self, paths: Sequence[str | Path], prune: bool = False,
        progress: ProgressFn | None = None, within: Sequence[Path] | None = None,
    ) -> IngestReport:
        """Index files and folders; returns the per-file report. Never raises for a bad file.
        ``within``: the resolved folders a confined ingest may read
        (:mod:`citewise.ingest.confine`); a file whose resolved path is elsewhere (a symlink
        out of them, a system file) is reported failed and not read."""
        started = time.perf_counter()
        report = IngestReport()
        roots = [Path(p).expanduser().resolve() for p in paths]
        files: list[tuple[Path, Path]] = []
        # skipped, with the reason: media files and 0-byte markers under a folder
        left_out: list[tuple[Path, Path, str]] = []
        for root in roots:
            if not root.exists():
                report.files.append(FileResult(str(root), "failed",
                                               reason="no such file or folder"))
                continue
            # None: the index is on a server
            index_file = self.store.path if isinstance(self.store, FileBacked) else None
            for f in walk_files(root):
                if index_file is not None and f.name.startswith(index_file.name):
                    continue  # the index itself, its -wal/-shm
                why = refusal(f.resolve(), within) if within is not None else None
                if why:
                    report.files.append(FileResult(
                        _display_path(f, root, self.collections), "failed", reason=why))
                    continue
                if not f.is_file():  # FIFOs, sockets, devices: reading one could block forever
                    report.files.append(FileResult(
                        _display_path(f, root, self.collections), "failed",
                        reason="not a regular file (pipe, socket or device); skipped"))
                    continue
                if f != root and is_media(f):
                    left_out.append((f, root, MEDIA_REASON))
                    continue
                if f != root and is_empty_marker(f):
                    # a marker (an empty __init__.py, py.typed), not a document
                    left_out.append((f, root, EMPTY_REASON))
                    continue
                files.append((f, root))
        known = {d.source_path: d for d in self.store.documents()}
        for f, root, why in left_out:
            # an earlier version indexed it (an SVG as text) or recorded its failure: the
            # entry goes, so no path data is answered from and no stale failure is listed
            old = known.pop(str(f), None)
            if old is not None:
                self.store.delete_document(old.id)
            report.files.append(FileResult(_display_path(f, root, self.collections),
                                           "skipped", reason=why))
        seen = {str(f) for f, _ in files} | {str(f) for f, _, _ in left_out}
        for doc in known.values():
            under_root = any(
                r.is_dir() and Path(doc.source_path).is_relative_to(r) for r in roots
            )
            gone = doc.source_path not in seen and not Path(doc.source_path).exists()
            if gone and (under_root or prune):
                self.store.delete_document(doc.id)
                report.files.append(FileResult(doc.path, "deleted"))

        self._ingest_files(files, known, report, progress)
        report.seconds = time.perf_counter() - started
        return report

    def ingest_files(self, files: Sequence[tuple[Path, Path]],
                     progress: ProgressFn | None = None) -> IngestReport:
        """Index exact ``(file, root)`` pairs (``root`` decides the displayed path)."""
        started = time.perf_counter()
        report = IngestReport()
        known = {d.source_path: d for d in self.store.documents()}
        self._ingest_files(list(files), known, report, progress)
        report.seconds = time.perf_counter() - started
        return report

    def _ingest_files(self, files: list[tuple[Path, Path]], known: dict[str, Document],
                      report: IngestReport, progress: ProgressFn | None) -> None:
        batch: list[_Prepared] = []
        batch_chunks = 0
        for i, (file, root) in enumerate(files):
            display = _display_path(file, root, self.collections)
            if progress:
                progress(display, i, len(files))

            def page_done(page: int, pages: int, display: str = display, i: int = i) -> None:
                if progress:
                    progress(f"{display}: page {page}/{pages}", i, len(files))

            result = self._prepare(file, root, known.get(str(file)), page_done)
            if isinstance(result, FileResult):
                report.files.append(result)
                continue
            batch.append(result)
            batch_chunks += len(result.chunks)
            if batch_chunks >= 256:
                self._write(batch, report)
                batch, batch_chunks = [], 0
        if batch:
            self._write(batch, report)
        if progress:
            progress("done", len(files), len(files))

    def index_parsed(
        self, items: Iterable[tuple[str, str, ParsedDocument]], progress: ProgressFn | None = None,
        total: int = 0,
    ) -> IngestReport:
        """Index already-parsed documents given as ``(id, path, parsed)`` (datasets, tests)."""
        started = time.perf_counter()
        report = IngestReport()
        batch: list[_Prepared] = []
        n = 0
        for n, (doc_id, path, parsed) in enumerate(items, start=1):
            digest = hashlib.sha256(parsed.text.encode("utf-8", "surrogatepass")).hexdigest()
            doc = Document(id=doc_id, path=path, source_path=f"dataset:{path}",
                           title=parsed.title, format=parsed.format, content_hash=digest,
                           collection=self.collection)
            batch.append(self._chunked(doc, parsed, "added"))
            if sum(len(p.chunks) for p in batch) >= 256:
                self._write(batch, report)
                batch = []
                if progress:
                    progress(path, n, total)
        if batch:
            self._write(batch, report)
        if progress:
            progress("done", n, total or n)
        report.seconds = time.perf_counter() - started
        return report

    # --- steps ----------------------------------------------------------------------------
    def options(self, page_progress: Callable[[int, int], None] | None = None) -> ParseOptions:
        """The parse options of this ingest's settings (OCR, page limit)."""
        return ParseOptions(ocr=self.ocr, ocr_dpi=self.settings.ocr_dpi,
                            max_pages=self.settings.max_pages, page_progress=page_progress)

    def _prepare(self, file: Path, root: Path, old: Document | None,
                 page_progress: Callable[[int, int], None] | None = None,
                 ) -> _Prepared | FileResult:
        display = _display_path(file, root, self.collections)
        doc = Document(
            id=document_id(file), path=display, source_path=str(file), title=file.stem,
            format=file.suffix.lstrip(".").lower() or "text", content_hash="",
            metadata={"_root": str(root)}, collection=self.collection,
        )
        try:
            size = file.stat().st_size
            if size > self.settings.max_file_mb * 2**20:  # before reading a byte of it
                raise TooLargeDocumentError(
                    display, f"{size / 2**20:.1f} MiB, larger than the limit of "
                    f"{self.settings.max_file_mb:g} MiB (CITEWISE_MAX_FILE_MB); raise the "
                    "limit or split the file")
            data = file.read_bytes()
        except OSError as err:
            return FileResult(display, "failed", reason=f"cannot read: {err.strerror or err}")
        except TooLargeDocumentError as err:
            self.store.record_failure(replace(
                doc, error=err.detail, error_kind=err.kind,
                metadata={**doc.metadata, "_fingerprint": self.fingerprint}))
            return FileResult(display, "failed", reason=err.detail)
        digest = hashlib.sha256(data).hexdigest()
        doc = replace(doc, content_hash=digest)
        if old is not None and old.content_hash == digest and \
                old.metadata.get("_fingerprint") == self.fingerprint and \
                old.collection == self.collection:
            if old.status == "failed":
                return FileResult(display, "failed", reason=old.error)
            return FileResult(display, "unchanged", chunks=old.chunk_count)
        try:
            parsed = parse_file(file, data, display, self.options(page_progress))
        except DocumentError as err:  # one bad file never stops the batch
            reason = err.detail
            # replaces any older version atomically, so nothing stale is answered from
            self.store.record_failure(replace(
                doc, error=reason, error_kind=err.kind, metadata={**doc.metadata, "_fingerprint": self.fingerprint}
            ))
            return FileResult(display, "failed", reason=reason)
        doc = replace(doc, title=parsed.title or file.stem, format=parsed.format,
                      pages=parsed.pages)
        return self._chunked(
            doc, parsed, "updated" if old is not None and old.status == "indexed" else "added"
        )

    def _chunked(self, doc: Document, parsed: ParsedDocument, status: str) -> _Prepared:
        chunks = chunk_document(
            doc.id, parsed, self.embedder.count_tokens, self.max_tokens,
            self.settings.chunk_overlap,
        )
        texts = [embedding_text(doc.title, c) for c in chunks]
        chunks = [replace(c, content_hash=content_hash(t), language=detect_language(t))
                  for c, t in zip(chunks, texts, strict=True)]
        metadata = {**parsed.metadata,
                    **{k: v for k, v in doc.metadata.items() if k.startswith("_")},
                    "_fingerprint": self.fingerprint}
        doc = replace(doc, metadata=metadata, warnings=parsed.warnings, pages=parsed.pages,
                      chunk_count=len(chunks), title=doc.title or parsed.title)
        return _Prepared(doc, chunks, texts, status)

    def _write(self, batch: list[_Prepared], report: IngestReport) -> None:
        hashes = [c.content_hash for p in batch for c in p.chunks]
        cached = self.store.cached_vectors(hashes)
        missing: dict[str, str] = {}
        for p in batch:
            for c, t in zip(p.chunks, p.texts, strict=True):
                if c.content_hash not in cached:
                    missing.setdefault(c.content_hash, t)
        if missing:
            vectors = self.embedder.embed_documents(list(missing.values()))
            cached.update(zip(missing, vectors, strict=True))
            report.embedded += len(missing)
        for p in batch:
            if p.chunks:
                vectors = np.stack([cached[c.content_hash] for c in p.chunks])
            else:
                vectors = np.zeros((0, self.embedder.dim), dtype=np.float32)
            terms = [analyze(t, c.language) for c, t in zip(p.chunks, p.texts, strict=True)]
            self.store.upsert_document(p.document, p.chunks, vectors, terms)
            report.files.append(
                FileResult(p.document.path, p.status, len(p.chunks), warnings=p.document.warnings)
            )


def reanalyze(store: Store, progress: ProgressFn | None = None) -> IngestReport:
    """Recompute every chunk's language and BM25 terms from its stored text with the current
    analysis, keeping chunks and vectors (nothing is re-embedded, no file is read), then record
    :data:`~citewise.text.analysis.ANALYZER_VERSION` in the store.

    Each document is rewritten in one transaction, so an interrupted run leaves whole
    documents and can be run again. Returns a report with one ``updated`` entry per document.
    """
    started = time.perf_counter()
    report = IngestReport()
    documents = [d for d in store.documents() if d.status == "indexed"]
    for i, doc in enumerate(documents):
        if progress:
            progress(doc.path, i, len(documents))
        chunks, vectors, _ = store.export(doc.id)
        texts = [embedding_text(doc.title, c) for c in chunks]
        chunks = [replace(c, language=detect_language(t))
                  for c, t in zip(chunks, texts, strict=True)]
        terms = [analyze(t, c.language) for c, t in zip(chunks, texts, strict=True)]
        store.upsert_document(doc, chunks, vectors, terms)
        report.files.append(FileResult(doc.path, "updated", len(chunks)))
    store.bind_analyzer(ANALYZER_VERSION, force=True)
    if progress:
        progress("done", len(documents), len(documents))
    report.seconds = time.perf_counter() - started
    return report
