"""Cross-encoder rerankers behind the :class:`Reranker` contract."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from citewise.errors import ConfigError, ModelError


@runtime_checkable
class Reranker(Protocol):
    name: str

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """Relevance of each passage to the query: float32, shape (n,); higher is more
        relevant. Values are the model's logits (unbounded); see :func:`sigmoid`."""


def sigmoid(x: np.ndarray) -> np.ndarray:
    """Logistic function, mapping cross-encoder logits to (0, 1)."""
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` from a local folder (needs the torch extra).

    Pairs longer than the model's limit are truncated by the tokenizer (the passage side
    first); inference runs in batches of ``batch_size`` on ``threads`` CPU threads.
    """

    def __init__(self, path: str | Path, threads: int = 2, batch_size: int = 32) -> None:
        path = Path(path).expanduser()
        if not path.is_dir():
            raise ConfigError(
                f"CITEWISE_RERANKER_MODEL: {path} is not a folder; give a local cross-encoder "
                "model folder or leave it empty to skip reranking"
            )
        try:
            import torch
            from sentence_transformers import CrossEncoder
        except ImportError as err:
            raise ModelError("the reranker needs PyTorch: torch and sentence-transformers are missing; reinstall citewise") from err
        torch.set_num_threads(threads)
        self.model = CrossEncoder(str(path), device="cpu", local_files_only=True)
        self.name = str(path)
        self.batch_size = batch_size
        self._identity = torch.nn.Identity()  # return logits, not the model's sigmoid

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        scores = self.model.predict(
            [(query, p) for p in passages], batch_size=self.batch_size,
            convert_to_numpy=True, show_progress_bar=False, activation_fn=self._identity,
        )
        return np.asarray(scores, dtype=np.float32).reshape(-1)


def load_reranker(path: str, threads: int = 2) -> Reranker | None:
    """The configured reranker, or None when ``CITEWISE_RERANKER_MODEL`` is empty."""
    return CrossEncoderReranker(path, threads=threads) if path else None
