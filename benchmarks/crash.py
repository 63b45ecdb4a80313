"""Crash safety of ingestion: ``kill -9`` a real ``citewise ingest`` at seeded random moments.

A folder of real documents is built in ``--work`` (a copy of ``--contracts`` CUAD contracts
from ../shared/datasets/cuad and of the ``--docs`` smallest pages of this repository's docs/;
nothing is written into the repository). A clean ingest into a fresh index gives the reference: for every file, its
chunks as ``(ordinal, content hash)``. Then, ``--kills`` times:

1. start an ingest of the folder on a fresh ``CITEWISE_HOME``: with ``--cli``, a
   ``python -m citewise.cli ingest FOLDER`` subprocess; by default a process forked from this
   one after it loaded the embedding model, running ``Engine.ingest`` (what the CLI runs),
   which skips the 10-20 s (minutes on a loaded machine) of Python and PyTorch start-up per
   kill;
2. wait until its first document is committed, then a seeded random delay drawn uniformly
   from [0, the clean run's writing time), and send SIGKILL;
3. open the index (a new :class:`~citewise.store.sqlite.SQLiteStore`, which runs the
   migrations), run :meth:`SQLiteStore.check` (SQLite and FTS5 integrity checks, orphan chunks,
   FTS rows per chunk, chunk counts, vector sizes) and compare every document with the
   reference: it must be fully present (the same chunks) or absent;
4. re-run the ingest to completion (the same way, in a new process) and check that every
   file is present in full.

Usage::

    nice -n 10 python benchmarks/crash.py --kills 20 --seed 7 --contracts 4 --docs 2 [--cli]

Prints one row per kill and a summary; exit status 1 if any check failed.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from citewise.config import Settings
from citewise.embed import load_embedder
from citewise.engine import Engine
from citewise.store.sqlite import SQLiteStore

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT.parent / "shared" / "datasets"

Snapshot = dict[str, list[tuple[int, str]]]


def build_corpus(folder: Path, contracts: int, docs: int) -> Path:
    """``folder`` with ``contracts`` CUAD contracts (5-20 kB each, the first in name order)
    and the ``docs`` smallest pages of docs/; returns the folder."""
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "cuad").mkdir(parents=True)
    (folder / "docs").mkdir()
    files = sorted((DATASETS / "cuad" / "full_contract_txt").rglob("*.txt"))
    for f in [f for f in files if 5_000 < f.stat().st_size < 20_000][:contracts]:
        shutil.copy2(f, folder / "cuad" / f.name)
    for f in sorted((ROOT / "docs").glob("*.md"), key=lambda p: (p.stat().st_size, p.name))[:docs]:
        shutil.copy2(f, folder / "docs" / f.name)
    return folder


def ingest_command(folder: Path) -> list[str]:
    return [sys.executable, "-m", "citewise.cli", "ingest", str(folder), "--format", "json"]


def ingest_env(home: Path) -> dict[str, str]:
    env = dict(os.environ, CITEWISE_HOME=str(home), CITEWISE_LLM_PROVIDER="none",
               CITEWISE_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def committed_documents(index: Path) -> int:
    """Documents committed so far (0 while the index does not exist yet); read-only."""
    if not index.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=5) as db:
            return db.execute("SELECT count(*) FROM documents").fetchone()[0]
    except sqlite3.Error:  # the schema is being created
        return 0


def snapshot(index: Path) -> Snapshot:
    """Every indexed document's chunks as ``(ordinal, content hash)``, by source path."""
    store = SQLiteStore(index)
    try:
        return {d.source_path: [(c.ordinal, c.content_hash) for c in store.chunks_of(d.id)]
                for d in store.documents() if d.status == "indexed"}
    finally:
        store.close()


def _ingest_child(home: str, folder: str, embedder: object) -> None:
    """The body of a forked ingest process: ``Engine.ingest``, as ``citewise ingest`` runs it."""
    # the embedder was loaded by the parent before the fork
    engine = Engine(Settings(home=Path(home), llm_provider="none", threads=1),
                    embedder=embedder)  # type: ignore[arg-type]
    report = engine.ingest([Path(folder)])
    os._exit(1 if report.count("failed") else 0)


class _Forked:
    """An ingest in a forked process, with the ``Popen`` methods the loop uses."""

    def __init__(self, home: Path, folder: Path, embedder: object) -> None:
        ctx = multiprocessing.get_context("fork")
        self.proc = ctx.Process(target=_ingest_child, args=(str(home), str(folder), embedder))
        self.proc.start()
        self.pid = self.proc.pid

    def poll(self) -> int | None:
        return self.proc.exitcode

    def wait(self) -> int:
        self.proc.join()
        return self.proc.exitcode  # type: ignore[return-value]


def start_ingest(folder: Path, home: Path, embedder: object | None) -> _Forked | subprocess.Popen:
    if embedder is None:
        return subprocess.Popen(ingest_command(folder), env=ingest_env(home),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return _Forked(home, folder, embedder)


def problems_after_crash(index: Path, reference: Snapshot) -> tuple[list[str], int]:
    """``(problems, documents present)``: the store's own checks plus, per document, whether
    it is exactly the reference's version."""
    store = SQLiteStore(index)  # opening runs the migrations: the index must open
    try:
        problems = store.check()
    finally:
        store.close()
    present = snapshot(index)
    for path, chunks in present.items():
        if path not in reference:
            problems.append(f"{path}: not in the reference ingest")
        elif chunks != reference[path]:
            problems.append(f"{path}: {len(chunks)} chunks, a clean ingest gives "
                            f"{len(reference[path])} (or different ones)")
    return problems, len(present)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--contracts", type=int, default=6)
    ap.add_argument("--docs", type=int, default=4)
    ap.add_argument("--work", type=Path, default=Path("/tmp/citewise-crash"))
    ap.add_argument("--cli", action="store_true",
                    help="kill `python -m citewise.cli ingest` subprocesses instead of forks")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    # loaded before any fork and never run here, so no thread pool exists to break in a fork
    embedder = None if args.cli else load_embedder(
        Settings(home=args.work / "reference").embedding_model, 1)
    folder = build_corpus(args.work / "data", args.contracts, args.docs)

    ref_home = args.work / "reference"
    shutil.rmtree(ref_home, ignore_errors=True)
    t0 = time.monotonic()
    proc = start_ingest(folder, ref_home, embedder)
    first = None
    while proc.poll() is None:
        if first is None and committed_documents(ref_home / "index.sqlite3"):
            first = time.monotonic() - t0
        time.sleep(0.02)
    total = time.monotonic() - t0
    if proc.wait() != 0 or first is None:
        sys.exit("the reference ingest failed")
    reference = snapshot(ref_home / "index.sqlite3")
    writing = total - first
    print(f"corpus: {len(reference)} files, {sum(map(len, reference.values()))} chunks; "
          f"clean ingest {total:.1f} s, first commit at {first:.1f} s, writing {writing:.1f} s")
    print("\n| kill | delay after first commit s | documents present | problems | re-run complete |")
    print("|---|---|---|---|---|")

    failed = 0
    partial = 0
    for i in range(1, args.kills + 1):
        home = args.work / "trial"
        shutil.rmtree(home, ignore_errors=True)
        index = home / "index.sqlite3"
        delay = rng.uniform(0.0, writing)
        proc = start_ingest(folder, home, embedder)
        while proc.poll() is None and not committed_documents(index):
            time.sleep(0.01)
        time.sleep(delay)
        finished_first = proc.poll() is not None
        if not finished_first:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        problems, present = problems_after_crash(index, reference)
        partial += 0 < present < len(reference)
        rerun = start_ingest(folder, home, embedder).wait()
        store = SQLiteStore(index)
        problems += store.check()
        store.close()
        after = snapshot(index)
        complete = rerun == 0 and after == reference
        failed += bool(problems) or not complete
        note = " (ingest had finished)" if finished_first else ""
        print(f"| {i} | {delay:.2f}{note} | {present}/{len(reference)} | "
              f"{'; '.join(problems) or 'none'} | {'yes' if complete else 'NO'} |", flush=True)
    print(f"\n{args.kills} kills, {partial} left a partly ingested folder, {failed} failed a "
          f"check; documents lost: {failed and 'see above' or 0}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
