"""Property-based fuzzing (hypothesis) of the parsers and the chunker, bounded for CI.

Properties:
- parsing any bytes under any supported name returns a document or raises one of citewise's
  own errors (a :class:`~citewise.errors.CitewiseError`, whose message names the file); never
  another exception;
- real PDF, DOCX and HTML files with random bytes overwritten behave the same way;
- a parsed document's blocks slice its text exactly, with no NUL or lone surrogate;
- chunks of any text stay within the token limit, are numbered 0..n-1, and their offsets
  slice the document text to a part of the chunk's ``source_text``.

``derandomize=True`` makes every run try the same inputs (a CI failure reproduces locally);
the example counts keep the whole file to about half a minute on 2 cores.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citewise.errors import CitewiseError
from citewise.ingest.chunking import chunk_document
from citewise.ingest.parsers.base import parser_for
from citewise.types import ParsedDocument
from tests.conftest import CASES

FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
#: for the cheap properties (most random bytes are refused at once)
FUZZ_MORE = settings(FUZZ, max_examples=200)
NAMES = ["notes.txt", "page.md", "page.html", "guide.rst", "report.pdf", "letter.docx",
         "tool.py", "data.json", "Makefile", "noext"]
REAL = {name: (CASES / rel).read_bytes() for name, rel in {
    "kettle.pdf": "c27_injection/kettle_warranty_hidden.pdf",
    "kettle.docx": "c27_injection/kettle_warranty_hidden.docx",
    "kettle.html": "c27_injection/kettle_warranty.html",
    "control.pdf": "c06_empty/control_ok.pdf",
}.items()}


def parse_or_own_error(name: str, data: bytes) -> ParsedDocument | None:
    """Parse ``data`` as file ``name``; None when citewise refused it with its own error.
    Any other exception fails the test."""
    path = Path(name)
    try:
        doc = parser_for(path, data).parse(path, data)
    except CitewiseError as err:
        assert str(err), name  # a message the user can read
        return None
    for block in doc.blocks:
        assert doc.text[block.start:block.end] == block.text
    assert "\x00" not in doc.text
    doc.text.encode("utf-8")  # strict: no lone surrogates
    doc.title.encode("utf-8")
    return doc


@FUZZ_MORE
@given(name=st.sampled_from(NAMES), data=st.binary(max_size=3000))
def test_random_bytes_parse_or_raise_citewise_errors(name, data):
    parse_or_own_error(name, data)


@FUZZ
@given(name=st.sampled_from(NAMES), text=st.text(max_size=2000),
       encoding=st.sampled_from(["utf-8", "utf-16", "utf-16-le", "utf-8-sig", "latin-1"]))
def test_random_text_in_any_encoding(name, text, encoding):
    try:
        data = text.encode(encoding)
    except UnicodeEncodeError:
        data = text.encode(encoding, "replace")
    except UnicodeError:
        data = text.encode("utf-8", "surrogatepass")
    parse_or_own_error(name, data)


@FUZZ_MORE
@given(name=st.sampled_from(sorted(REAL)),
       edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.binary(min_size=1,
                                                                              max_size=8)),
                      min_size=1, max_size=6))
def test_damaged_real_files_parse_or_raise_citewise_errors(name, edits):
    data = bytearray(REAL[name])
    for where, patch in edits:
        at = int(where * len(data))
        data[at:at + len(patch)] = patch
    parse_or_own_error(name, bytes(data))


_MD_LINES = st.one_of(
    st.text(max_size=120),
    st.builds(lambda n, t: "#" * n + " " + t, st.integers(1, 6), st.text(max_size=40)),
    st.builds(lambda cells: "| " + " | ".join(cells) + " |",
              st.lists(st.text(alphabet=st.characters(blacklist_characters="|\n"), max_size=12),
                       min_size=2, max_size=4)),
    st.just("|---|---|"),
    st.builds(lambda t: "- " + t, st.text(max_size=60)),
    st.just("```"),
    st.just(""),
    st.builds(lambda w: " ".join([w] * 200), st.text(min_size=1, max_size=8)),  # long lines
)


@pytest.fixture(scope="module")
def count_tokens(embedder):
    return embedder.count_tokens


@FUZZ
@given(lines=st.lists(_MD_LINES, max_size=40), name=st.sampled_from(["a.md", "a.txt",
                                                                      "a.html", "a.rst"]),
       max_tokens=st.sampled_from([16, 40, 120]), overlap=st.sampled_from([0, 8, 30]))
def test_chunks_respect_the_limit_and_their_offsets(count_tokens, lines, name, max_tokens,
                                                    overlap):
    doc = parse_or_own_error(name, "\n".join(lines).encode("utf-8", "surrogatepass"))
    if doc is None:
        return
    chunks = chunk_document("d", doc, count_tokens, max_tokens=max_tokens, overlap=overlap)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert c.text.strip() and c.token_count <= max_tokens
        assert 0 <= c.char_start < c.char_end <= len(doc.text)
        assert doc.text[c.char_start:c.char_end] in c.source_text
    if doc.text.strip():
        assert chunks
