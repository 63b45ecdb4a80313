"""BM25 with each text analysis on the language datasets: no stemming, Snowball Russian for all
Cyrillic, citewise's Kazakh suffix stemmer for all Cyrillic, and the shipped analysis (the
stemmer chosen by each chunk's and each question's detected language).

Datasets (loaded as ``citewise eval`` loads them): ``kazakh_legal_qa`` and ``ru_legal_qa``
folders (:mod:`citewise.eval.legal`) or an XQuAD ``xquad.<lang>.json`` file. Documents are
chunked as ``citewise ingest`` chunks them, with the token counts of ``--tokenizer``'s
embedding model (``use`` by default: the multilingual model's chunk size), but nothing is
embedded: each variant writes the analysed chunks into its own BM25-only SQLite index and
ranks with :meth:`SQLiteStore.sparse_search` (Lucene BM25, k1=0.9, b=0.4, the top 100 chunks),
turned into a document ranking by each document's best chunk, as ``citewise eval`` does.

    CITEWISE_HOME=/tmp/lang/home python benchmarks/languages.py \
        ../shared/datasets/kazakh_legal_qa --variants none,russian,kazakh,detected

Prints one JSON row per variant: recall@6, nDCG@10, MRR@10, recall@100, the number of
queries, and the index's distinct-term count (fewer terms: more inflections conflated).

``--compare-chunking N`` only times chunking instead: the first N documents chunked with the
shipped packing of over-long sentences (guess + bisection, :func:`chunking._pack_words`) and,
in the same run, with the rule it replaced as the baseline (add one word at a time and count
the growing run each time); prints CPU seconds, the ratio, and how many characters the
tokenizer was given per corpus character, and checks that both give the same chunks.

    nice -n 19 python benchmarks/languages.py ../shared/datasets/kazakh_legal_qa \
        --compare-chunking 40
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from citewise.config import Settings
from citewise.embed import load_embedder
from citewise.eval.datasets import BeirDataset, load_squad_retrieval
from citewise.eval.legal import load_kazakh_legal, load_ru_legal
from citewise.eval.metrics import evaluate
from citewise.eval.run import _parsed
from citewise.ingest import chunking
from citewise.ingest.chunking import chunk_document, embedding_text
from citewise.ingest.pipeline import PREFIX_TOKENS
from citewise.store.sqlite import SQLiteStore
from citewise.text.analysis import tokenize
from citewise.text.language import detect_language
from citewise.types import Document

VARIANTS: dict[str, Callable[[str], list[str]]] = {
    "none": lambda text: tokenize(text, stem=False),
    "russian": lambda text: tokenize(text, "ru"),
    "kazakh": lambda text: tokenize(text, "kk"),
    "detected": tokenize,  # what citewise ships
}


def load(path: Path, max_chars: int = 0) -> BeirDataset:
    if path.suffix == ".json":
        return load_squad_retrieval(path)
    return load_ru_legal(path) if "ru_legal" in path.name else load_kazakh_legal(path, max_chars)


def _pieces_one_word_at_a_time(text: str, max_tokens: int,
                               count: chunking.TokenCounter) -> Iterator[tuple[str, int]]:
    """Baseline: ``chunking._pieces`` as it was before the bisection (commit 2f9b549)."""
    for sentence in chunking.sentences(text):
        n = count(sentence)
        if n <= max_tokens:
            yield sentence, n
            continue
        buf: list[str] = []
        for word in sentence.split(" "):
            if count(word) > max_tokens:
                if buf:
                    piece = " ".join(buf)
                    yield piece, count(piece)
                    buf = []
                for part in chunking._hard_split(word, max_tokens, count):
                    yield part, count(part)
                continue
            candidate = " ".join([*buf, word])
            if buf and count(candidate) > max_tokens:
                piece = " ".join(buf)
                yield piece, count(piece)
                buf = [word]
            else:
                buf.append(word)
        if buf:
            piece = " ".join(buf)
            yield piece, count(piece)


def compare_chunking(dataset: BeirDataset, n_docs: int, tokenizer: str,
                     settings: Settings) -> None:
    """Chunk the first ``n_docs`` documents with both rules; print one JSON row."""
    embedder = load_embedder(tokenizer, settings.threads)
    max_tokens = max(16, min(settings.chunk_tokens, embedder.max_tokens) - PREFIX_TOKENS)
    docs = [(d.id, _parsed(d.title, d.text)) for d in list(dataset.corpus.values())[:n_docs]]
    chars = sum(len(p.text) for _, p in docs)
    counted = [0]

    def count(text: str) -> int:
        counted[0] += len(text)
        return embedder.count_tokens(text)

    count("warm up")
    shipped = chunking._pieces
    row: dict[str, object] = {"dataset": dataset.name, "documents": len(docs),
                              "characters": chars, "tokenizer": tokenizer,
                              "chunk_tokens": max_tokens}
    results = {}
    for name, pieces in (("one_word_at_a_time", _pieces_one_word_at_a_time),
                         ("bisection", shipped)):
        chunking._pieces = pieces  # type: ignore[assignment]
        try:
            counted[0] = 0
            wall, cpu = time.perf_counter(), time.process_time()
            results[name] = [chunk_document(i, p, count, max_tokens, settings.chunk_overlap)
                             for i, p in docs]
            row[f"{name}_cpu_s"] = round(time.process_time() - cpu, 1)
            row[f"{name}_wall_s"] = round(time.perf_counter() - wall, 1)
            row[f"{name}_chars_tokenized_per_char"] = round(counted[0] / chars, 2)
        finally:
            chunking._pieces = shipped
    row["chunks"] = sum(len(c) for c in results["bisection"])
    row["same_chunks"] = results["bisection"] == results["one_word_at_a_time"]
    row["cpu_ratio"] = round(row["one_word_at_a_time_cpu_s"]  # type: ignore[operator]
                             / max(row["bisection_cpu_s"], 0.1), 2)  # type: ignore[call-overload]
    print(json.dumps(row), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", type=Path, help="kazakh_legal_qa or ru_legal_qa folder, or "
                                                   "an xquad.<lang>.json file")
    parser.add_argument("--tokenizer", default="use", help="model whose tokens size the chunks")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--queries", type=int, default=0, help="first N queries by id (0: all)")
    parser.add_argument("--max-chars", type=int, default=0,
                        help="kazakh_legal_qa: keep the first N characters of each document")
    parser.add_argument("--compare-chunking", type=int, default=0, metavar="N",
                        help="only time chunking of the first N documents, shipped rule "
                             "against the one-word-at-a-time baseline")
    args = parser.parse_args()
    settings = Settings()
    dataset = load(args.dataset, args.max_chars)
    if args.compare_chunking:
        compare_chunking(dataset, args.compare_chunking, args.tokenizer, settings)
        return
    queries = dict(sorted(dataset.queries.items())[: args.queries or None])
    qrels = {q: dataset.qrels[q] for q in queries}
    embedder = load_embedder(args.tokenizer, settings.threads)
    max_tokens = max(16, min(settings.chunk_tokens, embedder.max_tokens) - PREFIX_TOKENS)
    started = time.perf_counter()
    chunked = []
    for doc in dataset.corpus.values():
        parsed = _parsed(doc.title, doc.text)
        chunks = chunk_document(doc.id, parsed, embedder.count_tokens, max_tokens,
                                settings.chunk_overlap)
        document = Document(id=doc.id, path=doc.id, source_path=f"dataset:{doc.id}",
                            title=doc.title, format="beir", content_hash=doc.id,
                            chunk_count=len(chunks))
        chunked.append((document, chunks, [embedding_text(doc.title, c) for c in chunks]))
    n_chunks = sum(len(c) for _, c, _ in chunked)
    print(json.dumps({"dataset": dataset.name, "documents": len(chunked), "chunks": n_chunks,
                      "queries": len(queries), "chunk_tokens": max_tokens,
                      "chunking_s": round(time.perf_counter() - started, 1)}), flush=True)
    folder = settings.home / "eval"
    folder.mkdir(parents=True, exist_ok=True)
    for name in args.variants.split(","):
        analyse = VARIANTS[name]
        path = folder / f"{dataset.name}-bm25-{name}.sqlite3"
        for stale in folder.glob(f"{path.name}*"):
            stale.unlink()
        store = SQLiteStore(path)
        for document, chunks, texts in chunked:
            terms = [" ".join(analyse(t)) for t in texts]
            store.upsert_document(document, chunks, np.zeros((len(chunks), 1), np.float32), terms)
        run = {}
        for qid, question in queries.items():
            hits = store.sparse_search(analyse(question), 100)
            loaded = store.get_chunks([h.chunk_id for h in hits])
            run[qid] = list(dict.fromkeys(loaded[h.chunk_id][0].document_id for h in hits))
        scores = evaluate(run, qrels, ks=(6, 10, 100))
        vocabulary = store.db.execute("SELECT count(*) FROM chunks_vocab").fetchone()[0]
        languages: dict[str, int] = {}
        for question in queries.values():
            code = detect_language(question)
            languages[code] = languages.get(code, 0) + 1
        print(json.dumps({"variant": name, **{k: round(scores[k], 3) for k in
                                              ("recall@6", "nDCG@10", "MRR@10", "recall@100")},
                          "distinct_terms": vocabulary, "question_languages": languages},
                         ensure_ascii=False), flush=True)
        store.close()
        for stale in folder.glob(f"{path.name}*"):
            stale.unlink()


if __name__ == "__main__":
    main()
