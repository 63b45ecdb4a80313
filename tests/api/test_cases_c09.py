"""Case C09 (../shared/cases/CASES.md) through the upload API: ``budget.md`` of two folders,
uploaded with their relative paths, in one request or in two, are two documents, each cited
by its path; deleting one removes its index entries and its stored file and leaves the other
(on a real app over a real SQLite index and the real embedding model)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.conftest import CASES

ADMIN = "admin-key-0123456789"
CASE = CASES / "c09_same_name"
QUESTION = "What is the travel budget for the South office?"


def _files(c: TestClient, *offices: str):
    return c.post("/api/documents", headers={"Authorization": f"Bearer {ADMIN}"}, files=[
        ("files", (f"{o}/budget.md", (CASE / o / "budget.md").read_bytes(), "text/markdown"))
        for o in offices])


def _stored(folder) -> set[str]:  # type: ignore[no-untyped-def]
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_c09_uploads_in_two_requests_keep_both_and_cite_the_path(make_app) -> None:
    app, engine = make_app(api_key=ADMIN)
    with TestClient(app, base_url="http://127.0.0.1") as c:
        for office in ("south_office", "north_office"):  # the second must not replace the first
            r = _files(c, office)
            assert r.status_code == 201 and r.json()["stored"] == [f"{office}/budget.md"]
        assert sorted(d.path for d in engine.store.documents()) == [
            "north_office/budget.md", "south_office/budget.md"]
        body = c.post("/api/chat", json={"query": QUESTION}).json()
        assert "42,500" in body["answer"] and "18,000" not in body["answer"], body["answer"]
        assert body["sources"][0]["path"] == "south_office/budget.md"


def test_c09_deleting_one_removes_its_file_and_leaves_the_other(make_app) -> None:
    app, engine = make_app(api_key=ADMIN)
    folder = engine.settings.collection_dir
    with TestClient(app, base_url="http://127.0.0.1") as c:
        assert _files(c, "north_office", "south_office").status_code == 201
        docs = {d.path: d.id for d in engine.store.documents()}
        r = c.delete(f"/api/documents/{docs['south_office/budget.md']}",
                     headers={"Authorization": f"Bearer {ADMIN}"})
        assert r.status_code == 200
        # the stored file goes too: a later ingest of the collection folder must not bring
        # the deleted document back (regression: only files at the folder's top were removed)
        assert r.json()["file_removed"] is True
        assert _stored(folder) == {"north_office/budget.md"}
        assert not (folder / "south_office").exists()  # its emptied folder with it
        assert (folder / "north_office" / "budget.md").read_bytes() == (
            CASE / "north_office" / "budget.md").read_bytes()
        engine.ingest([folder])
        assert [d.path for d in engine.store.documents()] == ["north_office/budget.md"]
        body = c.post("/api/chat", json={"query": "What is the travel budget for the North "
                                                  "office?"}).json()
        assert "18,000" in body["answer"], body["answer"]
