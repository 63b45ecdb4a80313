"""The Kazakh and Russian legal QA sets as retrieval tasks, on the real files."""

from __future__ import annotations

import json

import pytest

from citewise.errors import ConfigError
from citewise.eval.legal import load_kazakh_legal, load_ru_legal, split_articles
from tests.conftest import DATASETS


def test_kazakh_legal_questions_point_at_their_gold_documents():
    ds = load_kazakh_legal(DATASETS / "kazakh_legal_qa")
    assert len(ds.corpus) == 497
    assert len(ds.queries) == 55
    for qid, judged in ds.qrels.items():
        assert judged and all(doc in ds.corpus for doc in judged), qid
    doc = ds.corpus[next(iter(ds.qrels["q001"]))]
    assert doc.title.startswith("Медициналық оңалту") and not doc.title.endswith(".txt")
    short = load_kazakh_legal(DATASETS / "kazakh_legal_qa", max_chars=500)
    assert max(len(d.text) for d in short.corpus.values()) == 500
    assert short.name == "kazakh_legal_qa-first500"


def test_ru_legal_relevant_articles_hold_the_gold_snippet():
    ds = load_ru_legal(DATASETS / "ru_legal_qa")
    lines = (DATASETS / "ru_legal_qa" / "rag_data_located.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in lines.splitlines()]
    exact = [r for r in rows if r["match"] == "exact"]
    assert len(ds.queries) == sum(r["match"] in ("exact", "whitespace_normalized", "prefix_only")
                                  for r in rows)
    for row in exact:
        judged = ds.qrels[f"r{row['row']}"]
        texts = " ".join(ds.corpus[d].text for d in judged)
        assert row["snippet"] in texts, row["row"]
    assert any(d.title.startswith("Трудовой кодекс") and "Статья 1." in d.title
               for d in ds.corpus.values())


def test_split_articles_covers_the_text():
    text = "Preamble\nСтатья 1. Words\nbody\nСтатья 2. More\nbody two"
    parts = split_articles(text)
    assert [h for _, _, h in parts] == ["", "Статья 1. Words", "Статья 2. More"]
    assert "".join(text[s:e] for s, e, _ in parts) == text


def test_missing_files_are_named(tmp_path):
    with pytest.raises(ConfigError, match="corpus.jsonl"):
        load_kazakh_legal(tmp_path)
    with pytest.raises(ConfigError, match="corpus_files"):
        load_ru_legal(tmp_path)


@pytest.mark.parametrize(("line", "why"), [
    ("{not json", "Expecting property name"), ('{"doc_id": "a.txt"}', "missing text"),
    ('["a.txt", "text"]', "missing doc_id, text"),
])
def test_a_bad_corpus_line_is_named_with_its_line_number(tmp_path, line, why):
    (tmp_path / "corpus.jsonl").write_text('{"doc_id": "ok.txt", "text": "Мәтін."}\n' + line + "\n",
                                           encoding="utf-8")
    (tmp_path / "questions.dev.json").write_text('{"questions": []}', encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"corpus.jsonl:2: .*{why}"):
        load_kazakh_legal(tmp_path)
