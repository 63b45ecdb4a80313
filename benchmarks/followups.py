"""Follow-up questions: is a question that leans on the earlier turns searched well, and is a
standalone one left as typed?

Each conversation of ``benchmarks/followup_questions/docs.jsonl`` (see its README) is run
turn by turn through the chat pipeline (:class:`citewise.chat.agent.Agent`, a real index of
``docs/`` and a real sessions database) with the quoted answer, and its last turn is
measured:

* ``hit@5 rewritten``: a gold file is among the 5 passages the chat's search returned for the
  last turn (the rewritten question for a follow-up);
* ``hit@5 typed``: the same for a plain search of the words typed alone, the baseline;
* ``answer right typed``: the same for the words typed alone, asked outside the chat;
* ``kept as typed``: for the standalone last turns, the share the chat searched as typed;
* ``answer right``: every key of one gold alternative occurs in the chat's answer
  (``benchmarks/answers.py``'s matching);
* ``rewrite ms p50``: the time from the turn's start to its search, for the follow-ups
  (with the LLM: the model's rewrite; with the rule: the rule).

Two rewriters: ``rule`` (no LLM: the earlier question joined to the follow-up) and ``llm``
(the bundled 1.5B model rewrites, as ``citewise chat`` does by default).

Usage::

    python benchmarks/followups.py [--rewriters rule,llm] [--split dev|test|all]
        [--home /tmp/fubench] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from answers import keys_match  # noqa: E402  (the answer benchmark's matching)

from citewise.chat.agent import Agent  # noqa: E402
from citewise.chat.sessions import SessionStore  # noqa: E402
from citewise.config import Settings  # noqa: E402
from citewise.engine import Engine  # noqa: E402
from citewise.types import DoneEvent, ToolCallEvent, ToolResultEvent  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "benchmarks" / "followup_questions" / "docs.jsonl"


def items(split: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    return [r for r in rows if split == "all" or r["split"] == split]


def _gold(paths: list[str], files: list[str]) -> bool:
    return any(p.endswith(f.split("/", 1)[1]) for p in paths for f in files)


def run(rewriter: str, home: Path, split: str, threads: int) -> list[dict[str, Any]]:
    base = Settings(home=home / "index", llm_provider="none", threads=threads)
    indexer = Engine(base)
    indexer.ingest([ROOT / "docs"])
    settings = base.model_copy(update={
        "llm_provider": "local" if rewriter == "llm" else "none", "llm_threads": threads})
    engine = Engine(settings, embedder=indexer.embedder)
    sessions = SessionStore(f"sqlite:///{home / f'sessions-{rewriter}.sqlite3'}")
    agent = Agent(engine, sessions, threading.Lock())
    rows = []
    for item in items(split):
        chat_id = agent.start(item["turns"][0])
        for turn in item["turns"][:-1]:
            for _ in agent.run(chat_id, turn, extractive=True):
                pass
        last = item["turns"][-1]
        t0 = time.perf_counter()
        searched_at, query, paths, answer = None, None, [], None
        for event in agent.run(chat_id, last, extractive=True):
            if isinstance(event, ToolCallEvent) and event.tool == "search":
                searched_at = time.perf_counter() - t0
                query = event.input["query"]
            elif isinstance(event, ToolResultEvent) and event.tool == "search":
                paths = [h["path"] or "" for h in event.result["hits"]][:5]
            elif isinstance(event, DoneEvent):
                answer = event.answer
        typed = [h.document.path for h in engine.search(last, top_k=5).hits if h.document]
        alone = indexer.ask(last, extractive=True)  # the typed words alone, no conversation
        rows.append({
            "id": item["id"], "split": item["split"], "rewriter": rewriter,
            "follow_up": item["follow_up"], "searched": query, "kept": query == last,
            "hit_rewritten": _gold(paths, item["files"]), "hit_typed": _gold(typed, item["files"]),
            "right": answer is not None and answer.found
            and keys_match(answer.text, item["answers"]),
            "right_typed": alone.found and keys_match(alone.text, item["answers"]),
            "rewrite_ms": None if searched_at is None else searched_at * 1000,
            "answer": answer.text if answer is not None else None})
        print(json.dumps({k: rows[-1][k] for k in ("id", "rewriter", "searched",
                                                     "hit_rewritten", "right")}), flush=True)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    out = [("| rewriter | split | follow-ups | hit@5 rewritten | hit@5 typed | answer right | "
           "standalone kept as typed | standalone answer right | rewrite ms p50 |"),
           "|---|---|---|---|---|---|---|---|---|---|"]
    for rewriter in dict.fromkeys(r["rewriter"] for r in rows):
        for split in dict.fromkeys(r["split"] for r in rows):
            rs = [r for r in rows if r["rewriter"] == rewriter and r["split"] == split]
            fu = [r for r in rs if r["follow_up"]]
            st = [r for r in rs if not r["follow_up"]]
            ms = [r["rewrite_ms"] for r in fu if r["rewrite_ms"] is not None]

            def share(xs: list[dict[str, Any]], key: str) -> str:
                return f"{sum(x[key] for x in xs)}/{len(xs)}" if xs else "-"
            p50 = f"{statistics.median(ms):.0f}" if ms else "-"
            out.append(f"| {rewriter} | {split} | {len(fu)} | {share(fu, 'hit_rewritten')} | "
                       f"{share(fu, 'hit_typed')} | {share(fu, 'right')} | {share(fu, 'right_typed')} | "
                       f"{share(st, 'kept')} | "
                       f"{share(st, 'right')} | {p50} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rewriters", default="rule,llm")
    ap.add_argument("--split", choices=["dev", "test", "all"], default="all")
    ap.add_argument("--home", type=Path, default=Path("/tmp/citewise-followups"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    for rewriter in args.rewriters.split(","):
        rows += run(rewriter, args.home, args.split, args.threads)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False), encoding="utf-8")
    print(table(rows))


if __name__ == "__main__":
    main()
