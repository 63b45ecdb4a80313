"""Weighted fusion takes the BM25 weight of the question's language (``alpha_by_language``),
else ``alpha`` (issue 23, item 6)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from pydantic import ValidationError

from citewise.config import Settings
from citewise.retrieve.fusion import weighted
from citewise.text.language import detect_language

KK_DOCS = {
    "shainek.md": "# Шәйнек\n\nК2 шәйнегінің кепілдігі сатып алған күннен бастап екі жыл. "
                  "Су қайнағанда шәйнек өзі сөнеді.\n",
    "toster.md": "# Тостер\n\nТ1 тостерінің қуыру деңгейі жетеу және үгінділерге арналған "
                 "алынбалы науасы бар.\n",
    "plita.md": "# Плита\n\nИндукциялық плита тек магниттік түбі бар ыдысты қыздырады; плитаның "
                "кепілдігі бес жыл.\n",
    "kettle.md": "# Kettle\n\nThe K2 kettle switches itself off when the water boils. Its "
                 "warranty lasts two years from the date of purchase.\n",
}
KK_QUESTION = "Плитаның кепілдігі қанша жыл?"
EN_QUESTION = "How long is the kettle warranty?"


def fused_scores(engine, question: str, alpha: float) -> tuple[dict[str, float], dict[str, float]]:  # type: ignore[no-untyped-def]
    """(the pipeline's fused score per chunk, the fused scores of its two legs at ``alpha``)."""
    r = engine.retriever
    # each leg alone, with its own score (``fused`` of a one-leg search; ``score`` is blended)
    dense, sparse = ([replace(h, score=h.fused) for h in r.rank(question, mode=m, rerank=False)]
                     for m in ("dense", "sparse"))
    used = {h.chunk_id: h.fused for h in r.rank(question, rerank=False)}
    return used, {h.chunk_id: h.fused for h in weighted(dense, sparse, alpha=alpha)}


def test_a_kazakh_question_is_fused_with_the_kazakh_weight(make_engine, tmp_path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in KK_DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    # the gate off so that minilm's dense leg is fused for Kazakh, as e5's is by default
    engine = make_engine(dense_language_gate=False, language_routing=False,
                         alpha_by_language={"kk": 0.9})
    engine.ingest([folder])
    assert detect_language(KK_QUESTION) == "kk" and detect_language(EN_QUESTION) == "en"
    assert engine.settings.alpha_for("kk") == 0.9 and engine.settings.alpha_for("en") == 0.4

    used, at_kk = fused_scores(engine, KK_QUESTION, 0.9)
    _, at_default = fused_scores(engine, KK_QUESTION, 0.4)
    assert len(used) >= 3 and used == pytest.approx(at_kk)
    assert used != pytest.approx(at_default)  # the weight made a difference here
    assert engine.search(KK_QUESTION, top_k=1).hits[0].document.path.endswith("plita.md")

    used, at_default = fused_scores(engine, EN_QUESTION, 0.4)  # English keeps alpha
    _, at_kk = fused_scores(engine, EN_QUESTION, 0.9)
    assert used == pytest.approx(at_default) and used != pytest.approx(at_kk)


def test_the_kazakh_default_weight_comes_from_the_setting() -> None:
    # chosen on KazQAD's dev half (docs/benchmarks.md, Fusion weight per language)
    assert Settings().alpha_by_language == {"kk": 0.8, "ru": 0.6}
    assert Settings().alpha_for("kk") == 0.8 and Settings().alpha_for("ru") == 0.6
    assert Settings().alpha_for("zh") == 0.4
    assert Settings().alpha_for("en") == Settings().alpha == 0.4
    assert Settings().alpha_for("") == 0.4  # an undetermined question
    assert Settings(alpha_by_language='{"KK": 1}').alpha_by_language == {"kk": 1.0}
    assert Settings(alpha_by_language={}).alpha_for("kk") == 0.4


@pytest.mark.parametrize(("given", "named"), [
    ('{"xx": 0.5}', "unknown language code 'xx'"),
    ('{"kk": 1.5}', "BM25 weight of 'kk' must be a number in \\[0, 1\\], got 1.5"),
    ('{"kk": "high"}', "BM25 weight of 'kk'"),
    ('["kk"]', "JSON object"),
    ("{kk: 1}", "JSON object"),
])
def test_a_bad_weight_is_refused_with_the_field_named(given: str, named: str) -> None:
    with pytest.raises(ValidationError, match=named) as err:
        Settings(alpha_by_language=given)
    assert "alpha_by_language" in str(err.value)
