"""``citewise eval ...``: retrieval quality on benchmark data sets."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from citewise.cli.common import FormatOpt, OutputFormat, console, errors, progress_bar
from citewise.config import Settings

eval_app = typer.Typer(help="Measure retrieval quality on benchmark data.", no_args_is_help=True)

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


def _evaluate(load: Callable[[], Any], models: str, queries: int, fmt: OutputFormat) -> None:
    """Load the data set, score it for each model of ``models`` (comma-separated; default the
    configured one) and print the table or JSON rows."""
    from citewise.eval.run import run_dataset

    with errors():
        settings = Settings()
        names = [m for m in models.split(",") if m] or [settings.embedding_model]
        dataset = load()
        with progress_bar("evaluating", fmt is OutputFormat.text and sys.stderr.isatty()) as update:
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


