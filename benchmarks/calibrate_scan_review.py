"""Calibrate the scan's *review thresholds* and write them into the shipped prototypes.

Below its threshold (``thresholds`` in ``src/citewise/scan/data/cuad_<model>.npz``, tuned for
F1 by ``build_scan_prototypes.py``) a clause type keeps a lower *review threshold*: a passage
scoring between the two is a *possible* clause, cited with the verdict ``needs review`` (see
docs/scan.md). This script sets that lower threshold per type on the CUAD ``calibrate``
contracts only (the ``eval`` ones are never read), with the prototypes as shipped:

1. for each calibrate contract and clause type, the best-scoring clause unit, and whether it
   overlaps a clause of that type annotated in the contract (contracts without one count too:
   their best unit is a false alarm);
2. among the contracts whose best unit scores below the type's threshold, going down from the
   threshold, the review threshold is the lowest score at which at least
   :data:`REVIEW_PRECISION` of the contracts in the band ``[review, threshold)`` point at a real
   clause (the threshold itself when no band does: that type gets no needs-review citations);
3. types annotated in fewer than ``--min-positives`` calibrate contracts take the pooled
   margin (the same rule over every type's scores taken relative to its threshold).

Usage (about 15 minutes on one thread; unit embeddings are cached as in
``build_scan_prototypes.py``)::

    CITEWISE_THREADS=1 python benchmarks/calibrate_scan_review.py ../shared/datasets/cuad
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from build_scan_prototypes import OUT, Cache, units_of

from citewise.embed import load_embedder
from citewise.eval.cuad import load_contracts, overlaps
from citewise.scan.classify import ClauseClassifier, load_prototypes

#: The share of needs-review citations that should point at a real clause of the type.
REVIEW_PRECISION = 1 / 3


def review_threshold(best: list[tuple[float, bool]], threshold: float,
                     min_precision: float = REVIEW_PRECISION) -> float:
    """The lowest score ``lo`` <= ``threshold`` such that, of the (best score, is right)
    pairs scoring in ``[lo, threshold)``, at least ``min_precision`` are right; ``threshold``
    when no such band exists."""
    lo, right = threshold, 0
    for total, (score, ok) in enumerate(
            sorted((b for b in best if b[0] < threshold), reverse=True), 1):
        right += ok
        if right / total >= min_precision:
            lo = score
    return lo


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cuad", type=Path)
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--min-positives", type=int, default=5)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/citewise_scan_cache.npz"))
    ap.add_argument("--dry-run", action="store_true", help="print, do not write the npz")
    args = ap.parse_args()
    started = time.perf_counter()
    embedder = load_embedder(args.model, int(os.environ.get("CITEWISE_THREADS", "1")), 32,
                             "fp32")
    cache = Cache(args.cache, embedder)
    classifier = ClauseClassifier(embedder, load_prototypes(embedder))
    labels = classifier.prototypes.labels
    best: dict[str, list[tuple[float, bool]]] = {t: [] for t in labels}
    positives = dict.fromkeys(labels, 0)
    contracts = load_contracts(args.cuad, "calibrate")
    for i, contract in enumerate(contracts, 1):
        _, units = units_of(contract.path)
        if not units:
            continue
        scores = classifier.scores(cache.embed([u.text for u in units]))
        for j, ctype in enumerate(labels):
            k = int(np.argmax(scores[:, j]))
            gold = contract.spans.get(ctype, [])
            positives[ctype] += bool(gold)
            best[ctype].append((float(scores[k, j]),
                                overlaps((units[k].start, units[k].end), gold)))
        print(f"calibrate {i}/{len(contracts)}", flush=True)
    relative = [(s - classifier.threshold(t), ok) for t in labels for s, ok in best[t]]
    pooled = -review_threshold(relative, 0.0)
    print(f"pooled margin {pooled:.4f}")
    review = {}
    for ctype in labels:
        thr = classifier.threshold(ctype)
        lo = review_threshold(best[ctype], thr) if positives[ctype] >= args.min_positives \
            else thr - pooled
        band = [ok for s, ok in best[ctype] if lo <= s < thr]
        review[ctype] = lo
        print(f"{ctype:<36} threshold {thr:+.4f} review {lo:+.4f} band {sum(band)}/{len(band)} "
              f"right ({positives[ctype]} contracts with it)")
    if args.dry_run:
        return
    path = OUT / f"cuad_{args.model}.npz"
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    names = [str(t) for t in arrays["threshold_labels"]]
    arrays["review_thresholds"] = np.array([review[t] for t in names], dtype=np.float32)
    np.savez_compressed(path, **arrays)
    print(f"wrote review thresholds into {path} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
