"""Build ``src/citewise/scan/data/cuad_<model>.npz``: clause-type prototypes and thresholds.

Prototypes come only from the CUAD ``train`` contracts and thresholds only from the
``calibrate`` contracts (see :mod:`citewise.eval.cuad`); the ``eval`` contracts that
``benchmarks/scan_cuad.py`` measures on are never read here.

1. Example units: every annotated clause of a train contract, cut into clause units
   (:func:`citewise.scan.classify.split_units`); at most ``--per-type`` per type (seeded sample).
2. Background units: up to 20 units per train contract that overlap no annotation at all.
3. Each group is embedded and reduced to at most ``--centroids`` (types) or
   ``--background`` (background) spherical k-means centroids, stored as float16.
4. Thresholds: for each calibrate contract and type, the best-scoring unit; the threshold that
   maximises F1 of "the best unit overlaps an annotated clause" is kept per type, and the
   verdicts' review and confident thresholds around it (``calibrate_scan_review.py``, which
   recomputes only those two for the shipped prototypes).

It writes the npz anew, without the trained part: run ``train_scan_classifier.py`` after it
(which recalibrates every threshold for the trained scores).

Usage::

    CITEWISE_THREADS=1 python benchmarks/build_scan_prototypes.py ../shared/datasets/cuad
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import time
from pathlib import Path

import numpy as np

from citewise.embed import Embedder, load_embedder
from citewise.eval.cuad import Contract, load_contracts, overlaps
from citewise.ingest.parsers.base import parser_for
from citewise.scan.classify import (
    DEFAULT_THRESHOLD,
    NEVER_CONFIDENT,
    ClauseClassifier,
    Prototypes,
    document_units,
    is_bare_heading,
    split_units,
)
from citewise.scan.clause_types import CLAUSE_TYPES

OUT = Path(__file__).resolve().parents[1] / "src" / "citewise" / "scan" / "data"


def kmeans(x: np.ndarray, k: int, seed: int = 0, iters: int = 20) -> np.ndarray:
    """Spherical k-means: at most ``k`` L2-normalised centroids of the rows of ``x``."""
    if len(x) <= k:
        return x
    rng = np.random.default_rng(seed)
    c = x[rng.choice(len(x), k, replace=False)]
    for _ in range(iters):
        assign = np.argmax(x @ c.T, axis=1)
        for j in range(k):
            members = x[assign == j]
            if len(members):
                m = members.sum(axis=0)
                c[j] = m / max(np.linalg.norm(m), 1e-12)
    return c


class Cache:
    """Unit embeddings keyed by sha1 of the text, kept in one .npz between runs."""

    def __init__(self, path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
        self.path, self.embedder = path, embedder
        self.data: dict[str, np.ndarray] = {}
        if path.is_file():
            with np.load(path) as npz:
                self.data = dict(zip(npz["keys"], npz["vectors"], strict=True))

    def embed(self, texts: list[str]) -> np.ndarray:
        keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in self.data}
        if todo:
            vecs = self.embedder.embed_documents(list(todo.values()))
            self.data.update(zip(todo, vecs, strict=True))
            np.savez(self.path, keys=np.array(list(self.data)),
                     vectors=np.stack(list(self.data.values())))
        return np.stack([self.data[k] for k in keys]) if keys else np.zeros((0, 1))


def units_of(path: Path):  # type: ignore[no-untyped-def]
    data = path.read_bytes()
    parsed = parser_for(path, data).parse(path, data)
    return parsed.text, document_units(parsed)


def scan_parser(doc: str) -> argparse.ArgumentParser:
    """The arguments every CUAD scan script takes: the dataset folder ``cuad``, ``--model``
    (the embedder name), ``--min-positives`` (see :func:`verdict_thresholds`) and ``--cache``
    (the unit embedding cache, see :class:`Cache`)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("cuad", type=Path)
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--min-positives", type=int, default=5,
                    help="types annotated in fewer calibrate contracts use the pooled threshold")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/citewise_scan_cache.npz"))
    return ap


def open_cache(args: argparse.Namespace, precision: str = "auto") -> tuple[Embedder, Cache]:
    """(embedder ``args.model`` on ``CITEWISE_THREADS`` threads, default 1, batches of 32,
    at ``precision``; the :class:`Cache` at ``args.cache`` over it)."""
    embedder = load_embedder(args.model, int(os.environ.get("CITEWISE_THREADS", "1")), 32,
                             precision)
    return embedder, Cache(args.cache, embedder)


class NoEmbeddings:
    """A stand-in for :class:`Cache` that embeds nothing: every text gets the zero vector of
    ``dim`` dimensions (float32). Enough for the scores of the lexical types when the
    prototypes' ``embedding_scale`` is 0 (their score is then the lexical logit alone); the
    other types' scores are meaningless with it."""

    def __init__(self, dim: int) -> None:
        self.dim = dim

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.zeros((len(texts), self.dim), dtype=np.float32)


def best_units(contracts: list[Contract], classifier: ClauseClassifier,
               cache: Cache | NoEmbeddings, progress: bool = False,
               types: list[str] | None = None
               ) -> tuple[dict[str, list[tuple[float, bool]]], dict[str, int]]:
    """(best, positives) over ``contracts``: per type of ``types`` (default every type of
    ``classifier.prototypes.labels``), one
    (score of the best-scoring clause unit that is not a bare heading, as the scanner cites
    it, with the lexical part where the classifier has one; it overlaps an annotated clause of the type) pair
    per contract that has clause units, and how many of those contracts annotate the type.
    ``progress`` prints ``calibrate i/n`` after each such contract."""
    labels = classifier.prototypes.labels if types is None else tuple(types)
    columns = [classifier.prototypes.labels.index(t) for t in labels]
    best: dict[str, list[tuple[float, bool]]] = {t: [] for t in labels}
    positives = dict.fromkeys(labels, 0)
    for i, contract in enumerate(contracts, 1):
        _, units = units_of(contract.path)
        if not units:
            continue
        scores = classifier.all_scores(units, cache.embed([u.text for u in units]))
        scores[[is_bare_heading(u.text) for u in units]] = -np.inf  # never cited as found
        for j, ctype in zip(columns, labels, strict=True):
            k = int(np.argmax(scores[:, j]))
            gold = contract.spans.get(ctype, [])
            positives[ctype] += bool(gold)
            best[ctype].append((float(scores[k, j]),
                                overlaps((units[k].start, units[k].end), gold)))
        if progress:
            print(f"calibrate {i}/{len(contracts)}", flush=True)
    return best, positives


def best_f1_threshold(best: list[tuple[float, bool]], positives: int) -> tuple[float, float]:
    """(threshold, F1) maximising F1 over (best score, best unit is right) per contract."""
    top = (DEFAULT_THRESHOLD, 0.0)
    for thr in sorted({round(s, 4) for s, _ in best}):
        tp = sum(1 for s, ok in best if s >= thr and ok)
        predicted = sum(1 for s, _ in best if s >= thr)
        if not tp:
            continue
        p, r = tp / predicted, tp / max(positives, 1)
        f1 = 2 * p * r / (p + r)
        if f1 > top[1]:
            top = (thr, f1)
    return top


#: The share of needs-review citations that should point at a real clause of the type.
REVIEW_PRECISION = 1 / 3
#: The share of clauses found with confidence that should be real clauses of the type.
CONFIDENT_PRECISION = 0.8
#: The same for the types of the lexical finder (``train_scan_lexical.py
#: --confident-precision``): 0.8 as well. 0 (their F1 threshold) was measured in issue 25's
#: sixth round and not shipped: about the same F1, but for five types a confident verdict
#: was then right only about half the time (see docs/benchmarks.md).
LEXICAL_CONFIDENT_PRECISION = 0.8
#: The fewest calibrate contracts a confident threshold may rest on.
CONFIDENT_SUPPORT = 3


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


def confident_threshold(best: list[tuple[float, bool]], threshold: float,
                        min_precision: float = CONFIDENT_PRECISION) -> float:
    """The lowest score ``hi`` >= ``threshold`` such that, of the (best score, is right) pairs
    scoring ``hi`` or more, at least :data:`CONFIDENT_SUPPORT` exist and at least
    ``min_precision`` are right; :data:`~citewise.scan.classify.NEVER_CONFIDENT` when no score
    gets there. With ``min_precision`` 0 it is ``threshold`` itself (where at least
    :data:`CONFIDENT_SUPPORT` pairs reach it)."""
    ranked = sorted((b for b in best if b[0] >= threshold), reverse=True)
    if min_precision <= 0:
        return threshold if len(ranked) >= CONFIDENT_SUPPORT else NEVER_CONFIDENT
    hi, right = NEVER_CONFIDENT, 0
    for total, (score, ok) in enumerate(ranked, 1):
        right += ok
        if total >= CONFIDENT_SUPPORT and right / total >= min_precision:
            hi = score
    return hi


def precision_groups(labels: list[str], lexical: list[str], lexical_precision: float
                     ) -> list[tuple[list[str], float]]:
    """``labels`` split into (types, confident precision) groups for
    :func:`verdict_thresholds`: the types of ``lexical`` take ``lexical_precision``, the others
    :data:`CONFIDENT_PRECISION`. One group when both precisions are the same, so that the
    pooled margins of the types with few calibrate contracts come from every type; empty
    groups are left out."""
    if lexical_precision == CONFIDENT_PRECISION:
        return [(list(labels), CONFIDENT_PRECISION)] if labels else []
    groups = [([t for t in labels if t in lexical], lexical_precision),
              ([t for t in labels if t not in lexical], CONFIDENT_PRECISION)]
    return [(group, precision) for group, precision in groups if group]


def verdict_thresholds(best: dict[str, list[tuple[float, bool]]], positives: dict[str, int],
                       f1: dict[str, float], min_positives: int,
                       confident_precision: float = CONFIDENT_PRECISION
                       ) -> tuple[dict[str, float], dict[str, float]]:
    """(review, confident) thresholds per type from the calibrate contracts' (best score, is
    right) pairs (see ``calibrate_scan_review.py``); types with fewer than ``min_positives``
    annotated contracts take the pooled margins around their F1 threshold.
    ``confident_precision`` is the precision the confident threshold must show (see
    :func:`confident_threshold`); 0 makes it the F1 threshold itself (provided
    :data:`CONFIDENT_SUPPORT` contracts reach it)."""
    relative = [(s - f1[t], ok) for t in best for s, ok in best[t]]
    pooled_lo = review_threshold(relative, 0.0)
    pooled_hi = confident_threshold(relative, 0.0, confident_precision)
    review, confident = {}, {}
    for ctype, pairs in best.items():
        thr = f1[ctype]
        if positives[ctype] >= min_positives:
            review[ctype] = review_threshold(pairs, thr)
            confident[ctype] = confident_threshold(pairs, thr, confident_precision)
        else:
            review[ctype], confident[ctype] = thr + pooled_lo, thr + pooled_hi
    return review, confident


def main() -> None:
    ap = scan_parser(__doc__)
    ap.add_argument("--per-type", type=int, default=400)
    ap.add_argument("--centroids", type=int, default=24)
    ap.add_argument("--background", type=int, default=256)
    ap.add_argument("--background-per-contract", type=int, default=20)
    ap.add_argument("--calibrate-limit", type=int, default=0,
                    help="calibrate on the first N calibrate contracts by name (0 = all)")
    args = ap.parse_args()
    started = time.perf_counter()
    embedder, cache = open_cache(args)
    rng = random.Random(7)

    examples: dict[str, list[str]] = {t: [] for t in CLAUSE_TYPES}
    background: list[str] = []
    for contract in load_contracts(args.cuad, "train"):
        _text, units = units_of(contract.path)
        raw = contract.text()
        for ctype, spans in contract.spans.items():
            for s, e in spans:
                examples[ctype].extend(u.text for u in split_units(raw, s, e))
        every = [g for spans in contract.spans.values() for g in spans]
        free = [u.text for u in units if not overlaps((u.start, u.end), every)]
        background.extend(rng.sample(free, min(args.background_per_contract, len(free))))
    vectors, owner = [], []
    labels = tuple(CLAUSE_TYPES)
    for j, ctype in enumerate(labels):
        texts = examples[ctype]
        texts = rng.sample(texts, min(args.per_type, len(texts)))
        if not texts:
            continue
        c = kmeans(cache.embed(texts), args.centroids)
        vectors.append(c)
        owner.extend([j] * len(c))
        print(f"{ctype:<36} {len(examples[ctype]):>5} units -> {len(c)} centroids", flush=True)
    bg = kmeans(cache.embed(background), args.background)
    vectors.append(bg)
    owner.extend([-1] * len(bg))
    print(f"background {len(background)} units -> {len(bg)} centroids", flush=True)

    proto = Prototypes(args.model, labels, np.concatenate(vectors).astype(np.float32),
                       np.array(owner, dtype=np.int64), {})
    desc = embedder.embed_documents([f"{t}: {CLAUSE_TYPES[t]}" for t in labels])
    proto = Prototypes(args.model, labels, np.concatenate([desc, proto.vectors]),
                       np.concatenate([np.arange(len(labels)), proto.owner]), {})
    classifier = ClauseClassifier(embedder, proto)

    calib = load_contracts(args.cuad, "calibrate")
    if args.calibrate_limit:
        calib = calib[: args.calibrate_limit]
    best, positives = best_units(calib, classifier, cache, progress=True)
    # one pooled threshold for types with too few calibration contracts to tune their own
    pooled, pooled_f1 = best_f1_threshold([b for t in labels for b in best[t]],
                                          sum(positives.values()))
    print(f"pooled threshold {pooled:+.4f} F1 {pooled_f1:.3f}")
    thresholds = {}
    for ctype in labels:
        thr, f1 = best_f1_threshold(best[ctype], positives[ctype])
        if positives[ctype] < args.min_positives:
            thr = pooled
        thresholds[ctype] = thr
        print(f"{ctype:<36} threshold {thr:+.4f} calibration F1 {f1:.3f} "
              f"({positives[ctype]} contracts)")
    review, confident = verdict_thresholds(best, positives, thresholds, args.min_positives)
    OUT.mkdir(parents=True, exist_ok=True)
    n_desc = len(labels)
    np.savez_compressed(
        OUT / f"cuad_{args.model}.npz",
        labels=np.array(labels), owner=proto.owner[n_desc:],
        vectors=proto.vectors[n_desc:].astype(np.float16),
        threshold_labels=np.array(list(thresholds)),
        thresholds=np.array(list(thresholds.values()), dtype=np.float32),
        review_thresholds=np.array([review[t] for t in thresholds], dtype=np.float32),
        confident_thresholds=np.array([confident[t] for t in thresholds], dtype=np.float32),
    )
    print(f"wrote {OUT / f'cuad_{args.model}.npz'} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
