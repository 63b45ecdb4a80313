"""The MCP server: citewise's search, answers and documents as Model Context Protocol tools.

Built on the official ``mcp`` Python SDK (:class:`~mcp.server.fastmcp.FastMCP`). Tools:

* ``search`` (query, top_k, mode, filters): the passages that match, best first, each with
  its citation (``chunk_id``, file, page, section, character span, lines) and text;
* ``ask`` (question, top_k, filters, extractive): a cited answer from the engine, the same
  pipeline as ``citewise ask`` (the configured LLM, or the evidence sentences);
* ``list_documents`` (collection, paths): the indexed files;
* ``get_passage`` (chunk_id): one cited passage with its whole original paragraph(s);
* ``ingest`` (paths, collection): index files and folders of the server's machine; the
  admin only.

``filters`` are the HTTP API's (:class:`~citewise.api.schemas.ChatFilters`): document ids,
a path prefix, path globs (``paths``), metadata fields (``where``), collections, a language.

Two transports. **stdio** (``citewise mcp``, :func:`run_stdio`): the client starts the
process; the caller is the key given to it (``--api-key`` or ``CITEWISE_MCP_API_KEY``),
judged as :mod:`citewise.api.auth` judges a request to a server on localhost: with
``CITEWISE_API_KEYS`` set only a listed key (or the admin key) reads, and only its
collections; the admin key, or no key when ``CITEWISE_API_KEY`` is unset, may ingest.
**Streamable HTTP** at ``/mcp`` of ``citewise serve`` (:class:`McpEndpoint`, mounted by
:func:`citewise.api.app.create_app`): every HTTP request is authenticated like the HTTP API's
(``Authorization: Bearer <key>`` or ``X-API-Key``); without a valid read key it gets 401
and reaches no tool, and each tool call reads only the collections of the key that made it
(the store filters on them before ranking, so no passage of another collection is ever
returned). The endpoint is stateless (each request stands alone, answers are JSON), so it
needs no session affinity behind a load balancer.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

import anyio
import anyio.to_thread
from fastapi import HTTPException
from fastapi.responses import JSONResponse
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from citewise import __version__
from citewise.answer.answerer import to_evidence
from citewise.api.auth import Reader, is_admin, is_loopback, readable_collections
from citewise.api.hosts import mcp_patterns
from citewise.api.routes.sources import cited_span
from citewise.api.schemas import ChatFilters
from citewise.chat.agent import citation_dict
from citewise.config import COLLECTION_PATTERN, SearchMode, Settings
from citewise.engine import Engine
from citewise.errors import CitewiseError, ConfigError
from citewise.ingest.confine import confined_path, ingest_roots
from citewise.store.scope import check_scope, path_matches
from citewise.types import Citation, DoneEvent

#: The environment variable ``citewise mcp`` reads the caller's key from.
KEY_ENV = "CITEWISE_MCP_API_KEY"

INSTRUCTIONS = (
    "citewise answers questions from the user's own indexed documents, with citations. Use "
    "`search` to find passages (each has a chunk_id, file, page and section), `get_passage` "
    "to read one in full, `ask` for a cited answer, `list_documents` to see what is indexed. "
    "Narrow any of them with `filters`: paths (globs such as 'docs/**/*.md'), where "
    "(metadata fields such as {'author': 'Ana'}), collections, language. Cite passages by "
    "file and page as the tools give them."
)


# --- tool results ----------------------------------------------------------------------------
class Passage(BaseModel):
    """A passage with its citation: cite it as ``location``; ``chunk_id`` reads it again
    (``get_passage``)."""

    n: int = Field(description="Rank, 1 = best.")
    chunk_id: str
    document_id: str
    path: str
    title: str
    section: list[str]
    page: int | None
    page_label: str | None = None
    page_end: int | None = None
    line_start: int | None
    line_end: int | None
    char_start: int = Field(description="Start of the passage in the document's text.")
    char_end: int
    score: float
    location: str = Field(description="The citation as text: file, page or lines, section.")
    text: str


class SearchResults(BaseModel):
    query: str
    passages: list[Passage]
    candidates: int = Field(description="Chunks ranked before the final selection.")


class AnswerResult(BaseModel):
    answer: str = Field(description="The answer; [n] refers to citations[n-1].")
    found: bool = Field(description="False when the documents do not hold the answer.")
    mode: str = Field(description="Who wrote it: llm, extractive (evidence sentences), none.")
    citations: list[Passage]
    fallback_reason: str | None = None


class DocumentInfo(BaseModel):
    id: str
    path: str
    title: str
    format: str
    collection: str
    chunks: int
    pages: int | None
    status: str
    error: str
    #: a failed document's kind of failure ("empty", "corrupt", ...); "" when indexed
    error_kind: str = ""
    metadata: dict[str, Any] = Field(description="Front matter and file properties (the "
                                     "fields filters.where can select on).")


class DocumentList(BaseModel):
    documents: list[DocumentInfo]
    count: int


class PassageDetail(BaseModel):
    chunk_id: str
    document_id: str
    path: str
    title: str
    collection: str
    section: list[str]
    page: int | None
    page_end: int | None
    line_start: int | None
    line_end: int | None
    char_start: int
    char_end: int
    text: str = Field(description="The passage as indexed.")
    source_text: str = Field(description="The whole original paragraph(s) it came from.")
    span_start: int | None = Field(description="Where the passage starts in source_text.")
    span_end: int | None


class IngestedFile(BaseModel):
    path: str
    status: str = Field(description="added, updated, unchanged, deleted, failed or "
                        "skipped (an image, font or other media file under a folder).")
    chunks: int
    reason: str


class IngestResult(BaseModel):
    collection: str
    files: list[IngestedFile]
    chunks: int
    seconds: float


def _passage(c: Citation, text: str) -> Passage:
    fields = citation_dict(c)
    return Passage(**{k: v for k, v in fields.items() if k in Passage.model_fields}, text=text)


# --- who is calling ----------------------------------------------------------------------------
def stdio_reader(settings: Settings, key: str | None) -> Reader:
    """The :class:`Reader` of a stdio client presenting ``key``: the HTTP API's rules for a
    request to a server on localhost (it is a process on this machine). Raises
    PermissionError naming the settings when read keys are set and ``key`` is none of them
    (nor the admin key)."""
    headers = [(b"host", b"localhost")]
    if key:
        headers.append((b"authorization", f"Bearer {key}".encode()))
    request = Request({"type": "http", "method": "POST", "path": "/mcp", "headers": headers,
                       "query_string": b"", "client": ("127.0.0.1", 0), "server": None})
    local = settings.model_copy(update={"host": "127.0.0.1"})
    try:
        return readable_collections(request, local)
    except HTTPException:
        raise PermissionError(f"citewise mcp: {'this key is' if key else 'no key was'} not "
                              "one of CITEWISE_API_KEYS (nor CITEWISE_API_KEY, the admin key); "
                              f"give a read key with --api-key or {KEY_ENV}") from None


class CitewiseMCP:
    """The tools over one engine. ``stdio`` is the stdio caller's Reader (None: HTTP only,
    every call is judged by its HTTP request); ``write_lock`` serialises ingests with the
    HTTP API's writes."""

    def __init__(self, engine: Engine, *, stdio: Reader | None = None,
                 write_lock: Any = None) -> None:
        self.engine = engine
        self.settings = engine.settings
        self.stdio = stdio
        self.write_lock = write_lock
        self.server = self._build()

    # who -----------------------------------------------------------------------------------
    def reader(self, ctx: Context[Any, Any, Any]) -> Reader:
        request = ctx.request_context.request
        if isinstance(request, Request):
            try:
                return readable_collections(request, self.settings)
            except HTTPException as err:
                raise ToolError(str(err.detail)) from None
        if self.stdio is None:
            raise ToolError("no caller: this server answers only authenticated HTTP requests")
        return self.stdio

    def may_ingest(self, ctx: Context[Any, Any, Any]) -> bool:
        request = ctx.request_context.request
        if isinstance(request, Request):
            return is_admin(request, self.settings)
        return self.stdio is not None and self.stdio.admin

    # tools ---------------------------------------------------------------------------------
    def _filters(self, reader: Reader, filters: ChatFilters | None) -> dict[str, Any] | None:
        asked = filters.model_dump(exclude_none=True) if filters else None
        return reader.filters(asked)

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn`` in a worker thread (the engine blocks); citewise errors become tool errors
        with their message."""
        try:
            return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
        except CitewiseError as err:
            raise ToolError(str(err)) from None

    def _build(self) -> FastMCP:
        server = FastMCP("citewise", instructions=INSTRUCTIONS, log_level="WARNING")
        server._mcp_server.version = __version__
        read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)

        @server.tool(annotations=read_only)
        async def search(
            query: Annotated[str, Field(description="What to look for (a question or words).")],
            ctx: Context[Any, Any, Any],
            top_k: Annotated[int, Field(ge=1, le=50, description="Passages to return.")] = 6,
            mode: Annotated[SearchMode, Field(description="hybrid (default), dense (meaning) "
                                              "or sparse (BM25 words).")] = SearchMode.HYBRID,
            filters: ChatFilters | None = None,
        ) -> SearchResults:
            """Search the indexed documents; passages best first, each with its citation
            (file, page, section, character span) and text."""
            reader = self.reader(ctx)
            result = await self._call(self.engine.search, query, mode=mode, top_k=top_k,
                                      filters=self._filters(reader, filters))
            evidence = to_evidence(result.hits)
            return SearchResults(query=result.query, candidates=result.candidates, passages=[
                _passage(ev.citation, ev.chunk.text) for ev in evidence])

        @server.tool(annotations=read_only)
        async def ask(
            question: Annotated[str, Field(description="The question, in any language.")],
            ctx: Context[Any, Any, Any],
            top_k: Annotated[int | None, Field(ge=1, le=20, description="Passages the answer "
                                               "may cite (default: the server's).")] = None,
            filters: ChatFilters | None = None,
            extractive: Annotated[bool, Field(description="Quote evidence sentences instead "
                                              "of asking the LLM.")] = False,
            documents: Annotated[list[str] | None, Field(
                max_length=20, description="Pin documents (id, path, file name or title, of "
                "those the key may read): 'summarize', 'list the sections', 'quote the first "
                "sentence' and 'compare' read them whole, in document order; another question "
                "is searched in them only.")] = None,
        ) -> AnswerResult:
            """A cited answer from the documents ([n] marks cite citations[n-1]); found is
            false, with no citations, when the documents do not hold the answer. A question
            that names a document for a whole-document task ("list the sections of
            install.md") reads that document without ``documents``."""
            reader = self.reader(ctx)
            scoped = self._filters(reader, filters)

            def run() -> Any:
                for event in self.engine.ask_stream(question, top_k=top_k, extractive=extractive,
                                                    filters=scoped, documents=documents or ()):
                    if isinstance(event, DoneEvent):
                        return event.answer
                raise AssertionError("ask_stream ended without a DoneEvent")  # pragma: no cover

            answer = await self._call(run)
            texts = {c.chunk_id: c for c in answer.citations}
            chunks = await self._call(self.engine.store.get_chunks, list(texts))
            return AnswerResult(
                answer=answer.text, found=answer.found, mode=answer.mode,
                fallback_reason=answer.fallback_reason,
                citations=[_passage(c, chunks[c.chunk_id][0].text if c.chunk_id in chunks
                                    else "") for c in answer.citations])

        @server.tool(annotations=read_only)
        async def list_documents(
            ctx: Context[Any, Any, Any],
            collection: Annotated[str | None, Field(description="Only this collection.")] = None,
            paths: Annotated[list[str] | None, Field(description="Only paths matching one of "
                                                     "these globs.")] = None,
        ) -> DocumentList:
            """The indexed files the caller may read (failed files too, with the reason),
            with their metadata."""
            reader = self.reader(ctx)
            if paths is not None:
                try:
                    check_scope({"paths": paths})
                except ValueError as err:
                    raise ToolError(str(err)) from None
            docs = await self._call(self.engine.store.documents)
            out = [DocumentInfo(id=d.id, path=d.path, title=d.title, format=d.format,
                                collection=d.collection, chunks=d.chunk_count, pages=d.pages,
                                status=d.status, error=d.error, error_kind=d.error_kind,
                                metadata={k: v for k, v in d.metadata.items()
                                          if not k.startswith("_") and k != "page_labels"})
                   for d in docs if reader.may_read(d.collection)
                   and (collection is None or d.collection == collection)
                   and (paths is None or path_matches(d.path, paths))]
            return DocumentList(documents=out, count=len(out))

        @server.tool(annotations=read_only)
        async def get_passage(
            chunk_id: Annotated[str, Field(max_length=128, description="A passage's chunk_id "
                                           "(from search or ask).")],
            ctx: Context[Any, Any, Any],
        ) -> PassageDetail:
            """One passage by its citation id, with the whole paragraph(s) it came from and
            where it is (file, page, lines, section, character span)."""
            reader = self.reader(ctx)
            found = (await self._call(self.engine.store.get_chunks, [chunk_id])).get(chunk_id)
            if found is None or not reader.may_read(found[1].collection):
                raise ToolError(f"no passage with chunk_id {chunk_id!r}")  # unreadable: same
            chunk, doc = found
            span = cited_span(chunk.source_text, chunk.text, chunk.char_end - chunk.char_start)
            return PassageDetail(
                chunk_id=chunk.id, document_id=doc.id, path=doc.path, title=doc.title,
                collection=doc.collection, section=list(chunk.section), page=chunk.page,
                page_end=chunk.page_end, line_start=chunk.line_start, line_end=chunk.line_end,
                char_start=chunk.char_start, char_end=chunk.char_end, text=chunk.text,
                source_text=chunk.source_text, span_start=span[0] if span else None,
                span_end=span[1] if span else None)

        @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False,
                                                 idempotentHint=True, openWorldHint=False))
        async def ingest(
            paths: Annotated[list[str], Field(min_length=1, max_length=100, description=
                                              "Files or folders on the server's machine, under "
                                              "the collection's folder or CITEWISE_INGEST_ROOTS "
                                              "(relative: to the collection's folder).")],
            ctx: Context[Any, Any, Any],
            collection: Annotated[str | None, Field(pattern=COLLECTION_PATTERN, description=
                                                    "The collection to index into (default: "
                                                    "the server's).")] = None,
        ) -> IngestResult:
            """Index files and folders (new and changed files; unchanged ones are skipped).
            Only the admin (the admin key) may call it."""
            if not self.may_ingest(ctx):
                raise ToolError("ingest needs the admin key (CITEWISE_API_KEY); this key may "
                                "only read")
            # one rule with a chat INGEST: the collection's folder and CITEWISE_INGEST_ROOTS,
            # symlinks resolved, no system or special files (citewise.ingest.confine)
            try:
                checked = [confined_path(self.settings, p, collection) for p in paths]
            except ConfigError as err:
                raise ToolError(str(err)) from None
            refused = [c for c in checked if isinstance(c, str)]
            if refused:
                raise ToolError("paths: " + "; ".join(r[:300] for r in refused[:10]))
            targets = [c for c in checked if isinstance(c, Path)]
            within = ingest_roots(self.settings, collection)

            def run() -> Any:
                if self.write_lock is None:
                    return self.engine.ingest(targets, collection=collection, within=within)
                with self.write_lock:
                    return self.engine.ingest(targets, collection=collection, within=within)

            report = await self._call(run)
            return IngestResult(
                collection=collection or self.settings.collection, chunks=report.chunks,
                seconds=round(report.seconds, 3),
                files=[IngestedFile(path=f.path, status=f.status, chunks=f.chunks,
                                    reason=f.reason) for f in report.files])

        return server


# --- transports --------------------------------------------------------------------------------
def run_stdio(engine: Engine, key: str | None = None) -> None:
    """Serve the tools over stdin/stdout until the client closes them (``citewise mcp``).
    ``key`` defaults to ``$CITEWISE_MCP_API_KEY``. Raises PermissionError when read keys are
    configured and the key is none of them.

    Standard output carries only the protocol: the process's file descriptor 1 and
    ``sys.stdout`` are pointed at standard error first, so that nothing else (a native
    library loading a model, a stray print) can write into the JSON-RPC stream; the
    protocol is written to a duplicate of the original descriptor."""
    key = key if key is not None else os.environ.get(KEY_ENV) or None
    tools = CitewiseMCP(engine, stdio=stdio_reader(engine.settings, key))
    sys.stdout.flush()
    protocol = io.TextIOWrapper(os.fdopen(os.dup(1), "wb", buffering=0), encoding="utf-8",
                                newline="\n")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    lowlevel = tools.server._mcp_server

    async def serve() -> None:
        async with stdio_server(stdout=anyio.wrap_file(protocol)) as (read, write):
            await lowlevel.run(read, write, lowlevel.create_initialization_options())

    try:
        anyio.run(serve)
    finally:
        protocol.close()


class McpEndpoint:
    """The streamable HTTP transport as an ASGI app (``/mcp`` of ``citewise serve``).
    :meth:`running` must wrap the app's lifespan (it runs the SDK's session manager)."""

    def __init__(self, engine: Engine, write_lock: Any = None) -> None:
        self.tools = CitewiseMCP(engine, write_lock=write_lock)
        self.settings = engine.settings
        self._manager: StreamableHTTPSessionManager | None = None

    def _security(self) -> TransportSecuritySettings | None:
        """DNS rebinding protection for a server on localhost (the SDK's Host and Origin
        checks, over the names of :func:`citewise.api.hosts.answered_names`, which the app's
        :class:`~citewise.api.hosts.HostGuard` checks first); on another address the app's own
        guards apply (:mod:`citewise.api.hosts`, :mod:`citewise.api.origins`)."""
        patterns = mcp_patterns(self.settings)
        if not is_loopback(self.settings.host) or patterns is None:
            return None
        return TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                         allowed_hosts=patterns[0], allowed_origins=patterns[1])

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """A fresh session manager for each app start (the SDK's runs once)."""
        self._manager = StreamableHTTPSessionManager(
            app=self.tools.server._mcp_server, json_response=True, stateless=True,
            security_settings=self._security())
        async with self._manager.run():
            yield
        self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # pragma: no cover - websockets are not routed here
            return
        try:
            readable_collections(Request(scope), self.settings)
        except HTTPException as err:  # no valid key: nothing reaches a tool
            await JSONResponse({"detail": err.detail, "code": "Unauthorized"},
                               status_code=err.status_code, headers=err.headers)(
                scope, receive, send)
            return
        if self._manager is None:
            await JSONResponse({"detail": "the MCP endpoint is not started (the app's "
                                "lifespan did not run)"}, status_code=503)(scope, receive, send)
            return
        await self._manager.handle_request(scope, receive, send)


__all__ = ["KEY_ENV", "CitewiseMCP", "McpEndpoint", "run_stdio", "stdio_reader"]
