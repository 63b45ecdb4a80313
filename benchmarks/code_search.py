"""Code search quality: hit@8 and MRR@10 for BM25, dense and hybrid over a real Python project.

The project is an installed package's own source (default: ``click`` from the environment
citewise runs in). Every ``.py`` file is parsed by the code parser, once with the tree-sitter
symbol splitter and once with the line-based splitters it falls back to (``--splitters``), and
indexed with the configured embedding model into a fresh SQLite index per splitter.

Questions come from a JSONL file, one object a line: ``{"id", "question", "file", "symbols"}``
where ``file`` is the path under the package's parent folder (``click/core.py``) and
``symbols`` the accepted answers (``Class.method`` or ``function``). A ranked chunk answers a
question when it comes from ``file`` and its line range holds the ``def``/``class`` line of one
of ``symbols`` (found with ``ast``), so both splitters are judged by the same rule.

For each mode (``sparse`` = BM25, ``dense``, ``hybrid``, and ``hybrid+rerank`` when
``CITEWISE_RERANKER_MODEL`` is set) the chunk ranking is :meth:`Retriever.rank` (the candidates
``citewise search --mode MODE`` selects from, before one-chunk-per-file selection).
hit@8 = share of questions with an answering chunk in the top 8; MRR@10 = mean of 1/rank of
the first answering chunk within the top 10 (0 when none).

Usage::

    CITEWISE_THREADS=1 python benchmarks/code_search.py [--package click]
        [--questions benchmarks/code_questions.jsonl] [--splitters tree-sitter,lines]
        [--format text|json]

Prints a Markdown table (or JSON); the figures in docs/benchmarks.md come from this script.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from citewise.config import Settings
from citewise.embed import load_embedder
from citewise.eval.jsonl import jsonl_values
from citewise.ingest.parsers import code
from citewise.ingest.pipeline import Ingestor
from citewise.retrieve.rerank import load_reranker
from citewise.retrieve.retriever import Retriever
from citewise.store.sqlite import SQLiteStore
from citewise.types import Hit

HERE = Path(__file__).resolve().parent
HIT_K, MRR_K = 8, 10


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    file: str
    symbols: tuple[str, ...]


def load_questions(path: Path) -> list[Question]:
    """Questions from a JSONL file (see the module docstring)."""
    return [Question(row["id"], row["question"], row["file"], tuple(row["symbols"]))
            for row in jsonl_values(path)]


def definition_lines(source: str) -> dict[str, int]:
    """``{"Class.method": line of its def/class keyword}`` for every function and class."""
    found: dict[str, int] = {}

    def walk(nodes: list[ast.stmt], prefix: str) -> None:
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + node.name
                found.setdefault(name, node.lineno)
                if isinstance(node, ast.ClassDef):
                    walk(node.body, name + ".")

    walk(ast.parse(source).body, "")
    return found


def answer_lines(root: Path, questions: list[Question]) -> dict[str, set[tuple[str, int]]]:
    """For each question, the ``(file, line)`` pairs a chunk must hold to answer it.
    Raises KeyError naming a symbol that the file does not define."""
    cache: dict[str, dict[str, int]] = {}
    out: dict[str, set[tuple[str, int]]] = {}
    for q in questions:
        if q.file not in cache:
            cache[q.file] = definition_lines((root / q.file).read_text(encoding="utf-8"))
        missing = [s for s in q.symbols if s not in cache[q.file]]
        if missing:
            raise KeyError(f"{q.id}: {q.file} defines no {', '.join(missing)}")
        out[q.id] = {(q.file, cache[q.file][s]) for s in q.symbols}
    return out


def build(root: Path, package: str, splitter: str, settings: Settings, folder: Path,
          embedder) -> tuple[SQLiteStore, int, float]:  # type: ignore[no-untyped-def]
    """Index every .py file of the package; returns the store, its chunk count and seconds."""
    store = SQLiteStore(folder / f"code-{package}-{splitter}.sqlite3")
    files = sorted((root / package).rglob("*.py"))
    items = []
    for file in files:
        rel = file.relative_to(root).as_posix()
        data = file.read_bytes()
        if data.strip():
            items.append((rel, rel, code.parse(file, data, tree_sitter=splitter == "tree-sitter")))
    started = time.perf_counter()
    Ingestor(settings, store, embedder).index_parsed(items, total=len(items))
    return store, store.info().chunks, time.perf_counter() - started


def first_answer(hits: list[Hit], wanted: set[tuple[str, int]]) -> int | None:
    """1-based rank of the first hit whose chunk holds one of the wanted (file, line)."""
    for rank, hit in enumerate(hits, start=1):
        chunk, doc = hit.chunk, hit.document
        if chunk is None or doc is None or chunk.line_start is None:
            continue
        end = chunk.line_end or chunk.line_start
        if any(doc.path == f and chunk.line_start <= line <= end for f, line in wanted):
            return rank
    return None


def evaluate(retriever: Retriever, questions: list[Question],
             wanted: dict[str, set[tuple[str, int]]], mode: str,
             rerank: bool) -> dict[str, object]:
    ranks: dict[str, int | None] = {}
    for q in questions:
        hits = retriever.rank(q.text, mode=mode, rerank=rerank)
        ranks[q.id] = first_answer(hits, wanted[q.id])
    n = len(questions)
    hit = sum(1 for r in ranks.values() if r is not None and r <= HIT_K) / n
    mrr = sum(1 / r for r in ranks.values() if r is not None and r <= MRR_K) / n
    return {"hit@8": round(hit, 3), "mrr@10": round(mrr, 3), "ranks": ranks}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--package", default="click")
    parser.add_argument("--questions", type=Path, default=HERE / "code_questions.jsonl")
    parser.add_argument("--splitters", default="tree-sitter,lines")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)

    module = importlib.import_module(args.package)
    root = Path(module.__file__).resolve().parent.parent  # type: ignore[arg-type]
    version = metadata.version(args.package)
    questions = load_questions(args.questions)
    wanted = answer_lines(root, questions)
    settings = Settings()
    embedder = load_embedder(settings.embedding_model, settings.threads, settings.embed_batch_size)
    reranker = load_reranker(settings.reranker_model, settings.threads)
    modes = [("sparse", False), ("dense", False), ("hybrid", False)]
    if reranker is not None:
        modes.append(("hybrid", True))

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for splitter in args.splitters.split(","):
            store, chunks, seconds = build(root, args.package, splitter, settings, Path(tmp),
                                           embedder)
            retriever = Retriever(settings, store, embedder, reranker)
            for mode, rerank in modes:
                row = evaluate(retriever, questions, wanted, mode, rerank)
                results.append({"splitter": splitter, "mode": mode + ("+rerank" if rerank else ""),
                                "chunks": chunks, "index_seconds": round(seconds, 1), **row})
            store.close()
    if args.format == "json":
        print(json.dumps({"package": args.package, "version": version,
                          "questions": len(questions), "embedding_model": embedder.name,
                          "fusion": settings.fusion.value, "results": results}))
        return 0
    print(f"{args.package} {version}, {len(questions)} questions, embedder {embedder.name}, "
          f"fusion {settings.fusion.value}\n")
    print("| splitter | chunks | mode | hit@8 | MRR@10 |")
    print("|---|---|---|---|---|")
    for r in results:
        print(f"| {r['splitter']} | {r['chunks']} | {r['mode']} | {r['hit@8']:.3f} | "
              f"{r['mrr@10']:.3f} |")
    misses = {r["mode"] + " " + r["splitter"]: [q for q, k in r["ranks"].items()  # type: ignore[union-attr]
                                                if k is None or k > HIT_K] for r in results}
    print("\nmissed at 8: " + "; ".join(f"{k}: {', '.join(v) or '-'}" for k, v in misses.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
