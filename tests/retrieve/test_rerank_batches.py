"""How :class:`OnnxReranker` groups pairs into ONNX Runtime runs (issue 26, item 4), on the
shipped model: a pair's logit does not depend on the pairs scored with it, scores keep the
input order, batches group pairs of similar token length, and ``windows="best"`` reads one
window per passage."""

from __future__ import annotations

import random

import numpy as np
import pytest

from citewise.errors import ConfigError
from citewise.retrieve.rerank import (
    BUNDLED_FILE,
    OnnxReranker,
    best_windows,
    length_batches,
    load_reranker,
    passage_windows,
)

QUERY = "Does vitamin D supplementation reduce the risk of fractures in older adults?"

# real-looking passages of very different lengths (4 to about 180 tokens), so that a batch of
# them is padded and its activations span different ranges
SENTENCES = [
    "Vitamin D supplementation at 800 IU daily reduced hip fractures by 30 % in adults over 65.",
    "Calcium intake was not associated with fracture risk in the cohort.",
    "The trial randomised 2,686 people aged 65 to 85 living in the community.",
    "Bone mineral density rose slightly in the treated group.",
    "Falls were recorded by monthly questionnaires over five years.",
    "Volcanic ash deposits were dated by argon-argon methods.",
    "Serum 25-hydroxyvitamin D levels doubled within six months.",
]


def passages(n: int = 24, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        body = " ".join(rng.choice(SENTENCES) for _ in range(rng.randint(0, 7)))
        out.append(f"Study {i} > Results\n{body}".strip())
    return out


@pytest.fixture(scope="module")
def reranker() -> OnnxReranker:
    return OnnxReranker(BUNDLED_FILE)


@pytest.mark.model
def test_a_pairs_score_alone_equals_its_score_in_a_batch_of_mixed_lengths(reranker):
    # regression: dynamic int8 quantisation takes a run's activation scales from the whole
    # input tensor, padding included, so scoring the shipped file's pairs in batches moved a
    # pair's logit by up to 3 with its batch-mates
    texts = passages()
    alone = np.array([reranker.score(QUERY, [p])[0] for p in texts], dtype=np.float32)
    together = reranker.score(QUERY, texts)
    np.testing.assert_array_equal(together, alone)  # bit-identical
    mixed = reranker.score(QUERY, texts[::2] + passages(9, seed=1))[:len(texts[::2])]
    np.testing.assert_array_equal(mixed, alone[::2])
    # the check above catches a batch-dependent implementation: the same file forced into
    # batches of 16 moves the logits
    batched = OnnxReranker(BUNDLED_FILE)
    batched.batch_size = 16
    assert np.abs(batched.score(QUERY, texts) - alone).max() > 1e-3


@pytest.mark.model
def test_scores_keep_the_input_order(reranker):
    texts = passages(20, seed=2)
    scores = reranker.score(QUERY, texts)
    assert scores.dtype == np.float32 and scores.shape == (20,)
    perm = list(range(20))
    random.Random(3).shuffle(perm)
    np.testing.assert_array_equal(reranker.score(QUERY, [texts[i] for i in perm]), scores[perm])
    # the relevant passage outranks the off-topic one wherever each stands
    pair = [SENTENCES[5], SENTENCES[0]]
    s = reranker.score(QUERY, pair)
    assert s[1] > s[0]
    assert reranker.score(QUERY, []).shape == (0,)


@pytest.mark.model
def test_pair_parallel_runs_give_the_logits_of_one_thread(reranker):
    # issue 26, item 4: with 2 threads the single-pair runs of the int8 file go on two Python
    # threads at once (one ONNX Runtime thread each); each pair's logit must be exactly the
    # one computed alone on one thread, in the input order
    one = OnnxReranker(BUNDLED_FILE, threads=1)
    two = OnnxReranker(BUNDLED_FILE, threads=2)
    assert one.parallel == 1 and one._pool is None
    assert two.parallel == 2 and len(two._pool._threads) == 0
    texts = passages(24, seed=4)
    np.testing.assert_array_equal(two.score(QUERY, texts), one.score(QUERY, texts))
    assert len(two._pool._threads) == 2  # the runs went on the two worker threads


def test_length_batches_group_similar_lengths_with_little_padding():
    lengths = [50, 12, 180, 13, 52, 175, 12, 90]
    batches = length_batches(lengths, batch_size=16)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        longest, real = max(lengths[i] for i in b), sum(lengths[i] for i in b)
        assert len(b) * longest <= 1.1 * real  # at most 10 % padding
    assert [lengths[i] for i in batches[0]] == [12, 12, 13]  # shortest first, input order
    assert all(len(b) <= 2 for b in length_batches(lengths, batch_size=2))
    assert length_batches([100] * 10, batch_size=16, max_tokens=300) == [
        [0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert length_batches([], batch_size=4) == []
    assert length_batches([5, 9], batch_size=1) == [[0], [1]]


def _dequantized(src, out) -> None:
    """The shipped graph with its int8 weights turned back to float32 (``MatMulInteger`` and
    its dynamic quantisation replaced by ``MatMul``): a batchable file for the batched path."""
    onnx = pytest.importorskip("onnx")
    from onnx import helper, numpy_helper

    model = onnx.load(str(src))
    g = model.graph
    consts = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    consts |= {n.output[0]: numpy_helper.to_array(n.attribute[0].t)
               for n in g.node if n.op_type == "Constant"}
    users: dict[str, list] = {}
    for n in g.node:
        for i in n.input:
            users.setdefault(i, []).append(n)
    dql = {n.output[0]: n for n in g.node if n.op_type == "DynamicQuantizeLinear"}
    drop, repl = {id(d) for d in dql.values()}, {}
    for n in [n for n in g.node if n.op_type == "MatMulInteger"]:
        q = dql[n.input[0]]
        cast = users[n.output[0]][0]
        mul = users[cast.output[0]][0]
        scales = next(p for p in g.node if p.op_type == "Mul" and p.output[0] in mul.input)
        w_scale = consts[next(i for i in scales.input if i not in q.output)]
        w = (consts[n.input[1]].astype(np.float32) - consts[n.input[3]]) * w_scale
        g.initializer.append(numpy_helper.from_array(w.astype(np.float32), n.name + "_w"))
        repl[id(mul)] = helper.make_node("MatMul", [q.input[0], n.name + "_w"], [mul.output[0]])
        drop |= {id(n), id(cast), id(scales)}
    nodes = [repl.get(id(n), n) for n in g.node if id(n) not in drop]
    del g.node[:]
    g.node.extend(nodes)
    props = {p.key: p.value for p in model.metadata_props if p.key != "citewise.quantization"}
    del model.metadata_props[:]
    onnx.helper.set_model_props(model, props)
    onnx.save(model, str(out))


@pytest.mark.model
def test_a_float_file_is_scored_in_length_batches_that_do_not_change_its_scores(tmp_path):
    path = tmp_path / "reranker.fp32.onnx"
    _dequantized(BUNDLED_FILE, path)
    fp32 = OnnxReranker(path, batch_size=8)
    assert fp32.parallel == 1  # batched on intra-op threads, not pair-parallel
    assert not fp32.quantized and fp32.batch_size == 8
    texts = passages()
    alone = np.array([fp32.score(QUERY, [p])[0] for p in texts])
    together = fp32.score(QUERY, texts)
    # padding changes only the float rounding of the masked attention
    np.testing.assert_allclose(together, alone, atol=1e-4)
    reverse = fp32.score(QUERY, texts[::-1])[::-1]
    np.testing.assert_allclose(reverse, together, atol=1e-4)


def _offsets(text: str) -> list[tuple[int, int]]:
    out, pos = [], 0
    for word in text.split():
        start = text.index(word, pos)
        out.append((start, start + len(word)))
        pos = start + len(word)
    return out


def test_best_window_is_the_first_unless_a_later_one_holds_more_question_terms():
    filler = " ".join(f"filler{i}" for i in range(150))
    tail = "vitamin supplementation reduced fractures in older adults"
    texts, owner, _ = passage_windows(10, [f"Trial\n{filler} {tail}", f"Trial\n{filler}",
                                           "Trial\nshort vitamin"], _offsets, 128)
    assert owner.count(0) > 1 and owner.count(1) > 1
    keep = best_windows(QUERY, texts, owner)
    assert [owner[i] for i in keep] == [0, 1, 2]  # one window per passage, in order
    assert tail in texts[keep[0]]  # the window holding the question's terms
    assert keep[1] == owner.index(1)  # nothing better than the first window: the first


@pytest.mark.model
def test_best_window_scores_one_run_per_passage(reranker):
    best = OnnxReranker(BUNDLED_FILE, windows="best")
    long_passage = "Trial > Results\n" + " ".join(SENTENCES * 6)
    texts = passages(6) + [long_passage]
    all_windows = reranker.score(QUERY, texts)
    one = best.score(QUERY, texts)
    np.testing.assert_array_equal(one[:-1], all_windows[:-1])  # short passages: unchanged
    assert one[-1] <= all_windows[-1]  # one window of the ones whose best is kept
    with pytest.raises(ConfigError, match="CITEWISE_RERANK_WINDOWS"):
        load_reranker(str(BUNDLED_FILE), windows="some")
