"""The cross-encoder reranker: retrieval quality with and without it, and its latency.

Quality: for every query, the default pipeline (weighted fusion + coverage, what
``Retriever.rank`` gives without a reranker) ranks 100 candidate chunks; each reranker then
reranks the top 30 / 50 / 100 exactly as ``Retriever._rerank`` does (``rerank_weight`` blend),
and documents are ranked by their best chunk. Each (query, passage) pair is scored once per
model and reused for the smaller candidate counts. Datasets: SciFact test (300 queries),
optionally the SciFact train queries held out of training (``--dev``) and the held-out
XQuAD articles (``citewise.train.data.xquad_split``), and span recall@8 on LegalBench-RAG
CUAD questions (``--cuad N``: a gold span counts as found when one of the top 8 chunks
overlaps it), and code search MRR@10 / hit@8 on ``benchmarks/code_questions.jsonl`` over the
installed ``click`` (``--code``; the judging rule of ``benchmarks/code_search.py``: a chunk
answers when its line range holds the question's ``def``/``class`` line), and MRR@10 / hit@8 on
citewise's own docs questions (``--docs dev|test``: ``benchmarks/answer_questions/docs.jsonl``,
answerable ones, over this repository's ``docs/``; a chunk answers when it holds every key
string of one of the question's answers, the match of ``benchmarks/evidence_recall.py``).
``--xquad-dev N`` scores the last N question ids of an XQuAD file's *training* articles,
which ``citewise train-reranker --max-queries M`` leaves unused while N + M is at most their
count: a second development set, for choosing settings off SciFact.

Latency: ``Reranker.score`` on the top 30 and top 100 passages of SciFact test queries on
``CITEWISE_THREADS`` threads, for every model given (ONNX int8, ONNX fp32, PyTorch
CrossEncoder), interleaved query by query (see :func:`latency`): p50 / p95 over
``--latency-queries`` queries of the median of ``--repeats`` calls, each as a ratio to the
first model, with the load average before and after. ``--model 'label=path;key=value'`` sets
:class:`OnnxReranker` options (``windows``, ``spinning``, ``batch``): ``'before=bundled;
spinning=1'`` is the reranker as it was before issue 26's speed work. Latency alone, over the
first 1,000 abstracts (an index built in minutes):

    python benchmarks/reranker.py --scifact ../shared/datasets/scifact --corpus-docs 1000 \
        --no-test --latency-pairs 30 --latency-queries 40 --repeats 2 \
        --model 'before=bundled;spinning=1' --model after=bundled \
        --model 'after-best=bundled;windows=best'

Quality:

    python benchmarks/reranker.py --scifact ../shared/datasets/scifact \
        --model int8=src/citewise/models/reranker-minilm-l6.int8.onnx \
        --model fp32=/tmp/rerank/reranker.fp32.onnx --model torch=/tmp/rerank/torch \
        --candidates 30,50,100 --weights 0.5,0.7,1.0 --dev 100 \
        --xquad ../shared/datasets/xquad/xquad.ru.json --json /tmp/rerank/bench.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from citewise.config import SearchMode, Settings
from citewise.embed.embedder import cpu_session
from citewise.eval.datasets import BeirDataset, first_documents, load_beir, load_squad_retrieval
from citewise.eval.metrics import evaluate
from citewise.eval.run import build_index
from citewise.retrieve.fusion import fuse
from citewise.retrieve.rerank import (
    BUNDLED,
    BUNDLED_FILE,
    OnnxReranker,
    Reranker,
    base_tokenizer,
    load_reranker,
)
from citewise.retrieve.retriever import Retriever, clean_query
from citewise.train.data import dev_split, xquad_split
from citewise.types import Hit

DEPTH = 100


class Cached:
    """A reranker that remembers every (query, passage) score it has computed."""

    def __init__(self, inner: Reranker) -> None:
        self.inner, self.name, self.memo = inner, inner.name, {}
        self.seconds, self.pairs = 0.0, 0

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        todo = [p for p in dict.fromkeys(passages) if (query, p) not in self.memo]
        if todo:
            t0 = time.perf_counter()
            for p, s in zip(todo, self.inner.score(query, todo), strict=True):
                self.memo[(query, p)] = float(s)
            self.seconds += time.perf_counter() - t0
            self.pairs += len(todo)
        return np.array([self.memo[(query, p)] for p in passages], dtype=np.float32)


def doc_ranking(hits: Sequence[Hit]) -> list[str]:
    seen: dict[str, None] = {}
    for h in hits:
        seen.setdefault(h.chunk.document_id if h.chunk is not None else h.chunk_id, None)
    return list(seen)


def quality(name: str, dataset: BeirDataset, settings: Settings, models: dict[str, Cached],
            candidates: list[int], weights: list[float]) -> list[dict]:
    store, embedder = build_index(dataset, settings, settings.embedding_model,
                                  settings.home / "eval")
    retriever = Retriever(settings, store, embedder)
    runs: dict[str, dict[str, list[str]]] = {}
    t0 = time.perf_counter()
    for i, (qid, text) in enumerate(sorted(dataset.queries.items())):
        dense = retriever.rank(text, mode=SearchMode.DENSE, k=DEPTH, rerank=False)
        sparse = retriever.rank(text, mode=SearchMode.SPARSE, k=DEPTH, rerank=False)
        fused = fuse(settings.fusion, dense, sparse, alpha=settings.alpha, rrf_k=settings.rrf_k)
        runs.setdefault("hybrid (weighted fusion)", {})[qid] = doc_ranking(fused)
        hits = retriever.rank(text, k=DEPTH, rerank=False)
        runs.setdefault("pipeline (fusion + coverage)", {})[qid] = doc_ranking(hits)
        query = clean_query(text, settings.max_query_chars)
        for label, model in models.items():
            for n in candidates:
                for w in weights:
                    s = settings.model_copy(update={"rerank_candidates": n, "rerank_weight": w})
                    ranked = Retriever(s, store, embedder, model)._rerank(query, hits)
                    runs.setdefault(f"+ rerank {label}, top {n}, w {w}", {})[qid] = \
                        doc_ranking(ranked)
        if i % 25 == 0:
            print(f"{name}: {i}/{len(dataset.queries)} queries, "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    store.close()
    rows = []
    for run_name, run in runs.items():
        m = evaluate(run, dataset.qrels, ks=(10, 100))
        rows.append({"dataset": name, "run": run_name, "queries": len(run),
                     **{k: round(m[k], 4) for k in ("nDCG@10", "recall@10", "recall@100",
                                                     "MRR@10")}})
    return rows


def cuad_span_recall(n_questions: int, settings: Settings, models: dict[str, Cached],
                     candidates: list[int], weights: list[float], k: int = 8,
                     skip: int = 0) -> list[dict]:
    """Span recall@``k`` on the first ``n_questions`` LegalBench-RAG CUAD questions (by id)
    after the first ``skip`` (``--cuad-dev``: the questions after the first 50, the test):
    the share of gold character spans that one of the top ``k`` chunks overlaps (same contract,
    ``[char_start, char_end)`` intersecting the span), averaged over questions, for the
    pipeline without and with each reranker. The collection is the questions' contracts,
    ingested as files with ``Engine.ingest``."""
    from answers import DATASETS, cuad_items

    from citewise.engine import Engine

    items = cuad_items(n_questions, skip)
    engine = Engine(settings.model_copy(update={"home": settings.home / ("cuad-rerank" + (f"-{skip}" if skip else ""))}))
    engine.ingest(sorted({DATASETS / "cuad" / "full_contract_txt" / name
                          for item in items for name, _ in item["spans"]}))

    def recall(hits: Sequence[Hit], spans: list) -> float:
        top = [(Path(h.document.path).name, h.chunk.char_start, h.chunk.char_end)
               for h in hits[:k] if h.chunk is not None and h.document is not None]
        found = [any(name == f and a < end and start < b for f, a, b in top)
                 for name, (start, end) in spans]
        return sum(found) / len(found)

    scores: dict[str, list[float]] = {}
    for item in items:
        text, spans = item["question"], item["spans"]
        hits = engine.retriever.rank(text, k=DEPTH, rerank=False)
        scores.setdefault("pipeline (fusion + coverage)", []).append(recall(hits, spans))
        query = clean_query(text, settings.max_query_chars)
        for label, model in models.items():
            for n in candidates:
                for w in weights:
                    s2 = settings.model_copy(update={"rerank_candidates": n, "rerank_weight": w})
                    ranked = Retriever(s2, engine.store, engine.embedder, model)._rerank(query, hits)
                    scores.setdefault(f"+ rerank {label}, top {n}, w {w}", []).append(
                        recall(ranked, spans))
    name = f"questions {skip + 1}-{skip + len(items)}, dev" if skip else f"{len(items)} questions"
    return [{"dataset": f"LegalBench-RAG CUAD ({name})", "run": run,
             "queries": len(v), f"span recall@{k}": round(sum(v) / len(v), 4)}
            for run, v in scores.items()]


def code_mrr(settings: Settings, models: dict[str, Cached], candidates: list[int],
             weights: list[float], package: str = "click") -> list[dict]:
    """MRR@10 and hit@8 of the code search questions over ``package`` (tree-sitter chunks),
    for the pipeline without and with each reranker (``benchmarks/code_search.py``'s rule)."""
    import importlib

    from code_search import HERE, answer_lines, build, first_answer, load_questions

    from citewise.embed import load_embedder

    module = importlib.import_module(package)
    root = Path(module.__file__).resolve().parent.parent  # type: ignore[arg-type]
    questions = load_questions(HERE / "code_questions.jsonl")
    wanted = answer_lines(root, questions)
    embedder = load_embedder(settings.embedding_model, settings.threads,
                             settings.embed_batch_size, settings.embedding_precision)
    folder = settings.home / "code-rerank"
    folder.mkdir(parents=True, exist_ok=True)
    store, _, _ = build(root, package, "tree-sitter", settings, folder, embedder)
    retriever = Retriever(settings, store, embedder)
    ranks: dict[str, list[int | None]] = {}
    for q in questions:
        hits = retriever.rank(q.text, k=DEPTH, rerank=False)
        ranks.setdefault("pipeline (fusion + coverage)", []).append(
            first_answer(hits, wanted[q.id]))
        query = clean_query(q.text, settings.max_query_chars)
        for label, model in models.items():
            for n in candidates:
                for w in weights:
                    s2 = settings.model_copy(update={"rerank_candidates": n, "rerank_weight": w})
                    ranked = Retriever(s2, store, embedder, model)._rerank(query, hits)
                    ranks.setdefault(f"+ rerank {label}, top {n}, w {w}", []).append(
                        first_answer(ranked, wanted[q.id]))
    store.close()
    return [{"dataset": f"code ({package}, {len(questions)} questions)", "run": run,
             "queries": len(r),
             "MRR@10": round(sum(1 / x for x in r if x is not None and x <= 10) / len(r), 4),
             "hit@8": round(sum(1 for x in r if x is not None and x <= 8) / len(r), 4)}
            for run, r in ranks.items()]


def docs_mrr(split: str, settings: Settings, models: dict[str, Cached], candidates: list[int],
             weights: list[float]) -> list[dict]:
    """MRR@10 and hit@8 of the answerable questions of ``split`` (``dev`` or ``test``) of
    ``benchmarks/answer_questions/docs.jsonl`` over this repository's ``docs/`` folder
    (ingested with ``Engine.ingest``), for the pipeline without and with each reranker. The
    rank of a question is that of the first chunk holding all key strings of one of its
    answers (``answers.keys_match``)."""
    from answers import ROOT, jsonl_items, keys_match

    from citewise.engine import Engine

    items = [q for q in jsonl_items("docs", split) if q["answerable"]]
    engine = Engine(settings.model_copy(update={"home": settings.home / "docs-rerank",
                                                "llm_provider": "none"}))
    engine.ingest([ROOT / "docs"])

    def first(hits: Sequence[Hit], answers: list[list[str]]) -> int | None:
        return next((i + 1 for i, h in enumerate(hits)
                     if h.chunk is not None and keys_match(h.chunk.text, answers)), None)

    ranks: dict[str, list[int | None]] = {}
    for item in items:
        text = item["question"]
        hits = engine.retriever.rank(text, k=DEPTH, rerank=False)
        ranks.setdefault("pipeline (fusion + coverage)", []).append(first(hits, item["answers"]))
        query = clean_query(text, settings.max_query_chars)
        for label, model in models.items():
            for n in candidates:
                for w in weights:
                    s2 = settings.model_copy(update={"rerank_candidates": n, "rerank_weight": w})
                    ranked = Retriever(s2, engine.store, engine.embedder, model)._rerank(query, hits)
                    ranks.setdefault(f"+ rerank {label}, top {n}, w {w}", []).append(
                        first(ranked, item["answers"]))
    return [{"dataset": f"citewise docs {split} ({len(items)} answerable)", "run": run,
             "queries": len(r),
             "MRR@10": round(sum(1 / x for x in r if x is not None and x <= 10) / len(r), 4),
             "hit@8": round(sum(1 for x in r if x is not None and x <= 8) / len(r), 4)}
            for run, r in ranks.items()]


def xquad_dev(path: Path, n: int) -> BeirDataset:
    """The last ``n`` question ids (sorted) of the training articles of an XQuAD file, over
    those articles' paragraphs (the corpus ``train-reranker`` mined its negatives in)."""
    train = xquad_split(load_squad_retrieval(path), held_out=False)
    keep = sorted(train.queries)[-n:]
    return BeirDataset(train.name, train.corpus, {q: train.queries[q] for q in keep},
                       {q: train.qrels[q] for q in keep}, "dev")


def latency(dataset: BeirDataset, settings: Settings, models: dict[str, Reranker],
            n_queries: int, repeats: int, sizes: Sequence[int] = (30, 100)) -> list[dict]:
    """Milliseconds of ``Reranker.score`` on the top ``n`` pipeline candidates of the first
    ``n_queries`` queries, for each ``n`` of ``sizes``. The models are interleaved: for every
    query and repeat each model scores once, in an order rotated per query, so that a change
    in the other jobs' load falls on all of them alike. A query's time is the median of its
    ``repeats``; p50 and p95 are over the queries; ratios are to the first model (of the p50s,
    of the p95s, and the median of each query's own ratio, which is the least disturbed by
    load changing during the run). The load average (1 min) is read before and after."""
    store, embedder = build_index(dataset, settings, settings.embedding_model,
                                  settings.home / "eval")
    retriever = Retriever(settings, store, embedder)
    from citewise.retrieve.rerank import passage_text

    work = []
    for _, text in sorted(dataset.queries.items())[:n_queries]:
        hits = retriever.rank(text, k=DEPTH, rerank=False)
        work.append((text, [passage_text(h.document.title, h.chunk.section, h.chunk.text)
                            for h in hits if h.chunk is not None and h.document is not None]))
    store.close()
    rows = []
    for model in models.values():
        model.score(work[0][0], work[0][1][:30])  # warm-up (first-call allocations)
    labels = list(models)
    for n in sizes:
        load_before = os.getloadavg()[0]
        per_query: dict[str, list[float]] = {k: [] for k in labels}
        scores: dict[str, list[np.ndarray]] = {k: [] for k in labels}
        for q, (query, passages) in enumerate(work):
            times: dict[str, list[float]] = {k: [] for k in labels}
            for _ in range(repeats):
                for label in labels[q % len(labels):] + labels[:q % len(labels)]:
                    t0 = time.perf_counter()
                    s = models[label].score(query, passages[:n])
                    times[label].append((time.perf_counter() - t0) * 1000)
                    if len(scores[label]) == q:
                        scores[label].append(s)
            for label in labels:
                per_query[label].append(statistics.median(times[label]))
        load_after = os.getloadavg()[0]
        base = per_query[labels[0]]
        for label in labels:
            ms = per_query[label]
            rows.append({"pairs": n, "model": label, "queries": len(ms),
                         "ms_p50": round(statistics.median(ms), 1),
                         "ms_p95": round(float(np.percentile(ms, 95)), 1),
                         "ratio_p50": round(statistics.median(ms) / statistics.median(base), 2),
                         "ratio_p95": round(float(np.percentile(ms, 95) / np.percentile(base, 95)),
                                            2),
                         # paired: each query's time over the first model's on the same query
                         "ratio_paired": round(statistics.median(
                             a / b for a, b in zip(ms, base, strict=True)), 2),
                         "ms_per_query": [round(x, 1) for x in ms],
                         **agreement(scores[labels[0]], scores[label]),
                         "load_before": load_before, "load_after": load_after})
            print({k: v for k, v in rows[-1].items() if k != "ms_per_query"}, file=sys.stderr,
                  flush=True)
    return rows


def agreement(before: Sequence[np.ndarray], after: Sequence[np.ndarray]) -> dict:
    """How ``after``'s scores order each query's passages like ``before``'s: the mean and the
    lowest Spearman rank correlation, the share of queries with the same top passage, and the
    largest absolute logit difference."""
    def ranks(x: np.ndarray) -> np.ndarray:
        return np.argsort(np.argsort(-x, kind="stable"), kind="stable").astype(np.float64)

    rho = [float(np.corrcoef(ranks(a), ranks(b))[0, 1]) for a, b in zip(before, after,
                                                                         strict=True)]
    return {"spearman_mean": round(float(np.mean(rho)), 4),
            "spearman_min": round(float(np.min(rho)), 4),
            "top1_agreement": round(float(np.mean([np.argmax(a) == np.argmax(b)
                                                   for a, b in zip(before, after,
                                                                   strict=True)])), 3),
            "max_abs_logit_diff": round(float(max(np.abs(a - b).max()
                                                  for a, b in zip(before, after,
                                                                  strict=True))), 4)}


def load_model(spec: str, threads: int) -> tuple[str, Reranker]:
    """``label=path`` or ``label=path;key=value;...`` with the :class:`OnnxReranker` options
    ``windows`` (all, best), ``spinning`` (0, 1), ``batch`` (pairs per run, forced even
    for a dynamically quantised file: the batch-dependent scoring before 4df4f09) and
    ``parallel`` (0: single-pair runs one after another on ``threads`` intra-op threads, as
    before pair-parallel runs; 1, the default: on ``threads`` Python threads at once) and
    ``max_length`` (tokens read, question and window together, below the file's own)."""
    label, rest = spec.split("=", 1)
    path, *options = rest.split(";")
    if not options:
        reranker = load_reranker(path, threads)
        assert reranker is not None
        return label, reranker
    opts = dict(o.split("=", 1) for o in options)
    model = OnnxReranker(BUNDLED_FILE if path == BUNDLED else path, threads=threads,
                         windows=opts.get("windows", "best"),
                         spinning=opts.get("spinning", "0") == "1")
    if "batch" in opts:
        model.batch_size = int(opts["batch"])
    if "max_length" in opts:  # read at most this many tokens (question + window)
        model.max_length = int(opts["max_length"])
        model.tokenizer = base_tokenizer(model.max_length)
        model.tokenizer.no_padding()
    if opts.get("parallel") == "0" and model.parallel > 1:
        # runs one after another on `threads` intra-op threads: the scoring before pair-parallel
        # runs (issue 26, item 4)
        model.session = cpu_session(model.name, threads, "{err}",
                                    spinning=opts.get("spinning", "0") == "1")
        model.parallel = 1
    return label, model


def write_subset(path: Path, dataset: BeirDataset, settings: Settings, n: int, depth: int,
                 seed: int = 0) -> None:
    """The ids of tests/retrieve/test_shipped_reranker.py's subset: ``n`` test queries drawn
    with ``seed``, and as corpus each one's top ``depth`` pipeline documents over the full
    corpus plus every judged document."""
    import random

    store, embedder = build_index(dataset, settings, settings.embedding_model,
                                  settings.home / "eval")
    retriever = Retriever(settings, store, embedder)
    queries = sorted(random.Random(seed).sample(sorted(dataset.queries), n))
    docs: set[str] = set()
    for q in queries:
        docs.update(doc_ranking(retriever.rank(dataset.queries[q], k=DEPTH, rerank=False))[:depth])
        docs.update(d for d in dataset.qrels[q] if d in dataset.corpus)
    store.close()
    path.write_text(json.dumps({"about": f"SciFact test queries answered in the first "
                                         f"{len(dataset.corpus)} abstracts: {n} drawn with "
                                         f"random.Random({seed}); corpus = top {depth} pipeline "
                                         "documents of each over those abstracts + judged "
                                         "documents",
                                "queries": queries, "documents": sorted(docs)}, indent=0) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scifact", type=Path, required=True)
    ap.add_argument("--model", action="append", default=[],
                    help="label=path (repeatable): .onnx file or CrossEncoder folder")
    ap.add_argument("--candidates", default="30,50,100")
    ap.add_argument("--weights", default="0.7")
    ap.add_argument("--dev", type=int, default=0, help="SciFact train queries held out of training")
    ap.add_argument("--xquad", type=Path, action="append", default=[])
    ap.add_argument("--cuad", type=int, default=0,
                    help="LegalBench-RAG CUAD questions for span recall@8 (first N by id)")
    ap.add_argument("--cuad-dev", type=int, default=0,
                    help="span recall@8 on N LegalBench-RAG CUAD questions after the first 50 "
                    "(a development set beside --cuad 50)")
    ap.add_argument("--code", action="store_true",
                    help="code search MRR@10 on benchmarks/code_questions.jsonl over click")
    ap.add_argument("--docs", choices=("dev", "test"),
                    help="MRR@10 on citewise's docs questions of this split over docs/")
    ap.add_argument("--xquad-dev", type=int, default=0,
                    help="with --xquad: the last N question ids of its training articles too")
    ap.add_argument("--quality-models", default="", help="labels scored for quality (default all)")
    ap.add_argument("--no-test", action="store_true", help="skip SciFact test and XQuAD's held-out articles")
    ap.add_argument("--latency-queries", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-latency", action="store_true")
    ap.add_argument("--latency-pairs", default="30,100", help="pair counts timed")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--corpus-docs", type=int, default=0,
                    help="SciFact: only the first N abstracts (datasets.first_documents)")
    ap.add_argument("--write-subset", type=Path, help="write the test subset's ids and exit")
    args = ap.parse_args()
    settings = Settings()

    def scifact(split: str) -> BeirDataset:
        ds = load_beir(args.scifact, split=split)
        return first_documents(ds, args.corpus_docs) if args.corpus_docs else ds
    if args.write_subset:
        write_subset(args.write_subset, scifact("test"), settings, 100, 10)
        return
    models = dict(load_model(spec, settings.threads) for spec in args.model)
    wanted = [m for m in args.quality_models.split(",") if m] or list(models)
    cached = {k: Cached(models[k]) for k in wanted}
    candidates = [int(c) for c in args.candidates.split(",")]
    weights = [float(w) for w in args.weights.split(",")]
    out: dict = {"settings": {"threads": settings.threads, "fusion": settings.fusion.value,
                              "alpha": settings.alpha, "embedding": settings.embedding_model},
                 "quality": [], "latency": []}
    t_start = time.perf_counter()
    if args.dev:
        dev = dev_split(scifact("train"), args.dev)
        out["quality"] += quality("scifact train-dev", dev, settings, cached, candidates, weights)
    if not args.no_test:
        test = scifact("test")
        out["quality"] += quality("scifact test", test, settings, cached, candidates, weights)
    for path in args.xquad if args.xquad_dev else []:
        out["quality"] += quality(f"{path.stem} train-dev {args.xquad_dev}",
                                  xquad_dev(path, args.xquad_dev), settings, cached, candidates,
                                  weights)
    for path in args.xquad if not args.no_test else []:
        held = xquad_split(load_squad_retrieval(path), held_out=True)
        out["quality"] += quality(f"{path.stem} held-out", held, settings, cached, candidates,
                                  weights)
    if args.cuad:
        out["cuad"] = cuad_span_recall(args.cuad, settings, cached, candidates, weights)
    if args.cuad_dev:
        out["cuad_dev"] = cuad_span_recall(args.cuad_dev, settings, cached, candidates, weights,
                                           skip=50)
    if args.code:
        out["code"] = code_mrr(settings, cached, candidates, weights)
    if args.docs:
        out["docs"] = docs_mrr(args.docs, settings, cached, candidates, weights)
    out["rerank_pairs"] = {k: {"pairs": c.pairs, "seconds": round(c.seconds, 1)}
                           for k, c in cached.items()}
    if not args.no_latency and models:
        out["latency"] = latency(scifact("test"), settings, models, args.latency_queries,
                                 args.repeats, [int(n) for n in args.latency_pairs.split(",")])
    out["seconds"] = round(time.perf_counter() - t_start)
    print("| dataset | run | nDCG@10 | recall@10 | recall@100 | MRR@10 |")
    print("|---|---|---|---|---|---|")
    for r in out["quality"]:
        print(f"| {r['dataset']} | {r['run']} | {r['nDCG@10']:.3f} | {r['recall@10']:.3f} | "
              f"{r['recall@100']:.3f} | {r['MRR@10']:.3f} |")
    if out.get("cuad") or out.get("cuad_dev"):
        print("\n| dataset | run | span recall@8 |\n|---|---|---|")
        for r in out.get("cuad_dev", []) + out.get("cuad", []):
            print(f"| {r['dataset']} | {r['run']} | {r['span recall@8']:.3f} |")
    if out.get("code") or out.get("docs"):
        print("\n| dataset | run | MRR@10 | hit@8 |\n|---|---|---|---|")
        for r in out.get("code", []) + out.get("docs", []):
            print(f"| {r['dataset']} | {r['run']} | {r['MRR@10']:.3f} | {r['hit@8']:.3f} |")
    if out["latency"]:
        r0 = out["latency"][0]
        print(f"\nload average (1 min) {r0['load_before']:.2f} before, "
              f"{out['latency'][-1]['load_after']:.2f} after")
        print("| pairs | model | p50 ms | p95 ms | p50 ratio | p95 ratio | paired ratio | "
              "Spearman mean / min | top-1 agreement | max logit diff |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in out["latency"]:
            print(f"| {r['pairs']} | {r['model']} | {r['ms_p50']} | {r['ms_p95']} | "
                  f"{r['ratio_p50']} | {r['ratio_p95']} | {r['ratio_paired']} | "
                  f"{r['spearman_mean']} / "
                  f"{r['spearman_min']} | {r['top1_agreement']} | {r['max_abs_logit_diff']} |")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
