"""Request and response bodies of the HTTP API (pydantic), named as in the FastAPI template:
``ChatRequest``, ``ChatPublic``, ``ChatsPublic(data, count)``... Times are Unix seconds."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from citewise.config import SearchMode
from citewise.store.scope import check_scope


def scrub(value: Any) -> Any:
    """Strings with lone surrogates (valid JSON escapes, invalid text) made storable."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8").replace("\x00", " ")
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    return value


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _scrub(cls, value: Any) -> Any:
        return scrub(value)


Scalar = str | int | float | bool


class ChatFilters(_In):
    document_ids: list[str] | None = Field(None, max_length=1000,
                                           description="Search only these documents.")
    path_prefix: str | None = Field(None, max_length=1000,
                                    description="Search only documents whose path starts so.")
    collections: list[str] | None = Field(
        None, max_length=100, description="Search only these collections (of those the "
        "caller's key may read).")
    paths: list[str] | None = Field(
        None, min_length=1, max_length=100,
        description="Search only documents whose path matches one of these globs: '*.md', "
        "'guides/' (a folder and below), 'hr/**/*.pdf'; a leading '/' anchors at the start "
        "of the path. Case-sensitive.")
    where: dict[str, Scalar | list[Scalar] | dict[Literal["gt", "gte", "lt", "lte"],
                                                    str | int | float]] | None = Field(
        None, max_length=50,
        description="Search only documents whose metadata fields have these values (front "
        "matter, PDF and DOCX properties such as author, subject, keywords, created; or "
        "format, title): {'author': 'Ana', 'tags': ['hr', 'policy'], 'created': {'gte': "
        "'2024-01-01'}}. Every field must match; one of a list's values is enough; a range "
        "takes gt, gte, lt, lte (numbers as numbers, text such as ISO dates as text); letter "
        "case is ignored.")
    language: str | None = Field(None, min_length=2, max_length=3, pattern=r"^[a-z]{2,3}$",
                                 description="Search only passages in this language (ISO "
                                 "639-1 code, such as 'en').")

    @field_validator("paths", "where")
    @classmethod
    def _scope(cls, value: Any, info: ValidationInfo) -> Any:
        name = info.field_name or ""
        if value is not None:
            try:
                check_scope({name: value})
            except ValueError as err:
                raise ValueError(str(err).removeprefix(f"filter '{name}': ")) from None
        return value


class ChatRequest(_In):
    query: str = Field(description="The question; blank is refused (422), longer than "
                       "max_request_chars too (413).")
    conversation_id: str | None = Field(None, max_length=64,
                                        description="Continue this chat; none starts one.")
    top_k: int | None = Field(None, ge=1, le=100, description="Number of sources.")
    filters: ChatFilters | None = None
    mode: SearchMode = SearchMode.HYBRID
    context_hint: str | None = Field(None, max_length=500,
                                     description="Where the user is (a page or route).")
    page: str | None = Field(None, max_length=500,
                             description="URL path of the web page the question is asked "
                             "from (the widget sends its host page's): the document that page "
                             "was built from is preferred (/install/ -> docs/install.md; see "
                             "docs/web.md).")
    attachment: str | None = Field(None, max_length=64,
                                   description="Id of an uploaded document to scan.")
    extractive: bool = Field(False, description="Quote evidence sentences; no LLM.")
    documents: list[str] | None = Field(
        None, max_length=20,
        description="Pin documents to the question, each by id, path, file name, name without "
        "suffix or title (of those the caller may read; an unknown one is a 404): 'summarize', "
        "'list the sections', 'quote the first sentence' and 'compare' read them whole, in "
        "document order; any other question is searched in them only (see docs/api.md, "
        "Whole-document questions).")


class SourcePublic(BaseModel):
    n: int
    chunk_id: str
    document_id: str
    path: str
    title: str
    section: list[str]
    page: int | None
    line_start: int | None
    line_end: int | None
    char_start: int
    char_end: int
    score: float
    symbol: str | None = None
    page_label: str | None = Field(None, description="The page as the file prints it (PDF "
                                   "page labels such as 'iii' or '3'); page is the physical one.")
    page_end: int | None = Field(None, description="Last page of a part over a page break.")
    page_end_label: str | None = None
    also_in: list[str] = Field(default_factory=list,
                               description="Other files holding the same passage (duplicates).")
    location: str


class InterruptPublic(BaseModel):
    action: str
    input: dict[str, Any]
    resume_token: str


class ChatResponse(BaseModel):
    answer: str
    sources: list[SourcePublic]
    conversation_id: str
    metrics: dict[str, float]
    found: bool
    mode: str
    interrupt: InterruptPublic | None = None
    error: str | None = None
    page_document: str | None = Field(None, description="The document preferred because the "
                                      "question was asked from the page built from it (the "
                                      "request's page), as citations show its path.")


class ChatPublic(BaseModel):
    id: str
    title: str
    created: float
    updated: float
    message_count: int


class ChatsPublic(BaseModel):
    data: list[ChatPublic]
    count: int = Field(description="Chats matching the query, on all pages.")
    limit: int
    offset: int
    next_offset: int | None = Field(description="Offset of the next page; null on the last.")


class FeedbackRequest(_In):
    rating: Literal[-1, 0, 1] = Field(description="1 thumbs up, -1 thumbs down, 0 none.")
    comment: str = Field("", max_length=2000, description="What was good or wrong.")
    sources: dict[str, Literal[-1, 1]] = Field(
        default_factory=dict, max_length=100,
        description="Thumbs on single cited sources: chunk id -> 1 (relevant) or -1 (not).")


class FeedbackPublic(BaseModel):
    rating: int
    comment: str
    sources: dict[str, int]


class RenameRequest(_In):
    title: str = Field(min_length=1, max_length=200)


class MessagePublic(BaseModel):
    id: int
    role: str
    content: str
    status: Literal["complete", "interrupted", "error", "pending"] | str
    created: float
    search_query: str | None
    sources: list[dict[str, Any]]
    metrics: dict[str, Any]
    feedback: FeedbackPublic | None = None


class ChatDetail(ChatPublic):
    summary: str
    messages: list[MessagePublic]
    pending: list[InterruptPublic]


class ResumeRequest(_In):
    resume_token: str = Field(max_length=128)
    approve: bool


class SourceDetail(BaseModel):
    chunk_id: str
    document_id: str
    path: str
    title: str
    text: str
    source_text: str = Field(description="The whole original paragraph(s), for the viewer.")
    char_start: int
    char_end: int
    page: int | None
    page_end: int | None
    line_start: int | None
    line_end: int | None
    section: list[str]
    symbol: str | None
    span_start: int | None = Field(None, description="Where the cited part starts in "
                                   "source_text (for highlighting); null when not located.")
    span_end: int | None = Field(None, description="Where the cited part ends in source_text.")
    focus_start: int | None = Field(
        None, description="Where the asked document span (?start=&end=, a citation's "
        "char_start/char_end: the supporting sentence) starts in source_text; null when not "
        "asked or not inside the cited part.")
    focus_end: int | None = Field(None, description="Where that span ends in source_text.")
    format: str = Field("", description="The document's format (pdf: its pages can be shown "
                        "as images, /api/sources/{chunk_id}/page/{n}.png).")


class DocumentPublic(BaseModel):
    id: str
    path: str
    title: str
    format: str
    chunks: int
    pages: int | None
    status: str
    error: str
    #: a failed document's kind of failure ("empty", "corrupt", "encoding", "too_large",
    #: "unsupported", "encrypted", "no_text_layer", "unreadable"); "" when indexed
    error_kind: str = ""
    indexed_at: float
    warnings: list[str]
    collection: str = "default"


class DocumentsPublic(BaseModel):
    data: list[DocumentPublic]
    count: int


class FilePublic(BaseModel):
    path: str
    status: str
    chunks: int
    reason: str


class IngestPublic(BaseModel):
    stored: list[str] = Field(description="File names as stored in the collection folder.")
    files: list[FilePublic]
    chunks: int
    seconds: float


class Deleted(BaseModel):
    deleted: str
    file_removed: bool = False


class LLMHealth(BaseModel):
    provider: str
    model: str | None
    loaded: bool
    reachable: bool | None = Field(description="null when not checked (not started yet).")


class Health(BaseModel):
    status: Literal["ok"]
    version: str
    documents: int
    chunks: int
    embedding_model: str | None
    models_loaded: dict[str, bool]
    llm: LLMHealth
    active_streams: int


class OpenAIMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _scrub(cls, value: Any) -> Any:
        return scrub(value)

    def text(self) -> str:
        if isinstance(self.content, list):
            return " ".join(str(p.get("text", "")) for p in self.content
                            if p.get("type") == "text")
        return self.content or ""


class OpenAIStreamOptions(BaseModel):
    """``include_usage``: a last chunk before ``[DONE]`` with no choices and the ``usage``."""

    model_config = ConfigDict(extra="ignore")
    include_usage: bool = False


class OpenAIChatRequest(BaseModel):
    """The part of OpenAI's chat completion request citewise uses; other fields are
    accepted and ignored."""

    model_config = ConfigDict(extra="ignore")
    model: str = Field(max_length=200)
    messages: list[OpenAIMessage] = Field(min_length=1, max_length=500)
    stream: bool = False
    stream_options: OpenAIStreamOptions | None = None


class OpenAIModel(BaseModel):
    """A model as OpenAI's ``/v1/models`` lists it."""

    id: str
    object: Literal["model"] = "model"
    created: int = 0
    owned_by: str = "citewise"


class OpenAIModels(BaseModel):
    object: Literal["list"] = "list"
    data: list[OpenAIModel]
