"""Retrieval evaluation: BEIR-format datasets and trec_eval-compatible ranking metrics."""

from citewise.eval.datasets import BeirDataset, BeirDoc, load_beir, subset
from citewise.eval.metrics import (
    Metric,
    evaluate,
    evaluate_per_query,
    hit_at_k,
    mrr_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
)

__all__ = [
    "BeirDataset",
    "BeirDoc",
    "Metric",
    "evaluate",
    "evaluate_per_query",
    "hit_at_k",
    "load_beir",
    "mrr_at_k",
    "ndcg_at_k",
    "precision_at_k",
    "recall_at_k",
    "subset",
]
