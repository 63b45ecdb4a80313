"""Where the gold answer is lost before the answerer: retrieval pool, sentence ranking or the
evidence budget.

For each question of the answer benchmark's docs, code and XQuAD sets (``answers.py``), with
the default settings and no language model:

* ``pool``: a chunk of the retrieved evidence pool (``evidence_pool`` chunks, at most
  ``evidence_per_file`` per file) holds the gold answer (the same key-string match as the
  answer benchmark's accuracy);
* ``rank 1`` / ``top 3``: the best ranked candidate sentence (or one of the best three) holds it;
* ``evidence``: one of the sentence passages given to the answerer holds it;
* ``declined``: the engine's abstention rules (unknown names, then the coverage floor) would
  decline the question without a model call; reported for answerable and unanswerable ones.

Usage::

    python benchmarks/evidence_recall.py [--split dev|test|all] [--collections docs,code,xquad-en,xquad-ru]
        [--home ~/.citewise-bench] [--evidence-tokens N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import answers as bench

from citewise.answer.answerer import to_evidence
from citewise.answer.extractive import idf_table
from citewise.answer.selection import (
    answerable,
    name_terms,
    rank_candidates,
    sentence_evidence,
    unknown_names,
)
from citewise.config import Settings
from citewise.engine import Engine
from citewise.retrieve.analysis import tokenize


def holds(text: str, item: dict[str, Any], kind: str) -> bool:
    if kind in ("docs", "code"):
        return bench.keys_match(text, item["answers"])
    return any(bench.normalise(a) in bench.normalise(text) for a in item["answers"])


def ranked_evidence(engine: Engine, question: str) -> tuple[list[Any], list[Any]]:
    """(evidence pool, ranked candidates) for ``question``, computed as
    ``Engine.answer_stream`` computes them (retrieval pool, collection and in-document IDF)."""
    evidence = to_evidence(engine.search_evidence(question).hits)
    n, df = engine.store.term_document_frequencies(list(dict.fromkeys(tokenize(question))))
    local = {d: engine.retriever.document_term_weights(d, question)
             for d in dict.fromkeys(ev.citation.document_id for ev in evidence)}
    ranked = rank_candidates(question, evidence, engine.embedder, idf=idf_table(n, df),
                             document_idf=local)
    return evidence, ranked


def measure(home: Path, wanted: set[str], split: str, budget: int | None) -> list[dict[str, Any]]:
    base = Settings(home=home)
    rows = []
    for name, kind, store_path, items, _root in bench.collections(base, home, wanted, split):
        engine = Engine(base.model_copy(update={"store": store_path, "llm_provider": "none"}))
        s = engine.settings
        for item in items:
            q = item["question"]
            evidence, ranked = ranked_evidence(engine, q)
            _, name_df = engine.store.term_document_frequencies(name_terms(q))
            declined = bool(unknown_names(q, name_df)) or not answerable(ranked, q)
            chosen = sentence_evidence(evidence, ranked, max_passages=s.top_k,
                                       budget_tokens=budget or s.evidence_tokens,
                                       count_tokens=engine.embedder.count_tokens
                                       ) if ranked else []
            ok = item.get("answerable", True)
            rank = next((i for i, c in enumerate(ranked)
                         if holds(c.candidate.text, item, kind)), None) if ok else None
            rows.append({
                "collection": name, "answerable": ok, "declined": declined, "rank": rank,
                "pool": ok and any(holds(ev.chunk.text, item, kind) for ev in evidence),
                "evidence": ok and any(holds(ev.chunk.text, item, kind) for ev in chosen),
            })
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    out = [("| collection | answerable | gold in pool | rank 1 | top 3 | in evidence | "
            "declined (answerable) | declined (unanswerable) |"), "|---|---|---|---|---|---|---|---|"]
    for coll in [*dict.fromkeys(r["collection"] for r in rows), "all"]:
        rs = [r for r in rows if coll in ("all", r["collection"])]
        a = [r for r in rs if r["answerable"]]
        u = [r for r in rs if not r["answerable"]]

        def share(key: str, rows: list[dict[str, Any]] = a) -> str:
            return f"{sum(1 for r in rows if r[key])}/{len(rows)}"

        out.append(f"| {coll} | {len(a)} | {share('pool')} | "
                   f"{sum(r['rank'] == 0 for r in a)}/{len(a)} | "
                   f"{sum(r['rank'] is not None and r['rank'] < 3 for r in a)}/{len(a)} | "
                   f"{share('evidence')} | {share('declined')} | "
                   f"{share('declined', u) if u else '-'} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", default="dev", choices=["dev", "test", "all"])
    ap.add_argument("--collections", default="docs,code,xquad-en,xquad-ru")
    ap.add_argument("--home", type=Path, default=Path.home() / ".citewise-bench")
    ap.add_argument("--evidence-tokens", type=int, default=None,
                    help="Evidence budget (default: the setting's, evidence_tokens).")
    args = ap.parse_args()
    rows = measure(args.home, set(args.collections.split(",")), args.split,
                   args.evidence_tokens)
    print(table(rows))


if __name__ == "__main__":
    main()
