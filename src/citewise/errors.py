"""The one exception tree of citewise.

Every error a user can meet derives from :class:`CitewiseError` and carries a message that names
the file or field at fault and what to do about it. Stages raise these; only the edges (the CLI,
later the HTTP API) translate them into exit codes or statuses::

    CitewiseError
    ├── ConfigError                 a setting is invalid or missing
    ├── DocumentError               one input file cannot be indexed (the ingest goes on)
    │   ├── UnsupportedFormatError  binary or unknown content
    │   ├── EmptyDocumentError      zero bytes, whitespace only, front matter only
    │   ├── NoTextLayerError        a PDF with no extractable text (OCR needed)
    │   ├── EncryptedDocumentError  a password is needed to open it
    │   ├── CorruptDocumentError    truncated or malformed file
    │   ├── TooLargeDocumentError   more pages or bytes than the ingest limits
    │   └── EncodingError           the text encoding could not be detected
    ├── IndexError_                 the index on disk is unusable as configured
    │   ├── EmbeddingMismatchError  the index was built with another embedding model
    │   ├── AnalyzerMismatchError   its BM25 terms were made by another text analysis
    │   └── ShardUnavailableError   a server of a sharded collection cannot be reached
    ├── ModelError                  a model cannot be loaded (missing extra, bad path,
    │                               a bundled file that fails its checksum)
    ├── ProviderError               the LLM provider failed (unreachable, timeout, HTTP error,
    │                               empty output); answers fall back to extractive
    ├── QueryError                  the question is empty or unusable
    │   └── QueryTooLongError       longer than the API accepts (max_request_chars)
    ├── NotFoundError               no chat, message, source, document or pending action
    │                               with that id
    ├── UploadError                 an uploaded file is refused (name, type)
    │   └── UploadTooLargeError     larger than max_upload_mb
    └── DesktopError                the desktop window cannot open (the desktop extra is
                                    missing, no display) or its local server cannot start

The HTTP API maps them to statuses in one place (``citewise.api.app``): QueryError 422,
QueryTooLongError and UploadTooLargeError 413, NotFoundError 404, UploadError 400,
DocumentError 422, IndexError_ 409, ProviderError 502, ConfigError and ModelError 503.
"""

from __future__ import annotations

from pathlib import Path


class CitewiseError(Exception):
    """Base of every citewise error; ``str(err)`` is a complete, user-facing message."""


class ConfigError(CitewiseError):
    """A setting is invalid; the message names the setting (``CITEWISE_<NAME>``)."""


class DocumentError(CitewiseError):
    """One file cannot be indexed. Carries the path and a short reason; the ingest goes on."""

    reason = "cannot be indexed"
    #: what kind of failure this is, stored with the failed document (``Document.error_kind``)
    #: so that later steps tell failures apart without reading the message
    kind = "unreadable"

    def __init__(self, path: str | Path, detail: str | None = None) -> None:
        self.path = str(path)
        self.detail = detail or self.reason
        super().__init__(f"{self.path}: {self.detail}")


class UnsupportedFormatError(DocumentError):
    kind = "unsupported"
    reason = "unsupported or binary content; convert it to PDF, DOCX, HTML, Markdown or text"


class EmptyDocumentError(DocumentError):
    """A file with no text to index; the detail ends with what to do about it."""

    kind = "empty"
    reason = "empty file: no text to index"
    #: what the user can do, appended to every detail
    remedy = "it was skipped: add text to it and ingest again, or leave it out of the folder"

    def __init__(self, path: str | Path, detail: str | None = None) -> None:
        super().__init__(path, f"{detail or self.reason}; {self.remedy}")


class NoTextLayerError(DocumentError):
    kind = "no_text_layer"
    reason = ("no extractable text (scanned image?): OCR needed before it can be indexed; set "
              "CITEWISE_OCR=true (pip install 'citewise[ocr]') and ingest it again")


class TooLargeDocumentError(DocumentError):
    kind = "too_large"
    reason = "larger than the ingest limits (CITEWISE_MAX_PAGES, CITEWISE_MAX_FILE_MB)"


class EncryptedDocumentError(DocumentError):
    kind = "encrypted"
    reason = "password-protected PDF: remove the password and ingest it again"


class CorruptDocumentError(DocumentError):
    kind = "corrupt"
    reason = "corrupt or truncated file: re-export or re-download it"


class EncodingError(DocumentError):
    kind = "encoding"
    reason = "text encoding could not be detected: save it as UTF-8 and ingest it again"


class IndexError_(CitewiseError):  # noqa: N801 - avoid shadowing the builtin IndexError
    """The index on disk cannot be used as configured."""


class ShardUnavailableError(IndexError_):
    """A server holding a shard of a sharded collection (``CITEWISE_POSTGRES_SHARDS``) cannot
    be reached or failed mid-query. Searches and writes stop instead of answering from the
    other shards (a partial answer would silently miss documents); the message names the
    shard, its server (password hidden) and what to do."""

    def __init__(self, shard: int, shards: int, location: str, detail: str) -> None:
        self.shard, self.shards, self.location = shard, shards, location
        super().__init__(
            f"shard {shard} of {shards} of the sharded index ({location}) cannot be used: "
            f"{detail.strip()}. Every search and write needs all {shards} shards: start that "
            "server (or fix CITEWISE_POSTGRES_SHARDS if its address changed) and retry")


class IndexChangedError(IndexError_):
    """The index was written (an upload or delete) while a replacement was built beside it:
    nothing was switched, so that write is kept (``citewise reindex`` builds again)."""


class EmbeddingMismatchError(IndexError_):
    """The index was built with another embedding model or dimension.

    Vectors from two models are never mixed: the user must run ``citewise reindex``.
    """

    def __init__(self, stored: str, stored_dim: int, configured: str, configured_dim: int) -> None:
        self.stored, self.stored_dim = stored, stored_dim
        self.configured, self.configured_dim = configured, configured_dim
        super().__init__(
            f"the index was built with embedding model {stored!r} ({stored_dim}-d) but "
            f"CITEWISE_EMBEDDING_MODEL is {configured!r} ({configured_dim}-d); run "
            "`citewise reindex` to re-embed every chunk with the configured model, or set "
            f"CITEWISE_EMBEDDING_MODEL={stored} to keep the current index"
        )


class AnalyzerMismatchError(IndexError_):
    """The index's BM25 terms were made by another version of the text analysis.

    Terms of two analyses are never mixed: the user must run ``citewise reindex``, which
    re-analyses the stored chunks (their vectors are kept).
    """

    def __init__(self, stored: str, current: str) -> None:
        self.stored, self.current = stored, current
        super().__init__(
            f"the index's BM25 terms were made by text analyzer version {stored}, but this "
            f"citewise analyses text with version {current} (stemming by detected language: "
            "Kazakh, Russian, English, Chinese); run `citewise reindex` to re-analyse the "
            "stored chunks (nothing is re-embedded)"
        )


class ModelError(CitewiseError):
    """A model cannot be loaded; the message says which setting or extra to fix."""


class ProviderError(CitewiseError):
    """The LLM provider failed; the message names the provider and URL, never the API key."""


class QueryError(CitewiseError):
    """The question is empty, blank or otherwise unusable."""


class QueryTooLongError(QueryError):
    """The question is longer than the API accepts; the message gives the limit."""

    def __init__(self, length: int, limit: int) -> None:
        self.length, self.limit = length, limit
        super().__init__(f"the question is {length} characters long; the limit is {limit} "
                         "(CITEWISE_MAX_REQUEST_CHARS): ask a shorter question")


class NotFoundError(CitewiseError):
    """No object with the given id; the message names what was looked for."""


class UploadError(CitewiseError):
    """An uploaded file is refused; the message says why and what is accepted."""


class UploadTooLargeError(UploadError):
    """An uploaded file is larger than ``max_upload_mb``."""


class UploadConflictError(UploadError):
    """Two upload names map to one stored file (the same sanitised path, or paths that
    differ only in letter case); the message names both. Nothing is stored."""


class DesktopError(CitewiseError):
    """``citewise desktop`` cannot run: its GUI library is missing (the message names
    ``pip install 'citewise[desktop]'``), no display can be opened, or its local server does
    not start."""
