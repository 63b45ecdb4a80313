"""Cross-language questions (issue 23, item 6): a question in a language the index holds little
of is fused with ``cross_language_alpha``, a multilingual model (``use``) finds the passage
across languages, and an English-only model's answer carries a notice naming the fix."""

from __future__ import annotations

from dataclasses import replace

import pytest

from citewise.config import CROSS_LANGUAGE_ALPHA, Settings
from citewise.retrieve.fusion import weighted
from citewise.text.language import detect_language
from citewise.types import StatusEvent

EN_DOCS = {
    "kettle.md": "# Kettle\n\nThe K2 kettle switches itself off when the water boils. Its "
    "warranty lasts two years from the date of purchase.\n",
    "toaster.md": "# Toaster\n\nThe T1 toaster has seven browning levels and a removable crumb "
    "tray that should be emptied every week.\n",
    "stove.md": "# Stove\n\nThe induction stove heats only pans with a magnetic base. The "
    "stove's warranty is five years.\n",
    "bicycle.md": "# Bicycle\n\nCheck the tyre pressure of the city bicycle once a month and "
    "oil the chain after riding in the rain.\n",
}
RU_QUESTION = "Сколько уровней обжарки у тостера?"  # answered by toaster.md
ZH_QUESTION = "自行车的轮胎气压多久检查一次？"  # answered by bicycle.md


@pytest.fixture
def use_engine(make_engine, tmp_path):  # type: ignore[no-untyped-def]
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in EN_DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    engine = make_engine(embedding_model="use", language_routing=False, cross_language_alpha=0.1)
    engine.ingest([folder])
    return engine


def fused_scores(engine, question: str, alpha: float) -> tuple[dict[str, float], dict[str, float]]:  # type: ignore[no-untyped-def]
    """(the pipeline's fused score per chunk, the fused scores of its two legs at ``alpha``)."""
    r = engine.retriever
    dense, sparse = (
        [replace(h, score=h.fused) for h in r.rank(question, mode=m, rerank=False)]
        for m in ("dense", "sparse")
    )
    used = {h.chunk_id: h.fused for h in r.rank(question, rerank=False)}
    return used, {h.chunk_id: h.fused for h in weighted(dense, sparse, alpha=alpha)}


def test_a_russian_question_finds_the_english_passage_with_use(use_engine) -> None:
    assert detect_language(RU_QUESTION) == "ru" and detect_language(ZH_QUESTION) == "zh"
    hits = use_engine.search(RU_QUESTION, top_k=1).hits
    assert hits and hits[0].document.path.endswith("toaster.md")
    hits = use_engine.search(ZH_QUESTION, top_k=1).hits
    assert hits and hits[0].document.path.endswith("bicycle.md")


def test_a_cross_language_question_is_fused_with_the_cross_language_weight(use_engine) -> None:
    r = use_engine.retriever
    assert r.cross_language("ru") and r.cross_language("zh") and not r.cross_language("en")
    # an undetermined question (a bare identifier)
    assert not r.cross_language("und") and not r.cross_language("")
    # ru has its own weight (0.6); the cross-language one (0.1 here) replaces it
    assert use_engine.settings.alpha_for("ru") == 0.6
    question = "Сколько лет гарантия на K2?"  # "K2" is a BM25 match, so both legs count
    used, at_cross = fused_scores(use_engine, question, 0.1)
    _, at_ru = fused_scores(use_engine, question, 0.6)
    assert len(used) >= 3 and used == pytest.approx(at_cross)
    assert used != pytest.approx(at_ru)
    # an English question over English documents keeps alpha
    used, at_default = fused_scores(use_engine, "How long is the stove warranty?", 0.4)
    _, at_cross = fused_scores(use_engine, "How long is the stove warranty?", 0.1)
    assert used == pytest.approx(at_default) and used != pytest.approx(at_cross)


def test_the_cross_language_default_comes_from_the_setting() -> None:
    # chosen on the XQuAD dev halves (docs/benchmarks.md, Cross-language questions)
    assert Settings().cross_language_alpha == CROSS_LANGUAGE_ALPHA == 0.0
    assert Settings(cross_language_alpha="0.7").cross_language_alpha == 0.7
    with pytest.raises(ValueError, match="cross_language_alpha"):
        Settings(cross_language_alpha=1.5)


def test_an_english_only_model_answers_a_russian_question_with_a_notice(
    make_engine, tmp_path
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in EN_DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    engine = make_engine(abstain=False, min_score=0.0)  # minilm, English only
    engine.ingest([folder])
    question = "Сколько лет гарантия на K2?"
    # minilm cannot match Russian to English: no cross-language weight, ru keeps its own
    assert not engine.retriever.cross_language("ru")
    used, at_ru = fused_scores(engine, question, 0.6)
    assert used == pytest.approx(at_ru)
    events = list(engine.ask_stream(question, extractive=True))
    notices = [e.message for e in events if isinstance(e, StatusEvent) and e.stage == "notice"]
    assert len(notices) == 1
    assert "Russian" in notices[0] or "русск" in notices[0].lower()
    assert "CITEWISE_EMBEDDING_MODEL=e5" in notices[0]
    # an English question gets no such notice
    events = list(engine.ask_stream("How long is the K2 kettle warranty?", extractive=True))
    assert not [e for e in events if isinstance(e, StatusEvent) and e.stage == "notice"]
