"""CUAD v1 clause annotations (``../shared/datasets/cuad``) and the splits citewise uses.

Only the dataset's dev contracts carry annotations (``clause_spans.dev.jsonl``); the dataset
holds back the contracts whose ``sha1(file name)`` starts with a byte below 0x40. citewise cuts
the dev contracts, again by the first byte of ``sha1(file name)``, into three disjoint parts:

==============  ==============  ===========================================================
part            first byte      used for
==============  ==============  ===========================================================
``train``       0x40 - 0xAF     example clauses and background sentences (the prototypes)
``calibrate``   0xB0 - 0xD7     one score threshold per clause type
``eval``        0xD8 - 0xFF     the figures in docs/benchmarks.md and the test floor (89)
==============  ==============  ===========================================================

Nothing from ``eval`` contracts is ever used to build or tune the classifier.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from citewise.eval.jsonl import jsonl_values

SPLITS = {"train": (0x40, 0xB0), "calibrate": (0xB0, 0xD8), "eval": (0xD8, 0x100)}


def split_of(contract_file: str) -> str:
    """``train``, ``calibrate``, ``eval`` or ``heldout`` (no annotations available)."""
    first = hashlib.sha1(contract_file.encode("utf-8")).digest()[0]
    for name, (lo, hi) in SPLITS.items():
        if lo <= first < hi:
            return name
    return "heldout"


@dataclass(frozen=True)
class Contract:
    """One annotated contract: ``spans`` maps category -> list of (start, end) character
    offsets into the contract's text file (end exclusive); absent categories are missing."""

    file: str
    path: Path
    spans: dict[str, list[tuple[int, int]]]

    def text(self) -> str:
        return self.path.read_text(encoding="utf-8")


def load_contracts(root: Path, split: str) -> list[Contract]:
    """The annotated contracts of ``split`` under the CUAD folder ``root``, sorted by name."""
    spans: dict[str, dict[str, list[tuple[int, int]]]] = defaultdict(dict)
    for rec in jsonl_values(root / "clause_spans.dev.jsonl"):
        if split_of(rec["contract_file"]) != split:
            continue
        located = [(c["start"], c["end"]) for c in rec["clauses"] if c["match"] != "not_found"]
        entry = spans[rec["contract_file"]]
        if located:
            entry[rec["category"]] = located
    return [Contract(f, root / "full_contract_txt" / f, dict(s)) for f, s in sorted(spans.items())]


def overlaps(span: tuple[int, int], gold: list[tuple[int, int]]) -> bool:
    """Whether ``span`` shares at least one character with any span in ``gold``."""
    return any(span[0] < e and s < span[1] for s, e in gold)
