"""``citewise ask``, ``chat`` and ``search``: questions to the index, answers streamed with
their sources, or the ranked passages themselves."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from citewise.answer.answerer import to_evidence
from citewise.cli.common import (
    FormatOpt,
    OutputFormat,
    TopKOpt,
    build_engine,
    console,
    err_console,
    errors,
    jsonable,
)
from citewise.config import SearchMode

if TYPE_CHECKING:
    from citewise.chat.agent import Agent
from citewise.errors import CitewiseError, NotFoundError
from citewise.types import (
    Answer,
    Chunk,
    Document,
    DoneEvent,
    ErrorEvent,
    Event,
    Hit,
    InterruptEvent,
    StatusEvent,
    TokenEvent,
    ToolCallEvent,
)


def _print_sources(answer: Answer) -> None:
    """The numbered sources under an answer: the cited ones under "Sources", then the passages
    it read but does not cite under "Also read, not cited" (dimmed on a terminal; a heading of
    their own, so piped output does not present them as the answer's sources). An answer that
    cites nothing (a passage list) shows every passage under "Sources"; nothing without any."""
    if not answer.citations:
        return
    cited = set(answer.cited)
    shown = [c for c in answer.citations if not cited or c.n in cited]
    rest = [c for c in answer.citations if cited and c.n not in cited]

    def line(c: Any) -> str:
        return (f"  [{c.n}] {escape(c.location)}  [dim](chars {c.char_start}-{c.char_end}, "
                f"relevance {c.score:.2f})[/]")

    console.print("\n[bold]Sources[/]")
    for c in shown:
        console.print(line(c))
    if rest:
        console.print("[dim]Also read, not cited[/]")
        for c in rest:
            console.print(f"[dim]{line(c)}[/]")


def _print_checks(answer: Answer) -> None:
    """On stdout, below the answer: each sentence the support check rejected (the reader of
    the answer must see which sentences its sources do not back, not only a log); on stderr:
    the LLM fallback note."""
    if answer.fallback_reason:
        # the model may have run fine and its answer failed the checks: say what happened
        err_console.print(f"[yellow]note:[/] extractive answer, the model's answer was not "
                          f"used: {escape(answer.fallback_reason)}")
    for s in answer.unsupported:
        why = "it cites nothing" if not s.citations else (
            f"support {s.support:.2f} from {', '.join(f'[{n}]' for n in s.citations)}")
        console.print(f"[yellow]not supported by the sources ({why}):[/] {escape(s.text)}",
                      soft_wrap=True)


class _StatusLine:
    """The latest status event on stderr until the answer starts: a transient rich spinner
    when stderr is a terminal, otherwise one plain line per status (for logs)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._spinner: Any = None

    def show(self, message: str) -> None:
        """Show ``message`` (replacing the previous one on a terminal); returns None."""
        if not self.enabled:
            return
        if not err_console.is_terminal:
            err_console.print(message, markup=False, highlight=False, style="dim")
        elif self._spinner is None:
            self._spinner = err_console.status(escape(message))
            self._spinner.start()
        else:
            self._spinner.update(escape(message))

    def stop(self) -> None:
        """Clear the spinner and show no more statuses; returns None."""
        if self._spinner is not None:
            self._spinner.stop()
            self._spinner = None
        self.enabled = False


class _Draft:
    """The model's words as they stream, in a transient rich ``Live`` area of a terminal's
    stdout: a draft that a failed support check can take back off the screen (stdout that is
    not a terminal cannot be unprinted; :func:`_stream_events` marks the withdrawal there)."""

    def __init__(self, prefix: str) -> None:
        from rich.live import Live
        from rich.text import Text

        self._text = Text
        self._prefix = prefix
        self._words: list[str] = []
        self._live = Live(self._render(), console=console, transient=True,
                          auto_refresh=False, vertical_overflow="visible")
        self._live.start()

    def _render(self) -> Any:
        return self._text.from_markup(self._prefix) + self._text("".join(self._words))

    def add(self, token: str) -> None:
        """Show ``token`` after the words so far; returns None."""
        self._words.append(token)
        self._live.update(self._render(), refresh=True)

    def clear(self) -> None:
        """Take the words so far off the screen; returns None."""
        self._words.clear()
        self._live.update(self._render(), refresh=True)

    def stop(self) -> None:
        """Remove the draft from the screen (the checked answer is printed in its place);
        returns None. Safe to call twice."""
        self._live.stop()


def _stream_answer(events: Iterable[Event], live: bool, prefix: str = "") -> Answer:
    """Print tokens as they come (when ``live``), after ``prefix`` (rich markup, printed when
    the answer starts), with each status on stderr before the first token; return the final
    Answer. Stdout gets only the prefix and the answer text. Raises what ``events`` raise;
    AssertionError when they end without a DoneEvent."""
    answer = _stream_events(events, live, prefix)
    assert answer is not None
    return answer


def _stream_events(events: Iterable[Event], live: bool, prefix: str = "") -> Answer | None:
    """:func:`_stream_answer` for a stream that may end without an answer (a chat turn that
    ends in an error or waits for approval): None then, with nothing printed for it."""
    answer: Answer | None = None
    wrote, started = False, False
    status = _StatusLine(live)
    # on a terminal the streamed words are a draft the checked answer replaces
    draft: _Draft | None = None
    terminal = live and console.is_terminal

    def start() -> None:
        nonlocal started, draft
        if not started:
            status.stop()
            if terminal:
                draft = _Draft(prefix)
            elif prefix:
                console.print(prefix, end="")
            started = True

    try:
        for event in events:
            if isinstance(event, DoneEvent):
                answer = event.answer
            elif live and isinstance(event, TokenEvent):
                start()
                if draft is not None:
                    draft.add(event.content)
                else:
                    console.out(event.content, end="", highlight=False)
                wrote = True
            elif live and isinstance(event, StatusEvent) and event.stage == "fallback":
                if wrote and draft is not None:  # off the screen, and say why on stderr
                    draft.clear()
                    err_console.print("[yellow]withdrawn: the model's answer failed the "
                                      "support check; the quoted evidence follows[/]")
                elif wrote:  # piped text cannot be unprinted: say on stdout it is withdrawn
                    console.out("\n[withdrawn: the text above failed the support check; the "
                                "quoted evidence follows]\n", highlight=False)
                wrote = False
                status.stop()
                err_console.print(f"[yellow]{escape(event.message)}[/]")
            elif live and isinstance(event, StatusEvent) and event.stage == "notice":
                err_console.print(f"[yellow]{escape(event.message)}[/]")  # kept on screen
            elif live and isinstance(event, StatusEvent):
                status.show(event.message)
    finally:
        status.stop()
        if draft is not None:
            draft.stop()
    if answer is None:
        return None
    if live:
        # the checked answer in a terminal draft's place, or nothing streamed (not found, no
        # documents)
        if draft is not None or not started:
            if prefix:
                console.print(prefix, end="")
            console.out(answer.text, end="", highlight=False)
        elif not wrote:  # piped, and the streamed text was withdrawn with nothing after it
            console.out(answer.text, end="", highlight=False)
        console.out("")
    return answer


ExtractiveOpt = Annotated[bool, typer.Option(
    "--extractive", help="Quote evidence sentences instead of asking the LLM.")]
WhereOpt = Annotated[list[str] | None, typer.Option(
    "--where", "-w", metavar="FIELD=VALUE",
    help="Only documents whose metadata FIELD (front matter, PDF/DOCX properties such as "
    "author, keywords, created; format, title) equals VALUE, letter case ignored; "
    "FIELD>=VALUE, <=, >, < compare (numbers as numbers, ISO dates as text). Repeat for more "
    "conditions (all must hold); the same field twice with = matches either value.")]
PathOpt = Annotated[list[str] | None, typer.Option(
    "--path", "-p", metavar="GLOB",
    help="Only documents whose path matches GLOB: '*.md', 'guides/' (a folder and below), "
    "'hr/**/*.pdf'; a leading '/' anchors at the start of the path. Repeat for more.")]
CollectionOpt = Annotated[list[str] | None, typer.Option(
    "--collection", "-c", help="Only documents of this collection. Repeat for more.")]
DocOpt = Annotated[list[str] | None, typer.Option(
    "--doc", "-d", metavar="NAME",
    help="Pin a document (its path, file name, name without suffix, title or id): "
    "'summarize', 'list the sections', 'quote the first sentence' and 'compare' read it "
    "whole, in document order; any other question is searched in the pinned documents only. "
    "Repeat for more (compare takes two).")]
LanguageOpt = Annotated[str | None, typer.Option(
    "--language", help="Only passages in this language (ISO 639-1 code, such as en).")]


def _scope(where: list[str] | None, paths: list[str] | None, collections: list[str] | None,
           language: str | None) -> dict[str, Any] | None:
    """The store filters of the scoping options; a bad one exits 2 naming the option."""
    from citewise.store.scope import cli_filters

    try:
        return cli_filters(where or (), paths or (), collections or (), language)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None


def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    extractive: ExtractiveOpt = False,
    top_k: TopKOpt = None,
    fmt: FormatOpt = OutputFormat.text,
    where: WhereOpt = None,
    path: PathOpt = None,
    collection: CollectionOpt = None,
    language: LanguageOpt = None,
    doc: DocOpt = None,
) -> None:
    """Answer a question with numbered citations and the sources below it (streamed).
    --where, --path, --collection and --language limit the documents it reads; --doc pins
    documents ("citewise ask 'summarize it' --doc install.md"). A question naming a document
    for a whole-document task ("list the sections of install.md") reads it without --doc."""
    filters = _scope(where, path, collection, language)
    with errors():
        engine = build_engine()
        events = engine.ask_stream(question, top_k=top_k, extractive=extractive,
                                   filters=filters, documents=doc or ())
        answer = _stream_answer(events, live=fmt is OutputFormat.text)
    if fmt is OutputFormat.json:
        out = jsonable(answer)
        out["unsupported"] = [s["text"] for s in out["support"] if not s["supported"]]
        print(json.dumps(out, ensure_ascii=False))
        return
    _print_checks(answer)
    _print_sources(answer)


ChatOpt = Annotated[str | None, typer.Option(
    "--chat", metavar="ID",
    help="Continue the saved chat ID (one of `citewise serve`'s chats, or an earlier "
    "terminal chat: its id is printed when the chat ends).")]


def _chat_events(events: Iterable[Event]) -> Iterator[Event]:
    """``events`` as they come, with what the terminal shows of the conversation pipeline
    on stderr: the standalone question a follow-up was rewritten into, and the documents
    a whole-document question reads."""
    for event in events:
        if isinstance(event, ToolCallEvent) and event.tool == "search" and \
                event.input.get("lexical"):
            err_console.print(f"[dim]follow-up, searching for: {escape(event.input['query'])}[/]",
                              soft_wrap=True)
        elif isinstance(event, ToolCallEvent) and event.tool == "read_document":
            err_console.print(f"[dim]reading {escape(', '.join(event.input['documents']))} "
                              "whole[/]")
        yield event


def chat(
    extractive: ExtractiveOpt = False,
    top_k: TopKOpt = None,
    chat_id: ChatOpt = None,
    doc: DocOpt = None,
    where: WhereOpt = None,
    path: PathOpt = None,
    collection: CollectionOpt = None,
    language: LanguageOpt = None,
) -> None:
    """A conversation in the terminal, through the same pipeline as the web chat: a
    follow-up ("and for a service?") is rewritten into a standalone question (by the LLM
    when one is configured; the words typed still search the BM25 leg), older turns are
    folded into a rolling summary, and the chat is saved with the web UI's (--chat ID
    continues one). --doc pins documents to every question; the scoping options limit the
    documents read. Ctrl-D or "exit" ends it."""
    from citewise.chat.agent import Agent
    from citewise.chat.sessions import SessionStore

    filters = _scope(where, path, collection, language)
    with errors():
        engine = build_engine()
        sessions = SessionStore(engine.settings.sessions_database)
        agent = Agent(engine, sessions)
        if chat_id is not None and sessions.get_chat(chat_id) is None:
            raise NotFoundError(f"no saved chat with id {chat_id!r}")
        try:
            while True:
                try:
                    question = console.input("[bold cyan]you>[/] ")
                except (EOFError, KeyboardInterrupt):
                    console.out("")
                    break
                if question.strip().lower() in {"exit", "quit", ":q"}:
                    break
                if not question.strip():
                    continue
                try:
                    chat_id = agent.start(question, chat_id)
                except CitewiseError as err:  # a bad question does not end the conversation
                    err_console.print(f"[bold red]error:[/] {escape(str(err))}")
                    continue
                _chat_turn(agent, chat_id, agent.run(chat_id, question, top_k=top_k, filters=filters,
                                            extractive=extractive, may_write=True,
                                            documents=doc or ()))
        finally:
            if chat_id is not None:
                err_console.print(f"[dim]chat saved: citewise chat --chat {chat_id}[/]")
            sessions.close()


def _chat_turn(agent: Agent, chat_id: str, events: Iterable[Event]) -> None:
    """Print one turn; an action that needs approval (ingesting a file) is asked for on the
    terminal and run or cancelled."""
    pending: list[InterruptEvent] = []
    failed: list[ErrorEvent] = []

    def watched() -> Iterator[Event]:
        for event in _chat_events(events):
            if isinstance(event, InterruptEvent):
                pending.append(event)
            elif isinstance(event, ErrorEvent):
                failed.append(event)
            yield event

    answer = _stream_events(watched(), live=True, prefix="[bold green]citewise>[/] ")
    for err in failed:
        err_console.print(f"[bold red]error:[/] {escape(err.message)}")
    if answer is not None:
        _print_checks(answer)
        _print_sources(answer)
    for interrupt in pending:
        what = interrupt.input.get("path", interrupt.input.get("document_id", ""))
        approve = typer.confirm(f"{interrupt.action} {what}?", default=False)
        action = agent.take_action(chat_id, interrupt.resume_token, approve)
        _chat_turn(agent, chat_id, agent.resume(action, approve))


def _loaded(hit: Hit) -> tuple[Chunk, Document]:
    """A search hit's chunk and document (the retriever loads both for every hit it returns;
    AssertionError otherwise)."""
    assert hit.chunk is not None and hit.document is not None
    return hit.chunk, hit.document


def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    mode: Annotated[SearchMode, typer.Option(help="Which legs to run.")] = SearchMode.HYBRID,
    top_k: TopKOpt = None,
    per_file: Annotated[int | None, typer.Option(min=1, help="Chunks per file.")] = None,
    fmt: FormatOpt = OutputFormat.text,
    where: WhereOpt = None,
    path: PathOpt = None,
    collection: CollectionOpt = None,
    language: LanguageOpt = None,
) -> None:
    """Ranked chunks with file, page/lines, section and each stage's score. --where, --path,
    --collection and --language limit the documents searched."""
    filters = _scope(where, path, collection, language)
    with errors():
        result = build_engine().search(query, mode=mode, top_k=top_k, per_file=per_file,
                                       min_score=0.0, filters=filters)
    if fmt is OutputFormat.json:
        hits = []
        for i, h in enumerate(result.hits, start=1):
            chunk, doc = _loaded(h)
            hits.append({
                "rank": i, "chunk_id": h.chunk_id, "path": doc.path, "page": chunk.page,
                "line_start": chunk.line_start, "line_end": chunk.line_end,
                "section": list(chunk.section), "symbol": chunk.symbol, "source": h.source,
                "dense": h.dense, "bm25": h.sparse, "fused": h.fused, "rerank": h.rerank,
                "relevance": h.relevance, "score": h.score, "text": chunk.text})
        print(json.dumps({"query": result.query, "hits": hits, "reranked": result.reranked,
                          "timings_ms": result.timings_ms}, ensure_ascii=False))
        return
    if not result.hits:
        console.print("No matching passages.")
        return
    table = Table(show_lines=True)
    for col in ("#", "location", "dense", "BM25", "fused", "rerank", "rel.", "text"):
        table.add_column(col, overflow="fold")

    def fmt_score(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    for i, (h, ev) in enumerate(zip(result.hits, to_evidence(result.hits), strict=True), start=1):
        chunk, doc = _loaded(h)
        if doc.format == "code":
            loc = ev.citation.location  # path:start-end, symbol
        else:
            loc = (doc.path + (f" p.{chunk.page}" if chunk.page else
                   f" l.{chunk.line_start}-{chunk.line_end}" if chunk.line_start else "")
                   + (f"\n{' > '.join(chunk.section)}" if chunk.section else ""))
        snippet = " ".join(chunk.text.split())[:220]
        table.add_row(str(i), escape(loc), fmt_score(h.dense), fmt_score(h.sparse),
                      fmt_score(h.fused), fmt_score(h.rerank), fmt_score(h.relevance),
                      escape(snippet))
    console.print(table)
    timings = ", ".join(f"{k.removesuffix('_ms')} {v:.1f}" for k, v in result.timings_ms.items())
    console.print(f"[dim]ms: {timings}[/]")
    if not result.reranked:
        console.print("[dim]rerank: skipped (no CITEWISE_RERANKER_MODEL configured, or the "
                      "question's language is not in CITEWISE_RERANK_LANGUAGES)[/]")

