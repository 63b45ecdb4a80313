"""Rename, cut short and feedback on a chat over HTTP: only the chat's owner, only from the
server's own page, never from another site's (the widget needs none of them)."""

from __future__ import annotations

from fastapi.testclient import TestClient

SITE = "https://docs.example.org"
OWN = "https://citewise.example.org"


def test_only_the_owner_renames_cuts_short_and_rates_a_chat(make_app, docs_dir):
    app, _ = make_app(ingest=[docs_dir], host="0.0.0.0", cors_origins=[SITE],
                      allowed_hosts=["citewise.example.org"])
    v1, v2 = ({"X-Citewise-Visitor": t} for t in ("visitor-one-0123456789",
                                                    "visitor-two-0123456789"))
    with TestClient(app, base_url=OWN) as c:
        r = c.post("/api/chat", json={"query": "How long does the laptop warranty last?"},
                   headers=v1)
        chat = r.json()["conversation_id"]
        messages = c.get(f"/api/chats/{chat}", headers=v1).json()["messages"]
        question, answer = messages[0]["id"], messages[1]["id"]
        chunk = messages[1]["sources"][0]["chunk_id"]
        vote = {"rating": 1, "comment": "right", "sources": {chunk: 1}}
        fb = f"/api/chats/{chat}/messages/{answer}/feedback"

        # nobody else: 404, as for a chat that does not exist
        for who in ({}, v2):
            assert c.patch(f"/api/chats/{chat}", json={"title": "x"},
                           headers=who).status_code == 404
            assert c.put(fb, json=vote, headers=who).status_code == 404
            assert c.delete(f"/api/chats/{chat}/messages/{question}",
                            headers=who).status_code == 404
        # not from another site's page, even for the owner
        for method, url, body in (("PATCH", f"/api/chats/{chat}", {"title": "x"}),
                                  ("PUT", fb, vote),
                                  ("DELETE", f"/api/chats/{chat}/messages/{question}", None),
                                  ("GET", "/api/chats/feedback.jsonl", None)):
            r = c.request(method, url, json=body, headers={**v1, "Origin": SITE})
            assert r.status_code == 403, (method, url, r.text)
        assert c.get(f"/api/chats/{chat}", headers={**v1, "Origin": SITE}).status_code == 200

        # the owner, from the server's own page
        own = {**v1, "Origin": OWN}
        r = c.patch(f"/api/chats/{chat}", json={"title": "  Laptop   warranty "}, headers=own)
        assert r.status_code == 200 and r.json()["title"] == "Laptop warranty"
        assert c.patch(f"/api/chats/{chat}", json={"title": ""}, headers=own).status_code == 422
        assert c.put(fb, json=vote, headers=own).json() == vote
        assert c.put(fb, json={**vote, "rating": 2}, headers=own).status_code == 422
        assert c.put(f"/api/chats/{chat}/messages/{question}/feedback", json=vote,
                     headers=own).status_code == 404  # a question takes no feedback
        export = c.get("/api/chats/feedback.jsonl", headers=own)
        assert export.headers["content-type"].startswith("application/x-ndjson")
        assert export.text.count("\n") == 1 and chunk in export.text
        assert c.get("/api/chats/feedback.jsonl", headers=v2).text == ""  # v2 rated nothing
        assert c.get(f"/api/chats/{chat}", headers=own).json()["messages"][1]["feedback"] == {
            **vote}
        assert c.delete(f"/api/chats/{chat}/messages/{question}",
                        headers=own).status_code == 204
        assert c.get(f"/api/chats/{chat}", headers=own).json()["messages"] == []
        assert c.delete(f"/api/chats/{chat}/messages/{question}",
                        headers=own).status_code == 404  # nothing left to cut
        assert c.get("/api/chats/feedback.jsonl", headers=own).text == ""
