"""A question in a language the embedding model was not trained on is ranked by BM25 alone."""

from __future__ import annotations

from citewise.embed import Embedder

RU_DOCS = {
    "chai.md": "# Чайник\n\nГарантия на чайник К2 составляет два года с даты покупки. "
               "Чайник выключается сам, когда вода закипает.\n",
    "toster.md": "# Тостер\n\nТостер Т1 имеет семь уровней обжаривания и съёмный поддон для "
                 "крошек.\n",
    "plita.md": "# Плита\n\nИндукционная плита нагревает только посуду с магнитным дном; "
                "гарантия на плиту составляет пять лет.\n",
    "kettle.md": "# Kettle\n\nThe K2 kettle switches itself off when the water boils.\n",
}


def test_models_know_their_languages(embedder: Embedder) -> None:
    assert embedder.family == "minilm"
    assert embedder.models_language("en")
    assert not embedder.models_language("ru") and not embedder.models_language("kk")
    assert embedder.models_language("")  # undetermined: a bare identifier


def test_a_russian_question_over_minilm_is_ranked_by_bm25(make_engine, tmp_path) -> None:
    """Before, the English-only dense leg's near-random cosines were fused with BM25 for a
    Russian question (XQuAD-ru nDCG@10 0.622 fused against 0.950 for BM25 alone)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in RU_DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    gated = make_engine()
    gated.ingest([folder])
    question = "Сколько лет гарантия на плиту?"
    sparse = [h.chunk_id for h in gated.search(question, mode="sparse", top_k=4).hits]
    hybrid = gated.search(question, top_k=4).hits
    assert [h.chunk_id for h in hybrid] == sparse
    assert hybrid[0].document.path.endswith("plita.md")
    assert all(h.dense is None for h in hybrid)  # no cosine was fused
    # with the gate off the dense leg is fused again
    fused = make_engine(dense_language_gate=False).search(question, top_k=4).hits
    assert any(h.dense is not None for h in fused)
    # an English question keeps the hybrid search
    english = gated.search("When does the kettle switch off?", top_k=2).hits
    assert english[0].document.path.endswith("kettle.md") and english[0].dense is not None


def test_a_question_bm25_cannot_match_falls_back_to_the_hybrid_search(make_engine,
                                                                      tmp_path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in RU_DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    engine = make_engine(min_score=0.0)
    engine.ingest([folder])
    question = "Что будет, если уронить устройство?"
    assert engine.search(question, mode="sparse").hits == []  # no word of it is indexed
    hits = engine.search(question, top_k=2).hits
    assert hits and hits[0].dense is not None


def test_a_question_in_a_language_the_index_barely_holds_keeps_the_dense_leg(
        make_engine, tmp_path) -> None:
    """A cross-language question (Russian over English documents): BM25 alone cannot match
    it, so the hybrid search runs as before."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "kettle.md").write_text(RU_DOCS["kettle.md"], encoding="utf-8")
    engine = make_engine(min_score=0.0)
    engine.ingest([folder])
    assert engine.retriever.dense_models("ru")
    hits = engine.search("Когда выключается чайник K2?", top_k=2).hits
    assert hits and hits[0].document.path.endswith("kettle.md")
    assert hits[0].dense is not None


def test_a_declined_question_in_a_language_the_index_lacks_names_the_multilingual_model(
        make_engine, tmp_path) -> None:
    """A newcomer's Russian question over the English docs got a bare "not found": nothing
    said that the English-only embedding model cannot match it across languages."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "kettle.md").write_text(RU_DOCS["kettle.md"], encoding="utf-8")
    engine = make_engine()
    engine.ingest([folder])
    answer = engine.ask("Сколько стоит доставка в Казань?", extractive=True)
    assert not answer.found and engine.settings.embedding_model == "minilm"
    # the setting's name, not the runtime's "minilm-int8" (a newcomer could not find it)
    # in the question's language (a newcomer's Russian question got an English reply)
    assert answer.text.startswith("В документах нет ответа на этот вопрос.")
    assert answer.text.endswith(
        "Вопрос задан на русском языке: текстов на нём в индексе мало, а модель эмбеддингов "
        "(minilm) его не понимает. Чтобы спрашивать не на языке документов, задайте "
        "CITEWISE_EMBEDDING_MODEL=e5 и выполните citewise reindex.")
    # an English question declined over the same index gets no such hint
    english = engine.ask("How much does delivery to Kazan cost?", extractive=True)
    assert not english.found and "CITEWISE_EMBEDDING_MODEL" not in english.text
