"""Concurrency (issue 10 and case C23; bounded version of ``benchmarks/concurrency.py``): two
``citewise ingest`` processes on overlapping folders at once, then concurrent SSE chat streams
against a real uvicorn server while a third process ingests into the same index."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx

from citewise.store.sqlite import SQLiteStore
from tests.api.conftest import LiveServer
from tests.conftest import CASES

SRC = Path(__file__).resolve().parents[2] / "src"
MODEL = "e5"  # the bundled model that starts fastest (no PyTorch import) in the subprocesses
STREAMS = 20


def _ingest(folder: Path, home: Path) -> subprocess.Popen:
    env = dict(os.environ, CITEWISE_HOME=str(home), CITEWISE_LLM_PROVIDER="none",
               CITEWISE_THREADS="1", CITEWISE_EMBEDDING_MODEL=MODEL,
               PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    return subprocess.Popen([sys.executable, "-m", "citewise.cli", "ingest", str(folder)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _chunks_by_file(store: SQLiteStore) -> dict[str, list[tuple[int, str, str]]]:
    return {d.source_path: [(c.ordinal, c.content_hash, c.text) for c in store.chunks_of(d.id)]
            for d in store.documents() if d.status == "indexed"}


async def _stream(client: httpx.AsyncClient, room: int) -> tuple[int, str, str]:
    async with client.stream("POST", "/api/chat/stream", json={
            "query": f"What is the locker code for room {room:02d}?", "extractive": True}) as r:
        body = "\n".join([line async for line in r.aiter_lines()])
    events = [line[6:].strip() for line in body.splitlines() if line.startswith("event:")]
    return r.status_code, events[-1] if events else "", body


async def _streams(url: str) -> list[tuple[int, str, str]]:
    async with httpx.AsyncClient(base_url=url, timeout=120,
                                 limits=httpx.Limits(max_connections=STREAMS)) as client:
        return await asyncio.gather(*(_stream(client, i % 20) for i in range(STREAMS)))


def test_overlapping_ingests_then_streams_during_an_ingest(make_app, make_engine, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(CASES / "c23_concurrent", data / "lockers")
    shutil.copy2(CASES / "c20_reingest" / "v1" / "office_pets.md", data)
    shutil.copy2(CASES / "c21_delete" / "marigold.txt", data)
    extra = tmp_path / "extra"
    shutil.copytree(CASES / "c41_code", extra)
    ref_engine = make_engine(home=tmp_path / "reference", embedding_model=MODEL)
    ref_engine.ingest([data])
    reference = _chunks_by_file(ref_engine.store)

    home = tmp_path / "home"  # the home make_app uses
    procs = [_ingest(data, home), _ingest(data / "lockers", home)]  # lockers written twice
    outputs = [p.communicate(timeout=300)[0].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert not any("locked" in o for o in outputs)
    store = SQLiteStore(home / "index.sqlite3")
    assert store.check() == []
    assert _chunks_by_file(store) == reference  # no lost or duplicated chunks
    store.close()

    app, engine = make_app(embedding_model=MODEL)
    with LiveServer(app) as server:
        writer = _ingest(extra, home)
        results = asyncio.run(_streams(server.url))
        out = writer.communicate(timeout=300)[0].decode()
    assert writer.returncode == 0 and "locked" not in out, out
    for status, last, body in results:
        assert status == 200 and last == "done", body[-500:]
        assert "database is locked" not in body and "InternalError" not in body
    assert any("5749" in body for _, _, body in results)  # room 00's code was answered
    assert engine.store.check() == []
    docs = {d.path for d in engine.store.documents() if d.status == "indexed"}
    assert {f"extra/{p.name}" for p in extra.iterdir()} <= docs
    assert len(docs) == len(reference) + 6

