"""Train the scan's clause finder: logistic regression per clause type over the clause units
of the CUAD ``train`` contracts, added to the prototype margins, thresholds recalibrated.

The prototypes (``build_scan_prototypes.py``) score a unit by how much closer it is to
annotated clauses of a type than to ordinary contract text. This script trains, for every
type with at least ``--min-units`` annotated units, a logistic regression on the unit's
embedding (the scanner's fp32 ``minilm`` vector):

1. training units, from the ``train`` contracts only: every clause unit of the contract
   (:func:`citewise.scan.classify.document_units`) that overlaps an annotated clause (labelled
   with every type it overlaps) and ``--negatives`` others (seeded sample), with balanced
   class weights and ``C = --c``;
2. a trained type's score becomes ``margin_scale * margin + logit`` (``--margin-scale``; the
   margin keeps the playbook's example clauses in play);
3. on the ``calibrate`` contracts, the F1 threshold, then the review and confident thresholds
   of the verdicts (``calibrate_scan_review.py``) are recomputed for the new scores.

The ``eval`` contracts are never read. It writes ``lr_weights`` (float16), ``lr_bias``,
``lr_trained``, ``margin_scale`` and the three thresholds into
``src/citewise/scan/data/cuad_<model>.npz``. Usage (scikit-learn, from the ``test`` extra)::

    CITEWISE_THREADS=1 python benchmarks/train_scan_classifier.py ../shared/datasets/cuad
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import numpy as np
from build_scan_prototypes import (
    OUT,
    Cache,
    best_f1_threshold,
    best_units,
    open_cache,
    scan_parser,
    units_of,
    verdict_thresholds,
)
from sklearn.linear_model import LogisticRegression

from citewise.eval.cuad import load_contracts, overlaps
from citewise.scan.classify import ClauseClassifier, Prototypes, load_prototypes


def training_units(cuad: Path, cache: Cache, negatives: int, seed: int = 11
                   ) -> tuple[np.ndarray, list[list[str]]]:
    """(vectors float32 (n, dim), the types each unit overlaps) of the train contracts."""
    rng = random.Random(seed)
    vectors, labels = [], []
    for contract in load_contracts(cuad, "train"):
        _, units = units_of(contract.path)
        types = [[t for t, g in contract.spans.items() if overlaps((u.start, u.end), g)]
                 for u in units]
        pos = [k for k, ts in enumerate(types) if ts]
        neg = [k for k, ts in enumerate(types) if not ts]
        keep = sorted(pos + rng.sample(neg, min(negatives, len(neg))))
        if keep:
            vectors.append(cache.embed([units[k].text for k in keep]))
            labels.extend(types[k] for k in keep)
    return np.concatenate(vectors).astype(np.float32), labels


def main() -> None:
    ap = scan_parser(__doc__)
    ap.add_argument("--negatives", type=int, default=40)
    ap.add_argument("--c", type=float, default=0.3)
    ap.add_argument("--margin-scale", type=float, default=20.0)
    ap.add_argument("--min-units", type=int, default=15)
    args = ap.parse_args()
    started = time.perf_counter()
    embedder, cache = open_cache(args, "fp32")
    base = load_prototypes(embedder)
    labels = base.labels
    x, y = training_units(args.cuad, cache, args.negatives)
    print(f"{len(x)} training units", flush=True)
    weights = np.zeros((len(labels), x.shape[1]), dtype=np.float32)
    bias = np.zeros(len(labels), dtype=np.float32)
    trained = np.zeros(len(labels), dtype=bool)
    for j, ctype in enumerate(labels):
        target = np.array([ctype in ts for ts in y])
        if target.sum() < args.min_units:
            continue
        fit = LogisticRegression(C=args.c, max_iter=500, class_weight="balanced").fit(x, target)
        weights[j], bias[j], trained[j] = fit.coef_[0], fit.intercept_[0], True
    weights = weights.astype(np.float16).astype(np.float32)  # as shipped
    print(f"trained {int(trained.sum())} of {len(labels)} types", flush=True)
    proto = Prototypes(base.model, labels, base.vectors, base.owner, {}, {}, {},
                       weights, bias, trained, args.margin_scale)
    classifier = ClauseClassifier(embedder, proto)
    best, positives = best_units(load_contracts(args.cuad, "calibrate"), classifier, cache)
    pooled, _ = best_f1_threshold([b for t in labels for b in best[t]], sum(positives.values()))
    f1 = {}
    for ctype in labels:
        thr, score = best_f1_threshold(best[ctype], positives[ctype])
        f1[ctype] = thr if positives[ctype] >= args.min_positives else pooled
        print(f"{ctype:<36} F1 threshold {f1[ctype]:+.3f} calibration F1 {score:.3f}")
    review, confident = verdict_thresholds(best, positives, f1, args.min_positives)
    path = OUT / f"cuad_{args.model}.npz"
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    names = [str(t) for t in arrays["labels"]]
    order = [labels.index(t) for t in names]
    typed = [str(t) for t in arrays["threshold_labels"]]
    arrays.update(
        lr_weights=weights[order].astype(np.float16), lr_bias=bias[order],
        lr_trained=trained[order], margin_scale=np.float32(args.margin_scale),
        thresholds=np.array([f1[t] for t in typed], dtype=np.float32),
        review_thresholds=np.array([review[t] for t in typed], dtype=np.float32),
        confident_thresholds=np.array([confident[t] for t in typed], dtype=np.float32))
    np.savez_compressed(path, **arrays)
    print(f"wrote {path} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
