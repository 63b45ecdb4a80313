"""Parsers on small inputs made here: the rules behind the shared cases, one at a time."""

from __future__ import annotations

import io
import random
import zipfile
from pathlib import Path

import pytest

from citewise.errors import (
    CorruptDocumentError,
    EmptyDocumentError,
    EncodingError,
    UnsupportedFormatError,
)
from citewise.ingest.parsers import _pdf_layout, code, docx, html, pdf, rst, text
from citewise.ingest.parsers.base import parser_for
from citewise.types import BlockKind, ParsedDocument


def route(name: str, data: bytes) -> ParsedDocument:
    path = Path(name)
    return parser_for(path, data).parse(path, data)


def check_offsets(doc: ParsedDocument) -> None:
    for block in doc.blocks:
        assert doc.text[block.start:block.end] == block.text


# --- text ---------------------------------------------------------------------------------------


def test_text_paragraphs_lines_and_cleaning() -> None:
    data = b"\xef\xbb\xbfFirst line\r\nsecond\x00 line\r\n\r\n \xc2\xa0\n\tThird\n"
    doc = route("notes.txt", data)
    check_offsets(doc)
    assert [(b.text, b.line_start, b.line_end) for b in doc.blocks] == [
        ("First line\nsecond line", 1, 2), ("Third", 5, 5)]
    assert doc.title == "notes"


@pytest.mark.parametrize("data", [b"", b" \n\t\r\n\xc2\xa0 \xe2\x80\x8b"])
def test_text_empty(data: bytes) -> None:
    with pytest.raises(EmptyDocumentError):
        route("blank.txt", data)


@pytest.mark.parametrize(("name", "data"), [("blank.txt", b""), ("blank.md", b"  \n\n"),
                                            ("blank.rst", b"\n\t\n")])
def test_an_empty_file_says_what_to_do(name: str, data: bytes) -> None:
    # found by a newcomer: "empty file: no text to index" said what was wrong, not what to do
    with pytest.raises(EmptyDocumentError) as caught:
        route(name, data)
    message = str(caught.value)
    assert message.startswith(f"{name}: empty file")
    assert message.endswith("it was skipped: add text to it and ingest again, "
                            "or leave it out of the folder")


def test_text_binary_is_refused() -> None:
    with pytest.raises(UnsupportedFormatError):
        route("image.txt", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    with pytest.raises(UnsupportedFormatError):
        route("blob", bytes(range(32)) * 100)


def test_text_utf32_and_bomless_utf16be() -> None:
    assert text.decode_text("a", "Ready at 06:00".encode("utf-32")) == "Ready at 06:00"
    assert text.decode_text("a", "Ready at 06:00 today".encode("utf-16-be")) == \
        "Ready at 06:00 today"


def test_text_mostly_utf8_with_a_corrupt_byte() -> None:
    data = ("Größe und Übermaß, schöne Grüße. " * 10).encode() + b"\xff end"
    decoded = text.decode_text("a", data)
    assert decoded.startswith("Größe") and "\ufffd end" in decoded


def test_text_undetectable_encoding_is_an_error_not_mojibake() -> None:
    noise = bytes(b | 0x80 for b in random.Random(7).randbytes(300))
    with pytest.raises(EncodingError):
        text.decode_text("a", noise)


def test_csv_is_a_table_with_a_header() -> None:
    doc = route("staff.csv", b"id;name;room\nE1;Ada Lind;101\n\nE2;Bo;102\n")
    assert len(doc.blocks) == 1
    table = doc.blocks[0]
    assert (table.kind, table.header) == (BlockKind.TABLE, "id | name | room")
    assert (table.text, table.line_start, table.line_end) == ("E1 | Ada Lind | 101\nE2 | Bo | 102",
                                                              2, 4)


def test_collapse_blobs_keeps_cjk_and_prose() -> None:
    prose = "汉字" * 3000
    assert text.collapse_blobs(prose) == prose
    assert text.collapse_blobs("x " + "A" * 2500 + " y") == "x [data omitted] y"


# --- HTML ---------------------------------------------------------------------------------------


PAGE = b"""<!DOCTYPE html><html><head><title> Guide </title>
<style>.gone { display: none } #away{visibility:hidden}</style><script>var x = 1;</script></head>
<body><h1>Main</h1><p>One<br>two &amp; <b>three</b><!-- secret comment --></p>
<div class="gone">class-hidden</div><p id="away">id-hidden</p><p hidden>attr-hidden</p>
<span aria-hidden="true">aria-hidden</span><p style="font-size:0px">zero-size</p>
<p style="opacity: 0">transparent</p><span class="sr-only">screen reader</span>
<template>templated</template><noscript>no script</noscript>
<h2>Sub</h2><ul><li>first</li><li>second</li></ul>
<table><tr><th>Name</th><th>Room</th></tr><tr><td>Ada</td><td>101</td></tr>
<tr><td>Bo</td><td>102</td></tr></table>
<pre>x  =  1
y = 2</pre>
<table><tr><td>layout only</td></tr></table></body></html>"""


def test_html_visible_blocks() -> None:
    doc = route("guide.html", PAGE)
    check_offsets(doc)
    assert doc.title == "Guide"
    for hidden in ("class-hidden", "id-hidden", "attr-hidden", "aria-hidden", "zero-size",
                   "transparent", "screen reader", "templated", "no script", "secret",
                   "var x"):
        assert hidden not in doc.text
    kinds = [(b.kind, b.text, b.section) for b in doc.blocks]
    assert (BlockKind.HEADING, "Main", ("Main",)) in kinds
    assert (BlockKind.PARAGRAPH, "One\ntwo & three", ("Main",)) in kinds
    assert (BlockKind.LIST, "- second", ("Main", "Sub")) in kinds
    assert (BlockKind.CODE, "x  =  1\ny = 2", ("Main", "Sub")) in kinds
    table = next(b for b in doc.blocks if b.kind is BlockKind.TABLE)
    assert (table.header, table.text) == ("Name | Room", "Ada | 101\nBo | 102")
    assert "layout only" in doc.text


def test_html_sniffed_whatever_the_name_and_meta_charset() -> None:
    data = '<html><head><meta charset="windows-1251"></head><body><p>Привет, мир</p>'.encode(
        "cp1251")
    doc = route("page.txt", data)
    assert doc.format == "html" and doc.text == "Привет, мир"


def test_html_too_deep_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(html, "MAX_DEPTH", 50)
    with pytest.raises(UnsupportedFormatError, match="nested"):
        route("deep.html", b"<div>" * 200 + b"deep")
    assert route("ok.html", b"<div>" * 20 + b"deep").text == "deep"


# --- Markdown and reStructuredText --------------------------------------------------------------


MD = b"""---
title: [not, a, title]
owner: ops
---
# Runbook

Restart the *worker* with [the script](https://example.com/run.sh) <span style="display:none">
SECRET</span> now.<!-- hidden -->

1. first
2. second
   - nested

```sh
make restart
```

<div style="display:none">hidden block</div>
<!-- a comment block -->

| Host | Port |
|------|------|
| db   | 5432 |
"""


def test_markdown_blocks() -> None:
    doc = route("runbook.md", MD)
    check_offsets(doc)
    assert doc.title == "Runbook"  # a non-string front-matter title is ignored
    assert doc.metadata == {"title": ["not", "a", "title"], "owner": "ops"}
    texts = {b.kind: [] for b in doc.blocks}
    for b in doc.blocks:
        texts[b.kind].append((b.text, b.line_start, b.line_end))
    assert texts[BlockKind.PARAGRAPH] == [
        ("Restart the worker with the script (https://example.com/run.sh) now.", 7, 8)]
    assert texts[BlockKind.LIST] == [("1. first\n2. second\n  - nested", 10, 12)]
    assert texts[BlockKind.CODE] == [("make restart", 14, 16)]
    table = next(b for b in doc.blocks if b.kind is BlockKind.TABLE)
    assert (table.header, table.text, table.line_start) == ("Host | Port", "db | 5432", 21)
    assert "SECRET" not in doc.text and "hidden" not in doc.text


def test_markdown_heading_attribute_lists_are_not_heading_text() -> None:
    """Regression: MkDocs pages (FastAPI's docs) write ``## Run the Server { #run-the-server }``;
    the id stood in every citation's section path ("Run a Server Manually { #run-a-server-
    manually } > ...") and every chunk's heading prefix."""
    source = (b"# Run a Server Manually { #run-a-server-manually }\n\nText one.\n\n"
              b"## Install {#install .unnumbered}\n\nText two.\n\n"
              b"### Options {: #opts }\n\nText three.\n\n"
              b"## Appendix {-}\n\nText four.\n\n"
              b"## Using {braces} in templates\n\nText five.\n")
    doc = route("manual.md", source)
    check_offsets(doc)
    assert doc.title == "Run a Server Manually"
    sections = {b.text: b.section for b in doc.blocks if b.kind is BlockKind.PARAGRAPH}
    assert sections["Text three."] == ("Run a Server Manually", "Install", "Options")
    assert sections["Text four."] == ("Run a Server Manually", "Appendix")
    # braces that are no attribute list are heading text
    assert sections["Text five."] == ("Run a Server Manually", "Using {braces} in templates")
    assert "#install" not in doc.text and "{-}" not in doc.text


def test_markdown_invalid_front_matter_stays_content() -> None:
    doc = route("a.md", b"---\n: : [\n---\nBody text.\n")
    assert doc.metadata == {}
    assert "Body text." in doc.text


def test_rst_sphinx_roles_and_directives_read_as_the_built_page_shows_them(tmp_path) -> None:
    """Regression (requests' Sphinx docs): roles stayed raw markup in the index and in quotes
    (":exc:`~requests.exceptions.Timeout`"), ``code-block`` examples were lost, and a section
    holding only autodoc entries had no text, so it vanished from the section list."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET LINE", encoding="utf-8")
    source = f"""Client guide
============

See :ref:`the install page <install>` and :doc:`advanced`.

A :exc:`~kettle.errors.BoilTimeout` is raised; call :py:meth:`Kettle.boil() <kettle.Kettle.boil>`
or :class:`!kettle.Kettle` with :envvar:`KETTLE_HOME` set.

.. code-block:: python

   kettle.boil(litres=1.5)

.. versionchanged:: 3.1
   ``litres`` accepts a float.

.. literalinclude:: {secret}

.. toctree::
   :maxdepth: 2

   advanced

Reference
---------

.. autoclass:: kettle.Kettle
   :members:

.. function:: boil(litres, *, timeout=None)

   Boil the water.
""".encode()
    doc = route("guide.rst", source)
    check_offsets(doc)
    text = doc.text
    assert "See the install page and advanced." in text
    assert ("A BoilTimeout is raised; call Kettle.boil() or kettle.Kettle with KETTLE_HOME set."
            in " ".join(text.split()))
    code = [(b.text, b.line_start) for b in doc.blocks if b.kind is BlockKind.CODE]
    assert ("kettle.boil(litres=1.5)", 11) in code
    assert ("kettle.Kettle", 26) in code and ("boil(litres, *, timeout=None)", 29) in code
    assert "Changed in version 3.1: litres accepts a float." in text
    assert ":members:" not in text and "maxdepth" not in text and ":exc:" not in text
    assert "TOP SECRET" not in text  # literalinclude never reads another file
    reference = [b.text for b in doc.blocks if b.section == ("Client guide", "Reference")]
    assert "Boil the water." in reference


def test_rst_sections_lists_tables() -> None:
    source = b"""Guide
=====

Intro text.

Setup
-----

* one
* two

====  =====
Key   Value
====  =====
port  8080
====  =====

.. include:: /etc/passwd

::

   run --fast
"""
    doc = route("guide.rst", source)
    check_offsets(doc)
    assert doc.format == "rst" and doc.title == "Guide"
    blocks = [(b.kind, b.text, b.section) for b in doc.blocks]
    assert (BlockKind.PARAGRAPH, "Intro text.", ("Guide",)) in blocks
    assert (BlockKind.LIST, "- one\n- two", ("Guide", "Setup")) in blocks
    assert (BlockKind.CODE, "run --fast", ("Guide", "Setup")) in blocks
    table = next(b for b in doc.blocks if b.kind is BlockKind.TABLE)
    assert (table.header, table.text) == ("Key | Value", "port | 8080")
    assert "root:" not in doc.text
    assert rst.parse is parser_for(Path("x.rest"), b"x").parse


# --- DOCX ---------------------------------------------------------------------------------------


def _docx_bytes() -> bytes:
    import docx as python_docx
    from docx.shared import RGBColor

    document = python_docx.Document()
    document.core_properties.title = "Handbook"
    document.add_heading("Leave", level=1)
    paragraph = document.add_paragraph("Visible start.")
    hidden = paragraph.add_run(" HIDDEN-RUN")
    hidden.font.hidden = True
    white = paragraph.add_run(" WHITE-RUN")
    white.font.color.rgb = RGBColor(0xFF, 0xFF, 0xFF)
    paragraph.add_run(" Visible end.")
    document.add_heading("Details", level=2)
    document.add_paragraph("first item", style="List Bullet")
    document.add_paragraph("second item", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    for row, values in zip(table.rows, [("Type", "Days"), ("Annual", "25")]):
        for cell, value in zip(row.cells, values):
            cell.text = value
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_docx_blocks_and_hidden_runs() -> None:
    doc = route("handbook.docx", _docx_bytes())
    check_offsets(doc)
    assert doc.title == "Handbook"
    blocks = [(b.kind, b.text, b.section) for b in doc.blocks]
    assert (BlockKind.PARAGRAPH, "Visible start. Visible end.", ("Leave",)) in blocks
    assert (BlockKind.LIST, "- first item\n- second item", ("Leave", "Details")) in blocks
    table = next(b for b in doc.blocks if b.kind is BlockKind.TABLE)
    assert (table.header, table.text) == ("Type | Days", "Annual | 25")
    assert "HIDDEN" not in doc.text and "WHITE" not in doc.text


_TEXT_BOX = """<w:p xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"
 xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"
 xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape"
 xmlns:v="urn:schemas-microsoft-com:vml"><w:r><mc:AlternateContent>
 <mc:Choice Requires="wps"><w:drawing><wps:wsp><wps:txbx><w:txbxContent>
   <w:p><w:r><w:t>Box text once.</w:t></w:r></w:p></w:txbxContent></wps:txbx></wps:wsp></w:drawing>
 </mc:Choice>
 <mc:Fallback><w:pict><v:shape><v:textbox><w:txbxContent>
   <w:p><w:r><w:t>Box text once.</w:t></w:r></w:p></w:txbxContent></v:textbox></v:shape></w:pict>
 </mc:Fallback></mc:AlternateContent></w:r>
 <w:r><w:t>Anchor.</w:t></w:r><w:del><w:r><w:delText>gone</w:delText></w:r></w:del>
 <w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText>PAGE</w:instrText></w:r>
 <w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t> 7</w:t></w:r>
 <w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>"""


def test_docx_text_box_once_and_no_deleted_or_field_code_text() -> None:
    import docx as python_docx
    from docx.oxml import parse_xml

    document = python_docx.Document()
    document.element.body.insert(0, parse_xml(_TEXT_BOX))
    buffer = io.BytesIO()
    document.save(buffer)
    doc = route("box.docx", buffer.getvalue())
    assert [b.text for b in doc.blocks] == ["Anchor. 7", "Box text once."]


def test_docx_zip_bomb_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docx, "MAX_UNCOMPRESSED", 10_000)
    with pytest.raises(CorruptDocumentError, match="zip bomb"):
        route("handbook.docx", _docx_bytes())


def test_docx_not_a_zip() -> None:
    assert route("notes.docx", b"just text").format == "text"
    with pytest.raises(CorruptDocumentError):
        route("broken.docx", b"PK\x03\x04" + b"\x00" * 50)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("word/document.xml", "<not-word/>")
    with pytest.raises(CorruptDocumentError):
        route("odd.docx", buffer.getvalue())


# --- code ---------------------------------------------------------------------------------------


def test_python_big_class_is_split_by_method(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(code, "MAX_BLOCK_LINES", 6)
    source = b'''import os


class Store:
    """Keeps things."""

    def get(self, key):
        return key

    # put stores a value
    @staticmethod
    def put(key, value):
        return value


async def main():
    pass
'''
    doc = route("store.py", source)
    check_offsets(doc)
    spans = [(b.symbol, b.line_start, b.line_end) for b in doc.blocks]
    assert spans == [(None, 1, 1), ("Store", 4, 5), ("Store.get", 7, 8), ("Store.put", 10, 13),
                     ("main", 16, 17)]


def test_python_syntax_error_falls_back_to_groups() -> None:
    doc = route("old.py", b"print 'hello'\n\nprint 'bye'\n")
    assert [b.text for b in doc.blocks] == ["print 'hello'", "print 'bye'"]


def test_brace_languages() -> None:
    rust = b"""fn longest<'a>(x: &'a str, y: &'a str) -> &'a str {
    if x.len() > y.len() { x } else { y }
}

impl<T> Display for Wrapper<T> {
    fn fmt(&self) -> String { format!("{}", '{') }
}
"""
    assert [(b.symbol, b.line_start, b.line_end) for b in route("lib.rs", rust).blocks] == [
        ("longest", 1, 3), ("Wrapper", 5, 7)]
    js = b"""// adds
export const add = (a, b) => {
  return `${a} } ${b}`;
};
const s = "{";
class Box extends Base { open() { return 1; } }
"""
    blocks = route("util.js", js).blocks
    assert [(b.symbol, b.line_start, b.line_end) for b in blocks] == [
        ("add", 1, 4), (None, 5, 5), ("Box", 6, 6)]


def test_code_routing_by_name_and_shebang() -> None:
    assert route("Dockerfile", b"FROM python:3.11\nRUN pip install x\n").format == "code"
    assert route("deploy", b"#!/bin/sh\necho hi\n").format == "code"
    assert route("notes.unknownext", b"plain words\n").format == "text"


# --- PDF: layout rules on synthetic characters, hidden text in a generated file ----------------


def _line(text: str, x: float, y: float, size: float = 10.0) -> list[_pdf_layout.Char]:
    width = size * 0.5
    return [_pdf_layout.Char(ch, x + i * width, y, x + (i + 1) * width, y + size * 1.2)
            for i, ch in enumerate(text)]


def _rows(*rows: tuple[str, ...], xs: tuple[float, ...], top: float = 700.0):
    lines = []
    for n, cells in enumerate(rows):
        y = top - n * 14
        line: list[_pdf_layout.Char] = []
        for cell, x in zip(cells, xs):
            if cell:
                line += _line(cell, x, y)
        lines.append(line)
    return lines


def test_layout_two_columns_read_one_after_the_other() -> None:
    lines = [_line("Newsletter title", 50, 760, size=16)] + _rows(
        ("The board agreed to extend", "The north car park closes"),
        ("the opening hours to nine", "for resurfacing in June so"),
        ("on Thursdays from May on.", "visitors use the east garage."),
        xs=(50, 320))
    items = _pdf_layout.layout(lines)
    assert [(i.kind, i.text) for i in items] == [
        ("heading", "Newsletter title"),
        ("paragraph", ("The board agreed to extend\nthe opening hours to nine\n"
                      "on Thursdays from May on.")),
        ("paragraph", ("The north car park closes\nfor resurfacing in June so\n"
                      "visitors use the east garage.")),
    ]


def test_layout_table_rows_keep_their_header() -> None:
    items = _pdf_layout.layout(_rows(("ID", "Name", "Ext."), ("E1", "Ada Lind", "101"),
                                     ("E2", "", "102"), xs=(50, 150, 300)))
    assert [(i.kind, i.header, i.text) for i in items] == [
        ("table", "ID | Name | Ext.", "E1 | Ada Lind | 101\nE2 |  | 102")]


def test_layout_list_markers_and_running_headers_are_not_tables() -> None:
    bullets = _pdf_layout.layout(_rows(("•", "first point here"), ("•", "second point"),
                                       xs=(50, 70)))
    assert [(i.kind, i.text) for i in bullets] == [
        ("paragraph", "• first point here\n• second point")]
    header = _pdf_layout.layout(_rows(("Chapter 2: Setup", "7"), ("short line",), ("another",),
                                      ("one more",), xs=(50, 500)))
    assert [i.kind for i in header] == ["paragraph"]


def test_layout_repairs_decomposed_lam_alef() -> None:
    alef, lam = (_pdf_layout.Char(ch, 10, 0, 16, 10) for ch in "\u0627\u0644")
    before = _pdf_layout.Char("\u062e", 16, 0, 22, 10)
    after = _pdf_layout.Char("\u0644", 4, 0, 10, 10)
    assert _pdf_layout._segment_text([before, alef, lam, after]) == "خلال"


def _pdf_with_hidden_text() -> bytes:
    import pypdfium2 as pdfium
    from pypdfium2 import raw

    document = pdfium.PdfDocument.new()
    page = document.new_page(595, 842)
    font = raw.FPDFText_LoadStandardFont(document.raw, b"Helvetica")
    for n, (words, mode, rgb) in enumerate([
        ("Visible policy text for the test.", raw.FPDF_TEXTRENDERMODE_FILL, (0, 0, 0)),
        ("INVISIBLE-MODE words", raw.FPDF_TEXTRENDERMODE_INVISIBLE, (0, 0, 0)),
        ("WHITE-TEXT words", raw.FPDF_TEXTRENDERMODE_FILL, (255, 255, 255)),
    ]):
        obj = raw.FPDFPageObj_CreateTextObj(document.raw, font, 12.0)
        encoded = (words + "\x00").encode("utf-16-le")
        buffer = (raw.c_ushort * (len(encoded) // 2)).from_buffer_copy(encoded)
        raw.FPDFText_SetText(obj, buffer)
        raw.FPDFTextObj_SetTextRenderMode(obj, mode)
        raw.FPDFPageObj_SetFillColor(obj, *rgb, 255)
        raw.FPDFPageObj_Transform(obj, 1, 0, 0, 1, 72, 700 - 30 * n)
        raw.FPDFPage_InsertObject(page.raw, obj)
    raw.FPDFPage_GenerateContent(page.raw)
    document.new_page(595, 842)  # a blank second page: no warning, no error
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_pdf_drops_invisible_and_white_text() -> None:
    doc = route("generated.pdf", _pdf_with_hidden_text())
    assert doc.text == "Visible policy text for the test."
    assert doc.pages == 2 and doc.blocks[0].page == 1
    assert doc.warnings == ("page 1: hidden text (invisible, white or tiny) was dropped",)
    assert pdf.parse is parser_for(Path("x.bin"), b"%PDF-1.7").parse
    assert pdf._pages([2]) == "page 2" and pdf._pages([2, 5, 6, 7, 9]) == "pages 2, 5-7, 9"
