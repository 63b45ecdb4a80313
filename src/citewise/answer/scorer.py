"""The answer-sentence scorer: a cross-encoder that reads (question, answer unit) and says how
likely the unit answers the question.

Ranking answer units by cosine and shared words rewards whatever repeats the question (a
restated question, a heading, a footer naming the parties, a docstring naming the function):
those share the most words and answer nothing. The scorer is trained for answer sentence
selection instead (``scripts/train_answer_scorer.py``: TREC-QA, SelQA, CUAD clause
questions, XQuAD-en, with restated questions and headings as negatives; the data and splits
are in :mod:`citewise.train.answer_data`), so it has learned what an answering sentence
looks like. It ships as ``models/answer-scorer-minilm-l6.int8.onnx`` (all-MiniLM-L6-v2 with
a one-logit head, dynamic int8) and runs on ONNX Runtime like the reranker
(:class:`~citewise.retrieve.rerank.OnnxReranker`).

:mod:`citewise.answer.selection` uses it to order the best candidates of the evidence, to
decide how many to quote, and to decline: a question none of whose best units reaches
``answer_min_probability`` is not answered. It reads English (its base model's vocabulary);
other languages keep the rule-based ranking (``answer_scorer_languages``).
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import numpy as np

from citewise.errors import ConfigError
from citewise.retrieve.rerank import OnnxReranker, unit_text

BUNDLED = "bundled"
BUNDLED_FILE = "answer-scorer-minilm-l6.int8.onnx"


def bundled_path() -> Path:
    """The shipped scorer file inside the installed package."""
    return Path(str(resources.files("citewise") / "models" / BUNDLED_FILE))


class AnswerScorer:
    """Scores (question, unit) pairs with an ONNX cross-encoder on ``threads`` CPU threads.

    :meth:`probabilities` returns ``sigmoid(logit)``: float32 in [0, 1], higher meaning the
    unit more likely answers (calibrated by the binary cross-entropy term of its training;
    the decline floor is chosen on development questions, docs/benchmarks.md). Raises
    ConfigError when the file is missing, ModelError when it does not load."""

    def __init__(self, path: str | Path, threads: int = 2) -> None:
        self.path = Path(path)
        self.model = OnnxReranker(self.path, threads=threads)

    def probabilities(self, question: str, units: Sequence[tuple[str, str]]) -> np.ndarray:
        """P(answers) of each ``(heading, text)`` unit for ``question``: float32, shape
        ``(len(units),)``, in the order given. The unit is read as
        :func:`~citewise.retrieve.rerank.unit_text` formats it."""
        if not units:
            return np.zeros(0, dtype=np.float32)
        logits = self.model.score(question, [unit_text(h, t) for h, t in units])
        return (1.0 / (1.0 + np.exp(-logits.astype(np.float64)))).astype(np.float32)


def load_answer_scorer(name: str, threads: int = 2) -> AnswerScorer | None:
    """The configured scorer: None for an empty ``name`` (``CITEWISE_ANSWER_SCORER=``: the
    rule-based ranking alone), the shipped file for ``bundled``, else an ``.onnx`` file
    written by ``scripts/train_answer_scorer.py``. Raises ConfigError for a missing file."""
    name = name.strip()
    if not name or name.lower() in {"off", "none"}:
        return None
    path = bundled_path() if name.lower() == BUNDLED else Path(name).expanduser()
    if not path.is_file():
        raise ConfigError(f"CITEWISE_ANSWER_SCORER: {path} is not a file; give 'bundled', an "
                          ".onnx file written by scripts/train_answer_scorer.py, or leave it "
                          "empty for the rule-based ranking")
    return AnswerScorer(path, threads)


__all__ = ["BUNDLED", "AnswerScorer", "bundled_path", "load_answer_scorer"]
