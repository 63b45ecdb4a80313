"""The answer benchmark: is a cited answer right, rightly cited, honest, and fast?

One command measures the answerers on five jobs, from fixed, versioned question sets:

* ``docs``: 72 questions about citewise's own ``docs/`` (``benchmarks/answer_questions/
  docs.jsonl``; 54 answerable with gold key strings and the gold file and quote, 18 that the
  docs do not answer), over an index of ``docs/``;
* ``code``: 20 questions about the source of the installed ``click`` package
  (``answer_questions/code.jsonl``), over an index of that package;
* ``xquad-en`` / ``xquad-ru``: 15 XQuAD questions each (every 80th question id in file order;
  gold = the short answer span), over all 240 paragraphs of the language;
* ``cuad``: 10 LegalBench-RAG CUAD questions (the first 10 query ids of
  ``cuad_spans.mini.dev.json``; gold = a character span), over the contracts they name;
* ``kazakh``: the first 10 ``kazakh_legal_qa`` dev questions, over their gold documents and 40
  other documents of the corpus (the first 40 non-gold ones by file order), each cut to its
  first 4,000 characters (the gold passage is a document's first 900-token chunk).

The docs and code sets are split ``dev`` (tune on these) and ``test`` (held out, reported,
never tuned on); ``--split`` picks them.

Measured, per answerer x evidence mode x collection:

* ``accuracy``: answerable questions: the answer is not "not found" and holds every key string
  of one gold alternative (docs, code; normalised: case, punctuation, articles), the short
  gold answer (XQuAD), or cites the gold span (CUAD) or gold document (Kazakh); unanswerable
  questions: the answer says the documents do not contain it.
* ``citation precision``: of the passages an answer cites, the share that hold the gold answer
  (docs/code: the gold file with overlapping lines; XQuAD: the gold paragraph; CUAD: overlaps
  the gold span; Kazakh: the gold document).
* ``abstention``: recall = share of unanswerable questions declined; ``false abstention`` =
  share of answerable questions declined.
* ``wrong & supported``: answers that are wrong yet every sentence passed the support check.
* first-token p50/p95 and whole-answer p50 (seconds, the ``Engine.ask`` call), prompt tokens.

Usage::

    python benchmarks/answers.py [--answerers extractive,qwen2.5-coder-1.5b,qwen2.5-coder-1.5b:pick]
        [--evidence sentences,passages] [--split dev|test|all] [--collections docs,code]
        [--threads 2] [--json results.json] [--limit 5]

An answerer is ``extractive`` or ``MODEL[:STYLE]`` (STYLE: write, pick, pick-write), either with
an optional ``@K``: at most K passages of evidence (``top_k``; default the settings' 5), e.g.
``qwen2.5-coder-1.5b:write@3``.
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

from citewise.answer.grounding import check_support, citation_precision
from citewise.config import Settings
from citewise.engine import Engine
from citewise.eval.datasets import load_squad_retrieval
from citewise.eval.jsonl import jsonl_values
from citewise.eval.run import build_index
from citewise.types import Answer

DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
QUESTIONS = Path(__file__).resolve().parent / "answer_questions"
ROOT = Path(__file__).resolve().parents[1]
XQUAD_STEP = 80
CUAD_QUESTIONS = 10
KAZAKH_QUESTIONS = 10
KAZAKH_DISTRACTORS = 40
KAZAKH_CHARS = 4000  # the gold passage is each document's first 900-token chunk


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


def cuad_items(n: int = CUAD_QUESTIONS, skip: int = 0) -> list[dict[str, Any]]:
    """The first ``n`` LegalBench-RAG CUAD questions by id after the first ``skip``:
    ``{"id", "question", "spans"}``, spans as ``(contract file name, [char_start, char_end))``."""
    data = json.loads((DATASETS / "legalbench_rag_sample" / "cuad_spans.mini.dev.json")
                      .read_text(encoding="utf-8"))["tests"]
    items = []
    for t in sorted(data, key=lambda t: t["query_id"])[skip:skip + n]:
        spans = [(s["file_path"].split("/", 1)[1], s["span"]) for s in t["snippets"]]
        items.append({"id": t["query_id"], "question": t["query"], "spans": spans})
    return items


def jsonl_items(name: str, split: str) -> list[dict[str, Any]]:
    rows = list(jsonl_values(QUESTIONS / f"{name}.jsonl"))
    return [r for r in rows if split == "all" or r["split"] == split]


def gold_lines(root: Path, item: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(file, first line, last line) of each gold quote; ValueError naming the question when
    a quote is no longer in its file (the docs changed: fix the question set)."""
    out = []
    for place in [{"file": item.get("file"), "quote": item.get("quote")}, *item.get("also", [])]:
        if not place.get("file"):
            continue
        text = (root / place["file"]).read_text(encoding="utf-8")
        at = text.find(place["quote"])
        if at < 0:
            raise ValueError(f"{item['id']}: its quote is no longer in {place['file']}")
        first = text.count("\n", 0, at) + 1
        out.append((place["file"], first, first + place["quote"].count("\n")))
    return out


def keys_match(text: str, answers: list[list[str]]) -> bool:
    norm = normalise(text)
    return any(all(normalise(k) in norm for k in alt) for alt in answers)


def kazakh_items(home: Path) -> tuple[list[Path], list[dict[str, Any]]]:
    """The first KAZAKH_QUESTIONS dev questions with their gold file present, and the corpus
    files to index (their gold documents and KAZAKH_DISTRACTORS others), written under
    ``home``."""
    folder = DATASETS / "kazakh_legal_qa"
    questions = [q for q in json.loads((folder / "questions.dev.json").read_text(
        encoding="utf-8"))["questions"] if q["gold_passages"][0]["corpus_file_present"]
    ][:KAZAKH_QUESTIONS]
    for q in questions:
        q["corpus_file"] = q["gold_passages"][0]["corpus_file"]
    gold = {q["corpus_file"] for q in questions}
    docs = list(jsonl_values(folder / "corpus.jsonl"))
    keep = [d for d in docs if d["doc_id"].strip() in {g.strip() for g in gold}]
    keep += [d for d in docs if d["doc_id"].strip() not in {g.strip() for g in gold}][
        :KAZAKH_DISTRACTORS]
    out = home / "kazakh-corpus"
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for i, d in enumerate(keep):
        path = out / f"{i:03d}.txt"
        path.write_text(d["text"][:KAZAKH_CHARS], encoding="utf-8")
        files.append(path)
        d["_file"] = path.name
    by_id = {d["doc_id"].strip(): d["_file"] for d in keep}
    items = [{"id": q["id"], "question": q["question"], "answerable": True,
              "gold_file": by_id[q["corpus_file"].strip()]} for q in questions]
    return files, items


def judge(answer: Answer, item: dict[str, Any], kind: str, root: Path | None) -> dict[str, Any]:
    cited = [c for c in answer.citations if c.n in answer.cited]
    answerable = item.get("answerable", True)
    if kind in ("docs", "code"):
        places = gold_lines(root, item) if answerable else []  # type: ignore[arg-type]
        good = [c for c in cited if any(
            c.path.endswith(f) and c.line_start is not None
            and c.line_start <= last and first <= (c.line_end or c.line_start)
            for f, first, last in places)]
        correct = (answer.found and keys_match(answer.text, item["answers"])) if answerable \
            else not answer.found
    elif kind == "xquad":
        good = [c for c in cited if c.document_id == item["gold_doc"] or
                c.path == item["gold_doc"]]
        correct = answer.found and any(normalise(a) in normalise(answer.text)
                                       for a in item["answers"])
    elif kind == "kazakh":
        good = [c for c in cited if Path(c.path).name == item["gold_file"]]
        correct = answer.found and bool(good)
    else:
        good = [c for c in cited if any(
            Path(c.path).name == name and c.char_start < end and start < c.char_end
            for name, (start, end) in item["spans"])]
        correct = answer.found and bool(good)
    if answer.mode == "extractive":
        support_share = 1.0 if answer.found else None
    else:
        support_share = citation_precision(answer.support)
    all_supported = answer.found and (answer.mode == "extractive" or (
        bool(answer.support) and all(x.supported for x in answer.support)))
    return {"correct": bool(correct), "answerable": answerable, "found": answer.found,
            "cited": len(cited), "cited_gold": len(good), "supported": support_share,
            "wrong_supported": bool(answerable and answer.found and not correct
                                    and all_supported)}


def engines(settings: Settings, answerers: list[str], evidence: list[str],
            store_path: str) -> dict[tuple[str, str], Engine]:
    out = {}
    shared: Engine | None = None
    for name in answerers:
        for mode in evidence:
            spec, _, k = name.partition("@")  # "model:style@3": at most 3 passages
            model, _, style = spec.partition(":")
            s = settings.model_copy(update={
                "store": store_path, "evidence": mode,
                "llm_provider": "none" if model == "extractive" else "local",
                "llm_model": "" if model == "extractive" else model,
                "answer_style": style or "write",
                **({"top_k": int(k)} if k else {}),
            })
            # one embedder for all answerers
            engine = Engine(s, embedder=shared.embedder if shared is not None else None)
            shared = shared or engine
            out[(name, mode)] = engine
    return out


def ingested(settings: Settings, home: Path, name: str, paths: list[Path]) -> str:
    s = settings.model_copy(update={"home": home / name, "llm_provider": "none"})
    Engine(s).ingest(paths)
    return str(s.index_path)


def collections(base: Settings, home: Path, wanted: set[str] | None, split: str
                ) -> list[tuple[str, str, str, list[dict[str, Any]], Path | None]]:
    """(name, kind, index path, questions, root of the gold files) of each wanted one."""
    out = []
    want = (lambda c: wanted is None or c in wanted)
    if want("docs"):
        out.append(("docs", "docs", ingested(base, home, "docs", [ROOT / "docs"]),
                    jsonl_items("docs", split), ROOT))
    if want("code"):
        import click
        pkg = Path(click.__file__).parent
        out.append(("code", "code", ingested(base, home, "code", [pkg]),
                    jsonl_items("code", split), pkg.parent))
    for lang in ("en", "ru"):
        if want(f"xquad-{lang}"):
            dataset, items = xquad_items(lang)
            store, _ = build_index(dataset, base, base.embedding_model, home / "eval")
            path = str(store.path)
            store.close()
            out.append((f"xquad-{lang}", "xquad", path, items, None))
    if want("cuad"):
        cuad = cuad_items()
        files = sorted({DATASETS / "cuad" / "full_contract_txt" / name
                        for item in cuad for name, _ in item["spans"]})
        out.append(("cuad", "cuad", ingested(base, home, "cuad", files), cuad, None))
    if want("kazakh"):
        files, items = kazakh_items(home)
        out.append(("kazakh", "kazakh", ingested(base, home, "kazakh", files), items, None))
    return out


def run(answerers: list[str], evidence: list[str], threads: int, home: Path,
        wanted: set[str] | None = None, split: str = "dev",
        limit: int | None = None) -> list[dict[str, Any]]:
    base = Settings(home=home, llm_threads=threads, threads=threads)
    rows: list[dict[str, Any]] = []
    for collection, kind, store_path, items, root in collections(base, home, wanted, split):
        items = items[:limit] if limit else items
        by_name = engines(base, answerers, evidence, store_path)
        for item in items:
            for (name, mode), engine in by_name.items():
                t0 = time.perf_counter()
                answer = engine.ask(item["question"], extractive=name.startswith("extractive"))
                seconds = time.perf_counter() - t0
                if answer.mode == "llm" and not answer.support and answer.found:
                    answer = replace(answer, support=check_support(answer.text, ()))
                row = {"collection": collection, "id": item["id"], "answerer": name,
                       "evidence": mode, "mode": answer.mode, "fallback": answer.fallback_reason,
                       "seconds": seconds, "text": answer.text,
                       "first_token_ms": answer.metrics.get("llm_first_token_ms"),
                       "prompt_tokens": answer.metrics.get("prompt_tokens"),
                       "tokens_per_s": answer.metrics.get("llm_tokens_per_s"),
                       "pick_ms": answer.metrics.get("pick_ms"),
                       "output_tokens": answer.metrics.get("llm_tokens"),
                       **judge(answer, item, kind, root)}
                rows.append(row)
                print(json.dumps({k: row[k] for k in ("collection", "id", "answerer", "evidence",
                                                      "correct", "found", "cited_gold",
                                                      "seconds")}), flush=True)
    return rows


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def summary(rows: list[dict[str, Any]]) -> str:
    out = [("| answerer | evidence | collection | questions | accuracy | citation precision | "
            "abstained (unanswerable) | abstained (answerable) | wrong & supported | "
            "first token s p50 / p95 | s/answer p50 | prompt tokens p50 |"),
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    keys = list(dict.fromkeys((r["answerer"], r["evidence"]) for r in rows))
    for name, mode in keys:
        for coll in [*dict.fromkeys(r["collection"] for r in rows), "all"]:
            rs = [r for r in rows if (r["answerer"], r["evidence"]) == (name, mode)
                  and coll in ("all", r["collection"])]
            if not rs:
                continue
            cited = sum(r["cited"] for r in rs)
            un = [r for r in rs if not r["answerable"]]
            ans = [r for r in rs if r["answerable"]]
            ft = [r["first_token_ms"] / 1000 for r in rs if r["first_token_ms"]]
            pt = [r["prompt_tokens"] for r in rs if r["prompt_tokens"]]
            abst_un = (f"{sum(not r['found'] for r in un)}/{len(un)}" if un else "-")
            abst_an = f"{sum(not r['found'] for r in ans)}/{len(ans)}"
            out.append(
                f"| {name} | {mode} | {coll} | {len(rs)} | "
                f"{sum(r['correct'] for r in rs) / len(rs):.2f} | "
                f"{(sum(r['cited_gold'] for r in rs) / cited) if cited else 0:.2f} | "
                f"{abst_un} | {abst_an} | {sum(r['wrong_supported'] for r in rs)} | "
                f"{_pct(ft, 0.5):.1f} / {_pct(ft, 0.95):.1f} | "
                f"{statistics.median(r['seconds'] for r in rs):.1f} | "
                f"{int(_pct(pt, 0.5)) if pt else '-'} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--answerers", default="extractive,qwen2.5-coder-1.5b")
    ap.add_argument("--evidence", default="sentences",
                    help="Comma-separated evidence modes to compare: sentences,passages.")
    ap.add_argument("--split", default="dev", choices=["dev", "test", "all"],
                    help="Which docs/code questions (dev: tune; test: held out).")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--home", type=Path, default=Path.home() / ".citewise-bench")
    ap.add_argument("--json", type=Path, help="Write every answer here.")
    ap.add_argument("--collections", default="",
                    help="Comma-separated subset of docs,code,xquad-en,xquad-ru,cuad,kazakh "
                         "(default: all).")
    ap.add_argument("--limit", type=int, default=None,
                    help="First N questions of each collection (a quick speed check).")
    args = ap.parse_args()
    wanted = set(filter(None, args.collections.split(","))) or None
    rows = run(args.answerers.split(","), args.evidence.split(","), args.threads, args.home,
               wanted, args.split, args.limit)
    if args.json:
        args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    print(summary(rows))


if __name__ == "__main__":
    main()
