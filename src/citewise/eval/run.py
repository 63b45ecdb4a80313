"""Retrieval evaluation on a BEIR-format dataset through citewise's own index and retriever.

Each corpus document becomes one citewise document (title + text, chunked as usual); a query's
ranking of chunks is turned into a ranking of documents by each document's best chunk. Runs:
BM25 alone, dense alone (per embedding model), every fusion of the two, and the reranker on
top of the configured fusion when one is configured. Indexes are cached under
``$CITEWISE_HOME/eval/`` by dataset, model and chunk settings, so a second run only queries.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from citewise.config import Fusion, SearchMode, Settings
from citewise.embed import load_embedder
from citewise.eval.datasets import BeirDataset
from citewise.eval.metrics import evaluate
from citewise.ingest.parsers.text import paragraph_spans
from citewise.ingest.pipeline import Ingestor
from citewise.retrieve.fusion import fuse
from citewise.retrieve.rerank import load_reranker
from citewise.retrieve.retriever import Retriever
from citewise.store.sqlite import SQLiteStore
from citewise.text.analysis import ANALYZER_VERSION
from citewise.types import Block, BlockKind, Hit, ParsedDocument

METRICS_K = (6, 10, 100)  # recall@6 is the Kazakh legal QA paper's measure
DEPTH = 100


def _parsed(title: str, text: str) -> ParsedDocument:
    """A corpus document as parsed text: one paragraph block per run of non-blank lines, as
    the ``.txt`` parser makes them (a text without blank lines, such as an abstract, is one
    block), so a long legal act is chunked like the file ``citewise ingest`` would read."""
    spans = paragraph_spans(text)
    if len(spans) <= 1:
        blocks: tuple[Block, ...] = ((Block(BlockKind.PARAGRAPH, text, 0, len(text)),)
                                     if text.strip() else ())
    else:
        blocks = tuple(Block(BlockKind.PARAGRAPH, text[s:e], s, e, line_start=a, line_end=b)
                       for s, e, a, b in spans)
    return ParsedDocument(text=text, blocks=blocks, format="beir", title=title)


def build_index(dataset: BeirDataset, settings: Settings, model: str, folder: Path,
                progress: Callable[[str, int, int], None] | None = None) -> tuple[SQLiteStore, Any]:
    """Index the corpus with ``model`` into ``folder`` (reused when already complete)."""
    embedder = load_embedder(model, settings.threads, settings.embed_batch_size,
                             settings.embedding_precision)
    # the recorded name tells the precision apart (minilm, minilm-int8)
    safe = "".join(ch if ch.isalnum() else "_" for ch in embedder.name)[-40:]
    path = folder / f"{dataset.name}-{safe}-{settings.chunk_tokens}-{settings.chunk_overlap}.sqlite3"
    store = SQLiteStore(path)
    stale = store.stored_analyzer() != ANALYZER_VERSION  # terms of another analysis
    if stale or len(store.documents()) != len(dataset.corpus):
        store.clear()
        ingestor = Ingestor(settings, store, embedder)
        items = ((d.id, d.id, _parsed(d.title, d.text)) for d in dataset.corpus.values())
        ingestor.index_parsed(items, progress=progress, total=len(dataset.corpus))
    return store, embedder


def _doc_ranking(hits: Sequence[Hit]) -> list[str]:
    """Document ids in order of their best chunk (documents are ``Document.id``)."""
    seen: dict[str, None] = {}
    for h in hits:
        doc = h.chunk.document_id if h.chunk is not None else h.chunk_id
        seen.setdefault(doc, None)
    return list(seen)


def run_dataset(
    dataset: BeirDataset, settings: Settings, models: Sequence[str], *,
    max_queries: int = 0, progress: Callable[[str, int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Rows ``{"run", "nDCG@10", "recall@6", "recall@100", "MRR@10", "hit@10",
    "ms_per_query", "queries"}`` for a loaded dataset (``load_beir`` or ``load_squad_retrieval``); the first
    ``max_queries`` queries by id when given."""
    queries = dict(sorted(dataset.queries.items())[: max_queries or None])
    qrels = {q: dataset.qrels[q] for q in queries}
    folder = settings.home / "eval"
    rows: list[dict[str, Any]] = []
    reranker = load_reranker(settings.reranker_model, settings.threads, settings.rerank_windows)
    bm25_done = False
    for model in models:
        store, embedder = build_index(dataset, settings, model, folder, progress)
        retriever = Retriever(settings, store, embedder, reranker=None)
        runs: dict[str, dict[str, list[str]]] = {}
        times: dict[str, float] = {}
        legs: dict[str, tuple[list[Hit], list[Hit]]] = {}
        for i, (qid, text) in enumerate(queries.items()):
            if progress:
                progress(f"{model}: queries", i, len(queries))
            t0 = time.perf_counter()
            dense = retriever.rank(text, mode=SearchMode.DENSE, k=DEPTH, rerank=False)
            t1 = time.perf_counter()
            sparse = retriever.rank(text, mode=SearchMode.SPARSE, k=DEPTH, rerank=False)
            t2 = time.perf_counter()
            legs[qid] = (dense, sparse)
            runs.setdefault(f"dense:{model}", {})[qid] = _doc_ranking(dense)
            runs.setdefault("bm25", {})[qid] = _doc_ranking(sparse)
            times[f"dense:{model}"] = times.get(f"dense:{model}", 0) + (t1 - t0)
            times["bm25"] = times.get("bm25", 0) + (t2 - t1)
            for fusion in Fusion:
                t3 = time.perf_counter()
                fused = fuse(fusion, dense, sparse, alpha=settings.alpha, rrf_k=settings.rrf_k)
                name = f"hybrid:{model}:{fusion.value}"
                runs.setdefault(name, {})[qid] = _doc_ranking(fused)
                times[name] = times.get(name, 0) + (t2 - t0) + (time.perf_counter() - t3)
        if reranker is not None:
            rr = Retriever(settings, store, embedder, reranker=reranker)
            name = f"hybrid:{model}:{settings.fusion.value}+rerank"
            for qid, text in queries.items():
                t0 = time.perf_counter()
                runs.setdefault(name, {})[qid] = _doc_ranking(rr.rank(text, k=DEPTH))
                times[name] = times.get(name, 0) + time.perf_counter() - t0
        name = f"pipeline:{model}:{settings.fusion.value}"
        for qid, text in queries.items():  # what `citewise search` ranks (coverage blend)
            t0 = time.perf_counter()
            runs.setdefault(name, {})[qid] = _doc_ranking(retriever.rank(text, k=DEPTH))
            times[name] = times.get(name, 0) + time.perf_counter() - t0
        for name, run in runs.items():
            if name == "bm25" and bm25_done:
                continue
            scores = evaluate(run, qrels, ks=METRICS_K)
            rows.append({"run": name, **{k: scores[k] for k in
                                         ("nDCG@10", "recall@6", "recall@100", "MRR@10",
                                          "hit@10")},
                         "ms_per_query": 1000 * times[name] / max(1, len(queries)),
                         "queries": len(queries)})
        bm25_done = True
        store.close()
    return rows
