"""Cross-language questions (issue 23, item 6): a question in one language over documents in
another, on XQuAD, through citewise's own index and retriever.

XQuAD is parallel: question ``i`` asked in ``xquad.ru`` has its answer paragraph at the same
position in ``xquad.en`` (paragraph ids ``p<n>`` in file order, the same in every language;
checked below). A pair ``Q->C`` indexes the 240 paragraphs of language ``C`` (``citewise
eval``'s ``build_index``, cached under ``$CITEWISE_HOME/eval``) and asks the questions of
language ``Q``, judged by ``C``'s paragraph. Per pair the first ``--queries`` question ids
sorted; even positions ``dev`` (the weight is chosen there), odd ``test`` (reported, never
tuned on), as in ``leg_weights.py``.

Runs per embedding model (``--models``, default ``minilm use e5``), shipped settings otherwise
(no reranker, 50 candidates a leg): BM25 alone, the dense leg alone, the pipeline as before
this change (the question's ``alpha_for`` weight: ru 0.6, others 0.4) and the pipeline with
``cross_language_alpha`` in 0.0, 0.2, ..., 1.0. The weight is chosen per model on the dev
halves: the best mean nDCG@10 over the pairs among the weights whose pipeline is below
neither leg alone on any pair's dev half (the issue's "never below its best leg"), then
reported on the test halves with a paired bootstrap interval of the difference to each leg.
Prints JSON lines and Markdown tables.

    CITEWISE_HOME=/tmp/xlang CITEWISE_THREADS=2 nice -n 15 python benchmarks/cross_language.py
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parent))

from leg_weights import paired, scores, split  # noqa: E402

from citewise.config import SearchMode, Settings  # noqa: E402
from citewise.eval.datasets import BeirDataset, load_squad_retrieval  # noqa: E402
from citewise.eval.run import _doc_ranking, build_index  # noqa: E402
from citewise.retrieve.retriever import Retriever  # noqa: E402
from citewise.text.language import detect_language  # noqa: E402

DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
GRID = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
PAIRS = [("ru", "en"), ("zh", "en"), ("en", "ru"), ("en", "zh")]


def xquad() -> dict[str, BeirDataset]:
    """XQuAD per language; raises AssertionError when the files are not parallel."""
    out = {
        lang: load_squad_retrieval(DATASETS / "xquad" / f"xquad.{lang}.json", name=f"xquad-{lang}")
        for lang in ("en", "ru", "zh")
    }
    for d in out.values():
        assert d.queries.keys() == out["en"].queries.keys()
        assert d.qrels == out["en"].qrels, "paragraph order differs between languages"
    return out


def pair(data: dict[str, BeirDataset], q_lang: str, c_lang: str, queries: int) -> BeirDataset:
    """Questions of ``q_lang`` over the paragraphs of ``c_lang``; the dataset keeps
    ``c_lang``'s name, so each corpus is indexed once per model."""
    c = data[c_lang]
    ids = sorted(c.queries)[: queries or None]
    return BeirDataset(
        c.name,
        c.corpus,
        {q: data[q_lang].queries[q] for q in ids},
        {q: c.qrels[q] for q in ids},
        c.split,
    )


def below_a_leg(per_pair: list[dict], a: float) -> list[str]:  # type: ignore[type-arg]
    """The pairs whose dev nDCG@10 at ``a`` is below that of a leg alone."""
    out = []
    for p in per_pair:
        at = scores(p["runs"][a], p["d"], p["parts"]["dev"])["nDCG@10"]
        legs = (
            scores(p["runs"][k], p["d"], p["parts"]["dev"])["nDCG@10"] for k in ("bm25", "dense")
        )
        if at < max(legs):
            out.append(p["pair"])
    return out


TRANSLATE = (
    "Translate the user's question into English. Reply with the English question "
    "only, nothing else."
)


def translated(base: Settings, data: dict[str, BeirDataset], n: int, model: str) -> None:
    """``--translate N``: the first ``n`` test questions of ru->en and zh->en translated into
    English by the configured LLM (the bundled model by default), then searched as English
    questions (BM25 alone and the pipeline); prints the seconds per translation and the
    nDCG@10 / recall@6 against the untranslated question on the same questions."""
    from citewise.answer.factory import open_provider

    provider = open_provider(base)
    assert provider is not None, "set an LLM provider (CITEWISE_LLM_PROVIDER)"
    list(provider.stream([{"role": "user", "content": "Hi"}], max_tokens=1, temperature=0.0))
    for q_lang in ("ru", "zh"):
        d = pair(data, q_lang, "en", 0)
        ids = split(d)["test"][:n]
        store, embedder = build_index(d, base, model, base.home / "eval")
        ret = Retriever(base, store, embedder)
        english: dict[str, str] = {}
        seconds = []
        for q in ids:
            t0 = time.perf_counter()
            english[q] = " ".join(
                "".join(
                    provider.stream(
                        [
                            {"role": "system", "content": TRANSLATE},
                            {"role": "user", "content": d.queries[q]},
                        ],
                        max_tokens=64,
                        temperature=0.0,
                    )
                ).split()
            )
            seconds.append(time.perf_counter() - t0)
        runs = {
            "BM25, question as asked": {
                q: _doc_ranking(ret.rank(d.queries[q], mode=SearchMode.SPARSE, rerank=False))
                for q in ids
            },
            "pipeline, question as asked": {
                q: _doc_ranking(ret.rank(d.queries[q], rerank=False)) for q in ids
            },
            "BM25, LLM translation": {
                q: _doc_ranking(ret.rank(english[q], mode=SearchMode.SPARSE, rerank=False))
                for q in ids
            },
            "pipeline, LLM translation": {
                q: _doc_ranking(ret.rank(english[q], rerank=False)) for q in ids
            },
        }
        print(
            json.dumps(
                {
                    "translate": f"{q_lang}->en",
                    "model": model,
                    "questions": len(ids),
                    "seconds_per_translation": round(mean(seconds), 2),
                    "max_seconds": round(max(seconds), 2),
                    "examples": [[d.queries[q], english[q]] for q in ids[:3]],
                    "test": {k: scores(v, d, ids) for k, v in runs.items()},
                },
                ensure_ascii=False,
            ),
            flush=True,
        )
        store.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=["minilm", "use", "e5"])
    ap.add_argument("--queries", type=int, default=240, help="questions per pair (0: all)")
    ap.add_argument(
        "--translate",
        type=int,
        default=0,
        metavar="N",
        help="only measure an LLM translation of N test questions (ru, zh -> en)",
    )
    ap.add_argument(
        "--pairs",
        nargs="+",
        default=[f"{q}-{c}" for q, c in PAIRS],
        help="question-corpus language pairs, such as ru-en",
    )
    ap.add_argument("--save", help="append each pair's top-10 rankings to this JSON-lines file")
    args = ap.parse_args()
    base = Settings(threads=int(os.environ.get("CITEWISE_THREADS", "1")))
    data = xquad()
    if args.translate:
        translated(base, data, args.translate, args.models[0])
        return
    rows = []
    for model in args.models:
        per_pair = []
        for q_lang, c_lang in (tuple(p.split("-")) for p in args.pairs):
            d = pair(data, q_lang, c_lang, args.queries)
            t0 = time.perf_counter()
            store, embedder = build_index(d, base, model, base.home / "eval")
            t_index = time.perf_counter() - t0
            ret = Retriever(base, store, embedder)
            parts = split(d)
            t0 = time.perf_counter()
            vecs = {q: ret.embed_query(d.queries[q]) for q in d.queries}
            ms_embed = (time.perf_counter() - t0) / len(vecs) * 1000
            runs: dict[str, dict[str, list[str]]] = {"bm25": {}, "dense": {}, "before": {}}
            before = Retriever(
                base.model_copy(update={"cross_language_alpha": base.alpha_for(q_lang)}),
                store,
                embedder,
            )
            for q, v in vecs.items():
                text = d.queries[q]
                runs["dense"][q] = _doc_ranking(
                    ret.rank(text, mode=SearchMode.DENSE, rerank=False, query_vec=v)
                )
                runs["bm25"][q] = _doc_ranking(ret.rank(text, mode=SearchMode.SPARSE, rerank=False))
                runs["before"][q] = _doc_ranking(before.rank(text, rerank=False, query_vec=v))
            for a in GRID:
                r = Retriever(base.model_copy(update={"cross_language_alpha": a}), store, embedder)
                runs[a] = {
                    q: _doc_ranking(r.rank(d.queries[q], rerank=False, query_vec=v))  # type: ignore[index]
                    for q, v in vecs.items()
                }
            cross = sum(ret.cross_language(detect_language(t)) for t in d.queries.values())
            per_pair.append(
                {
                    "pair": f"{q_lang}->{c_lang}",
                    "d": d,
                    "parts": parts,
                    "runs": runs,
                    "index_s": round(t_index),
                    "chunks": sum(store.languages().values()),
                    "embed_query_ms": round(ms_embed),
                    "cross": cross,
                }
            )
            store.close()
        dev = {
            a: mean(scores(p["runs"][a], p["d"], p["parts"]["dev"])["nDCG@10"] for p in per_pair)
            for a in GRID
        }
        best = max(GRID, key=lambda a: (dev[a], -a))

        # the best weight on dev that is below neither leg on any pair's dev half
        kept = [a for a in GRID if not below_a_leg(per_pair, a)]
        chosen = max(kept, key=lambda a: (dev[a], -a)) if kept else best
        print(
            json.dumps(
                {
                    "model": model,
                    "dev_mean_nDCG@10": dev,
                    "best_on_dev": best,
                    "best_below_a_leg_on": below_a_leg(per_pair, best),
                    "chosen": chosen,
                }
            ),
            flush=True,
        )
        for p in per_pair:
            d, parts, runs = p["d"], p["parts"], p["runs"]
            dev_rows = {
                name: scores(runs[key], d, parts["dev"])
                for name, key in (
                    ("bm25", "bm25"),
                    ("dense", "dense"),
                    ("before", "before"),
                    *((str(a), a) for a in GRID),
                )
            }
            test = {
                "BM25": scores(runs["bm25"], d, parts["test"]),
                f"dense `{model}`": scores(runs["dense"], d, parts["test"]),
                f"fused, alpha {base.alpha_for(p['pair'][:2])} (before)": scores(
                    runs["before"], d, parts["test"]
                ),
                f"fused, cross-language alpha {chosen} (chosen on dev)": scores(
                    runs[chosen], d, parts["test"]
                ),
            }
            out = {
                "model": model,
                "pair": p["pair"],
                "questions_cross_language": p["cross"],
                "chunks": p["chunks"],
                "index_s": p["index_s"],
                "embed_query_ms": p["embed_query_ms"],
                "dev": dev_rows,
                "test": test,
                "test_questions": len(parts["test"]),
                "test_chosen_minus_dense": paired(runs[chosen], runs["dense"], d, parts["test"]),
                "test_chosen_minus_bm25": paired(runs[chosen], runs["bm25"], d, parts["test"]),
                "test_best_minus_dense": paired(runs[best], runs["dense"], d, parts["test"]),
                "test_best": scores(runs[best], d, parts["test"]),
            }
            if args.save:
                with open(args.save, "a", encoding="utf-8") as f:
                    f.write(
                        json.dumps(
                            {
                                "model": model,
                                "pair": p["pair"],
                                "runs": {
                                    str(k): {q: r[:10] for q, r in v.items()}
                                    for k, v in runs.items()
                                },
                            }
                        )
                        + "\n"
                    )
            print(json.dumps(out), flush=True)
            rows.append(out)
    print("| pair (test questions) | model | run | nDCG@10 | recall@6 | recall@10 |")
    print("|---|---|---|---|---|---|")
    for out in rows:
        for name, s in out["test"].items():
            print(
                f"| {out['pair']} ({out['test_questions']}) | {out['model']} | {name} | "
                f"{s['nDCG@10']:.3f} | {s['recall@6']:.3f} | {s['recall@10']:.3f} |"
            )


if __name__ == "__main__":
    main()
