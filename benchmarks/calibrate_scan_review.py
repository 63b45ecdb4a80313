"""Calibrate the scan's *confident* and *review* thresholds into the shipped prototypes.

Each clause type has an F1-tuned threshold (``thresholds`` in
``src/citewise/scan/data/cuad_<model>.npz``, from ``build_scan_prototypes.py``). The scan's
verdicts use two more, set here per type on the CUAD ``calibrate`` contracts only (the
``eval`` ones are never read), with the prototypes as shipped:

* ``confident_thresholds`` (at least the F1 threshold): from here a passage is a clause *found
  with confidence*, which the scan may call compliant or deviating. It is the lowest score at
  which at least :data:`CONFIDENT_PRECISION` of the calibrate contracts whose best unit
  scores that much (at least 3) point at a real clause of the type (``NEVER_CONFIDENT`` when
  no score does: such a type is only ever cited for review); for the types of the lexical
  finder, :data:`LEXICAL_CONFIDENT_PRECISION` (0.8 as well; 0 would be the F1 threshold);
* ``review_thresholds`` (at most the F1 threshold): from here up to the confident threshold a
  passage is a *possible* clause, cited with the verdict ``needs review``. Going down from the
  F1 threshold, it is the lowest score at which at least :data:`REVIEW_PRECISION` of the
  contracts whose best unit scores between it and the F1 threshold point at a real clause.

Steps: for each calibrate contract and type, the best-scoring clause unit and whether it
overlaps a clause of that type annotated in the contract (contracts without one count too:
their best unit is a false alarm); then the two rules above per type. Types annotated in fewer
than ``--min-positives`` calibrate contracts take pooled margins (the same rules over every
type's scores taken relative to its F1 threshold).

Usage (about 15 minutes on one thread; unit embeddings are cached as in
``build_scan_prototypes.py``)::

    CITEWISE_THREADS=1 python benchmarks/calibrate_scan_review.py ../shared/datasets/cuad
"""

from __future__ import annotations

import time

import numpy as np
from build_scan_prototypes import (
    CONFIDENT_PRECISION,
    LEXICAL_CONFIDENT_PRECISION,
    OUT,
    REVIEW_PRECISION,
    best_units,
    open_cache,
    precision_groups,
    scan_parser,
    verdict_thresholds,
)

from citewise.eval.cuad import load_contracts
from citewise.scan.classify import ClauseClassifier, load_prototypes


def main() -> None:
    ap = scan_parser(__doc__)
    ap.add_argument("--dry-run", action="store_true", help="print, do not write the npz")
    args = ap.parse_args()
    started = time.perf_counter()
    embedder, cache = open_cache(args, "fp32")
    classifier = ClauseClassifier(embedder, load_prototypes(embedder))
    if not classifier.prototypes.thresholds:
        raise SystemExit(f"no shipped prototypes for {args.model}: run build_scan_prototypes.py")
    labels = classifier.prototypes.labels
    best, positives = best_units(load_contracts(args.cuad, "calibrate"), classifier, cache,
                                 progress=True)
    f1 = classifier.prototypes.thresholds
    lexical = list(classifier.prototypes.lexical.labels if classifier.prototypes.lexical else ())
    review, confident = {}, {}
    for group, precision in precision_groups(list(labels), lexical, LEXICAL_CONFIDENT_PRECISION):
        lo, hi = verdict_thresholds({t: best[t] for t in group}, positives, f1,
                                    args.min_positives, precision)
        review.update(lo)
        confident.update(hi)
    print(f"precision wanted: review band {REVIEW_PRECISION:.2f}, confident "
          f"{CONFIDENT_PRECISION:.2f} ({LEXICAL_CONFIDENT_PRECISION:.2f} for the lexical "
          "finder's types)")
    for ctype in labels:
        lo, thr, hi = review[ctype], f1[ctype], confident[ctype]
        found = [ok for s, ok in best[ctype] if s >= hi]
        band = [ok for s, ok in best[ctype] if lo <= s < hi]
        print(f"{ctype:<36} review {lo:+.4f} F1 {thr:+.4f} confident {hi:+.4f}: confident "
              f"{sum(found)}/{len(found)} right, review band {sum(band)}/{len(band)} "
              f"({positives[ctype]} contracts with it)")
    if args.dry_run:
        return
    path = OUT / f"cuad_{args.model}.npz"
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    names = [str(t) for t in arrays["threshold_labels"]]
    arrays["review_thresholds"] = np.array([review[t] for t in names], dtype=np.float32)
    arrays["confident_thresholds"] = np.array([confident[t] for t in names], dtype=np.float32)
    np.savez_compressed(path, **arrays)
    print(f"wrote review and confident thresholds into {path} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
