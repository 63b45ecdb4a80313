"""The lexical part of the clause finder: TF-IDF word and word-pair features of a clause unit
and of its context, scored by a linear model per clause type (plain NumPy, no scikit-learn at
run time).

A unit is read in four *views*, each turned into its own TF-IDF vector over one shared
vocabulary (:func:`context_views`):

* ``unit``: the unit's own text;
* ``heading``: the nearest bare heading before it ("12. GOVERNING LAW"), "" when none;
* ``previous`` and ``next``: the units just before and after it in the document.

The features are those of scikit-learn's ``TfidfVectorizer(ngram_range=(1, 2),
sublinear_tf=True)`` with its default token pattern and lower-casing: terms are the words of
at least two word characters and the pairs of adjacent words; a term's value is
``(1 + log count) * idf``, and each vector is L2-normalised (:meth:`LexicalModel.vector`
gives the same numbers as scikit-learn, which the tests check). The model's score of a unit
for type ``t`` is ``bias[t] + sum over views v of x_v . weights[v, :, t]``: the decision
function of the logistic regression that ``benchmarks/train_scan_classifier.py`` trains on
the CUAD ``train`` contracts, a logit (higher is more typical of the type).
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: scikit-learn's default ``token_pattern``: words of at least two word characters.
TOKEN = re.compile(r"(?u)\b\w\w+\b")
#: The views of a unit, in the order of ``LexicalModel.weights``' first axis.
VIEWS = ("unit", "heading", "previous", "next")


def terms(text: str) -> list[str]:
    """The terms of ``text``: its lower-cased words and the pairs of adjacent words ("governed
    by"), the analysis of ``TfidfVectorizer(ngram_range=(1, 2))``."""
    words = TOKEN.findall(text.lower())
    return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]


def context_views(texts: Sequence[str], headings: Sequence[bool]) -> list[tuple[str, ...]]:
    """The :data:`VIEWS` of every unit of a document: ``texts`` are its units' texts in
    document order and ``headings`` whether each is a bare heading; returns one tuple
    ``(unit, heading, previous, next)`` per unit ("" where there is none)."""
    out: list[tuple[str, ...]] = []
    heading = ""
    for i, text in enumerate(texts):
        if headings[i]:
            heading = text
        out.append((text, heading, texts[i - 1] if i else "",
                    texts[i + 1] if i + 1 < len(texts) else ""))
    return out


@dataclass(frozen=True)
class LexicalModel:
    """TF-IDF features and linear weights per clause type.

    ``vocabulary`` maps a term to its column; ``idf``: float32, shape (V,); ``weights``:
    float32, shape (len(VIEWS), V, len(labels)), the coefficients of each view's features;
    ``bias``: float32, shape (len(labels),); ``labels``: the clause types of the last axis.
    """

    labels: tuple[str, ...]
    vocabulary: dict[str, int]
    idf: np.ndarray
    weights: np.ndarray
    bias: np.ndarray

    def vector(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """The TF-IDF vector of ``text`` as (columns int64, values float32), L2-normalised;
        both empty when no term of ``text`` is in the vocabulary."""
        counts = Counter(t for t in terms(text) if t in self.vocabulary)
        if not counts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        cols = np.fromiter((self.vocabulary[t] for t in counts), dtype=np.int64,
                           count=len(counts))
        tf = np.fromiter((1.0 + math.log(c) for c in counts.values()), dtype=np.float32,
                         count=len(counts))
        values = tf * self.idf[cols]
        norm = float(np.linalg.norm(values))
        return cols, (values / norm if norm else values).astype(np.float32)

    def scores(self, views: Sequence[tuple[str, ...]]) -> np.ndarray:
        """Scores of units given by their views (:func:`context_views`): float32, shape
        (len(views), len(labels)), logits, higher is more typical of the type."""
        out = np.tile(self.bias, (len(views), 1)).astype(np.float32)
        cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for i, unit in enumerate(views):
            for v, text in enumerate(unit):
                if not text:
                    continue
                if text not in cache:
                    cache[text] = self.vector(text)
                cols, values = cache[text]
                if len(cols):
                    out[i] += values @ self.weights[v, cols]
        return out
