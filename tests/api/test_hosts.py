"""DNS rebinding (issue 43, item 2): every route answers only the host names the server
answers to. A page on ``http://evil.test:PORT`` whose name rebinds to 127.0.0.1 read every
document of a keyless server (``/api/documents``, ``/v1/chat/completions``,
``/api/sources/{id}``); only ``/mcp`` and the admin routes refused it."""

from __future__ import annotations

import re

import httpx
import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from citewise.api.hosts import answered_names, host_allowed
from citewise.config import Settings
from tests.api.conftest import LiveServer

EVIL = "evil.test:8765"
REBOUND = {"Host": EVIL, "Origin": f"http://{EVIL}"}
QUESTION = "How long does the laptop warranty last?"


def _requests(app) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """(method, path) of every route in the app's OpenAPI schema, path parameters filled in
    (so a route added later is checked too), and the routes the schema leaves out."""
    out = [(method.upper(), re.sub(r"\{[^}]+\}", "x", path))
           for path, methods in app.openapi()["paths"].items() for method in methods]
    return [*out, ("POST", "/mcp"), ("GET", "/mcp"), ("GET", "/openapi.json"),
            ("GET", "/docs"), ("GET", "/static/app.js"), ("GET", "/"), ("GET", "/widget.js"),
            ("GET", "/no-such-route")]


def test_every_route_refuses_a_rebound_host_name(make_app, docs_dir) -> None:
    app, engine = make_app(ingest=[docs_dir])
    chunk = engine.store.chunks_of(engine.store.documents()[0].id)[0].id
    with TestClient(app, base_url="http://127.0.0.1:8765") as own, \
            TestClient(app, base_url=f"http://{EVIL}") as evil:
        # what the probe read under the rebound name: it works under the server's own name
        listed = own.get("/api/documents")
        assert listed.status_code == 200 and "warranty" in listed.text
        assert own.get(f"/api/sources/{chunk}").status_code == 200
        for method, path, body in (
                ("GET", "/api/documents", None),
                ("GET", f"/api/sources/{chunk}", None),
                ("POST", "/api/chat", {"query": QUESTION}),
                ("POST", "/v1/chat/completions",
                 {"model": "citewise", "messages": [{"role": "user", "content": QUESTION}]})):
            r = evil.request(method, path, json=body, headers={"Origin": f"http://{EVIL}"})
            assert r.status_code == 421, (method, path, r.status_code)
            assert "warranty" not in r.text.lower() and "24 months" not in r.text
            assert "CITEWISE_ALLOWED_HOSTS" in r.text
        assert evil.post("/v1/chat/completions", json={}).json()["error"]["code"] == \
            "misdirected_request"
        # every route, whatever its method, before keys, bodies or routing
        requests = _requests(app)
        assert ("GET", "/api/documents") in requests and ("POST", "/api/chat") in requests
        for method, path in requests:
            r = evil.request(method, path, headers={"Origin": f"http://{EVIL}"})
            assert r.status_code == 421, (method, path, r.status_code)
            assert path.startswith("/v1") or r.json()["code"] == "MisdirectedRequest"


@pytest.mark.parametrize("host", [
    "127.0.0.1:8765", "localhost:8765", "LOCALHOST", "localhost.", "[::1]:8765",
    "10.1.2.3:8765",  # an address: a page loaded from it, never a rebound name
])
def test_loopback_names_and_addresses_are_answered(make_app, host) -> None:
    app, _ = make_app()
    with TestClient(app, base_url="http://127.0.0.1") as c:
        assert c.get("/api/health", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize("host", [
    "evil.test", "localhost.evil.test:8765", "127.0.0.1.nip.io", "testserver", "a b",
    "user@127.0.0.1", "127.0.0.1:port", "",
])
def test_other_names_are_refused(make_app, host) -> None:
    app, _ = make_app()
    with TestClient(app, base_url="http://127.0.0.1") as c:
        assert c.get("/api/health", headers={"Host": host}).status_code == 421


def test_two_host_headers_are_refused(make_app) -> None:
    app, _ = make_app()
    with TestClient(app, base_url="http://127.0.0.1") as c:
        r = c.get("/api/health", headers=[("Host", "127.0.0.1"), ("Host", EVIL)])
    assert r.status_code == 421


def test_configured_and_bound_names_are_answered(make_app, monkeypatch) -> None:
    monkeypatch.setenv("CITEWISE_ALLOWED_HOSTS", "Docs.Example.org, citewise.lan")
    settings = Settings()
    assert settings.allowed_hosts == ["docs.example.org", "citewise.lan"]
    assert host_allowed("docs.example.org:443", answered_names(settings))
    assert not host_allowed(EVIL, answered_names(settings))
    monkeypatch.setenv("CITEWISE_ALLOWED_HOSTS", '["*"]')
    assert answered_names(Settings()) is None and host_allowed(EVIL, None)
    monkeypatch.setenv("CITEWISE_ALLOWED_HOSTS", "http://docs.example.org")
    with pytest.raises(ValidationError, match="not a host name"):
        Settings()
    monkeypatch.delenv("CITEWISE_ALLOWED_HOSTS")
    assert host_allowed("myhost.lan", answered_names(Settings(host="myhost.lan")))
    app, _ = make_app(host="0.0.0.0", allowed_hosts=["citewise.lan"])
    with TestClient(app, base_url="http://citewise.lan") as c:
        assert c.get("/api/health").status_code == 200
        assert c.get("/api/health", headers={"Host": EVIL}).status_code == 421
    app, _ = make_app(allowed_hosts=["*"])
    with TestClient(app, base_url=f"http://{EVIL}") as c:
        assert c.get("/api/health").status_code == 200


def test_a_real_server_refuses_a_rebound_name(make_app, docs_dir) -> None:
    app, _ = make_app(ingest=[docs_dir])
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "probe", "version": "0"}}}
    mcp = {"Accept": "application/json, text/event-stream"}
    with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=60) as c:
        assert c.get("/api/documents").status_code == 200
        assert c.post("/mcp", json=initialize, headers=mcp).status_code == 200
        r = c.get("/api/documents", headers=REBOUND)
        assert r.status_code == 421 and "warranty" not in r.text
        assert c.post("/mcp", json=initialize, headers={**mcp, **REBOUND}).status_code == 421
        assert c.get("/", headers=REBOUND).status_code == 421
