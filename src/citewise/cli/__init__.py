"""The ``citewise`` command line (Typer): ingest, ask, chat, serve, mcp, search, status,
reindex, migrate, scan, eval, train-reranker, watch, desktop.

This module only builds :data:`app`; each command group lives in its own module (``ingest``:
ingest, watch, status, reindex, migrate; ``ask``: ask, chat, search; ``serve``: serve, mcp;
``scan``; ``eval``; ``train``: train-reranker; ``desktop``) and :mod:`citewise.cli.common` holds what they
share.
"""

from __future__ import annotations

import logging
import os
from typing import Annotated

import typer

from citewise.cli import ask, desktop, ingest, scan, serve, train
from citewise.cli.eval import eval_app

app = typer.Typer(
    help="Ask your documents: hybrid search with cited answers, offline by default.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(eval_app, name="eval")


def _print_version(value: bool) -> None:
    """``--version``: the installed citewise version, then exit 0."""
    if value:
        from importlib.metadata import version

        typer.echo(f"citewise {version('citewise')}")
        raise typer.Exit()


@app.callback()
def _setup(
    version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="Print the installed citewise version and exit.")] = False,
) -> None:
    """Ask your documents: hybrid search with cited answers, offline by default."""
    # the CLI is the application, so it decides what reaches the terminal: citewise's own
    # warnings are shown once by the commands (fallback notes), not again by the log;
    # CITEWISE_LOG_LEVEL=INFO shows the log. Model-loading progress bars are hidden.
    logging.basicConfig(level=os.environ.get("CITEWISE_LOG_LEVEL", "ERROR").upper(),
                        format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


# registered in the order `citewise --help` has always listed them
app.command()(ingest.ingest)
app.command()(ask.ask)
app.command()(ask.chat)
app.command()(serve.serve)
app.command()(serve.mcp)
app.command()(ask.search)
app.command()(ingest.status)
app.command()(ingest.reindex)
app.command()(ingest.migrate)
app.command()(scan.scan)
app.command("train-reranker")(train.train_reranker)
app.command()(ingest.watch)
app.command()(desktop.desktop)


def main() -> None:  # pragma: no cover
    """The console entry point: runs :data:`app` on ``sys.argv``."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    app()

