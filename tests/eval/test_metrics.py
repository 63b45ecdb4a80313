"""Ranking metrics: hand-computed values, edge cases, and a check against pytrec_eval."""

from __future__ import annotations

import math
import random

import pytest

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

LOG2_3 = 1.584962500721156  # log2(3), the discount at rank 2
LOG2_5 = 2.321928094887362  # log2(5), the discount at rank 4

ALL_METRICS = [ndcg_at_k, recall_at_k, precision_at_k, mrr_at_k, hit_at_k]


# --- nDCG, written out by hand --------------------------------------------------------------


def test_ndcg_graded_by_hand() -> None:
    # Ranked grades [3, 2, 0, 1]; gain = grade, discount = log2(rank + 1).
    qrels = {"a": 3, "b": 2, "c": 0, "d": 1}
    ranking = ["a", "b", "c", "d"]
    dcg4 = 3 / 1 + 2 / LOG2_3 + 0 / 2 + 1 / LOG2_5  # 4.692536...
    idcg4 = 3 / 1 + 2 / LOG2_3 + 1 / 2  # ideal order [3, 2, 1]: 4.761859...
    assert ndcg_at_k(ranking, qrels, 4) == pytest.approx(dcg4 / idcg4)
    assert ndcg_at_k(ranking, qrels, 4) == pytest.approx(0.985442, abs=1e-6)
    # At k = 3 the ideal still holds the grade-1 document at rank 3.
    assert ndcg_at_k(ranking, qrels, 3) == pytest.approx((3 + 2 / LOG2_3) / idcg4)
    # At k = 2 the ranking is ideal.
    assert ndcg_at_k(ranking, qrels, 2) == pytest.approx(1.0)


def test_ndcg_uses_linear_gain_not_exponential() -> None:
    qrels = {"lo": 1, "hi": 2}
    linear = (1 + 2 / LOG2_3) / (2 + 1 / LOG2_3)  # 0.859753...
    exponential = (1 + 3 / LOG2_3) / (3 + 1 / LOG2_3)  # 2**rel - 1: 0.796...
    value = ndcg_at_k(["lo", "hi"], qrels, 10)
    assert value == pytest.approx(linear)
    assert value != pytest.approx(exponential)


def test_ndcg_ideal_counts_unretrieved_relevant_docs() -> None:
    # "b" is relevant but never retrieved: IDCG still includes it.
    qrels = {"a": 1, "b": 1}
    assert ndcg_at_k(["x", "a"], qrels, 10) == pytest.approx((1 / LOG2_3) / (1 + 1 / LOG2_3))


def test_ndcg_ideal_is_cut_at_k() -> None:
    # Three relevant documents but k = 1: the ideal is one document, so a hit at 1 is perfect.
    qrels = {"a": 1, "b": 1, "c": 1}
    assert ndcg_at_k(["a", "x"], qrels, 1) == 1.0


def test_negative_and_zero_grades_are_non_relevant() -> None:
    qrels = {"neg": -1, "zero": 0, "rel": 1}
    assert ndcg_at_k(["neg", "zero", "rel"], qrels, 3) == pytest.approx(0.5)  # 1 / log2(4)
    assert precision_at_k(["neg", "zero", "rel"], qrels, 3) == pytest.approx(1 / 3)
    assert mrr_at_k(["neg", "zero", "rel"], qrels, 3) == pytest.approx(1 / 3)
    assert recall_at_k(["neg", "zero"], qrels, 10) == 0.0


# --- recall, precision, MRR, hit ------------------------------------------------------------


def test_recall_precision_mrr_hit_by_hand() -> None:
    qrels = {"r1": 1, "r2": 2, "r3": 1, "r4": 1, "n": 0}
    ranking = ["x", "n", "r2", "y", "r4", "r1"]
    assert recall_at_k(ranking, qrels, 5) == pytest.approx(2 / 4)
    assert recall_at_k(ranking, qrels, 6) == pytest.approx(3 / 4)
    assert precision_at_k(ranking, qrels, 5) == pytest.approx(2 / 5)
    assert mrr_at_k(ranking, qrels, 10) == pytest.approx(1 / 3)
    assert mrr_at_k(ranking, qrels, 2) == 0.0
    assert hit_at_k(ranking, qrels, 3) == 1.0
    assert hit_at_k(ranking, qrels, 2) == 0.0


def test_k_larger_than_ranking() -> None:
    qrels = {"a": 1, "b": 1}
    ranking = ["a", "x", "b"]
    assert recall_at_k(ranking, qrels, 100) == 1.0
    assert precision_at_k(ranking, qrels, 10) == pytest.approx(2 / 10)  # divides by k
    assert ndcg_at_k(ranking, qrels, 100) == pytest.approx((1 + 1 / 2) / (1 + 1 / LOG2_3))
    assert mrr_at_k(ranking, qrels, 100) == 1.0
    assert hit_at_k(ranking, qrels, 100) == 1.0


@pytest.mark.parametrize("metric", ALL_METRICS)
def test_perfect_ranking_scores_one(metric) -> None:
    qrels = {"a": 3, "b": 2, "c": 1, "n": 0}
    value = metric(["a", "b", "c", "n"], qrels, 3)
    assert value == pytest.approx(1.0)


@pytest.mark.parametrize("metric", ALL_METRICS)
def test_no_relevant_retrieved_scores_zero(metric) -> None:
    qrels = {"a": 1, "n": 0}
    assert metric(["n", "x", "y"], qrels, 10) == 0.0
    assert metric([], qrels, 10) == 0.0


@pytest.mark.parametrize("metric", ALL_METRICS)
def test_query_without_relevant_docs_scores_zero(metric) -> None:
    assert metric(["a", "b"], {"a": 0}, 10) == 0.0
    assert metric(["a", "b"], {}, 10) == 0.0


@pytest.mark.parametrize("metric", ALL_METRICS)
@pytest.mark.parametrize("k", [0, -1])
def test_k_below_one_is_an_error(metric, k) -> None:
    with pytest.raises(ValueError, match="k must be"):
        metric(["a"], {"a": 1}, k)


def test_non_integer_k_is_an_error() -> None:
    with pytest.raises(TypeError):
        ndcg_at_k(["a"], {"a": 1}, 1.5)  # type: ignore[arg-type]


# --- duplicates: only the first occurrence counts, repeats do not take a slot --------------


def test_duplicate_relevant_doc_counts_once() -> None:
    qrels = {"a": 1, "b": 1}
    ranking = ["a", "a", "a"]
    assert recall_at_k(ranking, qrels, 3) == pytest.approx(0.5)
    assert precision_at_k(ranking, qrels, 3) == pytest.approx(1 / 3)
    assert ndcg_at_k(ranking, qrels, 3) == pytest.approx(1 / (1 + 1 / LOG2_3))


def test_duplicates_are_dropped_before_the_cutoff() -> None:
    qrels = {"a": 1, "b": 1}
    # Distinct ranking: [a, b]; the repeated "a" does not push "b" out of the top 2.
    assert recall_at_k(["a", "a", "b"], qrels, 2) == 1.0
    assert ndcg_at_k(["a", "a", "b"], qrels, 2) == pytest.approx(1.0)
    # Distinct ranking: [x, a]; "a" is at rank 2, not 3.
    assert mrr_at_k(["x", "x", "a"], qrels, 2) == pytest.approx(1 / 2)


def test_functions_accept_any_sequence() -> None:
    qrels = {"a": 1}
    assert ndcg_at_k(("x", "a"), qrels, 10) == ndcg_at_k(["x", "a"], qrels, 10)


# --- evaluate -------------------------------------------------------------------------------


def test_evaluate_keys_and_means() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 2, "c": 1}}
    run = {"q1": ["a", "x"], "q2": ["x", "c"]}
    result = evaluate(run, qrels, ks=(1, 10))
    assert set(result) == {
        f"{m}@{k}" for m in ("nDCG", "recall", "P", "MRR", "hit") for k in (1, 10)
    }
    assert result["MRR@10"] == pytest.approx((1 + 1 / 2) / 2)
    assert result["hit@1"] == pytest.approx(0.5)
    assert result["recall@10"] == pytest.approx((1 + 1 / 2) / 2)
    q2_ndcg = (1 / LOG2_3) / (2 + 1 / LOG2_3)
    assert result["nDCG@10"] == pytest.approx((1 + q2_ndcg) / 2)
    assert result["P@1"] == pytest.approx(0.5)


def test_evaluate_default_ks() -> None:
    result = evaluate({"q": ["a"]}, {"q": {"a": 1}})
    assert {"nDCG@10", "recall@100", "MRR@10", "hit@10", "P@10"} <= set(result)


def test_evaluate_query_missing_from_run_counts_as_zero() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    result = evaluate({"q1": ["a"]}, qrels, ks=(10,))
    assert result["nDCG@10"] == pytest.approx(0.5)
    assert result["hit@10"] == pytest.approx(0.5)


def test_evaluate_skips_queries_without_relevant_docs_and_unjudged_run_queries() -> None:
    qrels = {"q1": {"a": 1}, "q_none": {"b": 0, "c": -1}}
    run = {"q1": ["a"], "q_none": ["b"], "q_unjudged": ["z"]}
    assert evaluate(run, qrels, ks=(10,))["nDCG@10"] == 1.0
    assert set(evaluate_per_query(run, qrels, ks=(10,))) == {"q1"}


def test_evaluate_selected_metrics() -> None:
    result = evaluate({"q": ["a"]}, {"q": {"a": 1}}, ks=(5,), metrics=["ndcg", Metric.MRR])
    assert result == {"nDCG@5": 1.0, "MRR@5": 1.0}


def test_evaluate_errors() -> None:
    with pytest.raises(ValueError, match="k must be"):
        evaluate({"q": ["a"]}, {"q": {"a": 1}}, ks=(10, 0))
    with pytest.raises(ValueError, match="at least one cutoff"):
        evaluate({"q": ["a"]}, {"q": {"a": 1}}, ks=())
    with pytest.raises(ValueError, match="valid metrics: nDCG, recall, P, MRR, hit"):
        evaluate({"q": ["a"]}, {"q": {"a": 1}}, metrics=["map"])
    with pytest.raises(ValueError, match="nothing to evaluate"):
        evaluate({"q": ["a"]}, {"q": {"a": 0}})


def test_evaluate_accepts_generator_ks() -> None:
    result = evaluate({"q": ["a"]}, {"q": {"a": 1}}, ks=(k for k in (1, 3)))
    assert "nDCG@3" in result


# --- against pytrec_eval (trec_eval), the reference BEIR and MTEB use -----------------------


def _random_collection(seed: int, n_queries: int = 50):
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(400)]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, list[str]] = {}
    for q in range(n_queries):
        qid = f"q{q}"
        judged = rng.sample(docs, rng.randint(1, 12))
        qrels[qid] = {d: rng.choice([-1, 0, 1, 1, 2, 3]) for d in judged}
        length = rng.choice([0, 3, 10, 60, 150])
        if length == 0:
            continue  # the query is missing from the run
        ranking = rng.sample([d for d in docs if d not in qrels[qid]], length)
        for d in judged:
            if rng.random() < 0.6:
                ranking.insert(rng.randrange(len(ranking) + 1), d)
        run[qid] = ranking
    return run, qrels


def _as_trec_run(run: dict[str, list[str]], k: int | None = None) -> dict[str, dict[str, float]]:
    # Strictly decreasing scores, so trec_eval's sort by score reproduces the given order.
    return {
        q: {d: float(len(r) - i) for i, d in enumerate(r[:k] if k else r)} for q, r in run.items()
    }


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_evaluate_matches_pytrec_eval(seed: int) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    ks = (1, 5, 10, 100)
    run, qrels = _random_collection(seed)
    cuts = ",".join(map(str, ks))
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {f"ndcg_cut.{cuts}", f"recall.{cuts}", f"P.{cuts}", f"success.{cuts}"}
    )
    reference = evaluator.evaluate(_as_trec_run(run))
    # trec_eval has no cutoff for recip_rank; BEIR's MRR@k is recip_rank on the run cut at k.
    rr_evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"})
    rr = {k: rr_evaluator.evaluate(_as_trec_run(run, k)) for k in ks}

    # pytrec_eval omits queries absent from the run (we score them 0) and keeps queries
    # without a relevant document (we skip them); align the two before comparing.
    evaluated = [q for q, judged in qrels.items() if any(g > 0 for g in judged.values())]
    assert any(q not in run for q in evaluated), "the random run should miss some queries"
    assert len(evaluated) < len(qrels), "some random queries should have no relevant doc"

    per_query = evaluate_per_query(run, qrels, ks=ks)
    assert sorted(per_query) == sorted(evaluated)
    names = {"nDCG": "ndcg_cut_{k}", "recall": "recall_{k}", "P": "P_{k}", "hit": "success_{k}"}
    expected_means: dict[str, float] = {}
    for k in ks:
        for ours, theirs in names.items():
            values = [reference.get(q, {}).get(theirs.format(k=k), 0.0) for q in evaluated]
            for q, value in zip(evaluated, values, strict=True):
                assert per_query[q][f"{ours}@{k}"] == pytest.approx(value, abs=1e-12), (q, ours, k)
            expected_means[f"{ours}@{k}"] = math.fsum(values) / len(evaluated)
        values = [rr[k].get(q, {}).get("recip_rank", 0.0) for q in evaluated]
        for q, value in zip(evaluated, values, strict=True):
            assert per_query[q][f"MRR@{k}"] == pytest.approx(value, abs=1e-12), (q, k)
        expected_means[f"MRR@{k}"] = math.fsum(values) / len(evaluated)

    result = evaluate(run, qrels, ks=ks)
    assert result.keys() == expected_means.keys()
    for label, value in expected_means.items():
        assert result[label] == pytest.approx(value, abs=1e-12), label
