"""Scoping over the HTTP API (issue 23, item 5): ``filters.paths``, ``filters.where`` and
``filters.language`` of ``POST /api/chat`` on a real index, and bad filters refused with 422
naming the field."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

QUESTION = "How long does the warranty last?"


@pytest.fixture
def client(make_app, tmp_path):
    data = tmp_path / "data"
    (data / "laptops").mkdir(parents=True)
    (data / "phones").mkdir()
    (data / "laptops" / "warranty.md").write_text(
        "---\nauthor: Ana Diaz\nproduct: laptop\nyear: 2019\n---\n# Laptop warranty\n\nThe laptop "
        "warranty lasts 24 months from the date of purchase.\n", encoding="utf-8")
    (data / "phones" / "warranty.md").write_text(
        "---\nauthor: Ben Ode\nproduct: phone\nyear: 2025\n---\n# Phone warranty\n\nThe phone warranty "
        "lasts 12 months from the date of purchase.\n", encoding="utf-8")
    app, _ = make_app(ingest=[data])
    with TestClient(app, base_url="http://127.0.0.1") as c:
        yield c


def ask(client, **filters):  # type: ignore[no-untyped-def]
    response = client.post("/api/chat", json={"query": QUESTION, "extractive": True,
                                              "filters": filters})
    return response


def test_chat_filters_by_path_glob_and_metadata(client) -> None:
    both = ask(client).json()
    assert {s["path"] for s in both["sources"]} == {"data/laptops/warranty.md",
                                                    "data/phones/warranty.md"}
    phones = ask(client, paths=["phones/"]).json()
    assert {s["path"] for s in phones["sources"]} == {"data/phones/warranty.md"}
    assert "12 months" in phones["answer"] and "24 months" not in phones["answer"]
    laptops = ask(client, where={"product": "Laptop"}).json()
    assert {s["path"] for s in laptops["sources"]} == {"data/laptops/warranty.md"}
    assert "24 months" in laptops["answer"]
    nobody = ask(client, where={"author": ["Carl", "Dana"]}).json()
    assert nobody["found"] is False and nobody["sources"] == []
    after = ask(client, where={"year": {"gte": 2024}}).json()
    assert {s["path"] for s in after["sources"]} == {"data/phones/warranty.md"}
    english = ask(client, language="en", paths=["*.md"]).json()
    assert len(english["sources"]) == 2


@pytest.mark.parametrize(("filters", "field"), [
    ({"paths": "phones/"}, "paths"),
    ({"paths": [""]}, "paths"),
    ({"where": {"_root": "/tmp"}}, "where"),
    ({"where": {"author": {"x": 1}}}, "where"),
    ({"where": {"year": {"gte": [2024]}}}, "where"),
    ({"language": "English"}, "language"),
    ({"folder": "phones"}, "folder"),
])
def test_a_bad_filter_is_refused_naming_the_field(client, filters, field) -> None:
    response = ask(client, **filters)
    assert response.status_code == 422, response.text
    locations = [e["loc"] for e in response.json()["detail"]]
    assert any(field in loc for loc in locations), locations
