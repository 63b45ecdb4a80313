"""BEIR loader: the real SciFact collection, error messages, and deterministic subsets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from citewise.errors import ConfigError
from citewise.eval.datasets import BeirDataset, BeirDoc, load_beir, subset

SCIFACT = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "scifact"

needs_scifact = pytest.mark.skipif(
    not (SCIFACT / "corpus.jsonl").is_file(), reason=f"SciFact not found at {SCIFACT}"
)


@pytest.fixture(scope="module")
def scifact() -> BeirDataset:
    return load_beir(SCIFACT)


# --- SciFact --------------------------------------------------------------------------------


@needs_scifact
def test_scifact_test_split(scifact: BeirDataset) -> None:
    assert scifact.name == "scifact"
    assert scifact.split == "test"
    assert len(scifact.corpus) == 5183
    assert len(scifact.queries) == 300
    assert set(scifact.queries) == set(scifact.qrels)
    assert sum(len(judged) for judged in scifact.qrels.values()) == 339
    # Every SciFact test query has a relevant document, and every judged doc is in the corpus.
    assert all(any(g > 0 for g in judged.values()) for judged in scifact.qrels.values())
    assert all(d in scifact.corpus for judged in scifact.qrels.values() for d in judged)


@needs_scifact
def test_scifact_records(scifact: BeirDataset) -> None:
    first = next(iter(scifact.corpus.values()))  # file order is kept
    assert first.id == "4983"
    assert first.title.startswith("Microstructural development of human newborn")
    assert first.text.startswith("Alterations of the architecture of cerebral white matter")
    assert scifact.qrels["1"] == {"31715818": 1}
    assert scifact.queries["1"] == "0-dimensional biomaterials show inductive properties."
    assert "0" not in scifact.queries  # query "0" is not judged in the test split


@needs_scifact
def test_scifact_train_split() -> None:
    train = load_beir(SCIFACT, split="train")
    assert len(train.queries) == 809
    assert sum(len(judged) for judged in train.qrels.values()) == 919


@needs_scifact
def test_scifact_subset_is_deterministic_and_keeps_relevant_docs(scifact: BeirDataset) -> None:
    small = subset(scifact, 20, seed=7, n_distractors=200)
    again = subset(scifact, 20, seed=7, n_distractors=200)
    assert small == again
    assert list(small.corpus) == list(again.corpus)

    assert list(small.queries) == sorted(scifact.queries)[:20]
    judged = {d for q in small.queries for d in scifact.qrels[q]}
    assert judged <= set(small.corpus)
    assert len(small.corpus) == len(judged) + 200
    assert small.qrels == {q: scifact.qrels[q] for q in small.queries}
    # Kept documents appear in the corpus's original order.
    order = {d: i for i, d in enumerate(scifact.corpus)}
    assert [order[d] for d in small.corpus] == sorted(order[d] for d in small.corpus)

    other_seed = subset(scifact, 20, seed=8, n_distractors=200)
    assert other_seed.queries == small.queries
    assert set(other_seed.corpus) != set(small.corpus)


@needs_scifact
def test_scifact_sampled_queries(scifact: BeirDataset) -> None:
    a = subset(scifact, 15, seed=3, n_distractors=50, sample_queries=True)
    b = subset(scifact, 15, seed=3, n_distractors=50, sample_queries=True)
    assert a == b
    assert len(a.queries) == 15
    assert list(a.queries) != sorted(scifact.queries)[:15]
    assert all(d in a.corpus for q in a.queries for d in a.qrels[q])
    assert a.queries != subset(scifact, 15, seed=4, n_distractors=50, sample_queries=True).queries


# --- small hand-made collections ------------------------------------------------------------


def _write_beir(root: Path, qrels_text: str | None = None, split: str = "test") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    docs = [
        {"_id": "d1", "title": "One", "text": "first text", "metadata": {}},
        {"_id": "d2", "text": "no title here", "metadata": {}},
        {"_id": "d3", "title": "Three", "text": "third", "metadata": {}},
        {"_id": "d4", "title": "", "text": "fourth", "metadata": {}},
    ]
    queries = [
        {"_id": "q1", "text": "query one", "metadata": {}},
        {"_id": "q2", "text": "query two", "metadata": {}},
        {"_id": "q3", "text": "query three (unjudged)", "metadata": {}},
    ]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), "utf-8")
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), "utf-8")
    (root / "qrels").mkdir(exist_ok=True)
    if qrels_text is None:
        qrels_text = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td3\t0\nq2\td2\t2\n"
    (root / "qrels" / f"{split}.tsv").write_text(qrels_text, "utf-8")
    return root


def test_load_small_collection(tmp_path: Path) -> None:
    ds = load_beir(_write_beir(tmp_path / "tiny"))
    assert ds.name == "tiny"
    assert ds.corpus["d2"] == BeirDoc(id="d2", title="", text="no title here")
    assert ds.queries == {"q1": "query one", "q2": "query two"}
    assert ds.qrels == {"q1": {"d1": 1, "d3": 0}, "q2": {"d2": 2}}


def test_load_accepts_str_path_and_crlf(tmp_path: Path) -> None:
    root = _write_beir(tmp_path / "crlf", "query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\n")
    assert load_beir(str(root)).qrels == {"q1": {"d1": 1}}


def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"BEIR dataset folder not found: .*nowhere.*corpus\.jsonl"
    ):
        load_beir(tmp_path / "nowhere")


@pytest.mark.parametrize("name", ["corpus.jsonl", "queries.jsonl"])
def test_missing_file_names_it(tmp_path: Path, name: str) -> None:
    root = _write_beir(tmp_path / "ds")
    (root / name).unlink()
    with pytest.raises(ConfigError, match=rf"not found: .*{name}.*expected") as info:
        load_beir(root)
    assert str(root / name) in str(info.value)


def test_missing_split_lists_present_splits(tmp_path: Path) -> None:
    root = _write_beir(tmp_path / "ds", split="dev")
    with pytest.raises(ConfigError, match=r"qrels/test\.tsv.*splits present: dev"):
        load_beir(root)
    assert load_beir(root, split="dev").split == "dev"


def test_malformed_qrels_line(tmp_path: Path) -> None:
    root = _write_beir(tmp_path / "ds", "query-id\tcorpus-id\tscore\nq1 d1 1\n")
    with pytest.raises(ConfigError, match=r"test\.tsv:2: expected 3 tab-separated fields"):
        load_beir(root)
    root = _write_beir(tmp_path / "ds2", "query-id\tcorpus-id\tscore\nq1\td1\thigh\n")
    with pytest.raises(ConfigError, match=r"test\.tsv:2: score 'high' is not an integer"):
        load_beir(root)


def test_judged_query_missing_from_queries(tmp_path: Path) -> None:
    root = _write_beir(tmp_path / "ds", "query-id\tcorpus-id\tscore\nq9\td1\t1\n")
    with pytest.raises(ConfigError, match=r"1 judged query is not in .*queries\.jsonl.*'q9'"):
        load_beir(root)


def test_bad_jsonl_and_duplicate_ids(tmp_path: Path) -> None:
    root = _write_beir(tmp_path / "ds")
    with (root / "corpus.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"_id": "d1", "title": "again", "text": "dup"}\n')
    with pytest.raises(ConfigError, match=r"corpus\.jsonl:5: duplicate document id 'd1'"):
        load_beir(root)
    (root / "corpus.jsonl").write_text('{"_id": "d1", "text": \n', "utf-8")
    with pytest.raises(ConfigError, match=r"corpus\.jsonl:1: not a JSON object"):
        load_beir(root)


def test_subset_small(tmp_path: Path) -> None:
    ds = load_beir(_write_beir(tmp_path / "tiny"))
    one = subset(ds, 1, seed=0, n_distractors=1)
    assert list(one.queries) == ["q1"]
    assert {"d1", "d3"} <= set(one.corpus)  # judged docs, relevant or not
    assert len(one.corpus) == 3
    assert one.qrels == {"q1": {"d1": 1, "d3": 0}}
    everything = subset(ds, 10, n_distractors=100)  # more than there is: all of it
    assert everything.queries == ds.queries and everything.corpus == ds.corpus
    assert ds.queries == {"q1": "query one", "q2": "query two"}  # the input is untouched


def test_subset_errors(tmp_path: Path) -> None:
    ds = load_beir(_write_beir(tmp_path / "tiny"))
    with pytest.raises(ValueError, match="n_queries"):
        subset(ds, 0)
    with pytest.raises(ValueError, match="n_distractors"):
        subset(ds, 1, n_distractors=-1)


def test_first_documents_keeps_the_queries_answered_in_them(tmp_path: Path) -> None:
    from citewise.eval.datasets import first_documents

    ds = first_documents(load_beir(_write_beir(tmp_path / "tiny")), 1)
    assert list(ds.corpus) == ["d1"] and ds.name == "tiny"
    assert ds.queries == {"q1": "query one"} and ds.qrels == {"q1": {"d1": 1}}
    assert list(first_documents(ds, 9).corpus) == ["d1"]
    with pytest.raises(ValueError):
        first_documents(ds, 0)
