"""A whole conversation over HTTP against a real uvicorn server (no LLM: extractive answers,
rule planner): greeting, question with sources, follow-up, an approved INGEST, a delete,
then a restart that keeps the chat."""

from __future__ import annotations

import httpx

from citewise.chat.intent import GREETING_REPLY
from tests.api.conftest import LiveServer, sse_events


def stream(client: httpx.Client, url: str, body: dict) -> list[tuple[str, dict]]:
    with client.stream("POST", url, json=body) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        return list(sse_events(r.iter_lines()))


def test_whole_conversation_survives_a_restart(make_app, docs_dir, tmp_path):
    extra = tmp_path / "inbox"
    extra.mkdir()
    (extra / "holidays.md").write_text(
        "# Holidays\n\nEvery employee gets 28 days of paid holiday per year.\n", encoding="utf-8")
    app, engine = make_app(ingest=[docs_dir], ingest_roots=[extra])
    with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=60) as c:
        events = stream(c, "/api/chat/stream", {"query": "Hello!"})
        assert [e for e, _ in events] == ["done"]
        chat_id = events[0][1]["conversation_id"]
        assert events[0][1]["answer"] == GREETING_REPLY
        assert events[0][1]["sources"] == []

        events = stream(c, "/api/chat/stream", {"query": "How long does the laptop warranty "
                                                "last?", "conversation_id": chat_id})
        kinds = [e for e, _ in events]
        assert kinds[:4] == ["thinking", "tool_call", "status", "tool_result"]
        assert kinds[-1] == "done" and "token" in kinds
        assert events[1][1] == {"tool": "search", "input": {
            "query": "How long does the laptop warranty last?", "top_k": 5, "mode": "hybrid"}}
        done = events[-1][1]
        assert done["conversation_id"] == chat_id
        assert "24 months" in done["answer"]
        assert done["sources"][0]["path"] == "data/warranty.md"
        tokens = "".join(d["content"] for e, d in events if e == "token")
        assert tokens == done["answer"]

        events = stream(c, "/api/chat/stream", {"query": "and what about batteries?",
                                                "conversation_id": chat_id})
        call = next(d for e, d in events if e == "tool_call")
        assert call["input"]["query"] == ("How long does the laptop warranty last? "
                                          "and what about batteries?")
        assert events[-1][1]["sources"][0]["path"] == "data/warranty.md"

        target = extra / "holidays.md"
        events = stream(c, "/api/chat/stream", {"query": f"ingest {target}",
                                                "conversation_id": chat_id})
        assert [e for e, _ in events] == ["thinking", "interrupt"]
        interrupt = events[-1][1]
        assert interrupt["action"] == "ingest"
        assert interrupt["input"] == {"path": str(target)}
        assert engine.store.info().documents == 2  # nothing ingested before approval

        events = stream(c, f"/api/chats/{chat_id}/resume",
                        {"resume_token": interrupt["resume_token"], "approve": True})
        assert [e for e, _ in events] == ["tool_call", "status", "tool_result", "done"]
        assert events[2][1]["result"]["added"] == 1
        assert events[-1][1]["answer"].startswith("Ingested holidays.md: 1 added")
        again = c.post(f"/api/chats/{chat_id}/resume",
                       json={"resume_token": interrupt["resume_token"], "approve": True})
        assert again.status_code == 404

        docs = c.get("/api/documents").json()
        assert sorted(d["path"] for d in docs["data"]) == [
            "data/payroll.md", "data/warranty.md", "holidays.md"]
        holiday_id = next(d["id"] for d in docs["data"] if d["path"] == "holidays.md")
        answer = c.post("/api/chat", json={"query": "How many days of paid holiday?",
                                           "conversation_id": chat_id}).json()
        assert "28 days" in answer["answer"]
        source = c.get(f"/api/sources/{answer['sources'][0]['chunk_id']}").json()
        assert source["path"] == "holidays.md"
        assert "28 days of paid holiday" in source["source_text"]

        deleted = c.delete(f"/api/documents/{holiday_id}")
        assert deleted.json() == {"deleted": holiday_id, "file_removed": False}
        assert target.exists()  # outside the collection folder: never removed
        assert c.get("/api/documents").json()["count"] == 2

        listed = c.get("/api/chats").json()
        assert listed["count"] == 1
        assert listed["data"][0]["id"] == chat_id
        assert listed["data"][0]["title"] == "Hello!"
        assert listed["data"][0]["message_count"] == 11
        before = c.get(f"/api/chats/{chat_id}").json()

    app2, _ = make_app()  # a new process would see the same files
    with LiveServer(app2) as server, httpx.Client(base_url=server.url, timeout=60) as c:
        after = c.get(f"/api/chats/{chat_id}").json()
        assert after == before
        assert [m["role"] for m in after["messages"]][:4] == [
            "user", "assistant", "user", "assistant"]
        assert after["messages"][4]["search_query"] == (
            "How long does the laptop warranty last? and what about batteries?")
        assert c.delete(f"/api/chats/{chat_id}").status_code == 204
        assert c.get(f"/api/chats/{chat_id}").status_code == 404
        assert c.get("/api/chats").json()["count"] == 0
