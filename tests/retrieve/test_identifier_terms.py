"""A question naming an identifier the index holds whole searches for it, not its parts."""

from __future__ import annotations

from citewise.text.analysis import identifier_parts, tokenize, without_known_parts


def test_identifier_parts_are_mapped_to_their_identifier() -> None:
    assert identifier_parts("What is the default top_k?") == {"top_k": ["top", "k"]}
    assert identifier_parts("Is HTTPServer used?") == {"httpserver": ["http", "server"]}
    # plain words, dotted paths (their definition names the last part) and contractions
    assert identifier_parts("How does click.edit find the editor? I don't know") == {}


def test_known_identifiers_lose_their_parts_once() -> None:
    question = "CITEWISE_TOP_K and the top results"
    terms = tokenize(question)
    assert terms == ["citewis", "top", "k", "citewise_top_k", "top", "result"]
    parts = identifier_parts(question)
    # the "top" said on its own stays
    assert without_known_parts(terms, parts, lambda t: True) == ["citewise_top_k", "top",
                                                                 "result"]
    # an identifier the index does not hold keeps its parts: they may meet "top k" apart
    assert without_known_parts(terms, parts, lambda t: False) == terms


def test_a_setting_named_in_the_question_beats_chunks_sharing_its_parts(make_engine,
                                                                         tmp_path) -> None:
    """Seen on citewise's own docs: "What is the default top_k?" was answered "60" from a
    short chunk on rrf_k ("defaults to 60 ... top ranks ... a larger k"): the parts "top" and
    "k" of top_k scored it above the chunks that name top_k."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "fusion.md").write_text(
        "# Fusion\n\nrrf_k is the RRF constant and defaults to 60. A larger k flattens the "
        "difference between top ranks.\n", encoding="utf-8")
    (folder / "results.md").write_text(
        "# How many results\n\nThe number of passages used as evidence and listed as "
        "sources is set by top_k, whose default is 5; it can be raised for long documents "
        "that hold many answers, and every command that searches accepts it as an option "
        "for one run, so a single question can read more of the collection than usual. "
        "Passages are sentences or runs of adjacent sentences, chosen from a wider pool of "
        "chunks with a cap per file, so several sources may come from one file. Raise the "
        "cap when one long document holds most answers, and lower it when answers should "
        "come from different files; the relevance floor still applies to every passage.\n",
        encoding="utf-8")
    (folder / "other.md").write_text(
        "# Other\n\nThe top of the page lists k examples of settings.\n", encoding="utf-8")
    engine = make_engine()
    engine.ingest([folder])
    hits = engine.search("What is the default top_k?", mode="sparse", top_k=3).hits
    assert hits[0].document.path.endswith("results.md")
    assert engine.retriever.query_terms("What is the default top_k?", "en") == [
        "what", "default", "top_k"]
