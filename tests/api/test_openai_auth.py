"""The OpenAI-compatible endpoint with the official client, and admin access."""

from __future__ import annotations

import openai
import pytest
from fastapi.testclient import TestClient

from tests.api.conftest import LiveServer


def test_openai_client_against_the_running_server(make_app, docs_dir):
    app, _ = make_app(ingest=[docs_dir])
    with LiveServer(app) as server, openai.OpenAI(
            base_url=f"{server.url}/v1", api_key="unused", max_retries=0) as client:
        assert [m.id for m in client.models.list()] == ["citewise"]
        q = [{"role": "user", "content": "When are salaries paid?"}]
        completion = client.chat.completions.create(model="citewise", messages=q)
        text = completion.choices[0].message.content
        assert "25th day of each month" in text and "[1]" in text
        # the citation is the cited sentence's own line (3), not the chunk's lines 1-3
        assert text.endswith("\n\nSources:\n[1] data/payroll.md, lines 3-3, Payroll calendar")
        assert completion.model_extra["sources"][0]["path"] == "data/payroll.md"

        chunks = list(client.chat.completions.create(model="citewise", messages=q, stream=True))
        streamed = "".join(c.choices[0].delta.content or "" for c in chunks)
        assert streamed == text
        assert chunks[-1].choices[0].finish_reason == "stop"
        assert chunks[-1].model_extra["sources"][0]["path"] == "data/payroll.md"

        follow = client.chat.completions.create(model="citewise", messages=[
            {"role": "user", "content": "How long does the laptop warranty last?"},
            {"role": "assistant", "content": "24 months [1]."},
            {"role": "user", "content": "and what about batteries?"}])
        assert follow.model_extra["sources"][0]["path"] == "data/warranty.md"
        with pytest.raises(openai.BadRequestError):  # 400: last message not the user's
            client.chat.completions.create(model="citewise", messages=[
                {"role": "assistant", "content": "hi"}])


def test_admin_endpoints_need_the_key(make_app, docs_dir):
    app, _ = make_app(api_key="s3cret")
    files = {"files": ("a.txt", b"Some text about apples.", "text/plain")}
    with TestClient(app, base_url="http://127.0.0.1") as c:
        r = c.post("/api/documents", files=files)
        assert r.status_code == 401
        assert r.headers["www-authenticate"] == "Bearer"
        assert c.post("/api/documents", files=files,
                      headers={"Authorization": "Bearer wrong"}).status_code == 401
        r = c.post("/api/documents", files=files, headers={"Authorization": "Bearer s3cret"})
        assert r.status_code == 201 and r.json()["files"][0]["status"] == "added"
        assert c.post("/api/reindex", headers={"X-API-Key": "s3cret"}).status_code == 200
        assert c.get("/api/documents").status_code == 200  # reading needs no key


def test_admin_refused_without_key_when_not_on_localhost(make_app):
    app, _ = make_app(host="0.0.0.0")
    with TestClient(app, base_url="http://127.0.0.1") as c:
        r = c.post("/api/reindex")
    assert r.status_code == 403
    assert "CITEWISE_API_KEY" in r.json()["detail"]


def test_cors_origins_from_settings(make_app):
    app, _ = make_app(cors_origins=["https://docs.example.org"])
    with TestClient(app, base_url="http://127.0.0.1") as c:
        ok = c.get("/api/health", headers={"Origin": "https://docs.example.org"})
        other = c.get("/api/health", headers={"Origin": "https://evil.example"})
    assert ok.headers["access-control-allow-origin"] == "https://docs.example.org"
    assert "access-control-allow-origin" not in other.headers


@pytest.mark.parametrize(("headers", "code"), [
    ({}, 200),
    ({"Origin": "http://127.0.0.1:8765"}, 200),  # the chat page served by citewise itself
    ({"Origin": "http://localhost:3000"}, 200),
    ({"Origin": "https://evil.example"}, 403),  # cross-site request forgery from a web page
    ({"Origin": "null"}, 403),  # a sandboxed page or a file:// page
    # DNS rebinding: the attacker's name resolving to 127.0.0.1 (refused for every route
    # before the admin check: issue 43, item 2)
    ({"Host": "evil.example"}, 421),
    ({"Host": "evil.example:8765", "Origin": "http://evil.example:8765"}, 421),
])
def test_keyless_admin_refuses_other_sites(make_app, headers, code):
    """Regression: with no CITEWISE_API_KEY a server on 127.0.0.1 accepted uploads and reindex
    requests sent by any web page (a foreign Origin, or a foreign Host after DNS rebinding)."""
    app, _ = make_app()
    files = {"files": ("planted.txt", b"The refund window is 999 days.", "text/plain")}
    with TestClient(app, base_url="http://127.0.0.1") as c:
        upload = c.post("/api/documents", files=files, headers=headers)
        reindex = c.post("/api/reindex", headers=headers)
        listed = [d["path"] for d in c.get("/api/documents").json()["data"]]
    assert upload.status_code == (201 if code == 200 else code)
    assert reindex.status_code == code
    if code != 200:
        setting = "CITEWISE_API_KEY" if code == 403 else "CITEWISE_ALLOWED_HOSTS"
        assert setting in upload.json()["detail"]
        assert not any(p.endswith("planted.txt") for p in listed)
