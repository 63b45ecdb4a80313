"""Concurrency: two overlapping ingests at once, then 50 concurrent SSE chat streams during a
third ingest, all as separate processes on one SQLite index.

1. A folder of real documents is built in ``--work`` (CUAD contracts and a copy of docs/);
   a clean single ingest into a reference index gives every file's chunks.
2. Two ``citewise ingest`` processes start together on a fresh index: one ingests the
   folder, the other its ``cuad`` subfolder (the contracts are written by both). Afterwards
   the index must pass :meth:`SQLiteStore.check` and hold every file exactly as the
   reference does (no lost or duplicated chunks).
3. ``citewise serve`` runs on that index (``CITEWISE_LLM_PROVIDER=none``: extractive answers,
   no LLM). ``--rounds`` rounds of ``--streams`` concurrent ``POST /api/chat/stream``
   requests (httpx async clients) are sent, first with the server idle (the baseline), then
   while a third process ingests ``--extra`` more contracts. Every stream must be HTTP 200
   and end with a ``done`` event; none may carry "database is locked" or a 5xx.
   Reported: streams completed per second and the p50/p95 time to the ``done`` event, idle
   and under ingest, and their ratio (measured in the same run).

Usage::

    nice -n 10 python benchmarks/concurrency.py --streams 50 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from citewise.store.sqlite import SQLiteStore

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from crash import DATASETS, ingest_command, ingest_env, snapshot

QUESTIONS = [
    "What is the governing law of the agreement?",
    "How can the agreement be terminated?",
    "What notice period applies to termination?",
    "Who are the parties to the agreement?",
    "Is there a limitation of liability?",
    "How do I ingest a folder?",
    "Which fusion strategies are available?",
    "What does citewise status show?",
    "Can the agreement be assigned to a third party?",
    "What are the payment terms?",
]


def contracts(skip: int, n: int) -> list[Path]:
    files = sorted((DATASETS / "cuad" / "full_contract_txt").rglob("*.txt"))
    return [f for f in files if 5_000 < f.stat().st_size < 40_000][skip:skip + n]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def one_stream(client: httpx.AsyncClient, question: str) -> tuple[float, str]:
    """``(seconds to the done event, problem or "")`` of one streamed chat."""
    t0 = time.perf_counter()
    try:
        async with client.stream("POST", "/api/chat/stream",
                                 json={"query": question, "extractive": True}) as r:
            if r.status_code != 200:
                return time.perf_counter() - t0, f"HTTP {r.status_code}: {await r.aread()!r}"
            last, body = "", []
            async for line in r.aiter_lines():
                body.append(line)
                if line.startswith("event:"):
                    last = line[6:].strip()
            text = "\n".join(body)
            if "database is locked" in text:
                return time.perf_counter() - t0, "database is locked"
            if last != "done":
                return time.perf_counter() - t0, f"ended with {last!r}: {text[-300:]}"
    except httpx.HTTPError as err:
        return time.perf_counter() - t0, f"{type(err).__name__}: {err}"
    return time.perf_counter() - t0, ""


async def burst(url: str, streams: int, rounds: int) -> tuple[list[float], list[str], float]:
    """``rounds`` rounds of ``streams`` concurrent chats: latencies, problems, wall seconds."""
    latencies: list[float] = []
    problems: list[str] = []
    limits = httpx.Limits(max_connections=streams)
    t0 = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:
        for r in range(rounds):
            results = await asyncio.gather(*(
                one_stream(client, QUESTIONS[(r * streams + i) % len(QUESTIONS)])
                for i in range(streams)))
            latencies += [t for t, _ in results]
            problems += [p for _, p in results if p]
    return latencies, problems, time.perf_counter() - t0


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--streams", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--contracts", type=int, default=8)
    ap.add_argument("--extra", type=int, default=8)
    ap.add_argument("--work", type=Path, default=Path("/tmp/citewise-concurrency"))
    args = ap.parse_args()
    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    data = work / "data"
    (data / "cuad").mkdir(parents=True)
    for f in contracts(0, args.contracts):
        shutil.copy2(f, data / "cuad" / f.name)
    shutil.copytree(ROOT / "docs", data / "docs")
    extra = work / "extra"
    extra.mkdir()
    for f in contracts(args.contracts, args.extra):
        shutil.copy2(f, extra / f.name)

    ref = work / "reference"
    subprocess.run(ingest_command(data), env=ingest_env(ref), check=True,
                   stdout=subprocess.DEVNULL)
    reference = snapshot(ref / "index.sqlite3")

    # 1. two overlapping ingests at once
    home = work / "home"
    t0 = time.monotonic()
    procs = [subprocess.Popen(ingest_command(p), env=ingest_env(home), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for p in (data, data / "cuad")]
    outs = [p.communicate() for p in procs]
    both = time.monotonic() - t0
    index = home / "index.sqlite3"
    store = SQLiteStore(index)
    problems = store.check()
    store.close()
    got = snapshot(index)
    lost = [p for p in reference if got.get(p) != reference[p]]
    locked = sum(b"database is locked" in o + e for o, e in outs)
    print(f"overlapping ingests: exit codes {[p.returncode for p in procs]}, {both:.1f} s; "
          f"{len(got)}/{len(reference)} files as in the reference, "
          f"{sum(map(len, got.values()))}/{sum(map(len, reference.values()))} chunks; "
          f"documents lost or different: {len(lost)}; index problems: {problems or 'none'}; "
          f"'database is locked' in output: {locked}")
    ok = not lost and not problems and not locked and all(p.returncode == 0 for p in procs)

    # 2. streams, idle then during an ingest
    port = free_port()
    env = dict(ingest_env(home), CITEWISE_THREADS="1")
    server = subprocess.Popen(
        [sys.executable, "-m", "citewise.cli", "serve", "--port", str(port)], env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        asyncio.run(burst(url, 2, 1))  # warm up: loads the model in the server
        idle_lat, idle_problems, idle_wall = asyncio.run(burst(url, args.streams, args.rounds))
        writer = subprocess.Popen(ingest_command(extra), env=ingest_env(home),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        busy_lat, busy_problems, busy_wall = asyncio.run(burst(url, args.streams, args.rounds))
        still = writer.poll() is None
        w_out, w_err = writer.communicate()
    finally:
        server.terminate()
        _, server_err = server.communicate(timeout=60)
    n = args.streams * args.rounds
    server_5xx = server_err.count(b'" 500 ') + server_err.count(b"Traceback")
    locked = (b"database is locked" in server_err + w_out + w_err) + sum(
        "locked" in p for p in idle_problems + busy_problems)
    extra_snapshot = {k: v for k, v in snapshot(index).items() if k.startswith(str(extra))}
    store = SQLiteStore(index)
    problems = store.check()
    store.close()
    print("\n| load | streams | failed | streams/s | p50 s | p95 s |")
    print("|---|---|---|---|---|---|")
    for name, lat, probs, wall in (("idle", idle_lat, idle_problems, idle_wall),
                                   ("during an ingest", busy_lat, busy_problems, busy_wall)):
        print(f"| {name} | {n} | {len(probs)} | {n / wall:.2f} | "
              f"{statistics.median(lat):.2f} | {p95(lat):.2f} |")
    print(f"\np95 during ingest / idle: {p95(busy_lat) / p95(idle_lat):.2f}; throughput "
          f"during ingest / idle: {(n / busy_wall) / (n / idle_wall):.2f}; the ingest was "
          f"{'still running' if still else 'finished'} when the last round ended "
          f"(exit {writer.returncode}, {len(extra_snapshot)}/{args.extra} files indexed); "
          f"server 5xx/tracebacks: {server_5xx}; 'database is locked': {locked}; "
          f"index problems: {problems or 'none'}")
    for p in (idle_problems + busy_problems)[:5]:
        print("problem:", p)
    ok = ok and not idle_problems and not busy_problems and not server_5xx and not locked \
        and not problems and writer.returncode == 0 and len(extra_snapshot) == args.extra
    print(json.dumps({"ok": ok}))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
