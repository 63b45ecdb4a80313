import pytest

from citewise.config import Fusion
from citewise.retrieve.fusion import combine_and_dedup, fuse, rrf, weighted
from citewise.types import Hit


def hits(*pairs):
    return [Hit(chunk_id=c, score=s) for c, s in pairs]


DENSE = hits(("a", 0.9), ("b", 0.8), ("c", 0.1))
SPARSE = hits(("c", 12.0), ("d", 6.0), ("a", 3.0))


def test_rrf_matches_the_formula():
    out = {h.chunk_id: h.fused for h in rrf(DENSE, SPARSE, k=60)}
    assert out["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert out["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert out["b"] == pytest.approx(1 / 62)
    assert out["d"] == pytest.approx(1 / 62)


def test_weighted_min_max_with_alpha_as_bm25_weight():
    out = {h.chunk_id: h.fused for h in weighted(DENSE, SPARSE, alpha=0.4)}
    # dense min-max: a=1, b=0.875, c=0; sparse: c=1, d=1/3, a=0
    assert out["a"] == pytest.approx(0.6 * 1.0 + 0.4 * 0.0)
    assert out["b"] == pytest.approx(0.6 * 0.875)
    assert out["c"] == pytest.approx(0.4 * 1.0)
    assert out["d"] == pytest.approx(0.4 * (6 - 3) / (12 - 3))
    assert weighted(DENSE, SPARSE, alpha=1.0)[0].chunk_id == "c"
    assert weighted(DENSE, SPARSE, alpha=0.0)[0].chunk_id == "a"


def test_combine_and_dedup_tags_sources_and_dedups():
    out = combine_and_dedup(DENSE, SPARSE)
    assert len(out) == 4
    source = {h.chunk_id: h.source for h in out}
    assert source == {"a": "hybrid", "b": "dense", "c": "hybrid", "d": "sparse"}
    assert {h.chunk_id for h in out[:2]} == {"a", "c"}  # found by both legs first
    both = {h.chunk_id: h for h in out}["a"]
    assert both.dense == 0.9 and both.sparse == 3.0


def test_fuse_rejects_unknown_strategy_listing_valid_ones():
    with pytest.raises(ValueError, match="combine_and_dedup, rrf, weighted"):
        fuse("borda", DENSE, SPARSE)


@pytest.mark.parametrize("strategy", list(Fusion))
def test_every_strategy_handles_empty_legs(strategy):
    assert fuse(strategy, [], []) == []
    assert [h.chunk_id for h in fuse(strategy, DENSE, [])][:1] == ["a"]
    assert [h.chunk_id for h in fuse(strategy, [], SPARSE)][:1] == ["c"]


def test_weighted_rejects_alpha_out_of_range():
    with pytest.raises(ValueError, match="alpha"):
        weighted(DENSE, SPARSE, alpha=1.5)
