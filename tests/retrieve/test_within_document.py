"""Choosing the chunk of a document that answers: the asking clause and term concentration."""

from __future__ import annotations

import json

import pytest

from citewise.retrieve.retriever import document_idf, question_clause
from tests.conftest import DATASETS


@pytest.mark.parametrize(("query", "clause"), [
    ("Consider the Supply Agreement between A Corp. and B LLC; What is the governing law?",
     "What is the governing law?"),
    ("In the kettle manual: how long is the warranty?", "how long is the warranty?"),
    ("How long is the warranty on the Model K2 kettle?",
     "How long is the warranty on the Model K2 kettle?"),
    ("Acme; why?", "Acme; why?"),  # a one-term tail is no question of its own
    # a tail without two content terms asks about the sentence before it
    ('An old file fails with "encoding could not be detected". What should I do?',
     'An old file fails with "encoding could not be detected". What should I do?'),
    ("The answer says the documents do not say. What can I try?",
     "The answer says the documents do not say. What can I try?"),
    ("合同适用哪国法律？", "合同适用哪国法律？"),
])
def test_question_clause(query: str, clause: str) -> None:
    assert question_clause(query) == clause


def test_terms_found_only_in_this_document_weigh_less() -> None:
    chunks = [frozenset({"boyd", "agreement"}), frozenset({"govern", "law", "agreement"}),
              frozenset({"agreement"}), frozenset({"boyd"})]
    plain = document_idf(chunks, ["boyd", "govern"])
    assert plain["boyd"] == pytest.approx(plain["govern"] * 0 + plain["boyd"])
    # boyd: 2 of its 2 chunks in the index are here; govern: 1 of 40
    weighted = document_idf(chunks, ["boyd", "govern"], {"boyd": 2, "govern": 40}, 0.75)
    assert weighted["boyd"] == pytest.approx(plain["boyd"] * 0.25)
    assert weighted["govern"] == pytest.approx(plain["govern"] * (1 - 0.75 / 40))


def _gold(query_id: str) -> dict:
    tests = json.loads((DATASETS / "legalbench_rag_sample" / "cuad_spans.mini.dev.json")
                       .read_text(encoding="utf-8"))["tests"]
    return next(t for t in tests if t["query_id"] == query_id)


def test_contract_questions_get_the_clause_not_the_preamble(make_engine) -> None:
    """LegalBench-RAG questions name the contract, then ask ("Consider the ... Agreement
    between X and Y; what is the governing law?"). Before the asking clause was used, the
    preamble naming the parties won inside every contract and 0 of these found the clause."""
    ids = ["cuad-0003", "cuad-1342", "cuad-1345", "cuad-1328"]
    engine = make_engine()
    files = sorted({DATASETS / "cuad" / "full_contract_txt" / s["file_path"].split("/", 1)[1]
                    for q in ids for s in _gold(q)["snippets"]})
    engine.ingest(files)
    for q in ids:
        gold = _gold(q)
        hits = engine.search(gold["query"]).hits
        spans = [(s["file_path"].split("/", 1)[1], *s["span"]) for s in gold["snippets"]]
        assert any(h.document.path.endswith(name) and h.chunk.char_start < end
                   and start < h.chunk.char_end for h in hits for name, start, end in spans), q


def test_the_words_that_ask_do_not_choose_the_chunk(make_engine, tmp_path) -> None:
    """Regression: within one document the question's "how", "do" and "I" are rare, so their
    IDF there outweighed the words asked about, and "How do I start the web chat server?"
    took a chunk of questions over the chunk saying how the server starts."""
    filler = ("Each answer cites its sources by number, and the sources open in a side panel "
              "with the cited lines marked. ")
    (tmp_path / "guide.md").write_text(
        "# Web chat guide\n\n"
        "## Questions people ask\n\n"
        "How do I start a new chat? How do I stop the web chat server when I am done? How do "
        "I rename a chat I made? I do it from the header. " + filler * 6 + "\n\n"
        "## Running the server\n\n"
        "The command citewise serve starts the web chat server on port 8765; open the page "
        "in a browser once it is running. " + filler * 6 + "\n\n"
        "## Themes\n\n"
        "The page follows the system's light or dark theme. " + filler * 6 + "\n",
        encoding="utf-8")
    # another document asks "how do I" too, so those words are not this guide's own
    (tmp_path / "printer.md").write_text(
        "# Printer help\n\nHow do I print on both sides? I do it from the print dialog. How "
        "do I start the printer server after a power cut? Start it with the power button; the "
        "server starts in a minute. How do I clean the print head? I use the cleaning page.\n",
        encoding="utf-8")
    engine = make_engine(min_score=0.0)
    engine.ingest([tmp_path / "guide.md", tmp_path / "printer.md"])
    hits = engine.search("How do I start the web chat server?", top_k=2, per_file=1,
                         filters={"paths": ["*guide.md"]}).hits
    assert hits and "citewise serve starts the web chat server" in hits[0].chunk.text, [
        h.chunk.text[:60] for h in hits]


def test_a_sparse_search_never_labels_a_hit_dense(make_engine, tmp_path) -> None:
    """Found by a newcomer: ``citewise search --mode sparse`` listed chunks the within-document
    step chose (not BM25 candidates themselves) as ``source: "dense"``. They carry the leg
    that found their document."""
    sections = "".join(
        f"## Part {i}\n\nThe lighthouse keeper logs the lamp's hours in part {i}. "
        + "Ships pass the headland at dawn and at dusk. " * 8 + "\n\n" for i in range(6))
    (tmp_path / "lighthouse.md").write_text("# Lighthouse log\n\n" + sections +
                                            "## Relief\n\nThe relief keeper arrives by boat "
                                            "every second Tuesday.\n", encoding="utf-8")
    (tmp_path / "harbour.md").write_text("# Harbour\n\nThe harbour master keeps the lamp "
                                         "hours for the quay.\n", encoding="utf-8")
    engine = make_engine(min_score=0.0)
    engine.ingest([tmp_path / "lighthouse.md", tmp_path / "harbour.md"])
    # only the last section holds "relief", "boat" or "Tuesday": the step fills the file's
    # other places with its chunks of no BM25 score
    hits = engine.search("Which Tuesday does the relief boat come?", mode="sparse",
                         top_k=6, per_file=4).hits
    assert len([h for h in hits if h.document.path.endswith("lighthouse.md")]) > 1
    assert {h.source for h in hits} == {"sparse"}, [(h.chunk_id, h.source) for h in hits]
