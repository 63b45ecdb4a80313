"""Issue 18, "Done when": a seeded random probe of the API with two read keys on two
collections and the admin key. After every step no read key has seen another collection's
text, document ids or paths (answers, sources, document lists, chat lists, errors), and no
indexed document is gone except by the admin's delete."""

from __future__ import annotations

import json
import random

import pytest
from fastapi.testclient import TestClient

from tests.api.test_security import (  # noqa: F401 - two_collections is a fixture
    ADMIN,
    KEY_A,
    KEY_B,
    auth,
    two_collections,
)

STEPS = 40
READERS = {KEY_A: "alpha", KEY_B: "beta"}


@pytest.mark.parametrize("seed", [18])
def test_random_api_probe_never_leaks_across_collections(two_collections, seed):  # noqa: F811
    app, engine, _ = two_collections
    rng = random.Random(seed)
    words = {"alpha": "AMBERFOX", "beta": "SILVERFINCH"}  # one secret per collection
    expected = {d.id: d for d in engine.store.documents()}  # what must stay indexed
    n = reindexed = 0
    sent: dict[str, set[str]] = {KEY_A: set(), KEY_B: set(), ADMIN: set()}  # ids/paths asked
    with TestClient(app, base_url="http://127.0.0.1") as c:

        def secrets_of(other: str) -> set[str]:
            docs = [d for d in engine.store.documents() if d.collection == other]
            return ({words[other]} | {d.id for d in docs} | {d.path for d in docs}
                    | {d.path.rsplit("/", 1)[-1] for d in docs})

        for step in range(STEPS):
            action = rng.choice(["upload", "chat", "scan", "delete", "chats", "docs",
                                 "reindex"])
            key = rng.choice([KEY_A, KEY_B, ADMIN])
            collection = rng.choice(["alpha", "beta"])
            target = rng.choice(sorted(expected) or ["0" * 24])
            if key in READERS and rng.random() < 0.7:
                collection = READERS[key]  # readers mostly ask about their own words
            if action == "upload":
                n += 1
                body = f"# Memo {n}\n\nMemo {n} of {collection}: code {words[collection]}.\n"
                r = c.post("/api/documents", params={"collection": collection},
                           headers=auth(key), files=[("files", (f"{collection}-memo{n}.md",
                                                                body.encode(), "text/plain"))])
                assert r.status_code == (201 if key == ADMIN else 401), r.text
            elif action == "chat":
                q = rng.choice([f"What is the code of {words[READERS.get(key, collection)]}?",
                                f"scan {target}", "How long is the initial term?",
                                f"ingest {engine.store.document(target).source_path}"
                                if target in expected else "memo code?"])
                r = c.post("/api/chat", json={"query": q}, headers=auth(key))
            elif action == "scan":
                r = c.post("/api/chat", json={"query": "Check this", "attachment": target},
                           headers=auth(key))
            elif action == "delete":
                r = c.delete(f"/api/documents/{target}", headers=auth(key))
                if key == ADMIN and r.status_code == 200:
                    expected.pop(target, None)
                else:
                    assert r.status_code in (401, 404), r.text
            elif action == "chats":
                r = c.get("/api/chats", headers=auth(key))
                if r.status_code == 200:
                    for chat in r.json()["data"]:
                        got = c.get(f"/api/chats/{chat['id']}", headers=auth(key))
                        r = type(r)(200, content=r.content + got.content)
            elif action == "reindex":  # writes: the admin only, and nothing is lost or moved
                r = c.post("/api/reindex", headers=auth(key))
                assert r.status_code == (200 if key == ADMIN else 401), r.text
                reindexed += key == ADMIN
            else:
                r = c.get("/api/documents", headers=auth(key))
            if action in ("chat", "scan", "delete"):  # a key may be told back what it sent
                sent[key].add(target)
                if target in expected:
                    sent[key] |= {expected[target].source_path, expected[target].path}
            # --- invariants after each step -------------------------------------------------
            if action == "upload" and r.status_code == 201:
                for d in engine.store.documents():
                    expected.setdefault(d.id, d)
            seen = r.content.decode("utf-8", "replace")
            if key in READERS:
                other = "beta" if READERS[key] == "alpha" else "alpha"
                leaked = {s for s in secrets_of(other) if s and s in seen
                          and not any(s in x for x in sent[key])}
                assert not leaked, (step, action, key, leaked, seen[:500])
                if r.headers.get("content-type", "").startswith("application/json"):
                    for src in (json.loads(seen) if seen.startswith("{") else {}).get(
                            "sources", []):
                        assert src.get("collection", READERS[key]) == READERS[key], src
            present = {d.id: d for d in engine.store.documents()}
            lost = set(expected) - set(present)
            assert not lost, (step, action, key, lost)
            for doc_id, d in expected.items():  # never moved to another collection or path
                assert (present[doc_id].collection, present[doc_id].path) == (
                    d.collection, d.path), (step, action, key)
    assert n > 0 and reindexed > 0  # the sequence uploaded and the admin reindexed
