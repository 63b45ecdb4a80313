"""The MCP server (issue 23, item 1) over streamable HTTP at /mcp of a real uvicorn server,
driven by the official SDK's own client; a real index built by ingesting real files, real
embedding model, read keys per collection and the admin key as for the HTTP API."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.api.conftest import LiveServer

ADMIN = "admin-key-0123456789"
KEY_A = "read-key-alpha-0123456789"
KEY_B = "read-key-beta-0123456789"
QUESTION = "How long does the laptop warranty last?"
PUBLIC = ("# Warranty\n\nThe laptop warranty lasts 24 months from the date of purchase.\n\n"
          "## Batteries\n\nBatteries are covered for 12 months only.\n")
# the private note answers the question better: only the key's scope keeps it out
PRIVATE = ("---\nauthor: Legal team\n---\n# Laptop warranty (internal)\n\nHow long does the "
           "laptop warranty last? The laptop warranty lasts 60 months for staff laptops, code "
           "SILVERFINCH.\n")


@pytest.fixture
def secured(make_app, tmp_path):
    """A live server whose index holds collection ``alpha`` (warranty, payroll) and ``beta``
    (a private warranty note); KEY_A reads alpha, KEY_B beta, ADMIN everything."""
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    alpha.mkdir()
    beta.mkdir()
    (alpha / "warranty.md").write_text(PUBLIC, encoding="utf-8")
    (alpha / "payroll.md").write_text("# Payroll\n\nSalaries are paid on the 25th.\n",
                                      encoding="utf-8")
    (beta / "staff_warranty.md").write_text(PRIVATE, encoding="utf-8")
    app, engine = make_app(api_key=ADMIN, api_keys={KEY_A: ["alpha"], KEY_B: ["beta"]},
                           ingest_roots=[tmp_path])
    engine.ingest([alpha], collection="alpha")
    engine.ingest([beta], collection="beta")
    with LiveServer(app) as server:
        yield server, engine


@asynccontextmanager
async def client(url: str, key: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx.AsyncClient(headers=headers, timeout=120) as http, \
            streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments):  # type: ignore[no-untyped-def]
    result = await session.call_tool(tool, arguments)
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    return result.isError, (result.structuredContent if not result.isError else text)


def run(fn, *args):  # type: ignore[no-untyped-def]
    return anyio.run(fn, *args)


def test_tools_are_listed_with_schemas(secured):
    server, _ = secured

    async def go():  # type: ignore[no-untyped-def]
        async with client(server.url, KEY_A) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert set(tools) == {"search", "ask", "list_documents", "get_passage", "ingest"}
            schema = tools["search"].inputSchema
            assert schema["required"] == ["query"]
            assert tools["search"].outputSchema is not None
            assert tools["search"].annotations.readOnlyHint is True
            assert tools["ingest"].annotations.readOnlyHint is False

    run(go)


def test_search_ask_and_get_passage_stay_inside_the_key_s_collections(secured):
    server, engine = secured
    private = next(d for d in engine.store.documents() if d.collection == "beta")
    private_chunk = engine.store.chunks_of(private.id)[0].id
    # unfiltered, the private note is the best match: the key's scope is what keeps it out
    assert engine.search(QUESTION).hits[0].document.id == private.id

    async def go():  # type: ignore[no-untyped-def]
        async with client(server.url, KEY_A) as s:
            err, found = await call(s, "search", query=QUESTION, top_k=10)
            assert not err
            paths = {p["path"] for p in found["passages"]}
            assert paths and all(p.startswith("alpha/") for p in paths)
            best = found["passages"][0]
            assert best["path"] == "alpha/warranty.md" and "24 months" in best["text"]
            assert best["section"] == ["Warranty"] and best["char_end"] > best["char_start"]
            assert best["location"].startswith("alpha/warranty.md")
            # asking for the other collection by name gives nothing, never its passages
            err, other = await call(s, "search", query=QUESTION,
                                    filters={"collections": ["beta"]})
            assert not err and other["passages"] == []
            err, passage = await call(s, "get_passage", chunk_id=private_chunk)
            assert err and "no passage" in passage and "SILVERFINCH" not in passage
            err, passage = await call(s, "get_passage", chunk_id=best["chunk_id"])
            assert not err and passage["path"] == "alpha/warranty.md"
            assert "24 months" in passage["source_text"] and passage["collection"] == "alpha"
            err, answer = await call(s, "ask", question=QUESTION, extractive=True)
            assert not err and answer["found"] and "24 months" in answer["answer"]
            assert "60 months" not in answer["answer"]
            assert {c["path"] for c in answer["citations"]} == {"alpha/warranty.md"}
            err, docs = await call(s, "list_documents")
            assert not err and {d["collection"] for d in docs["documents"]} == {"alpha"}
            assert docs["count"] == 2
        async with client(server.url, KEY_B) as s:
            err, found = await call(s, "search", query=QUESTION)
            assert {p["path"] for p in found["passages"]} == {"beta/staff_warranty.md"}
            err, docs = await call(s, "list_documents")
            assert docs["documents"][0]["metadata"] == {"author": "Legal team"}

    run(go)


def test_filters_narrow_a_search_and_bad_ones_are_named(secured):
    server, _ = secured

    async def go():  # type: ignore[no-untyped-def]
        async with client(server.url, ADMIN) as s:
            err, found = await call(s, "search", query="warranty months",
                                    filters={"where": {"author": "legal team"}})
            assert not err and {p["path"] for p in found["passages"]} == {
                "beta/staff_warranty.md"}
            err, found = await call(s, "search", query="paid salaries",
                                    filters={"paths": ["payroll.md"]})
            assert {p["path"] for p in found["passages"]} == {"alpha/payroll.md"}
            err, docs = await call(s, "list_documents", paths=["beta/"])
            assert [d["path"] for d in docs["documents"]] == ["beta/staff_warranty.md"]
            err, message = await call(s, "search", query="x", filters={"paths": "*.md"})
            assert err and "paths" in message
            err, message = await call(s, "search", query="x", filters={"colour": "red"})
            assert err and "colour" in message
            err, message = await call(s, "search", query="x", top_k=500)
            assert err and "top_k" in message
            err, message = await call(s, "search", query="   ")
            assert err and "the question is empty" in message

    run(go)


def test_no_key_or_a_wrong_key_reaches_no_tool(secured):
    server, _ = secured
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}
    headers = {"Accept": "application/json, text/event-stream"}
    for key in (None, "wrong-key-0123456789"):
        sent = {**headers, **({"Authorization": f"Bearer {key}"} if key else {})}
        response = httpx.post(f"{server.url}/mcp", json=initialize, headers=sent)
        assert response.status_code == 401, response.text
        assert "CITEWISE_API_KEYS" in response.json()["detail"]
    call_tool = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                 "params": {"name": "search", "arguments": {"query": QUESTION}}}
    response = httpx.post(f"{server.url}/mcp", json=call_tool, headers=headers)
    assert response.status_code == 401 and "SILVERFINCH" not in response.text
    # with a key, the same raw request is answered (JSON, stateless)
    response = httpx.post(f"{server.url}/mcp", json=initialize,
                          headers={**headers, "Authorization": f"Bearer {KEY_A}"})
    assert response.status_code == 200
    assert json.loads(response.text)["result"]["serverInfo"]["name"] == "citewise"
    # a page of another site cannot drive the tools from the user's browser, and a foreign
    # Host name (DNS rebinding onto the loopback server) is refused by the SDK's check
    keyed = {**headers, "Authorization": f"Bearer {KEY_A}"}
    response = httpx.post(f"{server.url}/mcp", json=initialize,
                          headers={**keyed, "Origin": "http://evil.example"})
    assert response.status_code == 403
    response = httpx.post(f"{server.url}/mcp", json=initialize,
                          headers={**keyed, "Host": "evil.example"})
    assert response.status_code in (400, 403, 421), response.status_code

    async def go():  # type: ignore[no-untyped-def]
        async with client(server.url, None) as s:
            await s.list_tools()

    with pytest.raises(BaseException):  # noqa: B017 - the SDK raises an exception group
        run(go)


def test_only_the_admin_key_may_ingest(secured, tmp_path):
    server, engine = secured
    new = tmp_path / "gamma"
    new.mkdir()
    (new / "holidays.md").write_text("# Holidays\n\nThe office closes on 24 December.\n",
                                     encoding="utf-8")

    async def go():  # type: ignore[no-untyped-def]
        async with client(server.url, KEY_A) as s:
            err, message = await call(s, "ingest", paths=[str(new)], collection="alpha")
            assert err and "admin key" in message
        assert not any(d.path.endswith("holidays.md") for d in engine.store.documents())
        async with client(server.url, ADMIN) as s:
            err, message = await call(s, "ingest", paths=[str(new / "missing.md")])
            assert err and "no such file" in message
            err, report = await call(s, "ingest", paths=[str(new)], collection="alpha")
            assert not err, report
            assert [(f["path"], f["status"]) for f in report["files"]] == [
                ("gamma/holidays.md", "added")]
            assert report["collection"] == "alpha"
        async with client(server.url, KEY_A) as s:
            err, found = await call(s, "search", query="When does the office close?")
            assert found["passages"][0]["path"] == "gamma/holidays.md"

    run(go)
    assert Path(new / "holidays.md").exists()
