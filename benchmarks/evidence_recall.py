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

from citewise.config import Settings
from citewise.engine import Engine


def holds(text: str, item: dict[str, Any], kind: str) -> bool:
    if kind in ("docs", "code"):
        return bench.keys_match(text, item["answers"])
    return any(bench.normalise(a) in bench.normalise(text) for a in item["answers"])


def ranked_evidence(engine: Engine, question: str) -> tuple[list[Any], list[Any]]:
    """(evidence pool, ranked candidates) for ``question``, as the engine's answer stage
    computes them (:meth:`AnswerService.read <citewise.answer.service.AnswerService.read>`
    with abstention off, so that a declined question is ranked too)."""
    reading = _open(engine).answers.read(question, engine.search_evidence(question))
    return reading.pool, reading.ranked


def _open(engine: Engine) -> Engine:
    """``engine`` with abstention off, sharing its store and embedder."""
    return Engine(engine.settings.model_copy(update={"abstain": False}), store=engine.store,
                  embedder=engine.embedder)


def measure(home: Path, wanted: set[str], split: str, budget: int | None) -> list[dict[str, Any]]:
    base = Settings(home=home)
    rows = []
    for name, kind, store_path, items, _root in bench.collections(base, home, wanted, split):
        update: dict[str, Any] = {"store": store_path, "llm_provider": "none"}
        if budget:
            update["evidence_tokens"] = budget
        engine = Engine(base.model_copy(update=update))
        unfiltered = _open(engine)
        for item in items:
            q = item["question"]
            result = engine.search_evidence(q)
            declined = engine.answers.read(q, result).declined is not None
            reading = unfiltered.answers.read(q, result)
            ok = item.get("answerable", True)
            rank = next((i for i, c in enumerate(reading.ranked)
                         if holds(c.candidate.text, item, kind)), None) if ok else None
            rows.append({
                "collection": name, "answerable": ok, "declined": declined, "rank": rank,
                "pool": ok and any(holds(ev.chunk.text, item, kind) for ev in reading.pool),
                "evidence": ok and reading.ranked != [] and any(
                    holds(ev.chunk.text, item, kind) for ev in reading.evidence),
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
