"""Excel ``.xlsx`` / ``.xlsm``: openpyxl reads each visible sheet's cell values.

The workbook is opened ``read_only`` (rows are streamed, not held as cell objects) and
``data_only``, so a formula cell gives the result Excel cached when it last saved the file
(a formula never calculated, as in a file written by a script, has none and is left empty;
the formula text itself is not indexed). A cell holding 0 is kept as ``0``: only empty cells
(None or whitespace) are empty.

Each sheet is split into regions of consecutive non-empty rows (a blank row ends a region,
as it usually ends a table). A region of two or more rows and columns is a TABLE block: its
first row is the ``header`` (a blank header cell is named by its column letter, "C"), the
other rows one line each with cells joined by " | ", so an answer quotes a row as
"Region: North; Q1: 0" like every other table. Regions longer than :data:`ROWS_PER_BLOCK`
rows are cut into blocks that each repeat the header. A one-row or one-column region is a
PARAGRAPH block, one line per row, except a single row under a blank row whose cells lie
in the columns of the table above it (a "Total" row), which is a row of that table. Every block has ``section = (sheet name,)`` and
``line_start``/``line_end`` = the sheet's 1-based row numbers of its first and last line, so a
citation names the sheet and the rows ("book.xlsx, row 5, Budget"). Columns empty in a whole
region are left out.

Values: numbers as written (``3.0`` as ``3``, floats to 15 significant digits), booleans as
``TRUE``/``FALSE``, dates as ISO dates (``2024-03-31``, with the time when it is not
midnight), error values (``#DIV/0!``) as they are. Hidden and very hidden sheets are skipped
(what a reader of the workbook does not see is not indexed, case C27) with a warning naming
them. Workbook properties (creator, subject, keywords, ...) become document metadata, and the
names of the indexed sheets ``metadata["sheets"]``.
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from citewise.errors import CorruptDocumentError, EmptyDocumentError, UnsupportedFormatError
from citewise.ingest.parsers.base import TextBuilder, register
from citewise.ingest.parsers.docx import check_zip, core_properties
from citewise.ingest.parsers.text import clean_text, collapse_blobs, parse_mislabelled
from citewise.types import BlockKind, ParsedDocument

__all__ = ["ROWS_PER_BLOCK", "cell_text", "parse"]

#: rows per TABLE block; a longer region is cut into blocks that each repeat the header row
#: (small blocks keep a cited row's row number exact, see the module docstring)
ROWS_PER_BLOCK = 40
#: a cell longer than this is clipped (a sheet used as a text store still indexes)
MAX_CELL_CHARS = 2000


def _sniff(data: bytes) -> bool:
    return data.startswith(b"PK\x03\x04") and b"xl/workbook.xml" in data[:65536]


def cell_text(value: Any) -> str:
    """The text of one cell value: ``""`` for None or whitespace, ``"0"`` for 0, ``"3"`` for
    3.0, ``"TRUE"``/``"FALSE"``, ISO dates (with the time unless it is midnight), strings with
    their whitespace collapsed (line breaks in a cell become spaces)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.15g}"
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0, 0):
            return value.date().isoformat()
        return value.isoformat(sep=" ", timespec="seconds")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    text = " ".join(clean_text(str(value)).split())
    if len(text) > MAX_CELL_CHARS:
        text = text[:MAX_CELL_CHARS].rsplit(" ", 1)[0] + " …"
    return collapse_blobs(text)


@register("xlsx", suffixes=(".xlsx", ".xlsm"), sniff=_sniff)
def parse(path: Path, data: bytes) -> ParsedDocument:
    """Parse a workbook into one table (or paragraph) block per region of each visible sheet
    (see the module docstring).

    Raises EmptyDocumentError (0 bytes, or no value in any visible sheet),
    CorruptDocumentError (not a valid workbook, zip bomb), UnsupportedFormatError (a package
    that is not a workbook).
    """
    import openpyxl

    if not data:
        raise EmptyDocumentError(path, "empty file (0 bytes)")
    if not data.startswith(b"PK"):
        return parse_mislabelled(path, data, "xlsx")
    archive = check_zip(path, data)
    try:
        if "xl/workbook.xml" not in archive.namelist():
            raise UnsupportedFormatError(path, "not an Excel .xlsx workbook (no xl/workbook.xml)")
    finally:
        archive.close()
    try:
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises KeyError, ValueError, XML errors on damage
        raise CorruptDocumentError(path, f"corrupt Excel workbook: {exc}") from exc
    builder = TextBuilder()
    sheets: list[str] = []
    warnings: list[str] = []
    where = "workbook"
    try:
        for sheet in workbook.worksheets:
            where = f"sheet {sheet.title!r}"
            if sheet.sheet_state != "visible":
                warnings.append(f"{where}: {sheet.sheet_state}, not indexed")
                continue
            rows = list(_rows(sheet.iter_rows()))
            before = len(builder.blocks)
            last: tuple[list[int], str] | None = None
            for region in _regions(rows):
                last = _add_region(builder, sheet.title, region, last)
            if len(builder.blocks) > before:
                sheets.append(sheet.title)
        properties = core_properties(workbook.properties, _PROPERTIES)
    except Exception as exc:  # a damaged sheet: openpyxl raises KeyError, XML errors, ...
        raise CorruptDocumentError(path, f"corrupt Excel {where}: {exc}") from exc
    finally:
        workbook.close()
    if not builder.blocks:
        raise EmptyDocumentError(path, "no cell values in any visible sheet of the workbook")
    title = properties.pop("title", "") or Path(path).stem
    return builder.build("xlsx", title=title, metadata={**properties, "sheets": sheets},
                         warnings=tuple(warnings))


Row = tuple[int, dict[int, str]]  # (1-based row number, {1-based column: text})


def _rows(cells: Iterable[tuple[Any, ...]]) -> Iterator[Row]:
    """The non-empty rows of a sheet as ``(row number, {column: text})``; read-only sheets give
    empty cells without a position, so positions come from the cells that have one."""
    for row in cells:
        values: dict[int, str] = {}
        number = 0
        for cell in row:
            column = getattr(cell, "column", None)
            if column is None:
                continue
            number = number or cell.row
            text = cell_text(cell.value)
            if text:
                values[column] = text
        if values:
            yield number, values


def _regions(rows: list[Row]) -> Iterator[list[Row]]:
    """Runs of consecutive row numbers (a blank row between two rows ends a region)."""
    region: list[Row] = []
    for row in rows:
        if region and row[0] != region[-1][0] + 1:
            yield region
            region = []
        region.append(row)
    if region:
        yield region


def _column_letter(column: int) -> str:
    from openpyxl.utils import get_column_letter

    return str(get_column_letter(column))


def _add_region(builder: TextBuilder, sheet: str, region: list[Row],
                last: tuple[list[int], str] | None) -> tuple[list[int], str] | None:
    """Add the blocks of one region; returns ``(columns, header)`` of the table it is (or
    continues), None when it is not a table. A one-row region whose cells lie in the columns
    of the table above it (a "Total" row under a blank row) is a row of that table."""
    columns = sorted({c for _, values in region for c in values})
    section = (sheet,)
    if len(region) == 1 and last is not None and set(columns) <= set(last[0]):
        number, values = region[0]
        builder.add(BlockKind.TABLE, " | ".join(values.get(c, "") for c in last[0]),
                    section=section, header=last[1], line_start=number, line_end=number)
        return last
    lines = [(n, [values.get(c, "") for c in columns]) for n, values in region]
    if len(lines) < 2 or len(columns) < 2:
        for start in range(0, len(lines), ROWS_PER_BLOCK):
            part = lines[start:start + ROWS_PER_BLOCK]
            builder.add(BlockKind.PARAGRAPH,
                        "\n".join(" | ".join(c for c in cells if c) for _, cells in part),
                        section=section, line_start=part[0][0], line_end=part[-1][0])
        return None
    header_cells = [h or _column_letter(c) for h, c in zip(lines[0][1], columns, strict=True)]
    header = " | ".join(header_cells)
    body = lines[1:]
    for start in range(0, len(body), ROWS_PER_BLOCK):
        part = body[start:start + ROWS_PER_BLOCK]
        builder.add(BlockKind.TABLE, "\n".join(" | ".join(cells) for _, cells in part),
                    section=section, header=header, line_start=part[0][0], line_end=part[-1][0])
    return columns, header


#: workbook properties kept as document metadata, by metadata key
_PROPERTIES = {"title": "title", "author": "creator", "subject": "subject",
               "keywords": "keywords", "category": "category", "language": "language",
               "created": "created", "modified": "modified",
               "last_modified_by": "lastModifiedBy"}
