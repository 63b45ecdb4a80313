"""One confinement rule for every ingest from outside the user's shell (issue 43, item 3):
the MCP ``ingest`` tool (HTTP ``/mcp`` and stdio ``citewise mcp``) and a chat INGEST read only
the collection's folder and CITEWISE_INGEST_ROOTS, symlinks resolved, never /proc, /sys,
/dev, devices, sockets or pipes. MCP ``ingest ["/proc/self/environ"]`` then ``search``
returned the server's environment, keys included, to every reader."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest

from tests.api.conftest import LiveServer
from tests.api.test_mcp import call as mcp_call
from tests.api.test_mcp import client, run
from tests.api.test_mcp_stdio import server as stdio_server
from tests.api.test_mcp_stdio import session_calls

ADMIN = "admin-key-0123456789"
SECRET = "PLUMCRANE7731"  # in the server's environment and in a file outside the roots


@pytest.fixture
def layout(tmp_path, monkeypatch) -> dict[str, Path]:
    monkeypatch.setenv("CITEWISE_PROBE_SECRET", SECRET)
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Keys\n\nThe vault code is {SECRET}.\n",
                                       encoding="utf-8")
    (allowed / "holidays.md").write_text("# Holidays\n\nThe office closes on 24 December.\n",
                                         encoding="utf-8")
    (allowed / "link.md").symlink_to(outside / "secret.md")
    (allowed / "environ.md").symlink_to("/proc/self/environ")
    (allowed / "outside").symlink_to(outside, target_is_directory=True)
    os.mkfifo(allowed / "pipe.md")
    return {"allowed": allowed, "outside": outside}


def _refused_paths(layout: dict[str, Path]) -> list[str]:
    allowed, outside = layout["allowed"], layout["outside"]
    return ["/proc/self/environ", "/etc/hostname", str(outside / "secret.md"), str(outside),
            str(allowed / "link.md"), str(allowed / "environ.md"), str(allowed / "outside"),
            str(allowed / "outside" / "secret.md"), str(allowed / "pipe.md"),
            str(allowed / ".." / "outside" / "secret.md"), "../../outside/secret.md",
            "/dev/zero", "~/.bashrc"]


def test_mcp_ingest_reads_only_the_roots(make_app, layout) -> None:
    app, engine = make_app(api_key=ADMIN, ingest_roots=[layout["allowed"]])

    async def go():  # type: ignore[no-untyped-def]
        async with client(server.url, ADMIN) as s:
            for path in _refused_paths(layout):
                err, message = await mcp_call(s, "ingest", paths=[path])
                assert err, (path, message)
                assert SECRET not in message
            # the folder itself: its own file in, the links out of it reported, not read
            err, report = await mcp_call(s, "ingest", paths=[str(layout["allowed"])])
            assert not err, report
            status = {Path(f["path"]).name: (f["status"], f["reason"]) for f in report["files"]}
            assert status["holidays.md"][0] == "added"
            for name in ("link.md", "environ.md", "pipe.md"):
                assert status[name][0] == "failed", status
            err, found = await mcp_call(s, "search", query=f"vault code {SECRET}", top_k=10)
            assert SECRET not in json.dumps(found["passages"])

    with LiveServer(app) as server:
        run(go)
    paths = [d.source_path for d in engine.store.documents()]
    assert paths == [str(layout["allowed"] / "holidays.md")], paths
    assert not any(SECRET in c.text for d in engine.store.documents()
                   for c in engine.store.chunks_of(d.id))


def test_stdio_mcp_ingest_reads_only_the_roots(make_engine, layout) -> None:
    engine = make_engine()
    engine.store.close()
    home = engine.settings.home
    params = stdio_server(home, None, CITEWISE_INGEST_ROOTS=json.dumps([str(layout["allowed"])]))
    results = session_calls(params, [
        ("ingest", {"paths": ["/proc/self/environ"]}),
        ("ingest", {"paths": [str(layout["allowed"] / "link.md")]}),
        ("ingest", {"paths": [str(layout["allowed"] / "holidays.md")]}),
        ("search", {"query": f"vault code {SECRET}"}),
    ])
    (_, _), (err1, m1), (err2, m2), (err3, report), (_, found) = results
    assert err1 and err2 and not err3, results
    assert "CITEWISE_INGEST_ROOTS" in m1 and "CITEWISE_INGEST_ROOTS" in m2
    assert [f["status"] for f in report["files"]] == ["added"]
    assert SECRET not in json.dumps(found["passages"])


def test_chat_ingest_of_a_folder_does_not_follow_links_out_of_it(make_app, layout) -> None:
    """A chat INGEST checked only the named path: a folder under the roots holding a link
    to a file outside them was read whole."""
    app, engine = make_app(ingest_roots=[layout["allowed"]])
    with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=120) as c:
        r = c.post("/api/chat", json={"query": f"ingest {layout['allowed']}"})
        assert r.status_code == 200, r.text
        interrupt = r.json()["interrupt"]
        assert interrupt is not None, r.json()
        body = {"resume_token": interrupt["resume_token"], "approve": True}
        with c.stream("POST", f"/api/chats/{r.json()['conversation_id']}/resume",
                      json=body) as resumed:
            assert resumed.status_code == 200
            text = resumed.read().decode()
        assert SECRET not in text
        r = c.post("/api/chat", json={"query": "ingest /proc/self/environ"})
        assert r.json()["interrupt"] is None and SECRET not in r.text
    paths = [d.source_path for d in engine.store.documents()]
    assert paths == [str(layout["allowed"] / "holidays.md")], paths
