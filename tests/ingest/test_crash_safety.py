"""Crash safety (issue 10, bounded version of ``benchmarks/crash.py``): a real ``citewise
ingest`` subprocess is killed with SIGKILL while it writes (frozen with SIGSTOP first, so the
test knows it died after some document commits and before the last); the index must open, pass
its consistency checks, hold every document fully or not at all, and a re-run must complete
it."""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from citewise.store.sqlite import SQLiteStore
from tests.conftest import CASES

SRC = Path(__file__).resolve().parents[2] / "src"
#: the bundled model that starts fastest (no PyTorch import), so each killed run is short
MODEL = "e5"


@pytest.fixture
def corpus(tmp_path) -> Path:
    """Real files: the 20 C23 locker notes and the C20 pets page and the C21 note (kept small:
    the subprocess embeds all of them before its first commit)."""
    folder = tmp_path / "corpus"
    shutil.copytree(CASES / "c23_concurrent", folder)
    shutil.copy2(CASES / "c20_reingest" / "v1" / "office_pets.md", folder)
    shutil.copy2(CASES / "c21_delete" / "marigold.txt", folder)
    return folder


def _documents(index: Path) -> int:
    if not index.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=5) as db:
            return db.execute("SELECT count(*) FROM documents").fetchone()[0]
    except sqlite3.Error:
        return 0


def _chunks_by_file(store: SQLiteStore) -> dict[str, list[tuple[int, str, str]]]:
    return {d.source_path: [(c.ordinal, c.content_hash, c.text) for c in store.chunks_of(d.id)]
            for d in store.documents() if d.status == "indexed"}


@pytest.mark.slow  # starts and kills citewise ingest subprocesses
def test_kill_9_during_ingest_leaves_whole_documents_and_a_rerun_completes(
        make_engine, corpus, tmp_path):
    reference_engine = make_engine(home=tmp_path / "reference", embedding_model=MODEL)
    reference_engine.ingest([corpus])
    reference = _chunks_by_file(reference_engine.store)
    assert len(reference) == 22 and all(reference.values())

    rng = random.Random(10)
    env = dict(os.environ, CITEWISE_LLM_PROVIDER="none", CITEWISE_THREADS="1",
               CITEWISE_EMBEDDING_MODEL=MODEL,
               PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    trial = attempts = 0
    longest = 0.004  # s after the first commit is seen; halved after a kill that came too late
    while trial < 3:
        attempts += 1
        assert attempts <= 8, "no kill landed between the first and the last document commit"
        home = tmp_path / f"attempt{attempts}"
        index = home / "index.sqlite3"
        proc = subprocess.Popen(
            [sys.executable, "-m", "citewise.cli", "ingest", str(corpus)],
            env={**env, "CITEWISE_HOME": str(home)},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while proc.poll() is None and not _documents(index):
            time.sleep(0.0002)
        time.sleep(rng.uniform(0.0, longest))  # somewhere among the per-document commits
        os.kill(proc.pid, signal.SIGSTOP)  # frozen: what it has committed can be counted
        committed = _documents(index)
        os.kill(proc.pid, signal.SIGKILL)
        killed = proc.wait() == -signal.SIGKILL
        if not killed or not 0 < committed < len(reference):  # too late: not mid-ingest
            longest /= 2
            continue
        trial += 1

        store = SQLiteStore(index)  # opens (and migrates) after the crash
        assert store.check() == []
        present = _chunks_by_file(store)
        assert len(present) == committed  # what was committed survived, nothing else
        for path, chunks in present.items():
            assert chunks == reference[path], path  # whole, never half a document
        store.close()

        engine = make_engine(home=home, embedding_model=MODEL)  # the re-run completes it
        report = engine.ingest([corpus])
        assert report.count("failed") == 0
        assert report.count("unchanged") == len(present)
        assert report.count("added") == len(reference) - len(present)
        assert _chunks_by_file(engine.store) == reference
        assert engine.store.check() == []
