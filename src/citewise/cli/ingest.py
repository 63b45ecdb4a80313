"""``citewise ingest``, ``status``, ``reindex`` and ``migrate``: building and keeping the
index."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from citewise.cli.common import (
    FormatOpt,
    OutputFormat,
    build_engine,
    console,
    err_console,
    errors,
    jsonable,
    progress_bar,
)
from citewise.errors import ConfigError
from citewise.ingest.pipeline import IngestReport
from citewise.ingest.watch import DEBOUNCE_MS


def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files and folders to index.",
                                                readable=False)],
    prune: Annotated[bool, typer.Option(help="Also drop documents whose files are gone.")] = False,
    collection: Annotated[str | None, typer.Option(
        help="The collection the files belong to (default: CITEWISE_COLLECTION); API read "
             "keys are granted per collection.")] = None,
    watch_: Annotated[bool, typer.Option(
        "--watch", help="Then keep watching the folders and apply changes as they happen "
        "(as `citewise watch`).")] = False,
    fmt: FormatOpt = OutputFormat.text,
) -> None:
    """Add or update files and folders; unchanged files are skipped, removed ones deleted."""
    if watch_:
        if prune:
            raise typer.BadParameter("--prune cannot be combined with --watch", param_hint="--prune")
        watch(paths, collection=collection, fmt=fmt)
        return
    with errors():
        engine = build_engine()
        if collection is not None:
            engine.settings.collection_folder(collection)  # ConfigError for a bad name
        with progress_bar("ingesting", fmt is OutputFormat.text and sys.stderr.isatty()) as update:
            report = engine.ingest(paths, prune=prune, progress=update, collection=collection)
    _print_report(report, fmt)
    if report.files and report.count("failed") + report.count("skipped") == len(report.files):
        raise typer.Exit(1)


def _print_report(report: IngestReport, fmt: OutputFormat, *, stamp: bool = False,
                  summary: bool = True) -> None:
    """An ingest report as ``citewise ingest`` prints it: one JSON document, or a line per
    file that changed or failed (``stamp``: each starting with the time) and a count line;
    skipped files (media files and empty markers under a folder) are only counted there."""
    if fmt is OutputFormat.json:
        print(json.dumps({"files": jsonable(report.files), "seconds": report.seconds,
                          "chunks": report.chunks, "embedded": report.embedded},
                         ensure_ascii=False), flush=True)
        return
    when = time.strftime("%H:%M:%S ") if stamp else ""
    for f in report.files:
        if f.status == "failed":
            console.print(f"{when}[red]failed[/]    {escape(f.path)}: {escape(f.reason)}")
        elif f.status not in ("unchanged", "skipped"):
            console.print(f"{when}[green]{f.status:<9}[/] {escape(f.path)} ({f.chunks} chunks)")
        for w in f.warnings:
            console.print(f"{when}[yellow]warning[/]   {escape(f.path)}: {escape(w)}")
    if summary:
        counts = ", ".join(
            f"{report.count(s)} {s}" for s in ("added", "updated", "unchanged", "deleted", "failed")
        )
        console.print(f"{when}{counts}; {report.chunks} chunks written, {report.embedded} "
                      f"embedded in {report.seconds:.1f} s")
        if n := report.count("skipped"):
            console.print(f"{when}{n} skipped: empty files and images, audio, video, fonts, "
                          "archives and programs have no text to index (--format json lists "
                          "them)")


def watch(
    paths: Annotated[list[Path], typer.Argument(help="Folders to keep in sync.",
                                                readable=False)],
    collection: Annotated[str | None, typer.Option(
        help="The collection the files belong to (default: CITEWISE_COLLECTION).")] = None,
    debounce: Annotated[int, typer.Option(
        min=10, help="Apply a batch of changes once no new change has come for this many "
        "milliseconds (at most 10 times this after the first change).")] = DEBOUNCE_MS,
    poll: Annotated[bool, typer.Option(
        help="Poll the folders instead of using the system's file notifications (network "
        "drives, some container mounts).")] = False,
    fmt: FormatOpt = OutputFormat.text,
) -> None:
    """Keep folders and the index in sync: one incremental ingest, then new, changed,
    renamed and deleted files applied as they happen, until Ctrl+C."""
    stop = threading.Event()
    first = True  # the catch-up's report gets the count line

    def ready(roots: list[Path]) -> None:
        names = ", ".join(str(r) for r in roots)
        err_console.print(f"watching {escape(names)} (Ctrl+C to stop)")

    def reported(report: IngestReport) -> None:
        nonlocal first
        _print_report(report, fmt, stamp=True, summary=first)
        first = False

    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        with errors():
            engine = build_engine()
            if collection is not None:
                engine.settings.collection_folder(collection)  # ConfigError for a bad name
            engine.watch(paths, collection=collection, stop=stop, debounce_ms=debounce,
                         force_polling=True if poll else None, on_report=reported,
                         on_ready=ready)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    err_console.print("stopped watching")


def status(fmt: FormatOpt = OutputFormat.text) -> None:
    """Documents, chunks, model names and index size."""
    with errors():
        info = build_engine().status()
    if fmt is OutputFormat.json:
        print(json.dumps(info))
        return
    for key, value in info.items():
        console.print(f"{key:<28} {value}")


def reindex() -> None:
    """Re-embed every document with the configured embedding model, or, when only the text
    analysis changed, re-analyse the stored chunks (vectors kept)."""
    with errors():
        engine = build_engine()
        with progress_bar("re-indexing", sys.stderr.isatty()) as update:
            report = engine.reindex(progress=update)
    if report.count("updated") and not report.count("added"):
        console.print(f"re-analysed {report.count('updated')} documents, {report.chunks} chunks "
                      f"in {report.seconds:.1f} s (BM25 terms and languages; vectors kept)")
        return
    console.print(f"re-indexed {report.count('added')} documents, {report.chunks} chunks "
                  f"in {report.seconds:.1f} s; {report.count('failed')} failed")


def migrate(
    source: Annotated[str, typer.Option(
        "--from", help="The index to copy: sqlite:PATH (a .sqlite3 file or a folder holding "
        "index.sqlite3) or postgresql://user:password@host:port/database.")],
    target: Annotated[str, typer.Option(
        "--to", help="Where to copy it: postgresql://... or sqlite:PATH (created if missing).")],
) -> None:
    """Copy an index to another store (e.g. SQLite to PostgreSQL) without re-embedding."""
    from citewise.store.copy import copy_index
    from citewise.store.factory import open_location

    with errors():
        if not source.startswith(("sqlite:", "postgres")) and not Path(source).exists():
            raise ConfigError(f"--from {source!r}: no such index")
        if source.startswith("sqlite:") and not Path(source[7:]).expanduser().exists():
            raise ConfigError(f"--from {source!r}: no such index file or folder")
        src, dst = open_location(source), open_location(target)
        try:
            with progress_bar("copying", sys.stderr.isatty()) as update:
                report = copy_index(src, dst, progress=update)
        finally:
            src.close()
            dst.close()
    console.print(f"copied {report.documents} documents, {report.chunks} chunks "
                  f"in {report.seconds:.1f} s (vectors copied, nothing re-embedded)")


