"""Prompt-lookup (n-gram) speculative decoding in the bundled llama.cpp, against plain decoding.

Builds the real answer prompts (sentence evidence, the fixed system prompt) of the first six
answerable dev questions of the docs and XQuAD-en sets (``answers.py``), starts two llama.cpp
servers on the bundled 1.5B model (one with ``speculative.types = [NGRAM_SIMPLE]``), and sends
each prompt to both, alternating which goes first, twice; the second round is reported (the
first warms the prompt cache as a stream of questions would). Greedy decoding (temperature 0),
at most 200 tokens. Reports the median whole-request seconds, decoding and prefill tokens/s
(llama.cpp's own ``timings``), the median cached prompt tokens (``cache_n``: the prefix kept
from the previous request) and whether both servers wrote the same text.

Usage::

    python benchmarks/speculative_decoding.py [--home ~/.citewise-bench] [--threads 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import answers as bench
import httpx
from evidence_recall import ranked_evidence

from citewise.answer.local import resolve_model_file
from citewise.answer.prompts import build_messages
from citewise.answer.providers import wait_until_ready
from citewise.answer.selection import sentence_evidence
from citewise.config import Settings
from citewise.engine import Engine


def prompts(home: Path) -> list[list[Any]]:
    base = Settings(home=home)
    out = []
    for _n, _k, store_path, items, _r in bench.collections(base, home, {"docs", "xquad-en"}, "dev"):
        engine = Engine(base.model_copy(update={"store": store_path, "llm_provider": "none"}))
        s = engine.settings
        for item in [i for i in items if i.get("answerable", True)][:6]:
            q = item["question"]
            evidence, ranked = ranked_evidence(engine, q)
            chosen = sentence_evidence(evidence, ranked, max_passages=s.top_k,
                                       budget_tokens=s.evidence_tokens,
                                       count_tokens=engine.embedder.count_tokens)
            out.append(build_messages(q, chosen, (), budget_tokens=s.context_tokens,
                                      count_tokens=engine.embedder.count_tokens))
    return out


def server(model: Path, threads: int, ngram: bool) -> tuple[object, str]:
    import xllamacpp

    p = xllamacpp.CommonParams()
    p.model.path = str(model)
    p.n_ctx = 4096
    p.n_parallel = 1
    p.cpuparams.n_threads = p.cpuparams_batch.n_threads = threads
    p.hostnames = ["127.0.0.1"]
    p.port = 0
    p.verbosity = 0
    if ngram:
        p.speculative.types = [xllamacpp.common_speculative_type.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
    s = xllamacpp.Server(p)
    url = f"{s.listening_address}/v1"
    wait_until_ready(url)
    return s, url


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--home", type=Path, default=Path.home() / ".citewise-bench")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    messages = prompts(args.home)
    _, model = resolve_model_file(Settings(home=args.home))
    servers = {"plain": server(model, args.threads, False),
               "ngram": server(model, args.threads, True)}
    rows: dict[str, list[dict[str, Any]]] = {k: [] for k in servers}
    for rep in range(2):
        for i, msgs in enumerate(messages):
            order = list(servers.items())
            for name, (_s, url) in (order if (i + rep) % 2 == 0 else order[::-1]):
                t0 = time.perf_counter()
                r = httpx.post(f"{url}/chat/completions", timeout=600, json={
                    "messages": msgs, "max_tokens": 200, "temperature": 0}).json()
                t = r.get("timings", {})
                rows[name].append({"rep": rep, "s": time.perf_counter() - t0,
                                   "text": r["choices"][0]["message"]["content"],
                                   "prompt_n": t.get("prompt_n", 0), "cache_n": t.get("cache_n", 0),
                                   "pred_n": t.get("predicted_n", 0),
                                   "pred_ms": t.get("predicted_ms", 0.0),
                                   "prompt_ms": t.get("prompt_ms", 0.0)})
    print("| decoding | requests | s/request p50 | decode tokens/s | prefill tokens/s | cached prompt tokens p50 |")
    print("|---|---|---|---|---|---|")
    for name, rs in rows.items():
        rs = [r for r in rs if r["rep"] == 1]
        print(f"| {name} | {len(rs)} | {statistics.median(r['s'] for r in rs):.2f} | "
              f"{sum(r['pred_n'] for r in rs) / sum(r['pred_ms'] for r in rs) * 1000:.1f} | "
              f"{sum(r['prompt_n'] for r in rs) / sum(r['prompt_ms'] for r in rs) * 1000:.1f} | "
              f"{statistics.median(r['cache_n'] for r in rs):.0f} |")
    same = sum(a["text"] == b["text"] for a, b in zip(rows["plain"], rows["ngram"], strict=True))
    print(f"\nidentical answers: {same} of {len(rows['plain'])}")


if __name__ == "__main__":
    main()
