"""Training citewise's own models: the cross-encoder reranker (``citewise train-reranker``).

:mod:`citewise.train.data` builds (question, positives, hard negatives) examples from training
splits and user JSONL; :mod:`citewise.train.reranker` fine-tunes, exports to ONNX and
quantises. Needs the ``train`` extra (``pip install 'citewise[train]'``).
"""

from enum import Enum


class Loss(str, Enum):
    """Reranker training loss (see :mod:`citewise.train.reranker`): ``listwise`` is the softmax
    cross-entropy of each group's positive plus binary cross-entropy; ``pointwise`` is binary
    cross-entropy alone."""

    LISTWISE = "listwise"
    POINTWISE = "pointwise"
