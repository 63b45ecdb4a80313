"""Hostile input through the HTTP API (issue 10): a DOCX zip bomb at the default limits, HTML
nested past the parser's limit, NUL bytes and lone surrogates (C16), long queries (C25) and
FTS5 query syntax. Path traversal in upload names (C33) and the 413 upload limit are in
``test_cases_api.py``; prompt injection (C27) in ``tests/answer/test_llm.py``."""

from __future__ import annotations

import io
import json
import zipfile

from fastapi.testclient import TestClient

from citewise.ingest.parsers import docx, html
from tests.conftest import CASES

_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/'
    'package/2006/content-types"><Default Extension="rels" ContentType="application/'
    'vnd.openxmlformats-package.relationships+xml"/><Override PartName="/word/document.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.'
    'main+xml"/></Types>')
_RELS = (
    '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats'
    '.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.'
    'openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    'Target="word/document.xml"/></Relationships>')


def zip_bomb_docx(inflated: int) -> bytes:
    """A well-formed DOCX whose document.xml inflates to ``inflated`` bytes (one paragraph of
    spaces, which deflate compresses about 1000:1)."""
    head = ('<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.'
            'openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>')
    tail = "</w:t></w:r></w:p></w:body></w:document>"
    body = head.encode() + b" " * (inflated - len(head) - len(tail)) + tail.encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", _CONTENT_TYPES)
        archive.writestr("_rels/.rels", _RELS)
        archive.writestr("word/document.xml", body)
    return buffer.getvalue()


def _upload(c, name: str, data: bytes):  # type: ignore[no-untyped-def]
    r = c.post("/api/documents", files={"files": (name, data, "application/octet-stream")})
    assert r.status_code == 201, r.text
    return r.json()["files"][0]


def test_docx_zip_bomb_is_refused_by_name_before_inflating(make_app):
    app, engine = make_app()
    bomb = zip_bomb_docx(docx.MAX_UNCOMPRESSED // 8)  # 25 MiB inflated, ~25 kB on the wire
    assert len(bomb) < 100_000
    with TestClient(app, base_url="http://127.0.0.1") as c:
        result = _upload(c, "bomb.docx", bomb)
        listed = c.get("/api/documents").json()["data"]
    assert [(d["path"], d["status"], d["error_kind"]) for d in listed] == [
        ("bomb.docx", "failed", "corrupt")]
    assert result["path"] == "bomb.docx" and result["status"] == "failed"
    assert "zip bomb" in result["reason"] and "limit" in result["reason"]
    assert engine.store.info().chunks == 0
    doc = engine.store.documents()[0]
    assert doc.status == "failed" and "zip bomb" in doc.error


def test_html_nested_past_the_limit_is_refused_and_shallow_is_read(make_app):
    app, _ = make_app()
    deep = b"<html><body>" + b"<div>" * (html.MAX_DEPTH * 4) + b"too deep" + b"</div>" * 10
    shallow = b"<html><body>" + b"<div>" * 100 + b"<p>The vault opens at 07:45.</p>"
    with TestClient(app, base_url="http://127.0.0.1") as c:
        result = _upload(c, "deep.html", deep)
        assert result["status"] == "failed" and "nested" in result["reason"]
        assert _upload(c, "shallow.html", shallow)["status"] == "added"
        r = c.post("/api/chat", json={"query": "When does the vault open?", "extractive": True})
    assert r.status_code == 200 and "07:45" in r.json()["answer"]


def test_nul_bytes_and_lone_surrogates_in_files_and_queries(make_app):
    app, engine = make_app()
    text = b"Canteen\x00 rules\n\nThe canteen opens at 11:30.\x00 Lone \xed\xa0\x80 bytes here.\n"
    with TestClient(app, base_url="http://127.0.0.1") as c:
        assert _upload(c, "nul.txt", text)["status"] == "added"
        for chunk in engine.store.chunks_of(engine.store.documents()[0].id):
            assert "\x00" not in chunk.text and chunk.text.encode("utf-8")
        # JSON can carry U+0000 and lone surrogates as escapes; the raw body is sent as-is
        raw = '{"query": "When does the canteen open?\\u0000 \\ud800\\udfff\\udc80"}'
        for url in ("/api/chat", "/api/chat/stream"):
            r = c.post(url, content=raw.encode(), headers={"Content-Type": "application/json"})
            assert r.status_code == 200, r.text
            r.content.decode("utf-8")  # strict: the response is valid UTF-8
            assert "11:30" in r.text
        body = {"model": "citewise", "messages": [
            {"role": "user", "content": "When does the canteen open?\ud800"}]}
        r = c.post("/v1/chat/completions", content=json.dumps(body).encode(),
                   headers={"Content-Type": "application/json"})
        assert r.status_code == 200 and "11:30" in r.text
        r.content.decode("utf-8")


FTS_QUERIES = ['"', '""', "*", "warranty*", "NEAR(", "NEAR(laptop warranty, 2)", "AND OR",
               "laptop AND OR NOT warranty", "-", "-laptop warranty", ":", "col:warranty",
               "^laptop", "warranty)", "(((", "'; DROP TABLE chunks; --", "{laptop}", "+",
               "laptop\" OR \"1\"=\"1"]


def test_fts5_syntax_in_queries_is_searched_as_words(make_app, docs_dir):
    app, engine = make_app(ingest=[docs_dir])
    with TestClient(app, base_url="http://127.0.0.1") as c:
        for query in FTS_QUERIES:
            r = c.post("/api/chat", json={"query": query, "extractive": True})
            assert r.status_code == 200, (query, r.text)
            if any(w in query.lower() for w in ("laptop", "warranty")):
                assert r.json()["sources"], query
                assert r.json()["sources"][0]["path"] == "data/warranty.md", query
            else:
                assert r.json()["sources"] == [], query
    assert engine.store.check() == []


def test_long_and_hostile_query_mix_never_fails(make_app):
    app, _ = make_app(ingest=[CASES / "c21_delete"])
    pieces = ['NEAR(', '"', "\ud800", "\x00", "🙂", "* -:", "ï" * 3, "Marigold launch "]
    query = "".join(pieces[i % len(pieces)] for i in range(1_400))[:10_000]
    with TestClient(app, base_url="http://127.0.0.1") as c:
        r = c.post("/api/chat", content=json.dumps({"query": query}).encode(),
                   headers={"Content-Type": "application/json"})
        assert r.status_code == 200
        r.content.decode("utf-8")
        r = c.post("/api/chat", json={"query": "x" * 20_001})
        assert r.status_code == 413 and "20000" in r.json()["detail"]
