"""BM25 stemmer comparison on the Kazakh (or Russian) legal QA set: no stemming vs Snowball
Russian vs citewise's Kazakh suffix stemmer vs the shipped analysis (stemmer chosen by the
detected language).

The chunks are those of the eval index that ``citewise eval kazakh-legal`` (or ``ru-legal``)
built and cached under ``$CITEWISE_HOME/eval/`` for ``--model`` (run that first); each variant
re-analyses their text (title, section and chunk text, as ingest does) into its own BM25-only
SQLite index next to it, and queries are analysed the same way. Ranking is pure BM25
(:meth:`SQLiteStore.sparse_search`, Lucene BM25 k1=0.9 b=0.4, top 100 chunks), turned into a
document ranking by each document's best chunk, as ``citewise eval`` does.

    CITEWISE_HOME=/tmp/lang/home python benchmarks/languages.py \
        ../shared/datasets/kazakh_legal_qa --model use

Prints one JSON row per variant: recall@6, nDCG@10, MRR@10, recall@100 and the index's
distinct-term count (a smaller vocabulary means more inflections conflated).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from citewise.config import Settings
from citewise.eval.legal import load_kazakh_legal, load_ru_legal
from citewise.eval.metrics import evaluate
from citewise.ingest.chunking import embedding_text
from citewise.retrieve.analysis import tokenize
from citewise.store.sqlite import SQLiteStore

VARIANTS: dict[str, Callable[[str], list[str]]] = {
    "none": lambda text: tokenize(text, stem=False),
    "russian": lambda text: tokenize(text, "ru"),
    "kazakh": lambda text: tokenize(text, "kk"),
    "detected (shipped)": tokenize,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", type=Path, help="kazakh_legal_qa or ru_legal_qa folder")
    parser.add_argument("--model", default="use", help="whose cached eval index to reuse")
    args = parser.parse_args()
    settings = Settings()
    loader = load_ru_legal if "ru_legal" in args.dataset.name else load_kazakh_legal
    dataset = loader(args.dataset)
    folder = settings.home / "eval"
    safe = "".join(ch if ch.isalnum() else "_" for ch in args.model)[-40:]
    source_path = folder / (f"{dataset.name}-{safe}-{settings.chunk_tokens}-"
                            f"{settings.chunk_overlap}.sqlite3")
    if not source_path.exists():
        raise SystemExit(f"{source_path} not found: run `citewise eval` on {args.dataset} with "
                         f"--models {args.model} first")
    source = SQLiteStore(source_path)
    exported = [(doc, source.export(doc.id)[0]) for doc in source.documents()]
    for name, analyse in VARIANTS.items():
        slug = name.split()[0]
        path = folder / f"{dataset.name}-bm25-{slug}.sqlite3"
        path.unlink(missing_ok=True)
        store = SQLiteStore(path)
        for doc, chunks in exported:
            terms = [" ".join(analyse(embedding_text(doc.title, c))) for c in chunks]
            store.upsert_document(doc, chunks, np.zeros((len(chunks), 1), np.float32), terms)
        run = {}
        for qid, question in dataset.queries.items():
            hits = store.sparse_search(analyse(question), 100)
            ids = store.get_chunks([h.chunk_id for h in hits])
            run[qid] = list(dict.fromkeys(ids[h.chunk_id][0].document_id for h in hits))
        scores = evaluate(run, dataset.qrels, ks=(6, 10, 100))
        vocabulary = store.db.execute("SELECT count(*) FROM chunks_vocab").fetchone()[0]
        print(json.dumps({"variant": name, "queries": len(dataset.queries),
                          **{k: round(scores[k], 3) for k in
                             ("recall@6", "nDCG@10", "MRR@10", "recall@100")},
                          "distinct_terms": vocabulary}, ensure_ascii=False), flush=True)
        store.close()
        path.unlink()
    source.close()


if __name__ == "__main__":
    main()
