"""The extractive answerer on real retrieved evidence."""

from __future__ import annotations


def test_headings_are_never_quoted_and_wrapped_sentences_stay_whole(engine, tmp_path):
    folder = tmp_path / "col"
    folder.mkdir()
    (folder / "kettle.md").write_text(
        "# Kettle warranty\n\n## Warranty period\n\n"
        "The kettle warranty lasts two years for buyers living in\n"
        "Germany and three years everywhere else.\n"
    )
    engine.ingest([folder])
    answer = engine.ask("How long is the kettle warranty for buyers in Germany?")
    assert "Germany and three years everywhere else. [1]" in answer.text
    assert "Warranty period [" not in answer.text and "Kettle warranty [" not in answer.text


def test_table_rows_are_given_with_their_column_names(engine, tmp_path):
    folder = tmp_path / "col"
    folder.mkdir()
    rows = "\n".join(f"| E{i:04d} | Person {i} | Dept {i % 3} |" for i in range(40))
    (folder / "staff.md").write_text(
        "# Staff\n\n| Employee ID | Full name | Department |\n|---|---|---|\n" + rows + "\n")
    engine.ingest([folder])
    answer = engine.ask("Which department is Person 17 in?")
    assert "Employee ID: E0017; Full name: Person 17; Department: Dept 2" in answer.text


def test_a_documents_own_reference_marks_are_not_passed_on_as_citations(engine, tmp_path):
    """Regression (found by tests/suites/answerer.py): a quoted sentence kept the document's
    "[7]", which clients render as a citation of a passage that was never given, and "[1]"
    would have pointed at the wrong one."""
    folder = tmp_path / "col"
    folder.mkdir()
    (folder / "kettle.md").write_text(
        "# Model K2 kettle\n\nThe Model K2 kettle is covered by a warranty of 24 months "
        "from the date of purchase [7]. See the manual [1, 2] and [the terms](https://x.test).\n")
    engine.ingest([folder])
    for extractive_evidence in ("sentences", "passages"):
        engine.settings.evidence = extractive_evidence
        answer = engine.ask("How long is the warranty on the Model K2 kettle?")
        assert "24 months from the date of purchase." in answer.text, answer.text
        assert "[7]" not in answer.text and "[1, 2]" not in answer.text, answer.text
        assert answer.text.endswith(" [1]")
        assert answer.cited == (1,)


def test_example_after_an_introducing_colon_is_quoted_with_it_and_its_output_kept(
        engine, tmp_path):
    """Regression (requests' docs, found by the newcomer check): "Requests can also ignore
    verifying the SSL certificate if you set verify to False:" was quoted without the example
    it announces, and once quoted with it, the example's output "<Response [200]>" lost its
    "[200]" as if it were a reference mark."""
    folder = tmp_path / "col"
    folder.mkdir()
    (folder / "kettle.rst").write_text(
        "Remote control\n==============\n\nThe kettle listens on port 8080 of the local "
        "network once it is paired with the hub.\n\n"
        "You can switch the kettle on from a script if you send it the boil command:\n\n"
        "::\n\n    >>> kettle.send('boil', litres=1.5)\n    <Reply [200] accepted, boiling>\n\n"
        "The kettle refuses the command when it holds no water.\n\n"
        "Scripts\n=======\n\nA script can switch the kettle on at a set time each morning. "
        "Scripts run on the hub, not on the kettle itself. A script that switches the kettle "
        "on twice in one minute is stopped by the hub. The kettle tells the script when the "
        "water boils. Scripts written for the older hub must be converted before they can "
        "switch the kettle on.\n", encoding="utf-8")
    engine.ingest([folder])
    answer = engine.ask("How do I switch the kettle on from a script?")
    text = " ".join(answer.text.split())
    assert "if you send it the boil command: >>> kettle.send('boil', litres=1.5)" in text, text
    assert "<Reply [200] accepted, boiling>" in text, text


def test_a_question_longer_than_max_query_chars_says_it_was_cut(make_engine, tmp_path):
    """Before, a pasted page was cut to its end silently; the user never learnt that the
    start of the question was not searched."""
    from citewise.types import DoneEvent, StatusEvent

    (tmp_path / "kettle.md").write_text(
        "# Kettle\n\nThe K2 kettle has a warranty of two years from the date of purchase.\n",
        encoding="utf-8")
    engine = make_engine(max_query_chars=100)
    engine.ingest([tmp_path / "kettle.md"])
    pasted = "Some pasted text about other things. " * 10 + "How long is the kettle warranty?"
    events = list(engine.ask_stream(pasted, extractive=True))
    notices = [e.message for e in events if isinstance(e, StatusEvent) and e.stage == "notice"]
    cut = len(events[-1].answer.question)
    assert notices == [(f"the question is {len(pasted.strip()):,} characters long: only its "
                        f"last {cut} are searched (max_query_chars)")]
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.answer.question.endswith("warranty?")
    assert "two years" in done.answer.text
    # a question within the limit gets no notice
    short = list(engine.ask_stream("How long is the kettle warranty?", extractive=True))
    assert not [e for e in short if isinstance(e, StatusEvent) and e.stage == "notice"]


def test_prose_after_a_table_in_the_same_chunk_can_be_quoted(engine, tmp_path):
    """Regression: a chunk that starts with a table gave only its rows as answer candidates,
    so the explanation after the table (install.md's "Install the CPU-only wheel first ...",
    the answer to "how do I avoid the CUDA download?") could never be quoted or cited."""
    folder = tmp_path / "col"
    folder.mkdir()
    (folder / "extras.md").write_text(
        "# Extras\n\n## Optional extras\n\n"
        "| extra | adds |\n|---|---|\n| `gpu` | the CUDA kernels |\n| `ocr` | Tesseract |\n\n"
        "The gpu extra downloads four gigabytes of vendor libraries.\n"
        "To avoid that download, install the small CPU wheel from the vendor's mirror first.\n")
    engine.ingest([folder])
    answer = engine.ask("How do I avoid the four gigabyte download of the gpu extra?")
    assert "install the small CPU wheel from the vendor's mirror first." in answer.text, answer.text
    cited = [c for c in answer.citations if c.n in answer.cited]
    prose = ("The gpu extra downloads four gigabytes of vendor libraries.\n"
             "To avoid that download, install the small CPU wheel from the vendor's mirror first.")
    # the first citation's span is the two sentences, not the table before them (a table row
    # may follow as a second quote)
    assert cited[0].char_end - cited[0].char_start == len(prose), cited


DATABASES = (
    "# Storage guide\n\nHow the index is stored.\n\n"
    "## Supported databases\n\nEach store keeps the chunks and their embeddings.\n\n"
    "### PostgreSQL\n\nA server for large collections, with pgvector for the vectors.\n\n"
    "### SQLite\n\nOne file on the local disk; nothing to run.\n\n"
    "### DuckDB\n\nA column store for analytics, read through its Python package.\n\n"
    "## Backups\n\nCopy the index file while no ingest runs.\n")


def test_a_question_asking_which_things_gets_the_subsections_of_the_section_named_for_them(
        engine, tmp_path):
    """Issue 17: "Which file formats can citewise ingest?" was answered with a sentence about
    how a parser is picked, because no sentence lists the formats: the subsection headings of
    "Supported formats" do. The list is quoted and its citation spans that section."""
    folder = tmp_path / "col"
    folder.mkdir()
    (folder / "storage.md").write_text(DATABASES)
    engine.ingest([folder])
    answer = engine.ask("Which databases can the index be stored in?")
    assert answer.text.startswith("Supported databases: PostgreSQL; SQLite; DuckDB [1]"), answer.text
    first = answer.citations[0]
    lines = DATABASES.split("\n")
    assert lines[first.line_start - 1] == "## Supported databases", first
    assert lines[first.line_end - 1].startswith("A column store for analytics"), first


def test_a_question_about_one_thing_is_not_answered_with_the_list(engine, tmp_path):
    folder = tmp_path / "col"
    folder.mkdir()
    (folder / "storage.md").write_text(DATABASES)
    engine.ingest([folder])
    answer = engine.ask("Which database needs nothing to run?")
    assert "Supported databases:" not in answer.text, answer.text
    assert "One file on the local disk; nothing to run." in answer.text, answer.text


def test_a_sentence_that_restates_the_question_is_not_its_answer(engine, tmp_path):
    """A log of questions asked ('"What is the default top_k?" also searched "top" and "k"')
    held every word of the question and was quoted as its answer; an FAQ's question line is
    no answer either."""
    folder = tmp_path / "col"
    folder.mkdir()
    (folder / "faq.md").write_text(
        "# Kettle FAQ\n\n## Boiling\n\n"
        "A full jug of 1.7 litres boils in about four minutes on the kettle's top setting.\n\n"
        "## What customers ask\n\n"
        "Users often ask \"How long does the kettle take to boil a full jug?\" in the shop.\n")
    engine.ingest([folder])
    answer = engine.ask("How long does the kettle take to boil a full jug?")
    assert answer.text.startswith("A full jug of 1.7 litres boils in about four minutes"), answer.text



def test_the_sentence_that_starts_with_the_named_setting_is_quoted_first(engine, tmp_path):
    """A sentence that only mentions ``top_k`` ("Settings(top_k=8)") outranked the bullet
    that defines it ("top_k (default 5) is ...") for "What is the default top_k?": on an AVX2
    CPU, whose embedding kernels round differently, the docs gave "Settings(top_k=8)"."""
    folder = tmp_path / "col"
    folder.mkdir()
    (folder / "results.md").write_text(
        "# Results\n\n## Library calls\n\n"
        "- The default top_k of a library call is whatever Settings(top_k=8) gives it.\n\n"
        "## The evidence pool\n\n"
        "- evidence_pool (default 16) is how many chunks are read before the default top_k "
        "passages are kept.\n\n"
        "## How many results\n\n"
        "- top_k (default 5) is the most sources in an answer.\n")
    engine.ingest([folder])
    answer = engine.ask("What is the default top_k?")
    assert answer.text.startswith("- top_k (default 5) is the most sources in an answer."), \
        answer.text


def test_a_row_of_a_long_table_is_cited_by_its_own_line(engine, tmp_path):
    """Regression (found by this stop's newcomer check): a row quoted from a later window of
    a long Markdown table had its characters narrowed to the row but kept the whole table's
    lines ("configuration.md, lines 27-98" for the row on line 85)."""
    folder = tmp_path / "col"
    folder.mkdir()
    rows = [f"| E{i:04d} | Person {i} | Dept {i % 7} |" for i in range(300)]
    source = "# Staff\n\n| Employee ID | Full name | Department |\n|---|---|---|\n" + "\n".join(rows) + "\n"
    (folder / "staff.md").write_text(source)
    engine.ingest([folder])
    [doc] = engine.store.documents()
    chunks = sorted(engine.store.get_chunks([c for c, _, _ in engine.store.chunk_features(doc.id)]).values(),
                    key=lambda pair: pair[0].ordinal)
    assert len(chunks) > 3  # the table is cut into windows of rows
    lines = source.split("\n")
    for chunk, _ in chunks[1:]:  # a later window: the lines of its own rows, one a line
        body = chunk.text.split("\n")[1:]  # after the repeated header row
        assert lines[chunk.line_start - 1].startswith(f"| {body[0].split(' | ')[0]} |")
        assert chunk.line_end - chunk.line_start == len(body) - 1
    answer = engine.ask("Which department is Person 251 in?")
    assert "Employee ID: E0251; Full name: Person 251; Department: Dept 6" in answer.text
    [citation] = [c for c in answer.citations if c.n == answer.cited[0]]
    row_line = lines.index("| E0251 | Person 251 | Dept 6 |") + 1
    assert (citation.line_start, citation.line_end) == (row_line, row_line) == (256, 256)
