"""Whole-document questions on a real index: the task and the document a question names, the
sections and first sentence from the stored structure, the extractive summary, pinned
documents, and how a long document is split for map-reduce."""

from __future__ import annotations

import pytest

from citewise.answer.summarize import parts_within, section_coverage
from citewise.answer.wholedoc import (
    DocumentTask,
    detect_task,
    document_evidence,
    named_documents,
    plan_question,
    resolve_pinned,
)
from citewise.errors import NotFoundError
from citewise.ingest.pipeline import parse_file
from citewise.types import Document, DoneEvent, StatusEvent

KETTLE = """\
# Kettle manual

The K2 kettle boils one litre of water in four minutes.

## Safety

Never fill the kettle above the MAX line. Unplug it before cleaning.

## Warranty

The warranty lasts 24 months from the date of purchase. It does not cover limescale.

### Claims

Send the receipt and the serial number to the service desk.

## Disposal

Take the kettle to an electronics recycling point.
"""

TOASTER = """\
# Toaster guide

The T1 toaster browns two slices at once.

## Settings

Turn the dial from 1 (light) to 6 (dark).

## Warranty

The toaster is covered for 12 months.
"""


@pytest.mark.parametrize(("question", "task"), [
    ("Summarize kettle.md", DocumentTask.SUMMARY),
    ("Give me an overview of the kettle manual", DocumentTask.SUMMARY),
    ("What is kettle.md about?", DocumentTask.SUMMARY),
    ("List the sections of kettle.md", DocumentTask.SECTIONS),
    ("What are the headings in the manual?", DocumentTask.SECTIONS),
    ("Table of contents of kettle.md", DocumentTask.SECTIONS),
    ("Quote the first sentence of kettle.md", DocumentTask.FIRST_SENTENCE),
    ("Compare kettle.md and toaster.md", DocumentTask.COMPARE),
    ("What are the differences between the kettle and the toaster?", DocumentTask.COMPARE),
    ("How long is the warranty?", None),
    ("What is the first step of the claim?", None),
])
def test_the_task_is_read_from_the_question(question, task):
    assert detect_task(question) is task


def _doc(path: str, title: str = "", doc_id: str = "") -> Document:
    return Document(doc_id or path, path, path, title, "markdown", "h")


def test_named_documents_by_path_name_stem_and_title_in_question_order():
    docs = [_doc("docs/api.md", "HTTP API", "a"), _doc("docs/install.md", "Install citewise", "i"),
            _doc("guides/web.md", "Web UI and widget", "w")]
    assert [d.id for d in named_documents("compare install.md and the HTTP API", docs)] == [
        "i", "a"]
    assert [d.id for d in named_documents("summarize docs/api.md", docs)] == ["a"]
    assert [d.id for d in named_documents("summarize the web ui and widget page", docs)] == ["w"]
    # a name inside another word or path is not a name
    assert named_documents("summarize the webhooks and the apis", docs) == []
    # a name two documents share tells neither apart
    twins = [_doc("a/README.md", doc_id="1"), _doc("b/README.md", doc_id="2")]
    assert [d.id for d in named_documents("summarize a/README.md", twins)] == ["1"]
    assert named_documents("summarize README.md", twins) == []


def test_pinned_names_resolve_or_say_which_are_known():
    docs = [_doc("docs/api.md", "HTTP API", "a"), _doc("docs/install.md", "Install", "i")]
    assert [d.id for d in resolve_pinned(["install", "docs/api.md", "i"], docs)] == ["i", "a"]
    assert [d.id for d in resolve_pinned(["HTTP API"], docs)] == ["a"]
    with pytest.raises(NotFoundError, match="'nosuch'.*docs/api.md"):
        resolve_pinned(["nosuch"], docs)
    # a pinned document with an ordinary question: searched in that document only
    plan = plan_question("How long is the warranty?", docs, ["api.md"])
    assert plan is not None and plan.task is None and [d.id for d in plan.documents] == ["a"]
    # an ordinary question naming a document is an ordinary question
    assert plan_question("How do I install?", docs) is None


@pytest.fixture
def manuals(make_engine, tmp_path):
    folder = tmp_path / "manuals"
    folder.mkdir()
    (folder / "kettle.md").write_text(KETTLE)
    (folder / "toaster.md").write_text(TOASTER)
    engine = make_engine(chunk_tokens=40)
    engine.ingest([folder])
    return engine, folder


def _answer(engine, question, **kw):
    events = list(engine.ask_stream(question, **kw))
    done = events[-1]
    assert isinstance(done, DoneEvent)
    return done.answer, events


def test_sections_come_from_the_structure_in_document_order(manuals):
    engine, _ = manuals
    answer, events = _answer(engine, "List the sections of kettle.md")
    assert answer.text.splitlines()[0] == "The sections of manuals/kettle.md, in document order:"
    headings = [line.strip("- ").rsplit(" [", 1)[0] for line in answer.text.splitlines()[1:]]
    assert headings == ["Safety", "Warranty", "Claims", "Disposal"]
    assert answer.text.splitlines()[3].startswith("  - Claims")  # nested under Warranty
    assert answer.mode == "extractive" and answer.found
    # each cites the first chunk under its heading
    for line in answer.text.splitlines()[1:]:
        n = int(line.rsplit("[", 1)[1].rstrip("]"))
        cite = next(c for c in answer.citations if c.n == n)
        assert cite.section[-1] == line.strip("- ").rsplit(" [", 1)[0]
    # no search ran: the document was read
    assert not any(isinstance(e, StatusEvent) and e.stage == "retrieve" for e in events)


def test_the_first_sentence_is_quoted_with_its_own_characters(manuals):
    engine, folder = manuals
    answer, _ = _answer(engine, "Quote the first sentence of the kettle manual")
    sentence = "The K2 kettle boils one litre of water in four minutes."
    assert answer.text == f"The first sentence of manuals/kettle.md is: \u201c{sentence}\u201d [1]"
    (cite,) = answer.citations
    path = folder / "kettle.md"
    text = parse_file(path, path.read_bytes()).text
    assert text[cite.char_start:cite.char_end] == sentence


def test_an_extractive_summary_quotes_each_section_in_order(manuals):
    engine, _ = manuals
    answer, _ = _answer(engine, "Summarize kettle.md")
    lines = answer.text.splitlines()
    assert lines[0] == "The opening sentence of each section of manuals/kettle.md:"
    assert [ln.split(":")[0] for ln in lines[1:]] == [
        "- Kettle manual", "- Safety", "- Warranty", "- Claims", "- Disposal"]
    assert "Never fill the kettle above the MAX line. [2]" in lines[2]
    doc = next(d for d in engine.store.documents() if d.path.endswith("kettle.md"))
    evidence = document_evidence(doc, engine.store.chunks_of(doc.id))
    assert section_coverage(answer, evidence) == 1.0


def test_a_comparison_without_an_llm_quotes_both_documents(manuals):
    engine, _ = manuals
    answer, _ = _answer(engine, "Compare kettle.md and toaster.md")
    assert answer.text.index("manuals/kettle.md:") < answer.text.index("manuals/toaster.md:")
    assert {c.path for c in answer.citations} == {"manuals/kettle.md", "manuals/toaster.md"}
    assert sorted(c.n for c in answer.citations) == list(range(1, len(answer.citations) + 1))


def test_a_pinned_document_limits_an_ordinary_question(manuals):
    engine, _ = manuals
    answer, _ = _answer(engine, "How long is the warranty?", documents=["toaster"])
    assert answer.found and {c.path for c in answer.citations} == {"manuals/toaster.md"}
    assert "12 months" in answer.text
    answer, _ = _answer(engine, "How long is the warranty?", documents=["kettle.md"])
    assert {c.path for c in answer.citations} == {"manuals/kettle.md"}
    with pytest.raises(NotFoundError):
        _answer(engine, "How long is the warranty?", documents=["fridge"])


def test_a_long_document_is_split_into_consecutive_parts_within_the_budget(manuals):
    engine, _ = manuals
    doc = next(d for d in engine.store.documents() if d.path.endswith("kettle.md"))
    evidence = document_evidence(doc, engine.store.chunks_of(doc.id))
    count = engine.embedder.count_tokens
    parts = parts_within(evidence, 60, count)
    assert len(parts) > 1
    assert [ev.citation.n for p in parts for ev in p] == list(range(1, len(evidence) + 1))
    for p in parts:
        assert len(p) == 1 or sum(count(ev.chunk.text) + 16 for ev in p) <= 60


# --- with the bundled model (0.5B, llama.cpp) ----------------------------------------------

def _long_manual() -> str:
    parts = ["# Appliance handbook\n\nThis handbook covers four appliances of the K range.\n"]
    for name, fact in [("Kettle", "boils one litre in four minutes"),
                       ("Toaster", "browns two slices at once"),
                       ("Blender", "crushes ice in ten seconds"),
                       ("Heater", "warms a small room in ten minutes")]:
        parts.append(f"## {name}\n\nThe K {name.lower()} {fact}. Its parts are listed in the "
                     f"{name.lower()} box, and its cord is one metre long.\n")
    return "\n".join(parts)


@pytest.mark.slow  # four short generations: about 9 min on 2 cores under a load of 13
def test_a_long_document_is_summarised_by_map_reduce_with_section_citations(
        make_engine, tmp_path, llm_settings):
    (tmp_path / "handbook.md").write_text(_long_manual())
    # at most 128 tokens sent whole: the handbook (about 200) is summarised in parts
    engine = make_engine(**llm_settings, whole_document_tokens=128, llm_max_tokens=40,
                         chunk_tokens=40)
    engine.ingest([tmp_path / "handbook.md"])
    answer, events = _answer(engine, "Summarize handbook.md")
    maps = [e.message for e in events if isinstance(e, StatusEvent) and e.stage == "map"]
    assert len(maps) >= 2 and maps[0].startswith("summarising part 1 of ")
    assert answer.metrics["whole"] == 0.0 and answer.metrics["parts"] >= 2
    # the LLM's answer, or the quoted one if it failed the checks; either cites the handbook's
    # own chunks by section
    assert answer.found and answer.citations
    assert {c.path for c in answer.citations} == {"handbook.md"}
    assert all(c.section and c.section[0] == "Appliance handbook" for c in answer.citations)
    if answer.mode == "llm":
        assert answer.cited and set(answer.cited) <= {c.n for c in answer.citations}
