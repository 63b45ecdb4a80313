"""Training examples for the cross-encoder reranker: a question, the passages that answer it
and hard negatives.

A hard negative is a chunk that citewise's own hybrid retrieval ranks high for the question
but that is not relevant: exactly the mistakes a reranker is there to fix (the "hard negative
mining" of Karpukhin et al., "Dense Passage Retrieval", EMNLP 2020, and of most rerankers
since). Negatives are the top-ranked non-relevant chunks of :meth:`Retriever.rank` (hybrid,
no reranker), one per document, so that one long document cannot fill them.

Sources (only training splits; the evaluation splits stay unseen):

* :func:`scifact_examples`: BEIR SciFact ``qrels/train.tsv`` (never ``test.tsv``); the last
  ``dev_queries`` training queries by id can be kept out as a development set.
* :func:`xquad_examples`: XQuAD question/paragraph pairs of the training articles of
  :func:`xquad_split` (a fixed split by article; the held-out articles are for evaluation).
* :func:`read_jsonl` + :func:`resolve_examples`: the user's own JSONL, one
  ``{"query": str, "positive": [str, ...], "negative": [str, ...]}`` object a line; each
  string is a chunk id of the index or passage text. Missing negatives are mined from the
  index when it has chunks.

Every passage is formatted as the reranker will see it at query time
(:func:`citewise.retrieve.rerank.passage_text`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from citewise.config import SearchMode, Settings
from citewise.errors import ConfigError
from citewise.eval.datasets import BeirDataset, first_documents, load_beir, load_squad_retrieval
from citewise.eval.jsonl import read_jsonl as read_json_lines
from citewise.retrieve.rerank import passage_text
from citewise.retrieve.retriever import Retriever
from citewise.store.base import Store
from citewise.text.analysis import tokenize
from citewise.types import Hit

ProgressFn = Callable[[str, int, int], None]
MINING_DEPTH = 50
"""Candidates taken from each retrieval leg when mining negatives."""


@dataclass(frozen=True)
class Example:
    """One training question: ``positives`` should rank above every one of ``negatives``.
    Passages are reranker input text (title and section line, then the chunk text)."""

    query: str
    positives: tuple[str, ...]
    negatives: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class JsonlExample:
    """One line of a user JSONL file before chunk ids are resolved."""

    query: str
    positive: tuple[str, ...]
    negative: tuple[str, ...]
    line: int


def _hit_passage(hit: Hit) -> str:
    assert hit.chunk is not None and hit.document is not None
    return passage_text(hit.document.title, hit.chunk.section, hit.chunk.text)


def mine_negatives(retriever: Retriever, query: str, is_relevant: Callable[[Hit], bool],
                   n: int) -> tuple[list[Hit], list[Hit]]:
    """(relevant hits, up to ``n`` hard negatives) among the hybrid candidates of ``query``,
    best first; negatives are the best chunk of each non-relevant document."""
    hits = retriever.rank(query, mode=SearchMode.HYBRID, k=MINING_DEPTH, rerank=False)
    relevant: list[Hit] = []
    negatives: list[Hit] = []
    seen: set[str] = set()
    for h in hits:
        if h.chunk is None:
            continue
        if is_relevant(h):
            relevant.append(h)
        elif len(negatives) < n and h.chunk.document_id not in seen:
            seen.add(h.chunk.document_id)
            negatives.append(h)
    return relevant, negatives


def _first_chunk_passage(store: Store, document_id: str) -> str | None:
    features = store.chunk_features(document_id)
    if not features:
        return None
    loaded = store.get_chunks([features[0][0]])
    chunk, doc = loaded[features[0][0]]
    return passage_text(doc.title, chunk.section, chunk.text)


def dataset_examples(dataset: BeirDataset, retriever: Retriever, negatives: int, source: str,
                     progress: ProgressFn | None = None) -> list[Example]:
    """Examples for every query of an indexed BEIR-style dataset (documents indexed under
    their corpus ids, as :func:`citewise.eval.run.build_index` does). The positive of a
    relevant document is its best-ranked chunk, or its first chunk when retrieval missed it."""
    out = []
    for i, (qid, query) in enumerate(sorted(dataset.queries.items())):
        if progress:
            progress(f"mining negatives ({source})", i, len(dataset.queries))
        judged = dataset.qrels.get(qid, {})
        wanted = {d for d, g in judged.items() if g > 0}
        if not wanted:
            continue
        def is_judged(h: Hit, judged: dict[str, int] = judged) -> bool:
            return h.chunk is not None and h.chunk.document_id in judged

        relevant, negs = mine_negatives(retriever, query, is_judged, negatives)
        positives: dict[str, str] = {}
        for h in relevant:
            doc_id = h.chunk.document_id  # type: ignore[union-attr]
            if doc_id in wanted:
                positives.setdefault(doc_id, _hit_passage(h))
        for doc_id in sorted(wanted - positives.keys()):
            text = _first_chunk_passage(retriever.store, doc_id)
            if text is not None:
                positives[doc_id] = text
        if positives and negs:
            out.append(Example(query, tuple(positives.values()),
                               tuple(_hit_passage(h) for h in negs), source))
    return out


def scifact_examples(path: str | Path, settings: Settings, negatives: int = 3,
                     dev_queries: int = 0, max_queries: int = 0, corpus_docs: int = 0,
                     progress: ProgressFn | None = None) -> list[Example]:
    """Examples from SciFact's *train* qrels, negatives mined over the whole SciFact corpus
    (the index is built once and cached under ``$CITEWISE_HOME/eval/``, shared with
    ``citewise eval beir``). The last ``dev_queries`` query ids (sorted) are left out, and at
    most ``max_queries`` are used (0 = all). With ``corpus_docs``, only the first that many
    abstracts form the corpus (:func:`~citewise.eval.datasets.first_documents`), for machines
    where indexing all 5,183 takes too long. Raises ConfigError for a malformed dataset."""
    dataset = load_beir(path, split="train")
    if corpus_docs:
        dataset = first_documents(dataset, corpus_docs)
    dataset = training_split(dataset, dev_queries)
    if max_queries:
        keep = sorted(dataset.queries)[:max_queries]
        dataset = BeirDataset(dataset.name, dataset.corpus, {q: dataset.queries[q] for q in keep},
                              {q: dataset.qrels[q] for q in keep}, dataset.split)
    return _indexed_examples(dataset, settings, negatives, "scifact", progress)


def training_split(dataset: BeirDataset, dev_queries: int) -> BeirDataset:
    """``dataset`` without its last ``dev_queries`` query ids (sorted as strings)."""
    ids = sorted(dataset.queries)
    keep = ids[: len(ids) - dev_queries] if dev_queries else ids
    return BeirDataset(dataset.name, dataset.corpus, {q: dataset.queries[q] for q in keep},
                       {q: dataset.qrels[q] for q in keep}, dataset.split)


def dev_split(dataset: BeirDataset, dev_queries: int) -> BeirDataset:
    """The last ``dev_queries`` query ids of ``dataset``: what :func:`training_split` left out."""
    keep = sorted(dataset.queries)[len(dataset.queries) - dev_queries:] if dev_queries else []
    return BeirDataset(f"{dataset.name}-dev{dev_queries}", dataset.corpus,
                       {q: dataset.queries[q] for q in keep},
                       {q: dataset.qrels[q] for q in keep}, dataset.split)


XQUAD_HOLDOUT_EVERY = 4


def xquad_split(dataset: BeirDataset, held_out: bool) -> BeirDataset:
    """A fixed split of an XQuAD file by article (the same in every language, since the
    files are parallel): articles in file order, every ``XQUAD_HOLDOUT_EVERY``-th one (the
    4th, 8th, ...) held out for evaluation. ``held_out=False`` gives the training part
    (corpus = its paragraphs, queries = their questions), ``True`` the evaluation part."""
    titles = list(dict.fromkeys(d.title for d in dataset.corpus.values()))
    chosen = {t for i, t in enumerate(titles) if (i % XQUAD_HOLDOUT_EVERY == XQUAD_HOLDOUT_EVERY - 1)
              == held_out}
    corpus = {d: doc for d, doc in dataset.corpus.items() if doc.title in chosen}
    qrels = {q: r for q, r in dataset.qrels.items() if set(r) <= corpus.keys()}
    part = "test" if held_out else "train"
    return BeirDataset(f"{dataset.name}-{part}", corpus,
                       {q: dataset.queries[q] for q in qrels}, qrels, part)


def xquad_examples(path: str | Path, settings: Settings, negatives: int = 3,
                   max_queries: int = 0, progress: ProgressFn | None = None) -> list[Example]:
    """Examples from the training articles of one XQuAD file (:func:`xquad_split`), negatives
    mined over those articles' paragraphs only."""
    dataset = xquad_split(load_squad_retrieval(path), held_out=False)
    if max_queries:
        keep = sorted(dataset.queries)[:max_queries]
        dataset = BeirDataset(dataset.name, dataset.corpus, {q: dataset.queries[q] for q in keep},
                              {q: dataset.qrels[q] for q in keep}, dataset.split)
    return _indexed_examples(dataset, settings, negatives, dataset.name, progress)


def _indexed_examples(dataset: BeirDataset, settings: Settings, negatives: int, source: str,
                      progress: ProgressFn | None) -> list[Example]:
    from citewise.eval.run import build_index

    store, embedder = build_index(dataset, settings, settings.embedding_model,
                                  settings.home / "eval", progress)
    try:
        return dataset_examples(dataset, Retriever(settings, store, embedder), negatives,
                                source, progress)
    finally:
        store.close()


# --- the user's JSONL ---------------------------------------------------------------------
JSONL_SHAPE = '{"query": "...", "positive": ["chunk id or text", ...], "negative": [...]}'


def _strings(value: object, key: str, where: str, required: bool) -> tuple[str, ...]:
    if value is None and not required:
        return ()
    if isinstance(value, str):
        value = [value]
    if (not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value)
            or (required and not value)):
        raise ConfigError(f'{where}: "{key}" must be a {"non-empty " if required else ""}list '
                          f"of chunk ids or passage texts (non-empty strings); expected one "
                          f"object a line like {JSONL_SHAPE}")
    return tuple(value)


def read_jsonl(path: str | Path) -> list[JsonlExample]:
    """Parse a training JSONL file (UTF-8, one object a line, blank lines skipped).

    Raises ConfigError naming the file and line when the file is missing or empty, a line is
    not a JSON object, ``query`` is not a non-empty string, ``positive`` is not a non-empty
    list of strings, or ``negative`` (optional) is not a list of strings; a single string is
    accepted for ``positive``/``negative``. Unknown keys are refused (a typo would otherwise
    silently drop data).
    """
    file = Path(path).expanduser()
    if not file.is_file():
        raise ConfigError(f"{file}: training file not found (expected JSONL, {JSONL_SHAPE})")
    out = []
    lines = read_json_lines(file, invalid=lambda err: f"not valid JSON ({err.msg}); "
                                                      f"expected {JSONL_SHAPE}")
    for line_no, record in lines:
        where = f"{file}:{line_no}"
        if not isinstance(record, dict):
            raise ConfigError(f"{where}: expected a JSON object like {JSONL_SHAPE}")
        unknown = set(record) - {"query", "positive", "negative"}
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; the keys are "
                              '"query", "positive" and "negative"')
        query = record.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ConfigError(f'{where}: "query" must be a non-empty string')
        out.append(JsonlExample(query, _strings(record.get("positive"), "positive", where, True),
                                _strings(record.get("negative"), "negative", where, False),
                                line_no))
    if not out:
        raise ConfigError(f"{file}: no training examples (expected JSONL, {JSONL_SHAPE})")
    return out


SAME_PASSAGE_SHARE = 0.8
"""Share of a text positive's analysed terms a mined chunk must hold to count as that
positive (and so never as a negative)."""


def holds_passage(hit: Hit, terms: set[str]) -> bool:
    """Whether ``hit``'s chunk holds the passage whose analysed terms are ``terms``: at least
    :data:`SAME_PASSAGE_SHARE` of them occur in the chunk. A positive given as text rarely
    equals the chunk word for word (markup, a sentence of it, another title line), and an
    exact comparison mined the right answer as a negative."""
    assert hit.chunk is not None
    if not terms:
        return False
    found = terms & set(tokenize(hit.chunk.text))
    return len(found) >= SAME_PASSAGE_SHARE * len(terms)


def resolve_examples(examples: Iterable[JsonlExample], source: str,
                     retriever: Retriever | None, negatives: int = 3) -> list[Example]:
    """Turn JSONL examples into :class:`Example`: a string that is a chunk id of the
    retriever's index becomes that chunk's passage, any other string is passage text. An
    example without negatives gets up to ``negatives`` mined from the index (none without an
    index), never a chunk that is a positive or holds a text positive (:func:`holds_passage`);
    an example left with no negative is dropped."""
    examples = list(examples)
    store = retriever.store if retriever is not None else None
    ids = [s for e in examples for s in (*e.positive, *e.negative)]
    loaded = store.get_chunks(list(dict.fromkeys(ids))) if store is not None and ids else {}

    def text(s: str) -> str:
        if s in loaded:
            chunk, doc = loaded[s]
            return passage_text(doc.title, chunk.section, chunk.text)
        return s

    out = []
    for e in examples:
        positives = tuple(text(s) for s in e.positive)
        negs = tuple(text(s) for s in e.negative)
        if not negs and retriever is not None and store is not None and store.info().chunks:
            pos_ids = set(e.positive)
            pos_terms = [set(tokenize(p)) for s, p in zip(e.positive, positives, strict=True)
                         if s not in loaded]

            def is_positive(h: Hit, ids: set[str] = pos_ids,
                            terms: list[set[str]] = pos_terms) -> bool:
                return h.chunk_id in ids or any(holds_passage(h, t) for t in terms)

            _, mined = mine_negatives(retriever, e.query, is_positive, negatives)
            negs = tuple(_hit_passage(h) for h in mined)
        if negs:
            out.append(Example(e.query, positives, negs, source))
    return out


def write_jsonl(path: str | Path, examples: Iterable[Example]) -> Path:
    """Write ``examples`` as training JSONL (UTF-8, one ``{"query", "positive", "negative"}``
    object a line, passages as text), the format :func:`read_jsonl` reads."""
    file = Path(path).expanduser()
    file.parent.mkdir(parents=True, exist_ok=True)
    with file.open("w", encoding="utf-8") as f:
        for e in examples:
            f.write(json.dumps({"query": e.query, "positive": list(e.positives),
                                "negative": list(e.negatives)}, ensure_ascii=False) + "\n")
    return file


def pairs_of(examples: Sequence[Example]) -> list[tuple[str, str, float]]:
    """(query, passage, label) with label 1.0 for positives and 0.0 for negatives."""
    return [(e.query, p, y) for e in examples
            for ps, y in ((e.positives, 1.0), (e.negatives, 0.0)) for p in ps]
