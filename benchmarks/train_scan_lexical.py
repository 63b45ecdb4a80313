"""Train the lexical part of the scan's clause finder (:mod:`citewise.scan.lexical`) on the
CUAD ``train`` contracts and recalibrate every threshold on the ``calibrate`` ones.

1. Units: every clause unit of every ``train`` contract
   (:func:`citewise.scan.classify.document_units`), labelled with the types of the annotated
   clauses it overlaps; each unit read in four views (its text, the bare heading before it,
   the units before and after it: :func:`citewise.scan.lexical.context_views`).
2. Features: one ``TfidfVectorizer(ngram_range=(1, 2), min_df=3, sublinear_tf=True,
   max_features=--max-features)`` fitted on the train units' texts, applied to each view; the
   views are weighted 1, 0.5, 0.3, 0.3 and side by side.
3. Per type (``--types``, default the types of the ``default`` playbook): a logistic
   regression (liblinear, ``C = --c``, balanced class weights) over all train units, so every
   unit not of the type is a negative, the hard ones included (other clauses, their headings
   and neighbours). Then *hard-negative mining* (:func:`hard_negative_weights`): the
   negatives that are not bare headings and that this first fit scores in the top ``1 - --hard-quantile`` of the type's
   negatives (the units most like the type that are not labelled with it: a termination for
   cause beside a termination for convenience, a cap beside an uncapped carve-out) get sample
   weight ``--hard-weight`` and the regression is fitted again (``--hard-weight 1``: one fit,
   as before issue 25's fifth round). Weights smaller than ``--prune`` in magnitude are
   dropped (stored as float16 sparse coordinates).
4. A lexical type's score becomes ``lexical logit + --embedding-scale * embedding score``
   (the embedding score of ``train_scan_classifier.py``, through which a playbook's example
   clauses count; the default 0 since the fifth round of issue 25, where the mined
   regression alone measured best on the calibrate split, see docs/benchmarks.md); on the
   ``calibrate`` contracts the F1, review and confident thresholds of every type are
   recomputed (``build_scan_prototypes.verdict_thresholds``), from the best unit of each
   contract that is not a bare heading, as the scanner cites it. A lexical type's confident
   threshold must show ``--confident-precision`` there (default 0.8, as the other types'; 0
   makes it the F1 threshold: measured in issue 25's sixth round and not shipped, since for
   five types a confident verdict was then right only about half the time).

The ``eval`` contracts are never read. Writes the ``lex_*`` arrays and the thresholds into
``src/citewise/scan/data/cuad_minilm.npz``. Usage (scikit-learn, from the ``test`` extra;
the calibrate units' embeddings come from the cache of ``build_scan_prototypes.py``)::

    CITEWISE_THREADS=1 python benchmarks/train_scan_lexical.py ../shared/datasets/cuad

With ``--embedding-scale 0`` the lexical types' scores need no unit embedding: ``--lexical-only``
calibrates only them, without the cache (the other types keep the thresholds in the npz), and
``--keep-model`` trains nothing and recalibrates the shipped lexical model (about 40 s)::

    CITEWISE_THREADS=1 python benchmarks/train_scan_lexical.py ../shared/datasets/cuad --keep-model --lexical-only
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from build_scan_prototypes import (
    LEXICAL_CONFIDENT_PRECISION,
    OUT,
    NoEmbeddings,
    best_f1_threshold,
    best_units,
    open_cache,
    precision_groups,
    scan_parser,
    units_of,
    verdict_thresholds,
)
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from citewise.embed import load_embedder
from citewise.eval.cuad import load_contracts, overlaps
from citewise.scan.classify import ClauseClassifier, is_bare_heading, load_prototypes
from citewise.scan.lexical import VIEWS, LexicalModel, context_views
from citewise.scan.playbook import load_playbook

#: Weight of each view's features (unit, heading, previous, next).
VIEW_WEIGHTS = (1.0, 0.5, 0.3, 0.3)


def train_views(cuad: Path) -> tuple[list[tuple[str, ...]], list[list[str]]]:
    """The views and the overlapped types of every unit of the train contracts."""
    views: list[tuple[str, ...]] = []
    labels: list[list[str]] = []
    for contract in load_contracts(cuad, "train"):
        _, units = units_of(contract.path)
        texts = [u.text for u in units]
        views.extend(context_views(texts, [is_bare_heading(t) for t in texts]))
        labels.extend([t for t, g in contract.spans.items() if overlaps((u.start, u.end), g)]
                      for u in units)
    return views, labels


def hard_negative_weights(scores: np.ndarray, target: np.ndarray, quantile: float,
                          weight: float, eligible: np.ndarray | None = None) -> np.ndarray:
    """Sample weights for the second fit: ``weight`` for each eligible negative (``target``
    False, ``eligible`` True; all units when ``eligible`` is None) whose first-fit score
    (``scores``, shape (n,), higher is more typical of the type) is at least the ``quantile``
    of the eligible negatives' scores, 1 for every other unit; float64, shape (n,). The
    scanner never cites a bare heading as a clause found, so headings are left out of the
    mining: pushing a section heading ("7. Covenant Not to Compete") down only hides the
    ``needs review`` flag it raises when the section has no text."""
    out = np.ones(len(target))
    negative = ~target if eligible is None else ~target & eligible
    if negative.any() and weight != 1.0:
        cut = np.quantile(scores[negative], quantile)
        out[negative & (scores >= cut)] = weight
    return out


def fit(views: list[tuple[str, ...]], labels: list[list[str]], types: list[str], c: float,
        max_features: int, prune: float, hard_quantile: float = 0.99,
        hard_weight: float = 1.0) -> LexicalModel:
    vec = TfidfVectorizer(ngram_range=(1, 2), min_df=3, sublinear_tf=True,
                          max_features=max_features, dtype=np.float32)
    vec.fit([v[0] for v in views])
    x = sp.hstack([w * vec.transform([v[i] for v in views])
                   for i, w in enumerate(VIEW_WEIGHTS)]).tocsr()
    size = len(vec.vocabulary_)
    clauses = np.array([not is_bare_heading(v[0]) for v in views])  # never mined: headings
    weights = np.zeros((len(VIEWS), size, len(types)), dtype=np.float32)
    bias = np.zeros(len(types), dtype=np.float32)
    for j, ctype in enumerate(types):
        target = np.array([ctype in ts for ts in labels])
        model = LogisticRegression(C=c, max_iter=1000, class_weight="balanced",
                                   solver="liblinear").fit(x, target)
        if hard_weight != 1.0:
            weight = hard_negative_weights(model.decision_function(x), target, hard_quantile,
                                           hard_weight, clauses)
            model = LogisticRegression(C=c, max_iter=1000, class_weight="balanced",
                                       solver="liblinear").fit(x, target, sample_weight=weight)
        coef = model.coef_[0].reshape(len(VIEWS), size) * np.array(VIEW_WEIGHTS)[:, None]
        weights[:, :, j], bias[j] = coef, model.intercept_[0]
        print(f"{ctype:<36} {int(target.sum()):>5} positive units", flush=True)
    weights[np.abs(weights) < prune] = 0.0
    weights = weights.astype(np.float16).astype(np.float32)  # as shipped
    vocabulary = {str(t): int(i) for t, i in vec.vocabulary_.items()}
    return LexicalModel(tuple(types), vocabulary, vec.idf_.astype(np.float32), weights, bias)


def calibrate(args: argparse.Namespace, lexical: LexicalModel | None
              ) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """(F1, review, confident) thresholds from the ``calibrate`` contracts with ``lexical``
    (None: the shipped lexical model and embedding scale). The lexical types' confident
    thresholds must show ``--confident-precision`` (0: the F1 threshold), every other type's
    :data:`~build_scan_prototypes.CONFIDENT_PRECISION`; with ``--lexical-only`` only the
    lexical types are calibrated, from their lexical logits alone (no unit embedding is
    computed, see :class:`~build_scan_prototypes.NoEmbeddings`)."""
    if args.lexical_only:
        embedder = load_embedder(args.model, int(os.environ.get("CITEWISE_THREADS", "1")), 32,
                                 "fp32")
    else:
        embedder, cache = open_cache(args, "fp32")
    base = load_prototypes(embedder)
    proto = base if lexical is None else dataclasses.replace(
        base, lexical=lexical, embedding_scale=args.embedding_scale)
    if proto.lexical is None:
        raise SystemExit("no lexical model in the shipped prototypes: train one first")
    lexical_types = list(proto.lexical.labels)
    if args.lexical_only:
        if proto.embedding_scale != 0:
            raise SystemExit("--lexical-only needs --embedding-scale 0: the lexical types' "
                             "scores would depend on the unit embeddings")
        cache = NoEmbeddings(proto.vectors.shape[1])
        names = lexical_types
    else:
        names = list(proto.labels)
    classifier = ClauseClassifier(embedder, proto)
    best, positives = best_units(load_contracts(args.cuad, "calibrate"), classifier, cache,
                                 types=names)
    pooled, _ = best_f1_threshold([b for t in names for b in best[t]], sum(positives.values()))
    f1 = {}
    for ctype in names:
        thr, score = best_f1_threshold(best[ctype], positives[ctype])
        f1[ctype] = thr if positives[ctype] >= args.min_positives else pooled
        print(f"{ctype:<36} F1 threshold {f1[ctype]:+.3f} calibration F1 {score:.3f}")
    review, confident = {}, {}
    for group, precision in precision_groups(names, lexical_types, args.confident_precision):
        lo, hi = verdict_thresholds({t: best[t] for t in group}, positives, f1,
                                    args.min_positives, precision)
        review.update(lo)
        confident.update(hi)
    for ctype in lexical_types:
        found = [ok for sc, ok in best[ctype] if sc >= confident[ctype]]
        print(f"{ctype:<36} review {review[ctype]:+.3f} confident {confident[ctype]:+.3f}: "
              f"{sum(found)}/{len(found)} best units reaching it right "
              f"({positives[ctype]} contracts with it)")
    return f1, review, confident


def main() -> None:
    ap = scan_parser(__doc__)
    ap.add_argument("--types", nargs="*", help="clause types (default: the default playbook's)")
    ap.add_argument("--c", type=float, default=4.0)
    ap.add_argument("--max-features", type=int, default=60000)
    ap.add_argument("--prune", type=float, default=0.01)
    ap.add_argument("--embedding-scale", type=float, default=0.0)
    ap.add_argument("--hard-quantile", type=float, default=0.99,
                    help="negatives scoring above this quantile of a type's negatives are hard")
    ap.add_argument("--hard-weight", type=float, default=20.0,
                    help="sample weight of the hard negatives in the second fit (1: no mining)")
    ap.add_argument("--confident-precision", type=float, default=LEXICAL_CONFIDENT_PRECISION,
                    help="precision the lexical types' confident thresholds must show on the "
                    "calibrate contracts (default 0.8; 0: the F1 threshold, issue 25's sixth round, "
                    "not shipped)")
    ap.add_argument("--keep-model", action="store_true",
                    help="train nothing: recalibrate the thresholds of the shipped lexical model")
    ap.add_argument("--lexical-only", action="store_true",
                    help="calibrate the lexical types only, without unit embeddings (needs "
                    "--embedding-scale 0); the other types keep their thresholds")
    args = ap.parse_args()
    started = time.perf_counter()
    lexical = None
    if not args.keep_model:
        types = args.types or list(dict.fromkeys(r.clause_type
                                                 for r in load_playbook("default").rules))
        views, labels = train_views(args.cuad)
        print(f"{len(views)} train units", flush=True)
        lexical = fit(views, labels, types, args.c, args.max_features, args.prune,
                      args.hard_quantile, args.hard_weight)
        kept = int(np.count_nonzero(lexical.weights))
        print(f"{kept} weights kept of {lexical.weights.size}", flush=True)
    f1, review, confident = calibrate(args, lexical)
    path = OUT / "cuad_minilm.npz"
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    typed = [str(t) for t in arrays["threshold_labels"]]
    if lexical is not None:
        index = np.flatnonzero(lexical.weights.ravel())
        terms = sorted(lexical.vocabulary, key=lexical.vocabulary.__getitem__)
        arrays.update(
            lex_labels=np.array(lexical.labels), lex_vocabulary=np.array(terms),
            lex_idf=lexical.idf, lex_bias=lexical.bias, lex_index=index.astype(np.int32),
            lex_values=lexical.weights.ravel()[index].astype(np.float16),
            lex_embedding_scale=np.float32(args.embedding_scale))
    for key, values in (("thresholds", f1), ("review_thresholds", review),
                        ("confident_thresholds", confident)):
        arrays[key] = np.array([values.get(t, old) for t, old in zip(typed, arrays[key],
                                                                      strict=True)],
                               dtype=np.float32)
    np.savez_compressed(path, **arrays)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB) in "
          f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
