"""Answer quality and speed: the bundled local LLMs against the extractive answer, same run.

A fixed set of 40 questions with gold answers from ../shared/datasets:

* 15 XQuAD questions in English and the same 15 in Russian (every 80th question id in file
  order; gold = the short answer span), over all 240 XQuAD paragraphs of that language;
* 10 LegalBench-RAG CUAD questions (the first 10 query ids of ``cuad_spans.mini.dev.json``;
  gold = a character span of the contract), over the contracts those questions name.

For every answerer (``extractive`` and each local model) and question, the same retrieval
feeds the answer. Measured:

* ``accuracy``: XQuAD: the normalised gold answer occurs in the normalised answer text
  (SQuAD normalisation: case, punctuation, articles); CUAD: a passage the answer cites overlaps
  the gold span (the answer points the reader at the right clause).
* ``citation precision (gold)``: of the passages an answer cites, the share that hold the gold
  answer (XQuAD: the gold paragraph; CUAD: overlaps the gold span).
* ``supported``: share of answer sentences whose citations support them
  (:func:`citewise.answer.grounding.check_support`; extractive answers quote, so 1.0).
* ``first token`` and ``tokens/s`` of the LLM; whole-answer seconds.

Usage::

    python benchmarks/answers.py [--answerers extractive,qwen2.5-coder-1.5b,qwen2.5-coder-0.5b]
        [--threads 2] [--json results.json] [--collections xquad-en] [--limit 5]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import string
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from citewise.answer.grounding import citation_precision, check_support
from citewise.config import Settings
from citewise.engine import Engine
from citewise.eval.datasets import load_squad_retrieval
from citewise.eval.run import build_index
from citewise.types import Answer

DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
XQUAD_STEP = 80
CUAD_QUESTIONS = 10


def normalise(text: str) -> str:
    """SQuAD answer normalisation (lower case, no punctuation, no English articles)."""
    text = text.casefold()
    text = "".join(ch for ch in text if ch not in string.punctuation and ch not in "«»—–…")
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def xquad_items(lang: str) -> tuple[Any, list[dict[str, Any]]]:
    path = DATASETS / "xquad" / f"xquad.{lang}.json"
    dataset = load_squad_retrieval(path, name=f"xquad-{lang}")
    raw = json.loads(path.read_text(encoding="utf-8"))["data"]
    qas = [(qa, para["context"]) for art in raw for para in art["paragraphs"] for qa in para["qas"]]
    items = []
    for qa, _context in qas[::XQUAD_STEP]:
        items.append({"id": qa["id"], "question": qa["question"],
                      "answers": [a["text"] for a in qa["answers"]],
                      "gold_doc": next(iter(dataset.qrels[qa["id"]]))})
    return dataset, items


def cuad_items(n: int = CUAD_QUESTIONS) -> list[dict[str, Any]]:
    """The first ``n`` LegalBench-RAG CUAD questions by id: ``{"id", "question", "spans"}``,
    spans as ``(contract file name, [char_start, char_end))``."""
    data = json.loads((DATASETS / "legalbench_rag_sample" / "cuad_spans.mini.dev.json")
                      .read_text(encoding="utf-8"))["tests"]
    items = []
    for t in sorted(data, key=lambda t: t["query_id"])[:n]:
        spans = [(s["file_path"].split("/", 1)[1], s["span"]) for s in t["snippets"]]
        items.append({"id": t["query_id"], "question": t["query"], "spans": spans})
    return items


def judge(answer: Answer, item: dict[str, Any], kind: str) -> dict[str, Any]:
    cited = [c for c in answer.citations if c.n in answer.cited]
    if kind == "xquad":
        good = [c for c in cited if c.document_id == item["gold_doc"] or
                c.path == item["gold_doc"]]
        correct = answer.found and any(normalise(a) in normalise(answer.text)
                                       for a in item["answers"])
    else:
        good = [c for c in cited if any(
            Path(c.path).name == name and c.char_start < end and start < c.char_end
            for name, (start, end) in item["spans"])]
        correct = answer.found and bool(good)
    support = answer.support
    if answer.mode == "extractive":
        support_share = 1.0 if answer.found else None
    else:
        support_share = citation_precision(support)
    return {"correct": correct, "cited": len(cited), "cited_gold": len(good),
            "supported": support_share}


def engines(settings: Settings, answerers: list[str], store_path: str) -> dict[str, Engine]:
    out = {}
    shared: Engine | None = None
    for name in answerers:
        s = settings.model_copy(update={
            "store": store_path,
            "llm_provider": "none" if name == "extractive" else "local",
            "llm_model": "" if name == "extractive" else name,
        })
        engine = Engine(s)
        if shared is not None:  # one embedder and store for all answerers
            engine.__dict__["embedder"] = shared.embedder
        shared = shared or engine
        out[name] = engine
    return out


def run(answerers: list[str], threads: int, home: Path, collections_wanted: set[str] | None = None,
        limit: int | None = None) -> list[dict[str, Any]]:
    base = Settings(home=home, llm_threads=threads, threads=threads)
    rows: list[dict[str, Any]] = []
    collections: list[tuple[str, str, list[dict[str, Any]]]] = []
    for lang in ("en", "ru"):
        dataset, items = xquad_items(lang)
        store, _ = build_index(dataset, base, base.embedding_model, home / "eval")
        path = str(store.path)
        store.close()
        collections.append((f"xquad-{lang}", path, items))
    cuad = cuad_items()
    cuad_home = home / "cuad"
    cuad_settings = base.model_copy(update={"home": cuad_home, "llm_provider": "none"})
    ingest_engine = Engine(cuad_settings)
    files = sorted({DATASETS / "cuad" / "full_contract_txt" / name
                    for item in cuad for name, _ in item["spans"]})
    ingest_engine.ingest(files)
    collections.append(("cuad", str(cuad_settings.index_path), cuad))
    for collection, store_path, items in collections:
        if collections_wanted and collection not in collections_wanted:
            continue
        items = items[:limit] if limit else items
        kind = "cuad" if collection == "cuad" else "xquad"
        by_name = engines(base, answerers, store_path)
        for item in items:
            for name, engine in by_name.items():
                t0 = time.perf_counter()
                answer = engine.ask(item["question"], extractive=name == "extractive")
                seconds = time.perf_counter() - t0
                if answer.mode == "llm" and not answer.support and answer.found:
                    answer = replace(answer, support=check_support(answer.text, ()))
                row = {"collection": collection, "id": item["id"], "answerer": name,
                       "mode": answer.mode, "fallback": answer.fallback_reason,
                       "seconds": seconds, "text": answer.text,
                       "first_token_ms": answer.metrics.get("llm_first_token_ms"),
                       "tokens_per_s": answer.metrics.get("llm_tokens_per_s"),
                       **judge(answer, item, kind)}
                rows.append(row)
                print(json.dumps({k: row[k] for k in ("collection", "id", "answerer",
                                                      "correct", "cited_gold", "seconds")}),
                      flush=True)
    return rows


def summary(rows: list[dict[str, Any]]) -> str:
    out = ["| answerer | collection | questions | accuracy | citation precision (gold) | "
           "supported | first token s (p50) | tokens/s (p50) | s/answer (p50) |",
           "|---|---|---|---|---|---|---|---|---|"]
    names = list(dict.fromkeys(r["answerer"] for r in rows))
    for name in names:
        for coll in [*dict.fromkeys(r["collection"] for r in rows), "all"]:
            rs = [r for r in rows if r["answerer"] == name and coll in ("all", r["collection"])]
            if not rs:
                continue
            cited = sum(r["cited"] for r in rs)
            sup = [r["supported"] for r in rs if r["supported"] is not None]
            ft = [r["first_token_ms"] / 1000 for r in rs if r["first_token_ms"]]
            tps = [r["tokens_per_s"] for r in rs if r["tokens_per_s"]]
            out.append(
                f"| {name} | {coll} | {len(rs)} | {sum(r['correct'] for r in rs) / len(rs):.2f} | "
                f"{(sum(r['cited_gold'] for r in rs) / cited) if cited else 0:.2f} | "
                f"{statistics.mean(sup) if sup else 0:.2f} | "
                f"{statistics.median(ft) if ft else 0:.1f} | "
                f"{statistics.median(tps) if tps else 0:.1f} | "
                f"{statistics.median(r['seconds'] for r in rs):.1f} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--answerers", default="extractive,qwen2.5-coder-1.5b,qwen2.5-coder-0.5b")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--home", type=Path, default=Path.home() / ".citewise-bench")
    ap.add_argument("--json", type=Path, help="Write every answer here.")
    ap.add_argument("--collections", default="",
                    help="Comma-separated subset of xquad-en,xquad-ru,cuad (default: all).")
    ap.add_argument("--limit", type=int, default=None,
                    help="First N questions of each collection (a quick speed check).")
    args = ap.parse_args()
    wanted = set(filter(None, args.collections.split(","))) or None
    rows = run(args.answerers.split(","), args.threads, args.home, wanted, args.limit)
    if args.json:
        args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    print(summary(rows))


if __name__ == "__main__":
    main()
