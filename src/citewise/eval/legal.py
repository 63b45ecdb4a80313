"""The Kazakh and Russian legal QA sets seen as retrieval tasks (:class:`BeirDataset`).

* :func:`load_kazakh_legal`: ``kazakh_legal_qa/`` (LawRagExperiments; Kalzhanov, Artykbay,
  Kalzhan, "Development of the Retrieval-Augmented Generation (RAG) System for the Kazakh
  Language Using Hybrid Information Methods"). Corpus = the documents of ``corpus.jsonl``
  (title = the file name without ``.txt``, as ``citewise ingest`` would title the file);
  queries = ``questions.dev.json``; a question's relevant documents are its gold passages'
  ``corpus_file`` (questions whose gold file is absent from the subset are left out). The paper
  scores recall@6; its gold unit is the document's first chunk, ours the document.
* :func:`load_ru_legal`: ``ru_legal_qa/`` (LegalBench-RU). The eight codes of
  ``corpus_files/`` are split into articles at their ``Статья N.`` headings (the text before
  the first one is a document too); a question's relevant documents are the articles its gold
  snippet overlaps, located by the ``start``/``end`` of ``rag_data_located.jsonl`` (rows
  matched ``exact`` or ``whitespace_normalized``; ``prefix_only`` rows use ``start`` plus the
  snippet's length; ``not_found`` and ``no_source_file`` rows are left out).

Both raise ConfigError naming the file when a file is missing or malformed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from citewise.errors import ConfigError
from citewise.eval.datasets import BeirDataset, BeirDoc
from citewise.eval.jsonl import read_jsonl

_ARTICLE = re.compile(r"(?m)^Статья \d+(?:\.\d+)*\.")
_LOCATED = ("exact", "whitespace_normalized", "prefix_only")


def _need(path: Path, what: str) -> Path:
    if not path.exists():
        raise ConfigError(f"{path} not found (expected {what})")
    return path


def _jsonl(path: Path, keys: tuple[str, ...], what: str) -> Iterator[dict[str, Any]]:
    """The JSON objects of ``path``, one a line, each holding ``keys``; raises ConfigError
    naming ``path:line`` and ``what`` was expected otherwise."""
    for line_no, record in read_jsonl(path, skip_blank=False,
                                      invalid=lambda err: f"expected {what} ({err})"):
        missing = [k for k in keys if k not in record] if isinstance(record, dict) else keys
        if missing:
            raise ConfigError(f"{path}:{line_no}: expected {what} (missing "
                              f"{', '.join(missing)})")
        yield record


def load_kazakh_legal(path: str | Path, max_chars: int = 0) -> BeirDataset:
    """``kazakh_legal_qa/`` as a retrieval task (see the module docstring).

    ``max_chars > 0`` keeps only the first ``max_chars`` characters of each document (every
    gold passage is a document's first chunk, so the task stays answerable while the corpus
    shrinks enough to embed with a slow model); the dataset's name then says so."""
    root = Path(path).expanduser()
    corpus_file = _need(root / "corpus.jsonl", "one {doc_id, is_gold, text} object per line")
    questions_file = _need(root / "questions.dev.json", '{"questions": [...]} with gold_passages')
    corpus: dict[str, BeirDoc] = {}
    for record in _jsonl(corpus_file, ("doc_id", "text"), "a JSON object with doc_id and text"):
        doc_id, text = record["doc_id"], record["text"]
        text = text[:max_chars] if max_chars > 0 else text
        corpus[doc_id] = BeirDoc(doc_id, doc_id.strip().removesuffix(".txt").strip(), text)
    try:
        questions = json.loads(questions_file.read_text(encoding="utf-8"))["questions"]
        pairs = [(q["id"], q["question"], [g["corpus_file"] for g in q["gold_passages"]])
                 for q in questions]
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise ConfigError(f"{questions_file}: expected questions with id, question and "
                          f"gold_passages[].corpus_file ({err})") from None
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for qid, text, gold in pairs:
        present = {g: 1 for g in gold if g in corpus}
        if present:
            queries[qid], qrels[qid] = text, present
    name = f"kazakh_legal_qa-first{max_chars}" if max_chars > 0 else "kazakh_legal_qa"
    return BeirDataset(name, corpus, queries, qrels, split="dev")


def split_articles(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, heading line)`` of each article of a code, in order, covering ``text``;
    the text before the first ``Статья N.`` heading (if any) comes first, heading ``""``."""
    starts = [m.start() for m in _ARTICLE.finditer(text)]
    if not starts or starts[0] > 0:
        starts.insert(0, 0)
    bounds = list(zip(starts, starts[1:] + [len(text)], strict=True))
    out = []
    for start, end in bounds:
        first = text[start:end].split("\n", 1)[0].strip()
        out.append((start, end, first if _ARTICLE.match(first) else ""))
    return out


def load_ru_legal(path: str | Path) -> BeirDataset:
    """``ru_legal_qa/`` as a retrieval task over articles (see the module docstring)."""
    root = Path(path).expanduser()
    folder = _need(root / "corpus_files", "the codes as .txt files")
    rows_file = _need(root / "rag_data_located.jsonl", "one located Q/A row per line")
    corpus: dict[str, BeirDoc] = {}
    articles: dict[str, list[tuple[int, int, str]]] = {}
    for file in sorted(folder.glob("*.txt")):
        text = file.read_text(encoding="utf-8")
        short = re.split(r" от | \(|\.txt", file.name)[0]
        articles[file.name] = []
        for n, (start, end, heading) in enumerate(split_articles(text)):
            doc_id = f"{file.stem[:40]}#{n}"
            articles[file.name].append((start, end, doc_id))
            corpus[doc_id] = BeirDoc(doc_id, f"{short}. {heading}".strip(". "), text[start:end])
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for row in _jsonl(rows_file, ("match", "source_file"), "a located row"):
        source = row["source_file"]
        if row["match"] not in _LOCATED or source not in articles:
            continue
        start = int(row["start"])
        end = int(row["end"]) if row.get("end") is not None else start + len(row["snippet"])
        relevant = {doc_id: 1 for a_start, a_end, doc_id in articles[source]
                    if a_start < max(end, start + 1) and a_end > start}
        qid = f"r{row['row']}"
        queries[qid], qrels[qid] = row["question"], relevant
    return BeirDataset("ru_legal_qa", corpus, queries, qrels, split="located")
