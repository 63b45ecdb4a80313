"""Loading BEIR-format test collections, and cutting them down for fast tests.

A BEIR dataset is a folder (Thakur et al., "BEIR", NeurIPS 2021 Datasets and Benchmarks;
github.com/beir-cellar/beir, ``GenericDataLoader``)::

    <name>/
      corpus.jsonl        one {"_id", "title", "text", "metadata"} object per line
      queries.jsonl       one {"_id", "text", "metadata"} object per line
      qrels/<split>.tsv   header "query-id<TAB>corpus-id<TAB>score", then one judgement a line

:func:`load_beir` reads one split into a frozen :class:`BeirDataset` holding only the queries
judged in that split, as BEIR does. Every problem with the files (a missing file or split, a
malformed line, a duplicate document id, a judged query missing from ``queries.jsonl``) is a
:class:`~citewise.errors.ConfigError` naming the file, the line and what was expected.

:func:`subset` keeps a few queries, every document judged for them and a seeded sample of the
other documents as distractors: the same input always gives the same subset.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citewise.errors import ConfigError
from citewise.eval.jsonl import read_jsonl

__all__ = ["BeirDataset", "BeirDoc", "first_documents", "load_beir", "subset"]

_LAYOUT = "corpus.jsonl, queries.jsonl and qrels/<split>.tsv (the BEIR layout)"


@dataclass(frozen=True)
class BeirDoc:
    """One corpus document. ``title`` is ``""`` when the dataset has none."""

    id: str
    title: str
    text: str


@dataclass(frozen=True)
class BeirDataset:
    """One split of a BEIR collection.

    - ``corpus``: document id -> :class:`BeirDoc`, in file order.
    - ``queries``: query id -> query text, only the queries judged in this split.
    - ``qrels``: query id -> {document id -> integer grade}; a grade ``<= 0`` is judged
      non-relevant. A judged document may be missing from ``corpus`` (kept as in the file).
    - ``name``: the folder name (plus the subset parameters for a :func:`subset`).
    - ``split``: the qrels split read, such as ``"test"``.
    """

    name: str
    corpus: dict[str, BeirDoc]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    split: str = "test"


def _require_file(path: Path, what: str) -> Path:
    if not path.is_file():
        raise ConfigError(
            f"BEIR dataset file not found: {path} (expected {what}; a BEIR dataset folder "
            f"holds {_LAYOUT})"
        )
    return path


def _read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of a BEIR JSONL file; ConfigError naming the line for one
    that is not a JSON object with an ``_id``."""
    for line_no, record in read_jsonl(path, invalid=lambda e: f"not a JSON object ({e.msg})"):
        if not isinstance(record, dict) or "_id" not in record:
            raise ConfigError(f'{path}:{line_no}: expected a JSON object with an "_id" key')
        yield line_no, record


def _read_corpus(path: Path) -> dict[str, BeirDoc]:
    corpus: dict[str, BeirDoc] = {}
    for line_no, record in _read_jsonl(path):
        doc_id = str(record["_id"])
        if doc_id in corpus:
            raise ConfigError(f"{path}:{line_no}: duplicate document id {doc_id!r}")
        corpus[doc_id] = BeirDoc(
            id=doc_id, title=str(record.get("title") or ""), text=str(record.get("text") or "")
        )
    return corpus


def _read_queries(path: Path) -> dict[str, str]:
    queries: dict[str, str] = {}
    for line_no, record in _read_jsonl(path):
        query_id = str(record["_id"])
        if query_id in queries:
            raise ConfigError(f"{path}:{line_no}: duplicate query id {query_id!r}")
        queries[query_id] = str(record.get("text") or "")
    return queries


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as f:
        for line_no, line in enumerate(f, start=1):
            if not line.strip():
                continue
            fields = line.rstrip("\r\n").split("\t")
            if line_no == 1 and len(fields) == 3 and not fields[2].strip().lstrip("-").isdigit():
                continue  # the header line, "query-id corpus-id score"
            if len(fields) != 3:
                raise ConfigError(
                    f"{path}:{line_no}: expected 3 tab-separated fields "
                    f"(query-id, corpus-id, score), got {len(fields)}"
                )
            query_id, doc_id, score = fields
            try:
                grade = int(score)
            except ValueError:
                raise ConfigError(
                    f"{path}:{line_no}: score {score!r} is not an integer relevance grade"
                ) from None
            qrels.setdefault(query_id, {})[doc_id] = grade  # a repeated pair: the last wins
    return qrels


def load_beir(path: str | Path, split: str = "test") -> BeirDataset:
    """Read the BEIR dataset in folder ``path``, keeping the queries judged in ``split``.

    Reads ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/{split}.tsv`` (UTF-8; the header line
    ``query-id corpus-id score`` is skipped). ``name`` is the folder's name.

    Raises :class:`~citewise.errors.ConfigError` when the folder, a file or the split is
    missing (the message names the file and lists the splits present), when a line is
    malformed, when a document or query id is repeated, or when a judged query is not in
    ``queries.jsonl``.
    """
    root = Path(path).expanduser()
    if not root.is_dir():
        raise ConfigError(
            f"BEIR dataset folder not found: {root} (expected a folder holding {_LAYOUT})"
        )
    corpus_path = _require_file(root / "corpus.jsonl", "one JSON document per line")
    queries_path = _require_file(root / "queries.jsonl", "one JSON query per line")
    qrels_path = root / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        present = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
        available = ", ".join(present) if present else "none"
        raise ConfigError(
            f"BEIR qrels file not found: {qrels_path} (expected tab-separated "
            f"query-id, corpus-id, score lines for split {split!r}; splits present: {available})"
        )

    qrels = _read_qrels(qrels_path)
    all_queries = _read_queries(queries_path)
    missing = [q for q in qrels if q not in all_queries]
    if missing:
        shown = ", ".join(repr(q) for q in missing[:5])
        raise ConfigError(
            f"{qrels_path}: {len(missing)} judged quer{'y is' if len(missing) == 1 else 'ies are'} "
            f"not in {queries_path} (first: {shown})"
        )
    queries = {q: text for q, text in all_queries.items() if q in qrels}
    return BeirDataset(
        name=root.name, corpus=_read_corpus(corpus_path), queries=queries, qrels=qrels, split=split
    )


def subset(
    dataset: BeirDataset,
    n_queries: int,
    seed: int = 0,
    *,
    n_distractors: int = 1000,
    sample_queries: bool = False,
) -> BeirDataset:
    """A smaller copy of ``dataset`` for fast tests; the same arguments give the same subset.

    - queries: the first ``n_queries`` query ids in sorted (string) order, or, with
      ``sample_queries=True``, ``n_queries`` ids drawn at random with ``seed``; all of them
      when there are fewer.
    - corpus: every document judged for those queries (relevant or not) that the corpus
      holds, plus ``n_distractors`` other documents drawn at random with ``seed`` (all of
      them when there are fewer), in the corpus's original order.
    - qrels: the full judgements of the kept queries.

    The draws use :class:`random.Random` over sorted ids, so they do not depend on dict order
    or ``PYTHONHASHSEED``. Raises :class:`ValueError` if ``n_queries < 1`` or
    ``n_distractors < 0``.
    """
    if n_queries < 1:
        raise ValueError(f"n_queries must be >= 1, got {n_queries}")
    if n_distractors < 0:
        raise ValueError(f"n_distractors must be >= 0, got {n_distractors}")

    query_ids = sorted(dataset.queries)
    if sample_queries and n_queries < len(query_ids):
        kept_ids = sorted(random.Random(f"{seed}:queries").sample(query_ids, n_queries))
    else:
        kept_ids = query_ids[:n_queries]

    judged = {d for q in kept_ids for d in dataset.qrels.get(q, {}) if d in dataset.corpus}
    others = sorted(d for d in dataset.corpus if d not in judged)
    n_draw = min(n_distractors, len(others))
    distractors = set(random.Random(f"{seed}:distractors").sample(others, n_draw))
    keep = judged | distractors

    how = "sampled" if sample_queries else "first"
    return BeirDataset(
        name=f"{dataset.name}[{how} {len(kept_ids)} queries, {n_draw} distractors, seed {seed}]",
        corpus={d: doc for d, doc in dataset.corpus.items() if d in keep},
        queries={q: dataset.queries[q] for q in kept_ids},
        qrels={q: dict(dataset.qrels.get(q, {})) for q in kept_ids},
        split=dataset.split,
    )


def first_documents(dataset: BeirDataset, n: int) -> BeirDataset:
    """``dataset`` cut to the first ``n`` corpus documents in file order: judgements of other
    documents are dropped and only the queries left with a relevant document (grade > 0) are
    kept. The name stays the same, so :func:`citewise.eval.run.build_index` reuses an index
    whose build stopped after exactly these documents (it ingests in file order). Raises
    ValueError if ``n < 1``."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    corpus = dict(list(dataset.corpus.items())[:n])
    qrels = {q: {d: g for d, g in judged.items() if d in corpus}
             for q, judged in dataset.qrels.items() if q in dataset.queries}
    qrels = {q: judged for q, judged in qrels.items() if any(g > 0 for g in judged.values())}
    return BeirDataset(dataset.name, corpus, {q: dataset.queries[q] for q in qrels}, qrels,
                       dataset.split)


def load_squad_retrieval(path: str | Path, name: str | None = None) -> BeirDataset:
    """A SQuAD-format QA file (such as XQuAD) seen as a retrieval task, as MTEB's
    XQuADRetrieval does: corpus = the distinct paragraphs, queries = the questions, one
    relevant paragraph (grade 1) per question. Paragraph ids are ``p<n>`` in file order.

    Raises ConfigError when the file is missing or not SQuAD-shaped.
    """
    file = _require_file(Path(path), "a SQuAD-format .json file")
    try:
        articles = json.loads(file.read_text(encoding="utf-8"))["data"]
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise ConfigError(f"{file}: not a SQuAD-format file ({err}); expected {{'data': [...]}}") from err
    corpus: dict[str, BeirDoc] = {}
    by_text: dict[str, str] = {}
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for article in articles:
        for para in article["paragraphs"]:
            text = para["context"]
            pid = by_text.setdefault(text, f"p{len(by_text)}")
            corpus.setdefault(pid, BeirDoc(pid, article.get("title", ""), text))
            for qa in para["qas"]:
                queries[qa["id"]] = qa["question"]
                qrels[qa["id"]] = {pid: 1}
    return BeirDataset(name or file.stem, corpus, queries, qrels, split="validation")
