"""The ``citewise`` command line (Typer): ingest, ask, chat, serve, search, status, reindex,
migrate, scan, eval, train-reranker."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from pydantic_settings import SettingsError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from citewise.answer.answerer import to_evidence
from citewise.config import SearchMode, Settings
from citewise.errors import CitewiseError, ConfigError
from citewise.train import Loss

app = typer.Typer(
    help="Ask your documents: hybrid search with cited answers, offline by default.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
eval_app = typer.Typer(help="Measure retrieval quality on benchmark data.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")

console = Console()
err_console = Console(stderr=True)


class OutputFormat(str, Enum):
    text = "text"
    json = "json"


@app.callback()
def _setup() -> None:
    """Ask your documents: hybrid search with cited answers, offline by default."""
    # the CLI is the application, so it decides what reaches the terminal: citewise's own
    # warnings are shown once by the commands (fallback notes), not again by the log;
    # CITEWISE_LOG_LEVEL=INFO shows the log. Model-loading progress bars are hidden.
    logging.basicConfig(level=os.environ.get("CITEWISE_LOG_LEVEL", "ERROR").upper(),
                        format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


FormatOpt = Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")]
TopKOpt = Annotated[int | None, typer.Option("--top-k", "-k", min=1, max=100,
                                             help="Number of sources (default: CITEWISE_TOP_K).")]


def _engine():  # type: ignore[no-untyped-def]
    from citewise.engine import Engine

    return Engine(Settings())


@contextmanager
def _errors() -> Iterator[None]:
    """Print citewise errors as one clean line and exit 1 (2 for bad settings)."""
    try:
        yield
    except CitewiseError as err:
        err_console.print(f"[bold red]error:[/] {escape(str(err))}")
        raise typer.Exit(1) from None
    except ValidationError as err:  # a setting from the environment, .env or citewise.toml
        for e in err.errors():
            name = ".".join(str(p) for p in e["loc"])
            err_console.print(
                f"[bold red]invalid setting:[/] {name} (CITEWISE_{name.upper()}): "
                f"{escape(e['msg'])}, got {escape(repr(e.get('input')))}"
            )
        raise typer.Exit(2) from None
    except SettingsError as err:  # a list or object setting whose value is not JSON
        found = re.search(r'field "(\w+)"', str(err))
        name = found.group(1) if found else "a list or object setting"
        env = f" (CITEWISE_{name.upper()})" if found else ""
        err_console.print(f"[bold red]invalid setting:[/] {name}{env}: the value is not valid "
                          "JSON; give a JSON list or object, for example '[\"a\", \"b\"]' "
                          "(see docs/configuration.md)")
        raise typer.Exit(2) from None


def _plain_progress(item: str, done: int, total: int) -> None:
    """Progress as an occasional stderr line, for logs (every 5 % of a known total)."""
    if total and (done == total or done % max(1, total // 20) == 0):
        print(f"{item}: {done}/{total}", file=sys.stderr, flush=True)


@contextmanager
def _progress(label: str, enabled: bool) -> Iterator[Any]:
    if not enabled:
        yield None
        return
    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), TextColumn("{task.fields[item]}", style="dim"),
        console=err_console, transient=True,
    ) as progress:
        task = progress.add_task(label, total=None, item="")

        def update(item: str, done: int, total: int) -> None:
            progress.update(task, completed=done, total=total or None, item=item[-60:])

        yield update


def _jsonable(obj: Any) -> Any:
    return json.loads(json.dumps(obj, default=lambda o: asdict(o) if hasattr(o, "__dataclass_fields__") else str(o)))


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files and folders to index.",
                                                readable=False)],
    prune: Annotated[bool, typer.Option(help="Also drop documents whose files are gone.")] = False,
    collection: Annotated[str | None, typer.Option(
        help="The collection the files belong to (default: CITEWISE_COLLECTION); API read "
             "keys are granted per collection.")] = None,
    fmt: FormatOpt = OutputFormat.text,
) -> None:
    """Add or update files and folders; unchanged files are skipped, removed ones deleted."""
    with _errors():
        engine = _engine()
        if collection is not None:
            engine.settings.collection_folder(collection)  # ConfigError for a bad name
        with _progress("ingesting", fmt is OutputFormat.text and sys.stderr.isatty()) as update:
            report = engine.ingest(paths, prune=prune, progress=update, collection=collection)
    if fmt is OutputFormat.json:
        print(json.dumps({"files": _jsonable(report.files), "seconds": report.seconds,
                          "chunks": report.chunks, "embedded": report.embedded}, ensure_ascii=False))
    else:
        for f in report.files:
            if f.status == "failed":
                console.print(f"[red]failed[/]    {escape(f.path)}: {escape(f.reason)}")
            elif f.status != "unchanged":
                console.print(f"[green]{f.status:<9}[/] {escape(f.path)} ({f.chunks} chunks)")
            for w in f.warnings:
                console.print(f"[yellow]warning[/]   {escape(f.path)}: {escape(w)}")
        counts = ", ".join(
            f"{report.count(s)} {s}" for s in ("added", "updated", "unchanged", "deleted", "failed")
        )
        console.print(f"{counts}; {report.chunks} chunks written, {report.embedded} embedded "
                      f"in {report.seconds:.1f} s")
    if report.files and report.count("failed") == len(report.files):
        raise typer.Exit(1)


def _print_sources(answer: Any) -> None:
    if not answer.citations:
        return
    console.print("\n[bold]Sources[/]")
    cited = set(answer.cited)
    for c in answer.citations:
        style = "" if not cited or c.n in cited else "dim"
        line = (f"  [{c.n}] {escape(c.location)}  [dim](chars {c.char_start}-{c.char_end}, "
                f"relevance {c.score:.2f})[/]")
        console.print(f"[{style}]{line}[/]" if style else line)


def _print_checks(answer: Any) -> None:
    if answer.fallback_reason:
        err_console.print(f"[yellow]note:[/] extractive answer; the LLM failed: "
                          f"{escape(answer.fallback_reason)}")
    for s in answer.unsupported:
        why = "no citation" if not s.citations else f"support {s.support:.2f}"
        err_console.print(f"[yellow]unsupported ({why}):[/] {escape(s.text)}")


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


def _stream_answer(events: Any, live: bool, prefix: str = "") -> Any:
    """Print tokens as they come (when ``live``), after ``prefix`` (rich markup, printed when
    the answer starts), with each status on stderr before the first token; return the final
    Answer. Stdout gets only the prefix and the answer text. Raises what ``events`` raise."""
    from citewise.types import DoneEvent, StatusEvent, TokenEvent

    answer, wrote, started = None, False, False
    status = _StatusLine(live)

    def start() -> None:
        nonlocal started
        if not started:
            status.stop()
            if prefix:
                console.print(prefix, end="")
            started = True

    try:
        for event in events:
            if isinstance(event, DoneEvent):
                answer = event.answer
            elif live and isinstance(event, TokenEvent):
                start()
                console.out(event.content, end="", highlight=False)
                wrote = True
            elif live and isinstance(event, StatusEvent) and event.stage == "fallback":
                if wrote:  # the text above cannot be unprinted: say on stdout it is withdrawn
                    console.out("\n[withdrawn: the text above failed the support check; the "
                                "quoted evidence follows]\n", highlight=False)
                    wrote = False
                status.stop()
                err_console.print(f"[yellow]{escape(event.message)}[/]")
            elif live and isinstance(event, StatusEvent):
                status.show(event.message)
    finally:
        status.stop()
    assert answer is not None
    if live:
        start()
        if not wrote:  # nothing streamed (not found, no documents)
            console.out(answer.text, end="", highlight=False)
        console.out("")
    return answer


ExtractiveOpt = Annotated[bool, typer.Option(
    "--extractive", help="Quote evidence sentences instead of asking the LLM.")]


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    extractive: ExtractiveOpt = False,
    top_k: TopKOpt = None,
    fmt: FormatOpt = OutputFormat.text,
) -> None:
    """Answer a question with numbered citations and the sources below it (streamed)."""
    with _errors():
        engine = _engine()
        events = engine.ask_stream(question, top_k=top_k, extractive=extractive)
        answer = _stream_answer(events, live=fmt is OutputFormat.text)
    if fmt is OutputFormat.json:
        out = _jsonable(answer)
        out["unsupported"] = [s["text"] for s in out["support"] if not s["supported"]]
        print(json.dumps(out, ensure_ascii=False))
        return
    _print_sources(answer)
    _print_checks(answer)


@app.command()
def chat(
    extractive: ExtractiveOpt = False,
    top_k: TopKOpt = None,
) -> None:
    """A conversation in the terminal: earlier turns go with each question. Ctrl-D or
    "exit" ends it."""
    history: list[tuple[str, str]] = []
    with _errors():
        engine = _engine()
        while True:
            try:
                question = console.input("[bold cyan]you>[/] ")
            except (EOFError, KeyboardInterrupt):
                console.out("")
                return
            if question.strip().lower() in {"exit", "quit", ":q"}:
                return
            if not question.strip():
                continue
            try:
                events = engine.ask_stream(question, top_k=top_k, extractive=extractive,
                                           history=history)
                answer = _stream_answer(events, live=True, prefix="[bold green]citewise>[/] ")
            except CitewiseError as err:  # a bad question does not end the conversation
                err_console.print(f"[bold red]error:[/] {escape(str(err))}")
                continue
            _print_sources(answer)
            _print_checks(answer)
            if answer.found:
                history.append((question, answer.text))


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Address to bind (default: CITEWISE_HOST, "
                                                   "127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(
        min=1, max=65535, help="Port (default: CITEWISE_PORT, 8765).")] = None,
) -> None:
    """Serve the HTTP API (see docs/api.md) with uvicorn until Ctrl-C."""
    import uvicorn

    from citewise.api.app import create_app

    with _errors():
        overrides: dict[str, Any] = {}
        if host is not None:
            overrides["host"] = host
        if port is not None:
            overrides["port"] = port
        settings = Settings(**overrides)
        application = create_app(settings)
    err_console.print(f"citewise API on http://{settings.host}:{settings.port} "
                      f"(OpenAPI: /docs)")
    uvicorn.run(application, host=settings.host, port=settings.port, log_level="info")


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    mode: Annotated[SearchMode, typer.Option(help="Which legs to run.")] = SearchMode.HYBRID,
    top_k: TopKOpt = None,
    per_file: Annotated[int | None, typer.Option(min=1, help="Chunks per file.")] = None,
    fmt: FormatOpt = OutputFormat.text,
) -> None:
    """Ranked chunks with file, page/lines, section and each stage's score."""
    with _errors():
        result = _engine().search(query, mode=mode, top_k=top_k, per_file=per_file, min_score=0.0)
    if fmt is OutputFormat.json:
        hits = [
            {"rank": i, "chunk_id": h.chunk_id, "path": h.document.path, "page": h.chunk.page,
             "line_start": h.chunk.line_start, "line_end": h.chunk.line_end,
             "section": list(h.chunk.section), "symbol": h.chunk.symbol, "source": h.source, "dense": h.dense,
             "bm25": h.sparse, "fused": h.fused, "rerank": h.rerank, "relevance": h.relevance,
             "score": h.score, "text": h.chunk.text}
            for i, h in enumerate(result.hits, start=1)
        ]
        print(json.dumps({"query": result.query, "hits": hits, "reranked": result.reranked,
                          "timings_ms": result.timings_ms}, ensure_ascii=False))
        return
    if not result.hits:
        console.print("No matching passages.")
        return
    table = Table(show_lines=True)
    for col in ("#", "location", "dense", "BM25", "fused", "rerank", "rel.", "text"):
        table.add_column(col, overflow="fold")
    fmt_score = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
    for i, (h, ev) in enumerate(zip(result.hits, to_evidence(result.hits), strict=True), start=1):
        if h.document.format == "code":
            loc = ev.citation.location  # path:start-end, symbol
        else:
            loc = (h.document.path + (f" p.{h.chunk.page}" if h.chunk.page else
                   f" l.{h.chunk.line_start}-{h.chunk.line_end}" if h.chunk.line_start else "")
                   + (f"\n{' > '.join(h.chunk.section)}" if h.chunk.section else ""))
        snippet = " ".join(h.chunk.text.split())[:220]
        table.add_row(str(i), escape(loc), fmt_score(h.dense), fmt_score(h.sparse),
                      fmt_score(h.fused), fmt_score(h.rerank), fmt_score(h.relevance),
                      escape(snippet))
    console.print(table)
    timings = ", ".join(f"{k.removesuffix('_ms')} {v:.1f}" for k, v in result.timings_ms.items())
    console.print(f"[dim]ms: {timings}[/]")
    if not result.reranked:
        console.print("[dim]rerank: skipped (no CITEWISE_RERANKER_MODEL configured, or the "
                      "question's language is not in CITEWISE_RERANK_LANGUAGES)[/]")


@app.command()
def status(fmt: FormatOpt = OutputFormat.text) -> None:
    """Documents, chunks, model names and index size."""
    with _errors():
        info = _engine().status()
    if fmt is OutputFormat.json:
        print(json.dumps(info))
        return
    for key, value in info.items():
        console.print(f"{key:<28} {value}")


@app.command()
def reindex() -> None:
    """Re-embed every document with the configured embedding model, or, when only the text
    analysis changed, re-analyse the stored chunks (vectors kept)."""
    with _errors():
        engine = _engine()
        with _progress("re-indexing", sys.stderr.isatty()) as update:
            report = engine.reindex(progress=update)
    if report.count("updated") and not report.count("added"):
        console.print(f"re-analysed {report.count('updated')} documents, {report.chunks} chunks "
                      f"in {report.seconds:.1f} s (BM25 terms and languages; vectors kept)")
        return
    console.print(f"re-indexed {report.count('added')} documents, {report.chunks} chunks "
                  f"in {report.seconds:.1f} s; {report.count('failed')} failed")


@app.command()
def migrate(
    source: Annotated[str, typer.Option(
        "--from", help="The index to copy: sqlite:PATH (a .sqlite3 file or a folder holding "
        "index.sqlite3) or postgresql://user:password@host:port/database.")],
    target: Annotated[str, typer.Option(
        "--to", help="Where to copy it: postgresql://... or sqlite:PATH (created if missing).")],
) -> None:
    """Copy an index to another store (e.g. SQLite to PostgreSQL) without re-embedding."""
    from citewise.store.copy import copy_index, open_location

    with _errors():
        if not source.startswith(("sqlite:", "postgres")) and not Path(source).exists():
            raise ConfigError(f"--from {source!r}: no such index")
        if source.startswith("sqlite:") and not Path(source[7:]).expanduser().exists():
            raise ConfigError(f"--from {source!r}: no such index file or folder")
        src, dst = open_location(source), open_location(target)
        try:
            with _progress("copying", sys.stderr.isatty()) as update:
                report = copy_index(src, dst, progress=update)
        finally:
            src.close()
            dst.close()
    console.print(f"copied {report.documents} documents, {report.chunks} chunks "
                  f"in {report.seconds:.1f} s (vectors copied, nothing re-embedded)")


_SEVERITY_STYLE = {"high": "bold red", "medium": "yellow", "low": "cyan"}
_VERDICT_STYLE = {"deviates": "red", "missing": "magenta", "compliant": "green"}


@app.command()
def scan(
    file: Annotated[Path, typer.Argument(help="The contract to check (PDF, DOCX, text...).")],
    playbook: Annotated[str, typer.Option(
        "--playbook", "-p", help="A bundled playbook name or a YAML file path.")] = "default",
    checker: Annotated[str | None, typer.Option(
        help="auto, llm or rules (default: CITEWISE_SCAN_CHECKER).")] = None,
    fmt: FormatOpt = OutputFormat.text,
) -> None:
    """Check a document against a playbook; flags sorted by severity, each with a citation."""
    with _errors():
        engine = _engine()
        if checker not in (None, "auto", "llm", "rules"):
            raise typer.BadParameter("use auto, llm or rules", param_hint="--checker")
        with _progress("scanning", fmt is OutputFormat.text and sys.stderr.isatty()) as update:
            report = engine.scan(file, playbook, checker=engine.scan_checker(checker),
                                 progress=update)
    if fmt is OutputFormat.json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
        return
    table = Table(title=f"{escape(report.document.path)} - playbook {escape(report.playbook)}",
                  show_lines=True)
    for col in ("severity", "rule", "verdict", "explanation", "where"):
        table.add_column(col, overflow="fold")
    for f in report.flags:
        c = f.citation
        where = "-" if c is None else (
            (f"p. {c.page}" if c.page is not None else
             f"lines {c.line_start}-{c.line_end}" if c.line_start is not None else "")
            + (f", {' > '.join(c.section)}" if c.section else "")
            + f"\nchars {c.char_start}-{c.char_end}")
        table.add_row(f"[{_SEVERITY_STYLE[f.severity.value]}]{f.severity.value}[/]",
                      escape(f.title), f"[{_VERDICT_STYLE[f.verdict.value]}]{f.verdict.value}[/]",
                      escape(f.explanation), escape(where.lstrip(", ")))
    console.print(table)
    counts = ", ".join(f"{sum(f.verdict.value == v for f in report.flags)} {v}"
                       for v in ("deviates", "missing", "compliant"))
    console.print(f"{counts}; {sum(report.timings_ms.values()) / 1000:.1f} s")


ModelsOpt = Annotated[str, typer.Option(help="Comma-separated embedding models.")]
QueriesOpt = Annotated[int, typer.Option(help="Score only the first N queries (0 = all).")]


@eval_app.command("beir")
def eval_beir(
    path: Annotated[Path, typer.Argument(help="A BEIR-format dataset folder.")],
    split: Annotated[str, typer.Option(help="qrels split to score.")] = "test",
    models: ModelsOpt = "", queries: QueriesOpt = 0, fmt: FormatOpt = OutputFormat.text,
) -> None:
    """nDCG@10, recall@100, MRR@10 and hit@10 for BM25, dense and each fusion."""
    from citewise.eval.datasets import load_beir

    _evaluate(lambda: load_beir(path, split=split), models, queries, fmt)


@eval_app.command("xquad")
def eval_xquad(
    path: Annotated[Path, typer.Argument(help="A SQuAD-format file, e.g. xquad.ru.json.")],
    models: ModelsOpt = "", queries: QueriesOpt = 0, fmt: FormatOpt = OutputFormat.text,
) -> None:
    """Retrieval over a SQuAD-style file (paragraphs as corpus, questions as queries)."""
    from citewise.eval.datasets import load_squad_retrieval

    _evaluate(lambda: load_squad_retrieval(path), models, queries, fmt)


@eval_app.command("kazakh-legal")
def eval_kazakh_legal(
    path: Annotated[Path, typer.Argument(help="The kazakh_legal_qa folder (corpus.jsonl, "
                                              "questions.dev.json).")],
    models: ModelsOpt = "", queries: QueriesOpt = 0, fmt: FormatOpt = OutputFormat.text,
    max_chars: Annotated[int, typer.Option(
        help="Index only the first N characters of each document (0 = all).")] = 0,
) -> None:
    """Retrieval on the Kazakh legal QA set (recall@6 as in its paper; documents as units)."""
    from citewise.eval.legal import load_kazakh_legal

    _evaluate(lambda: load_kazakh_legal(path, max_chars), models, queries, fmt)


@eval_app.command("ru-legal")
def eval_ru_legal(
    path: Annotated[Path, typer.Argument(help="The ru_legal_qa folder (corpus_files/, "
                                              "rag_data_located.jsonl).")],
    models: ModelsOpt = "", queries: QueriesOpt = 0, fmt: FormatOpt = OutputFormat.text,
) -> None:
    """Retrieval on LegalBench-RU: the codes split into articles, relevant = the articles the
    gold snippet overlaps."""
    from citewise.eval.legal import load_ru_legal

    _evaluate(lambda: load_ru_legal(path), models, queries, fmt)


def _evaluate(load: Any, models: str, queries: int, fmt: OutputFormat) -> None:
    from citewise.eval.run import run_dataset

    with _errors():
        settings = Settings()
        names = [m for m in models.split(",") if m] or [settings.embedding_model]
        dataset = load()
        with _progress("evaluating", fmt is OutputFormat.text and sys.stderr.isatty()) as update:
            rows = run_dataset(dataset, settings, names, max_queries=queries, progress=update)
    _print_eval(rows, fmt)


def _print_eval(rows: list[dict[str, Any]], fmt: OutputFormat) -> None:
    if fmt is OutputFormat.json:
        print(json.dumps(rows))
        return
    table = Table()
    for col in ("run", "nDCG@10", "recall@6", "recall@100", "MRR@10", "hit@10", "ms/query"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["run"], *(f"{r[k]:.3f}" for k in ("nDCG@10", "recall@6", "recall@100",
                                                          "MRR@10", "hit@10")),
                      f"{r['ms_per_query']:.1f}")
    console.print(table)


@app.command("train-reranker")
def train_reranker(
    out: Annotated[Path, typer.Argument(help="The .onnx file to write (int8 unless --no-quantize).")],
    scifact: Annotated[Path | None, typer.Option(
        help="SciFact BEIR folder: its qrels/train.tsv (never test) are used.")] = None,
    xquad: Annotated[list[Path] | None, typer.Option(
        help="XQuAD .json file (repeatable): the training articles are used.")] = None,
    jsonl: Annotated[list[Path] | None, typer.Option(
        help='Your own examples (repeatable): one {"query", "positive": [...], '
             '"negative": [...]} a line; chunk ids of the index or passage texts.')] = None,
    lora: Annotated[bool, typer.Option("--lora/--full",
                                       help="LoRA adapters over a frozen base, or full fine-tuning.")] = False,
    negatives: Annotated[int, typer.Option(min=1, help="Hard negatives per question.")] = 3,
    dev_queries: Annotated[int, typer.Option(
        min=0, help="SciFact train queries (last by id) kept out for development.")] = 0,
    max_queries: Annotated[int, typer.Option(min=0, help="At most N questions per source (0 = all).")] = 0,
    corpus_docs: Annotated[int, typer.Option(
        min=0, help="SciFact: index only the first N abstracts (0 = all 5,183).")] = 0,
    max_length: Annotated[int, typer.Option(min=16, max=512, help="Longest pair, in tokens.")] = 256,
    batch_size: Annotated[int, typer.Option(min=1, help="Pairs per optimiser step.")] = 16,
    group_size: Annotated[int, typer.Option(
        min=2, help="Pairs of one question in a step: 1 positive + hard negatives.")] = 4,
    loss: Annotated[Loss, typer.Option(
        help="listwise (softmax over each group + binary cross-entropy) or pointwise.")
    ] = Loss.LISTWISE,
    head_lr_scale: Annotated[float, typer.Option(
        min=0.0, help="Learning rate of the new head, as a multiple of --lr.")] = 20.0,
    init: Annotated[Path | None, typer.Option(
        help="Go on training a model folder saved by an earlier --save-torch.")] = None,
    epochs: Annotated[int, typer.Option(min=1)] = 1,
    lr: Annotated[float, typer.Option(min=0.0, help="Learning rate (0 = 5e-5 full, 5e-4 LoRA).")] = 0.0,
    max_steps: Annotated[int, typer.Option(min=0, help="Stop after N steps (0 = epochs).")] = 0,
    seed: Annotated[int, typer.Option(help="Seed of the head, the shuffling and dropout.")] = 0,
    quantize: Annotated[bool, typer.Option(help="Dynamic int8 quantisation of the export.")] = True,
    fp32_out: Annotated[Path | None, typer.Option(help="Also keep the fp32 .onnx here.")] = None,
    save_torch: Annotated[Path | None, typer.Option(
        help="Also save the PyTorch model folder here (a sentence-transformers CrossEncoder).")] = None,
    save_examples: Annotated[Path | None, typer.Option(
        help="Also write the training examples (mined negatives included) as JSONL here; "
             "--jsonl reads it back without mining again.")] = None,
) -> None:
    """Fine-tune a cross-encoder reranker from the bundled all-MiniLM-L6-v2 on (question,
    positive, hard negatives) examples and export it to ONNX; use it with
    CITEWISE_RERANKER_MODEL=OUT."""
    from citewise.train import data
    from citewise.train.reranker import TrainConfig, require_extra
    from citewise.train.reranker import train_reranker as train

    with _errors():
        if not (scifact or xquad or jsonl):
            raise ConfigError("give training data: --scifact, --xquad and/or --jsonl")
        if out.suffix != ".onnx":  # checked again by train(); here before any slow work
            raise ConfigError(f"{out}: the reranker file name must end in .onnx")
        if save_torch is not None and save_torch.exists() and not save_torch.is_dir():
            raise ConfigError(f"--save-torch {save_torch}: is a file; give a folder")
        require_extra(lora)  # before the minutes of mining hard negatives
        settings = Settings()
        config = TrainConfig(lora=lora, max_length=max_length, batch_size=batch_size,
                             epochs=epochs, lr=lr, max_steps=max_steps, seed=seed,
                             threads=settings.threads, quantize=quantize, group_size=group_size,
                             loss=loss.value, head_lr_scale=head_lr_scale,
                             init=str(init) if init else "")
        examples: list[data.Example] = []
        sources: list[str] = []
        show = sys.stderr.isatty()
        rows = [data.read_jsonl(p) for p in jsonl or []]  # check every file before the slow part
        with _progress("preparing", show) as update:
            update = update or _plain_progress
            if scifact:
                examples += data.scifact_examples(scifact, settings, negatives, dev_queries,
                                                  max_queries, corpus_docs, update)
                sources.append(f"scifact train (dev {dev_queries}, corpus {corpus_docs or 'all'})")
            for path in xquad or []:
                examples += data.xquad_examples(path, settings, negatives, max_queries, update)
                sources.append(f"{path.name} train articles")
            if rows:
                engine = _engine()
                retriever = engine.retriever if engine.store.info().chunks else None
                for path, items in zip(jsonl or [], rows, strict=True):
                    examples += data.resolve_examples(items, path.name, retriever, negatives)
                    sources.append(path.name)
        pairs = data.pairs_of(examples)
        if save_examples:
            data.write_jsonl(save_examples, examples)
        err_console.print(f"{len(examples)} questions, {len(pairs)} pairs from "
                          f"{', '.join(sources)}")
        with _progress("training", show) as update:
            report = train(examples, out, config, fp32_out=fp32_out, save_torch=save_torch,
                           sources=sources, progress=update or _plain_progress)
    console.print(f"wrote {report.onnx_path} ({report.onnx_bytes / 2**20:.1f} MiB"
                  f"{', int8' if report.quantized else ''}): {report.steps} steps over "
                  f"{report.pairs} pairs in {report.train_seconds:.0f} s, final loss "
                  f"{report.final_loss:.3f}; export {report.export_seconds:.0f} s")


def main() -> None:  # pragma: no cover
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
