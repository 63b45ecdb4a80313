"""The MCP server over stdio (issue 23, item 1): the SDK's own client spawns
``python -m citewise mcp`` on a real SQLite index built by ingesting the repository's docs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parents[2]
DOCS = ["api.md", "configuration.md", "ingestion.md"]
KEY_DOCS = "read-key-docs-0123456789"
KEY_OTHER = "read-key-other-0123456789"
ADMIN = "admin-key-0123456789"

pytestmark = pytest.mark.slow  # each test spawns citewise, which loads the embedding model


@pytest.fixture
def home(make_engine, tmp_path) -> Path:
    """A real index of three of the docs (collection ``docs``) and one note (``notes``)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in DOCS:
        (docs / name).write_bytes((REPO / "docs" / name).read_bytes())
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "secret.md").write_text("# Port\n\nThe staging API listens on port 9431, code "
                                     "BLUEHERON.\n", encoding="utf-8")
    engine = make_engine()
    engine.ingest([docs], collection="docs")
    engine.ingest([notes], collection="notes")
    engine.store.close()
    return engine.settings.home


def server(home: Path, key: str | None = None, **env: str) -> StdioServerParameters:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CITEWISE_")}
    environ.update(CITEWISE_HOME=str(home), CITEWISE_LLM_PROVIDER="none",
                   PYTHONPATH=os.pathsep.join([str(REPO / "src"), environ.get("PYTHONPATH", "")]),
                   **env)
    if key:
        environ["CITEWISE_MCP_API_KEY"] = key
    return StdioServerParameters(command=sys.executable, args=["-m", "citewise", "mcp"],
                                 env=environ, cwd=str(home))


def session_calls(params: StdioServerParameters, calls):  # type: ignore[no-untyped-def]
    """Run ``calls`` (tool, arguments) in one session; ``[(is_error, result)]``, the tool
    names first."""
    with open(os.devnull, "w") as errlog:
        return anyio.run(_session_calls, params, calls, errlog)


async def _session_calls(params, calls, errlog):  # type: ignore[no-untyped-def]
    out = []
    async with stdio_client(params, errlog=errlog) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        out.append((False, sorted(t.name for t in (await session.list_tools()).tools)))
        for tool, arguments in calls:
            result = await session.call_tool(tool, arguments)
            text = result.content[0].text if result.content else ""
            out.append((result.isError, result.structuredContent if not result.isError
                        else text))
    return out


def test_stdio_tools_answer_from_the_index(home) -> None:
    results = session_calls(server(home), [
        ("search", {"query": "Which header carries the API key?", "top_k": 3}),
        ("ask", {"question": "Which header carries the API key?", "extractive": True,
                 "filters": {"paths": ["api.md"]}}),
        ("list_documents", {"collection": "docs"}),
    ])
    (_, tools), (err, found), (err_ask, answer), (_, docs) = results
    assert tools == ["ask", "get_passage", "ingest", "list_documents", "search"]
    assert not err and len(found["passages"]) == 3
    first = found["passages"][0]
    assert first["path"].startswith("docs/") and first["chunk_id"] and first["text"]
    assert not err_ask and answer["found"]
    assert {c["path"] for c in answer["citations"]} == {"docs/api.md"}
    assert sorted(d["path"] for d in docs["documents"]) == [f"docs/{n}" for n in DOCS]
    passage = session_calls(server(home), [
        ("get_passage", {"chunk_id": first["chunk_id"]})])[1]
    assert passage[0] is False and passage[1]["text"] == first["text"]
    assert passage[1]["char_start"] == first["char_start"]


def test_stdio_key_limits_collections_and_ingest(home, tmp_path) -> None:
    keys = json.dumps({KEY_DOCS: ["docs"], KEY_OTHER: ["notes"]})
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "more.md").write_text("# More\n\nThe canteen opens at 8.\n", encoding="utf-8")
    roots = json.dumps([str(extra)])
    results = session_calls(server(home, KEY_DOCS, CITEWISE_API_KEYS=keys,
                                   CITEWISE_API_KEY=ADMIN, CITEWISE_INGEST_ROOTS=roots), [
        ("search", {"query": "Which port does the staging API listen on?", "top_k": 10}),
        ("ingest", {"paths": [str(extra)]}),
    ])
    (_, _), (err, found), (err_ingest, message) = results
    assert not err and found["passages"]
    assert all(p["path"].startswith("docs/") for p in found["passages"])
    assert not any("BLUEHERON" in p["text"] for p in found["passages"])
    assert err_ingest and "admin key" in message
    results = session_calls(server(home, ADMIN, CITEWISE_API_KEYS=keys,
                                   CITEWISE_API_KEY=ADMIN, CITEWISE_INGEST_ROOTS=roots), [
        ("search", {"query": "Which port does the staging API listen on?", "top_k": 1}),
        ("ingest", {"paths": [str(extra)], "collection": "notes"}),
    ])
    (_, _), (err, found), (err_ingest, report) = results
    assert "BLUEHERON" in found["passages"][0]["text"]
    assert not err_ingest and [f["status"] for f in report["files"]] == ["added"]


def test_stdio_refuses_to_start_without_a_valid_key(home) -> None:
    keys = json.dumps({KEY_DOCS: ["docs"]})

    with pytest.raises(BaseException):  # noqa: B017 - the process exits before initialize
        session_calls(server(home, "wrong-key-0123456789", CITEWISE_API_KEYS=keys), [])


NOISY = """
import os, sys, threading, time
import citewise.cli as cli

def noise():
    while not os.path.samestat(os.fstat(1), os.fstat(2)):  # until the server guards stdout
        time.sleep(0.02)
    os.write(1, b"STRAY-NATIVE\\n")  # what a native library writes to file descriptor 1
    print("STRAY-PRINT", file=sys.__stdout__, flush=True)
    print("STRAY-SYS", flush=True)

threading.Thread(target=noise, daemon=True).start()
cli.app(["mcp"], prog_name="citewise")
"""


def test_stdout_carries_only_the_protocol(home, tmp_path) -> None:
    """Whatever else the process writes to standard output once the server runs (a native
    library loading a model, a print) goes to stderr, never into the JSON-RPC stream."""
    script = tmp_path / "noisy.py"
    script.write_text(NOISY, encoding="utf-8")
    params = server(home)
    params.args = [str(script)]
    log = tmp_path / "stderr.txt"

    async def go(errlog):  # type: ignore[no-untyped-def]
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(100):
                if "STRAY-SYS" in log.read_text():
                    break
                await anyio.sleep(0.05)
            return await session.call_tool("list_documents", {})

    with open(log, "w") as errlog:
        result = anyio.run(go, errlog)
    assert not result.isError and result.structuredContent["count"] == 4
    written = log.read_text()
    assert all(f"STRAY-{w}" in written for w in ("NATIVE", "PRINT", "SYS")), written
