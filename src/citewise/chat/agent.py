"""The agent: one user message in, the event stream of DESIGN.md out, the turn persisted.

A turn goes: route (:mod:`~citewise.chat.intent`: small talk is answered at once) -> plan
(:mod:`~citewise.chat.planner`, streamed as ``thinking``) -> the directive as a tool
(``tool_call`` / ``tool_result``) -> the answer (``status``, ``token``, then ``done``).
A plain question is planned by rules, so its first slow step is the search, announced by the
``retrieve`` status; the LLM provider is opened only when planning needs it (see
:func:`~citewise.chat.planner.plans_with_llm`; a follow-up is rewritten by it) or for the
answer.
Authorisation: every directive runs for the caller. SCAN reads the indexed document where it
is (nothing is re-ingested, moved or written), and only a document of a collection the caller
may read (another one is "no document with id ..."). INGEST writes: it is proposed only to a
caller that may write (``may_write``: the admin key, or a keyless server on localhost) and
ends the stream with an ``interrupt`` holding a resume token; it runs only when
:meth:`Agent.resume` approves it (the API lets only the admin do that). SCAN of an attached
document is proposed the same way to such a caller, and run at once (it only reads) for
others. Nothing that writes runs from a chat message alone.

Persistence: the user message is saved first; the assistant message when the turn ends, as
``complete``, ``pending`` (an interrupt), ``error``, or ``interrupted`` with the partial text
when the consumer closes the stream early (a client that disconnected). Closing the stream
closes the generators under it, which closes the LLM's HTTP response and so stops generation.
"""

from __future__ import annotations

import importlib
import logging
import re
import threading
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from citewise.answer.answerer import NOT_FOUND
from citewise.answer.providers import ChatProvider
from citewise.answer.wholedoc import detect_task, named_documents
from citewise.chat.intent import Intent, classify, small_talk_reply
from citewise.chat.planner import Directive, Plan, make_planner, plans_with_llm
from citewise.chat.sessions import (
    History,
    PendingAction,
    SessionStore,
    Turn,
    is_follow_up,
    llm_summariser,
    rewrite_follow_up,
    rule_summary,
)
from citewise.config import SearchMode, Settings
from citewise.engine import Engine
from citewise.errors import CitewiseError, NotFoundError, QueryTooLongError
from citewise.ingest.confine import confined_path, ingest_roots
from citewise.retrieve.retriever import clean_query
from citewise.types import (
    Answer,
    Citation,
    DoneEvent,
    ErrorEvent,
    Event,
    Hit,
    InterruptEvent,
    StatusEvent,
    ThinkingEvent,
    TokenEvent,
    ToolCallEvent,
    ToolResultEvent,
)

EventStream = Generator[Event, None, None]
"""What the agent's steps return: events; closed early when the client leaves."""

log = logging.getLogger(__name__)

NOT_A_QUESTION = "Please ask a question about your documents."
SCAN_UNAVAILABLE = ("scan is not available yet: this installation has no contract scanner "
                    "(the citewise.scan package)")
ANSWER_PROMPT = (
    "Answer the user's last message using only the conversation above. If the conversation "
    "does not hold the answer, reply exactly: {not_found}"
)


def validate_query(query: str, settings: Settings) -> str:
    """``query`` unchanged when the API accepts it. Raises QueryTooLongError above
    ``max_request_chars`` characters and QueryError when nothing visible is left (blank,
    whitespace, zero-width characters): no model is called for either."""
    if len(query) > settings.max_request_chars:
        raise QueryTooLongError(len(query), settings.max_request_chars)
    clean_query(query, settings.max_query_chars)
    return query


def citation_dict(c: Citation) -> dict[str, Any]:
    """A citation as JSON: its fields, ``section`` as a list, and ``location`` for display."""
    out = asdict(c)
    out["section"] = list(c.section)
    out["location"] = c.location
    return out


def _hit_dict(h: Hit) -> dict[str, Any]:
    chunk, doc = h.chunk, h.document
    return {
        "chunk_id": h.chunk_id,
        "path": doc.path if doc else None,
        "page": chunk.page if chunk else None,
        "section": list(chunk.section) if chunk else [],
        "relevance": h.relevance if h.relevance is not None else h.score,
    }


#: a question that points back at a document instead of naming it: "summarize it", "list its
#: sections", "what is this document about", "the first sentence of that file"
_POINTS_BACK = re.compile(
    r"\b(?:it|its|(?:this|that|the\s+same)(?:\s+(?:document|doc|file|page|one|contract|"
    r"article|text))?)\b", re.IGNORECASE)
#: a citation mark in a saved answer, "[2]" (the first of "[2, 3]" too)
_CITED = re.compile(r"\[(\d{1,3})\b")


def cited_documents(answer: str, sources: Sequence[Any]) -> list[dict[str, Any]]:
    """The documents a saved answer cites, in the order its text first cites them: each
    ``{"document_id", "path"}`` from ``sources`` (the answer's citations as saved, see
    :func:`citation_dict`); the documents of all ``sources`` when the text cites none."""
    by_n = {c.get("n"): c for c in sources if isinstance(c, dict)}
    order = [by_n[int(n)] for n in _CITED.findall(answer) if int(n) in by_n] or [
        c for c in sources if isinstance(c, dict)]
    out: dict[str, dict[str, Any]] = {}
    for c in order:
        if c.get("document_id"):
            out.setdefault(c["document_id"], {"document_id": c["document_id"],
                                              "path": c.get("path", "")})
    return list(out.values())


class Agent:
    """Runs conversations over one :class:`~citewise.engine.Engine` and one
    :class:`SessionStore`. ``write_lock`` serialises changes to the collection."""

    def __init__(self, engine: Engine, sessions: SessionStore,
                 write_lock: threading.Lock | None = None) -> None:
        self.engine = engine
        self.sessions = sessions
        self.settings = engine.settings
        self.write_lock = write_lock or threading.Lock()

    # --- helpers --------------------------------------------------------------------------
    def provider(self) -> ChatProvider | None:
        """The LLM provider, or None when there is none or it cannot be opened."""
        if self.settings.llm_provider.strip().lower() == "none":
            return None
        try:
            return self.engine.provider()
        except CitewiseError as err:
            log.warning("LLM provider unavailable: %s", err)
            return None

    def _provider_stream(self) -> Generator[Event, None, ChatProvider | None]:
        """:meth:`provider` after the engine's "starting the local model" status."""
        try:
            return (yield from self.engine.provider_stream())
        except CitewiseError as err:
            log.warning("LLM provider unavailable: %s", err)
            return None

    def _count_tokens(self, text: str) -> int:
        return max(1, len(text) // 4)

    def history(self, chat_id: str, before: int | None = None) -> History:
        """The History of chat ``chat_id`` to send with the next question (messages with an id
        below ``before``). Older turns beyond the budget are folded into the summary by the
        LLM, opened only then (by the rule when there is none). Raises SQLAlchemy errors of
        the sessions database only."""
        s = self.settings

        def summarise(summary: str, turns: Sequence[Turn]) -> str:
            provider = self.provider()
            fold = llm_summariser(provider) if provider is not None else rule_summary
            return fold(summary, turns)

        return self.sessions.history(
            chat_id, turns=max(s.history_turns - 1, 0), budget_tokens=s.history_tokens,
            count_tokens=self._count_tokens, summarise=summarise, before=before)

    def start(self, query: str, conversation_id: str | None = None, *, owner: str = "",
              scope: str | None = None) -> str:
        """Validate ``query`` and return the chat to run it in (a new one owned by ``owner``,
        titled after the query, when ``conversation_id`` is None). Raises QueryError,
        QueryTooLongError, or NotFoundError for a ``conversation_id`` that is unknown or not
        in ``scope`` (the caller's owner tag; None = any chat)."""
        validate_query(query, self.settings)
        if conversation_id is None:
            return self.sessions.create_chat(query, owner).id
        if self.sessions.get_chat(conversation_id, scope) is None:
            raise NotFoundError(f"no conversation with id {conversation_id!r}")
        return conversation_id

    # --- a turn ---------------------------------------------------------------------------
    def run(self, chat_id: str, query: str, *, top_k: int | None = None,
            mode: SearchMode | str = SearchMode.HYBRID,
            filters: Mapping[str, Any] | None = None, context_hint: str | None = None,
            attachment: str | None = None, extractive: bool = False,
            may_write: bool = False, page: str | None = None,
            documents: Sequence[str] = ()) -> Iterator[Event]:
        """Yields the events of one turn of chat ``chat_id`` (see the module docstring),
        ending with ``done``, ``interrupt`` or ``error``. ``filters["collections"]`` (when
        set) are the collections the caller may read; a directive that writes (INGEST) is
        proposed only when ``may_write``. ``page`` is the URL path of the web page the
        question is asked from: the document it was built from
        (:meth:`Engine.page_document <citewise.engine.Engine.page_document>`) is preferred in
        the search and the answer, announced by a ``page`` status ("preferring
        docs/install.md (the page you are on)") and named in the search's tool call
        (``prefer_document``). ``documents`` pins documents by name or id
        (:meth:`Engine.document_question <citewise.engine.Engine.document_question>`): a
        whole-document question about them, or one naming a document, is answered by reading
        it (a ``read_document`` tool call with the task and paths); another question is
        searched in them only. Raises nothing: a CitewiseError or any other failure
        becomes an ErrorEvent and an ``error`` message in the chat."""
        t0 = time.perf_counter()
        user_id = self.sessions.add_message(chat_id, "user", query)
        pieces: list[str] = []
        finished = False
        inner: EventStream | None = None
        try:
            intent = classify(query, attachment=attachment)
            reply = small_talk_reply(intent)
            if reply is None and intent is Intent.QUESTION and not any(
                    ch.isalnum() for ch in query):
                reply = NOT_A_QUESTION
            if reply is not None:
                finished = True
                yield self._save_done(chat_id, Answer(query, reply, (), False, "none"), t0)
                return
            history = self.history(chat_id, before=user_id)
            provider: ChatProvider | None = None
            if not documents and intent is Intent.QUESTION:
                back = self._document_pointed_at(chat_id, user_id, query, filters)
                if isinstance(back, str):  # several documents it could mean: ask which
                    finished = True
                    yield self._save_done(chat_id, Answer(query, back, (), False, "none"), t0)
                    return
                if back is not None:  # "summarize it": the document the last answer cited
                    yield StatusEvent(f"reading {back['path']} (the document the last answer "
                                      "cited)", stage="document")
                    inner = self._search(query, history.for_prompt(), top_k=top_k, mode=mode,
                                         filters=filters, extractive=extractive,
                                         documents=[back["document_id"]])
            if inner is None:  # not read above: plan, then act
                if intent is Intent.SCAN:
                    assert attachment is not None
                    plan = Plan(Directive.SCAN, attachment,
                                ("A document is attached: check it against the playbook.",))
                    yield ThinkingEvent(plan.thoughts[0])
                else:
                    s = self.settings
                    # the provider is opened only when planning calls it (a follow-up, or the LLM
                    # planner); a plain question goes to the search at once
                    if s.llm_provider.strip().lower() != "none" and (
                            plans_with_llm(s.planner, s.llm_provider, query, history)
                            or is_follow_up(query, history.last_query)):
                        provider = yield from self._provider_stream()
                    planner = make_planner(s.planner, provider, query, history, s.llm_provider)
                    plan = yield from planner.run(query, history, context_hint)
                if plan.rewritten:
                    self.sessions.update_message(user_id, search_query=plan.argument)
                if plan.directive is Directive.INGEST:
                    inner = self._propose_ingest(chat_id, query, plan.argument, may_write)
                elif plan.directive is Directive.SCAN:
                    # a scan only reads; the chat UI's approval prompt for an attachment is kept
                    # for callers who can approve it
                    inner = self._scan(chat_id, query, plan.argument,
                                       propose=attachment is not None and may_write, filters=filters)
                elif plan.directive is Directive.ANSWER and provider is not None:
                    inner = self._answer_from_history(query, history, provider)
                else:
                    search_query = plan.argument if plan.directive is Directive.SEARCH else query
                    inner = self._search(search_query, history.for_prompt(), top_k=top_k,
                                         mode=mode, filters=filters, extractive=extractive,
                                         page=page, documents=documents,
                                         lexical=query if plan.rewritten else "")
            for event in inner:
                if isinstance(event, TokenEvent):
                    pieces.append(event.content)
                elif isinstance(event, DoneEvent):
                    finished = True
                    event = self._save_done(chat_id, event.answer, t0)
                elif isinstance(event, InterruptEvent):
                    finished = True
                yield event
        except CitewiseError as err:
            finished = True
            self.sessions.add_message(chat_id, "assistant", str(err), status="error")
            yield ErrorEvent(str(err), type(err).__name__)
        except Exception as err:  # never a traceback to the client; logged here
            log.exception("chat turn failed")
            finished = True
            self.sessions.add_message(chat_id, "assistant", f"internal error: {err}",
                                      status="error")
            yield ErrorEvent("internal error; see the server log", "InternalError")
        finally:
            if inner is not None:
                inner.close()  # closes the answer stream and, under it, the LLM response
            if not finished:
                self.sessions.add_message(chat_id, "assistant", "".join(pieces),
                                          status="interrupted")

    def _document_pointed_at(self, chat_id: str, before: int, query: str,
                             filters: Mapping[str, Any] | None
                             ) -> dict[str, Any] | str | None:
        """For a whole-document question that points back instead of naming a document
        ("summarize it", "list its sections", "what is this file about"): the document the
        chat's last answer cited (``{"document_id", "path"}``), when it cited one that the
        question may still read; a reply naming the candidates when it cited several; None
        for any other question (a named document, no task, no earlier answer with sources)."""
        if detect_task(query) is None or not _POINTS_BACK.search(query):
            return None
        readable = {d.id: d for d in self.engine.readable_documents(filters)
                    if d.status != "failed"}
        if named_documents(query, list(readable.values())):
            return None
        earlier = [m for m in self.sessions.messages(chat_id)
                   if m.id < before and m.role == "assistant" and m.sources]
        if not earlier:
            return None
        docs = [d for d in cited_documents(earlier[-1].content, earlier[-1].sources)
                if d["document_id"] in readable]
        if len(docs) == 1:
            return docs[0]
        if not docs:
            return None
        names = " or ".join(f'"{d["path"]}"' for d in docs[:5])
        return (f"The last answer cited several documents, so \"{query.strip()}\" could mean "
                f"{names}: name the one you mean, for example \"{query.strip()} "
                f"({docs[0]['path']})\".")

    def _save_done(self, chat_id: str, answer: Answer, t0: float,
                   results: dict[str, Any] | None = None) -> DoneEvent:
        """Save the answer; ``results`` (a tool's result by tool name: the scan's flags, the
        ingest's files) is kept with it as ``metrics["tool_results"]``, so a reopened chat
        shows them again."""
        answer = replace(answer, metrics={**answer.metrics,
                                          "total_ms": (time.perf_counter() - t0) * 1000})
        kept = {**answer.metrics, "tool_results": results} if results else answer.metrics
        self.sessions.add_message(chat_id, "assistant", answer.text,
                                  sources=[citation_dict(c) for c in answer.citations],
                                  metrics=kept)
        return DoneEvent(answer)

    # --- tools ----------------------------------------------------------------------------
    def _search(self, query: str, history: Sequence[Turn], *, top_k: int | None,
                mode: SearchMode | str, filters: Mapping[str, Any] | None,
                extractive: bool, page: str | None = None,
                instructions: str = "", documents: Sequence[str] = (),
                lexical: str = "") -> EventStream:
        """Search and answer ``query`` (see :meth:`run`). ``lexical`` is the user's own words
        when ``query`` is a rewritten follow-up: they join the BM25 leg's terms, and the tool
        call shows both (``query`` the rewritten one, ``lexical`` the words typed)."""
        engine = self.engine
        whole, filters = engine.route_documents(
            engine.document_question(query, documents, filters), filters)
        if whole is not None:
            yield ToolCallEvent("read_document", {
                "task": whole.task.value if whole.task else None,
                "documents": [d.path for d in whole.documents], "pinned": whole.pinned})
            yield from engine.whole_documents.stream(query, whole, extractive=extractive,
                                                     instructions=instructions)
            return
        k = top_k or self.settings.top_k
        preferred = engine.page_document(page, filters) if page else None
        call: dict[str, Any] = {"query": query, "top_k": k, "mode": SearchMode(mode).value}
        if lexical:
            call["lexical"] = lexical
        if documents:
            call["documents"] = list(documents)
        if preferred is not None:
            call["prefer_document"] = preferred.path
        yield ToolCallEvent("search", call)
        if engine.store.info().chunks == 0:  # the engine's "no documents" reply
            yield ToolResultEvent("search", {"hits": []})
            yield from engine.ask_stream(query, top_k=top_k, extractive=extractive,
                                         filters=filters)
            return
        prefer = None
        if preferred is not None:
            prefer = preferred.id
            yield StatusEvent(f"preferring {preferred.path} (the page you are on)", stage="page")
        result = yield from engine.search_stream(query, mode=mode, top_k=top_k, filters=filters,
                                                 prefer_document=prefer, lexical=lexical)
        yield ToolResultEvent("search", {"hits": [_hit_dict(h) for h in result.hits]})
        yield from engine.answer_stream(query, result, extractive=extractive, history=history,
                                        filters=filters, top_k=top_k, prefer_document=prefer,
                                        instructions=instructions)

    def _answer_from_history(self, query: str, history: History,
                             provider: ChatProvider) -> EventStream:
        messages: list[Any] = [{"role": "system",
                                "content": ANSWER_PROMPT.format(not_found=NOT_FOUND)}]
        for q, a in history.for_prompt():
            messages += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
        messages.append({"role": "user", "content": query})
        yield StatusEvent("answering from the conversation", stage="generate")
        pieces = []
        for piece in provider.stream(messages, max_tokens=self.settings.llm_max_tokens,
                                     temperature=self.settings.llm_temperature):
            pieces.append(piece)
            yield TokenEvent(piece)
        text = "".join(pieces).strip()
        found = NOT_FOUND.casefold().rstrip(".") not in text.casefold()
        yield DoneEvent(Answer(query, text, (), found, "llm",
                               model=f"{provider.name}:{provider.model}"))

    def _allowed_path(self, argument: str) -> Path | str:
        """The file an INGEST may read, or the reason it may not
        (:func:`citewise.ingest.confine.confined_path`: the collection folder and
        ``ingest_roots``, symlinks resolved, no system or special files)."""
        return confined_path(self.settings, argument)

    def _propose_ingest(self, chat_id: str, query: str, argument: str,
                        may_write: bool) -> EventStream:
        if not may_write:
            reason = ("adding files changes the collection and needs the admin key "
                      "(CITEWISE_API_KEY); ask an administrator to upload it")
            yield ToolResultEvent("ingest", {"error": reason})
            yield DoneEvent(Answer(query, f"I cannot ingest {argument}: {reason}.", (), False,
                                   "none"))
            return
        path = self._allowed_path(argument)
        if isinstance(path, str):
            yield ToolResultEvent("ingest", {"error": path})
            yield DoneEvent(Answer(query, f"I cannot ingest {path}", (), False, "none"))
            return
        yield from self._interrupt(chat_id, "ingest", {"path": str(path)},
                                   f"Waiting for approval to ingest {path.name}.")

    def _interrupt(self, chat_id: str, action: str, input: dict[str, Any],
                   text: str) -> Iterator[Event]:
        message_id = self.sessions.add_message(chat_id, "assistant", text, status="pending")
        token = self.sessions.add_pending(chat_id, action, {**input, "message_id": message_id})
        yield InterruptEvent(action, input, token)

    def _scan(self, chat_id: str, query: str, document_id: str, propose: bool,
              filters: Mapping[str, Any] | None = None) -> EventStream:
        doc = self.engine.store.document(document_id)
        readable = (filters or {}).get("collections")
        if doc is None or (readable is not None and doc.collection not in readable):
            yield ToolResultEvent("scan", {"error": f"no document with id {document_id!r}"})
            yield DoneEvent(Answer(query, f"There is no document with id {document_id}.", (),
                                   False, "none"))
            return
        if propose:
            yield from self._interrupt(chat_id, "scan", {"document_id": document_id,
                                                         "path": doc.path},
                                       f"Waiting for approval to scan {doc.path}.")
            return
        yield from self._run_scan(query, document_id)

    def _ingest_collection(self, path: Path) -> str:
        """The collection a chat INGEST of ``path`` writes to: an indexed file stays in its
        own collection (an ingest never moves a document); anything else goes to the
        default collection."""
        from citewise.ingest.pipeline import document_id

        doc = self.engine.store.document(document_id(path)) if path.is_file() else None
        return doc.collection if doc is not None else self.settings.collection

    def _run_scan(self, query: str, document_id: str) -> Iterator[Event]:
        yield ToolCallEvent("scan", {"document_id": document_id})
        try:
            scanner = getattr(importlib.import_module("citewise.scan"), "scan_document", None)
        except ImportError:
            scanner = None
        if scanner is None:
            yield ToolResultEvent("scan", {"error": SCAN_UNAVAILABLE, "available": False})
            yield DoneEvent(Answer(query, f"Sorry, {SCAN_UNAVAILABLE}.", (), False, "none"))
            return
        result = scanner(self.engine, document_id)
        yield ToolResultEvent("scan", {"available": True, "result": result})
        flags = len(result.get("flags", [])) if isinstance(result, dict) else 0
        yield DoneEvent(Answer(query, f"Scan finished: {flags} flag(s).", (), False, "none"))

    # --- approval -------------------------------------------------------------------------
    def take_action(self, chat_id: str, token: str, approve: bool) -> PendingAction:
        """Claim the pending action ``token`` of chat ``chat_id``; NotFoundError when the chat
        or a pending action with that token does not exist (or was already decided)."""
        if self.sessions.get_chat(chat_id) is None:
            raise NotFoundError(f"no conversation with id {chat_id!r}")
        action = self.sessions.take_pending(chat_id, token, "approved" if approve else "rejected")
        if action is None:
            raise NotFoundError("no action waits for approval with this resume token")
        return action

    def resume(self, action: PendingAction, approve: bool) -> Iterator[Event]:
        """The events of an approved or rejected action (taken with :meth:`take_action`)."""
        t0 = time.perf_counter()
        chat_id = action.chat_id
        what = action.input.get("path", action.input.get("document_id", ""))
        if "message_id" in action.input:  # the decision replaces "Waiting for approval..."
            self.sessions.update_message(
                int(action.input["message_id"]), status="complete",
                content=f"{'Approved' if approve else 'Rejected'}: {action.action} of "
                        f"{Path(str(what)).name}.")
        try:
            if not approve:
                yield ToolResultEvent(action.action, {"status": "rejected"})
                text = f"Cancelled: {action.action} of {Path(str(what)).name} was not run."
                yield self._save_done(chat_id, Answer("", text, (), False, "none"), t0)
                return
            if action.action == "scan":
                results: dict[str, Any] = {}
                for event in self._run_scan("", str(action.input["document_id"])):
                    if isinstance(event, ToolResultEvent):
                        results[event.tool] = event.result
                    if isinstance(event, DoneEvent):
                        event = self._save_done(chat_id, event.answer, t0, results)
                    yield event
                return
            path = self._allowed_path(str(what))  # checked again: it may have changed since
            if isinstance(path, str):
                raise NotFoundError(f"cannot ingest {path}")
            yield ToolCallEvent("ingest", {"path": what})
            yield StatusEvent(f"ingesting {Path(str(what)).name}", stage="ingest")
            with self.write_lock:
                collection = self._ingest_collection(path)
                report = self.engine.ingest([path], collection=collection,
                                            within=ingest_roots(self.settings))
            counts = {s: report.count(s) for s in ("added", "updated", "unchanged", "failed")}
            result = {**counts, "chunks": report.chunks,
                      "files": [{"path": f.path, "status": f.status, "chunks": f.chunks,
                                 "reason": f.reason} for f in report.files]}
            yield ToolResultEvent("ingest", result)
            text = (f"Ingested {Path(str(what)).name}: " + ", ".join(
                f"{n} {s}" for s, n in counts.items()) + f" ({report.chunks} chunks).")
            yield self._save_done(chat_id, Answer("", text, (), False, "none"), t0,
                                  {"ingest": result})
        except CitewiseError as err:
            self.sessions.add_message(chat_id, "assistant", str(err), status="error")
            yield ErrorEvent(str(err), type(err).__name__)

    # --- without a session (the OpenAI-compatible endpoint) -------------------------------
    def stateless(self, query: str, turns: Sequence[Turn], *, top_k: int | None = None,
                  filters: Mapping[str, Any] | None = None,
                  instructions: str = "") -> Iterator[Event]:
        """An answer to ``query`` after the client-held ``turns``: small talk at once, a
        follow-up rewritten by the rule, otherwise search (narrowed by ``filters``, such as
        the caller's readable ``collections``) and answer, the LLM given ``instructions``
        after its own rules (an OpenAI client's system message). Nothing is saved."""
        validate_query(query, self.settings)
        reply = small_talk_reply(classify(query))
        if reply is None and not any(ch.isalnum() for ch in query):
            reply = NOT_A_QUESTION
        if reply is not None:
            yield DoneEvent(Answer(query, reply, (), False, "none"))
            return
        last = turns[-1][0] if turns else None
        if is_follow_up(query, last):
            assert last is not None
            query = rewrite_follow_up(query, last)
        keep = turns[-self.settings.history_turns:] if self.settings.history_turns else ()
        yield from self._search(query, keep, top_k=top_k, mode=SearchMode.HYBRID,
                                filters=filters, extractive=False, instructions=instructions)


__all__ = ["NOT_A_QUESTION", "SCAN_UNAVAILABLE", "Agent", "citation_dict", "validate_query"]
