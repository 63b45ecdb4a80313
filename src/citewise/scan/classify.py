"""Clause-type classification by embedding similarity to prototypes of each CUAD category.

A document is cut into *clause units* (:func:`document_units`): sentences of its paragraphs,
with a short heading-like sentence ("12. Governing Law.") joined to the sentence after it and a
very long sentence cut at semicolons. Each unit is embedded with the index's embedding model
and compared with the *prototypes* of every clause type:

* the embedded description of the type (:data:`citewise.scan.clause_types.CLAUSE_TYPES`) and
  the examples a playbook gives for it, and
* for the bundled ``minilm`` model, centroids of example clauses from CUAD training contracts
  plus centroids of ordinary contract sentences that belong to no category (the *background*),
  shipped in ``scan/data/cuad_minilm.npz`` (built by ``benchmarks/build_scan_prototypes.py``
  from contracts disjoint from the evaluation contracts).

The score of unit ``u`` for type ``t`` is ``sim(u, t) - sim(u, background)``, where each
``sim`` is the mean of the 3 highest cosine similarities to that group's prototypes: a margin
in [-2, 2], higher meaning more typical of ``t`` than of ordinary contract text. With the
bundled ``minilm`` data every type also has a logistic regression over the unit's vector
(trained on CUAD training contracts by ``benchmarks/train_scan_classifier.py``), and its score
is ``margin_scale * margin + logit`` (:meth:`ClauseClassifier.scores`). A unit carries
type ``t`` when its score reaches the type's threshold (calibrated per type on held-apart CUAD
contracts; :data:`DEFAULT_THRESHOLD` otherwise). A chunk carries the types of its units.

The threshold used is the type's *confident* threshold, calibrated so that on held-apart
contracts at least 0.8 of the best units reaching it were real clauses of the type (at least
the F1-tuned threshold; :data:`NEVER_CONFIDENT` where no score was that reliable). Below it
and down to the type's *review threshold* (at most the F1-tuned one) a unit is a *possible*
clause of the type: the scanner cites it with the verdict ``needs review``, never
``compliant`` or ``deviates``. Both are set by ``benchmarks/calibrate_scan_review.py``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from citewise.embed import Embedder
from citewise.scan.clause_types import CLAUSE_TYPES
from citewise.scan.lexical import VIEWS, LexicalModel, context_views
from citewise.scan.numbering import leading_label
from citewise.types import BlockKind, Chunk, ParsedDocument

#: Score threshold of a type with no calibrated value (description-only prototypes).
DEFAULT_THRESHOLD = 0.12
#: How far below its threshold a type with no calibrated review threshold is still a
#: possible clause (``needs review``).
DEFAULT_REVIEW_MARGIN = 0.03
#: A confident threshold no score reaches: the type's clauses were never found reliably
#: enough on held-apart contracts to be judged without a reader.
NEVER_CONFIDENT = math.inf
#: A unit of at most this many words, once its number label is removed, and without a verb
#: form that clauses use, is a bare heading ("12. Governing Law.").
HEADING_WORDS = 8
_CLAUSE_VERB = re.compile(
    r"\b(?:shall|will|may|must|is|are|be|been|has|have|agrees?|hereby|means|includes?|"
    r"terminates?|governs?|renews?)\b", re.IGNORECASE)
#: Similarities averaged per prototype group.
TOP_N = 3
#: Units shorter than this (characters) are joined to the next unit of the same paragraph.
MIN_UNIT_CHARS = 40
#: Units longer than this are cut at semicolons or line breaks.
MAX_UNIT_CHARS = 1200

_SENTENCE_BREAK = re.compile(r"(?<=[.!?])[\"”')]*\s+(?=[\"“(\[]?[A-Z0-9])|\n[ \t]*\n\s*")
_SOFT_BREAK = re.compile(r"(?<=;)\s+|\n")


@dataclass(frozen=True)
class Unit:
    """A clause-sized span of a document: ``text == doc_text[start:end]`` (end exclusive)."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Labelled:
    """A unit with its best clause types: ``scores`` maps type -> score (margin, higher is more
    typical of the type) for every type at or above its threshold, best first; ``possible``
    the same for the types the unit scores below the threshold but at or above the review
    threshold (the scanner cites those with ``needs review``)."""

    unit: Unit
    chunk: Chunk | None
    scores: dict[str, float]
    possible: dict[str, float] = field(default_factory=dict)

    def score(self, clause_type: str) -> float | None:
        """The unit's score for ``clause_type`` when it is at least a possible clause of it,
        else None."""
        found = self.scores.get(clause_type)
        return self.possible.get(clause_type) if found is None else found


def is_bare_heading(text: str) -> bool:
    """Whether a unit is only a heading: at most :data:`HEADING_WORDS` words once its
    leading number label ("12.", "Section 4.2", "(b)") is removed, and no verb form clauses
    use ("shall", "is", "agrees"...). Such a unit names a clause; it does not state its terms.

    >>> is_bare_heading("12. GOVERNING LAW.")
    True
    >>> is_bare_heading("This Agreement is governed by Delaware law.")
    False
    """
    label = leading_label(text)
    rest = text[label.length:] if label is not None else text
    return len(rest.split()) <= HEADING_WORDS and _CLAUSE_VERB.search(rest) is None


def _cut(text: str, start: int, end: int, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    spans, pos = [], start
    for m in pattern.finditer(text, start, end):
        if m.start() > pos:
            spans.append((pos, m.start()))
        pos = m.end()
    if pos < end:
        spans.append((pos, end))
    return spans


def split_units(text: str, start: int = 0, end: int | None = None) -> list[Unit]:
    """Clause units of ``text[start:end]`` in order, offsets into ``text``.

    Sentences end at ``.``, ``!`` or ``?`` followed by a capital or digit, and at blank lines;
    a piece shorter than :data:`MIN_UNIT_CHARS` is joined to the next one; a piece longer than
    :data:`MAX_UNIT_CHARS` is cut at semicolons and line breaks.
    """
    end = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    for s, e in _cut(text, start, end, _SENTENCE_BREAK):
        if e - s > MAX_UNIT_CHARS:
            spans.extend(_cut(text, s, e, _SOFT_BREAK))
        else:
            spans.append((s, e))
    units: list[Unit] = []
    carry: int | None = None
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if s >= e:
            continue
        s = carry if carry is not None else s
        if e - s < MIN_UNIT_CHARS:
            carry = s
            continue
        carry = None
        units.append(Unit(text[s:e], s, e))
    if carry is not None:
        if units and carry >= units[-1].start:  # a short tail joins the unit before it
            last = units.pop()
            units.append(Unit(text[last.start:end].rstrip(), last.start,
                              last.start + len(text[last.start:end].rstrip())))
        else:
            tail = text[carry:end].strip()
            if tail:
                units.append(Unit(tail, carry, carry + len(tail)))
    return units


def document_units(parsed: ParsedDocument) -> list[Unit]:
    """Clause units of every non-heading block of ``parsed``, in document order."""
    units: list[Unit] = []
    for block in parsed.blocks:
        if block.kind is BlockKind.HEADING or block.kind is BlockKind.CODE:
            continue
        units.extend(split_units(parsed.text, block.start, block.end))
    return units


@dataclass(frozen=True)
class Prototypes:
    """Prototype vectors per clause type.

    ``vectors``: float32, shape (m, dim), L2-normalised; ``owner``: int, shape (m,), index into
    ``labels`` of each vector's type, or -1 for a background vector; ``thresholds``: score
    threshold per type, tuned for F1 (types missing here use :data:`DEFAULT_THRESHOLD`);
    ``confident_thresholds``: the score from which a unit is a clause found with confidence
    (at least the F1 threshold; missing types use it); ``review_thresholds``: the score from
    which a unit is a possible clause (at most the F1 threshold; missing types use the
    confident threshold minus :data:`DEFAULT_REVIEW_MARGIN`).
    """

    model: str
    labels: tuple[str, ...]
    vectors: np.ndarray
    owner: np.ndarray
    thresholds: dict[str, float]
    review_thresholds: dict[str, float] = field(default_factory=dict)
    confident_thresholds: dict[str, float] = field(default_factory=dict)
    #: the trained part (``benchmarks/train_scan_classifier.py``): logistic-regression weights
    #: per type, float32, shape (len(labels), dim), and biases, shape (len(labels),); a type
    #: with ``trained[j]`` False (too few training clauses) keeps the margin alone
    weights: np.ndarray | None = None
    bias: np.ndarray | None = None
    trained: np.ndarray | None = None
    #: a trained type's score is ``margin_scale * margin + logit``
    margin_scale: float = 1.0
    #: the lexical part (``benchmarks/train_scan_lexical.py``, :mod:`citewise.scan.lexical`):
    #: a type it was trained for scores ``lexical logit + embedding_scale * (the score
    #: above)``; None: the embedding score alone
    lexical: LexicalModel | None = None
    embedding_scale: float = 1.0

    def extended(self, embedder: Embedder, examples: Mapping[str, Sequence[str]]) -> Prototypes:
        """A copy with the given example texts per type added as prototypes."""
        texts = [(t, x) for t, xs in examples.items() for x in xs if t in self.labels]
        if not texts:
            return self
        vectors = embedder.embed_documents([x for _, x in texts])
        owner = np.array([self.labels.index(t) for t, _ in texts], dtype=np.int64)
        return dataclasses.replace(self, vectors=np.concatenate([self.vectors, vectors]),
                                   owner=np.concatenate([self.owner, owner]))


def bundled_path(model: str) -> str:
    return f"cuad_{model}.npz"


def load_prototypes(embedder: Embedder) -> Prototypes:
    """Descriptions of every type, plus the bundled CUAD prototypes and calibrated thresholds
    when they exist for ``embedder``'s model (only ``minilm`` ships them, made in fp32; the
    int8 ``minilm`` uses them too: its vectors have cosine about 0.994 to the fp32 ones)."""
    labels = tuple(CLAUSE_TYPES)
    vectors = embedder.embed_documents([f"{t}: {CLAUSE_TYPES[t]}" for t in labels])
    owner = np.arange(len(labels), dtype=np.int64)
    thresholds: dict[str, float] = {}
    review: dict[str, float] = {}
    confident: dict[str, float] = {}
    trained: dict[str, np.ndarray] = {}
    scale = 1.0
    lexical, embedding_scale = None, 1.0
    data = resources.files("citewise.scan").joinpath("data", bundled_path(embedder.family))
    if data.is_file():
        with data.open("rb") as fh, np.load(fh, allow_pickle=False) as npz:
            names = [str(x) for x in npz["labels"]]
            index = {t: labels.index(t) for t in names}
            extra_owner = np.array([index[names[i]] if i >= 0 else -1 for i in npz["owner"]],
                                   dtype=np.int64)
            vectors = np.concatenate([vectors, npz["vectors"].astype(np.float32)])
            owner = np.concatenate([owner, extra_owner])
            thresholds = {str(t): float(v) for t, v in zip(npz["threshold_labels"],
                                                           npz["thresholds"], strict=True)}
            typed = [str(t) for t in npz["threshold_labels"]]
            if "review_thresholds" in npz.files:
                review = dict(zip(typed, map(float, npz["review_thresholds"]), strict=True))
            if "confident_thresholds" in npz.files:
                confident = dict(zip(typed, map(float, npz["confident_thresholds"]), strict=True))
            if "lr_weights" in npz.files:
                order = [names.index(t) for t in labels]
                trained = {"weights": npz["lr_weights"].astype(np.float32)[order],
                           "bias": npz["lr_bias"].astype(np.float32)[order],
                           "trained": npz["lr_trained"].astype(bool)[order]}
                scale = float(npz["margin_scale"])
            if "lex_vocabulary" in npz.files:
                lexical = _lexical_of(npz)
                embedding_scale = float(npz["lex_embedding_scale"])
    return Prototypes(embedder.name, labels, vectors, owner, thresholds, review, confident,
                      trained.get("weights"), trained.get("bias"), trained.get("trained"),
                      scale, lexical, embedding_scale)


def _lexical_of(npz: Mapping[str, np.ndarray]) -> LexicalModel:
    """The :class:`LexicalModel` stored in a prototypes npz: ``lex_labels``,
    ``lex_vocabulary``, ``lex_idf`` and ``lex_bias``, and the weights as sparse coordinates
    (``lex_index``: flat indices into shape (views, vocabulary, labels), ``lex_values``:
    float16; the weights left out were too small to change a score)."""
    labels = tuple(str(t) for t in npz["lex_labels"])
    vocabulary = {str(t): i for i, t in enumerate(npz["lex_vocabulary"])}
    weights = np.zeros((len(VIEWS), len(vocabulary), len(labels)), dtype=np.float32)
    weights.flat[npz["lex_index"].astype(np.int64)] = npz["lex_values"].astype(np.float32)
    return LexicalModel(labels, vocabulary, npz["lex_idf"].astype(np.float32), weights,
                        npz["lex_bias"].astype(np.float32))


def _top_mean(sims: np.ndarray, n: int = TOP_N) -> np.ndarray:
    """Mean of the ``n`` largest values of each row (all of them if fewer); shape (rows,)."""
    if sims.shape[1] == 0:
        return np.zeros(sims.shape[0], dtype=np.float32)
    n = min(n, sims.shape[1])
    part = np.partition(sims, sims.shape[1] - n, axis=1)[:, -n:]
    mean: np.ndarray = part.mean(axis=1)
    return mean


class ClauseClassifier:
    """Scores clause units against every clause type (see the module docstring)."""

    def __init__(self, embedder: Embedder, prototypes: Prototypes) -> None:
        self.embedder = embedder
        self.prototypes = prototypes

    def scores(self, vectors: np.ndarray,
               views: Sequence[tuple[str, ...]] | None = None) -> np.ndarray:
        """Type scores of unit vectors: float32, shape (n, len(labels)); column order is
        ``prototypes.labels``; higher is more typical of the type than of ordinary text. A
        type with trained weights scores ``margin_scale * margin + logit`` (the logit of its
        logistic regression over the unit's vector), others the margin alone. With the
        units' ``views`` (:func:`~citewise.scan.lexical.context_views`, one per row of
        ``vectors``) and a lexical model, a type of the lexical model scores its lexical
        logit plus ``embedding_scale`` times that."""
        p = self.prototypes
        sims = vectors @ p.vectors.T
        background = p.owner == -1
        base = _top_mean(sims[:, background]) if background.any() else np.zeros(len(vectors))
        out = np.empty((len(vectors), len(p.labels)), dtype=np.float32)
        for j in range(len(p.labels)):
            out[:, j] = _top_mean(sims[:, p.owner == j]) - base
        if p.weights is not None and p.bias is not None and p.trained is not None:
            t = p.trained
            out[:, t] = p.margin_scale * out[:, t] + vectors @ p.weights[t].T + p.bias[t]
        if p.lexical is not None and views is not None:
            cols = [p.labels.index(t) for t in p.lexical.labels]
            out[:, cols] = p.lexical.scores(views) + p.embedding_scale * out[:, cols]
        return out

    def threshold(self, clause_type: str) -> float:
        """The score from which a unit is a clause of ``clause_type`` found with confidence
        (:data:`NEVER_CONFIDENT` when no score is)."""
        p = self.prototypes
        f1 = p.thresholds.get(clause_type, DEFAULT_THRESHOLD)
        return max(f1, p.confident_thresholds.get(clause_type, f1))

    def review_threshold(self, clause_type: str) -> float:
        """The score from which a unit is a *possible* clause of ``clause_type`` (at most
        :meth:`threshold`)."""
        found = self.threshold(clause_type)
        return min(found, self.prototypes.review_thresholds.get(
            clause_type, found - DEFAULT_REVIEW_MARGIN))

    def classify(self, units: Sequence[Unit], chunks: Sequence[Chunk] = ()) -> list[Labelled]:
        """Every unit with the types it reaches the threshold of and the types it reaches
        only the review threshold of (possibly none), each unit tied to the chunk (by ordinal
        order) whose span holds its start."""
        if not units:
            return []
        matrix = self.all_scores(units)
        ordered = sorted(chunks, key=lambda c: c.char_start)
        labels = self.prototypes.labels
        thresholds = np.array([self.threshold(t) for t in labels])
        review = np.array([self.review_threshold(t) for t in labels])
        out = []
        for unit, row in zip(units, matrix, strict=True):
            hits = np.flatnonzero(row >= thresholds)
            maybe = np.flatnonzero((row >= review) & (row < thresholds))
            scores = {labels[j]: float(row[j]) for j in sorted(hits, key=lambda j: -row[j])}
            possible = {labels[j]: float(row[j]) for j in sorted(maybe, key=lambda j: -row[j])}
            out.append(Labelled(unit, _chunk_at(ordered, unit.start), scores, possible))
        return out

    def all_scores(self, units: Sequence[Unit], vectors: np.ndarray | None = None) -> np.ndarray:
        """:meth:`scores` of a document's units, in document order (their context is read
        from their neighbours), from their embeddings (``vectors``, computed when None)."""
        if vectors is None:
            vectors = self.embedder.embed_documents([u.text for u in units])
        texts = [u.text for u in units]
        return self.scores(vectors, context_views(texts, [is_bare_heading(t) for t in texts]))


def chunk_types(labelled: Sequence[Labelled]) -> dict[str, dict[str, float]]:
    """The clause types of each chunk: chunk id -> {type: best unit score in the chunk}, types
    best first; chunks with no typed unit are left out."""
    out: dict[str, dict[str, float]] = {}
    for lab in labelled:
        if lab.chunk is None:
            continue
        types = out.setdefault(lab.chunk.id, {})
        for t, score in lab.scores.items():
            types[t] = max(score, types.get(t, score))
    return {cid: dict(sorted(ts.items(), key=lambda kv: -kv[1])) for cid, ts in out.items() if ts}


def _chunk_at(chunks: Sequence[Chunk], offset: int) -> Chunk | None:
    """The first chunk (``chunks`` sorted by start) whose span holds ``offset``; if none does,
    the last chunk starting before it; None if there are no chunks."""
    best = None
    for c in chunks:
        if c.char_start > offset:
            break
        if c.char_end > offset:
            return c
        best = c
    return best
