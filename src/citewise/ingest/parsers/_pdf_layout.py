"""Reading order for one PDF page, from character boxes (pure functions, no PDF library).

Report generators often draw two columns row by row, so the text layer alternates left line,
right line (case C04). This module rebuilds the visual layout instead of trusting stream order:

1. rows: pdfium's lines grouped by vertical position, top to bottom;
2. segments: each row cut where the horizontal gap between glyphs exceeds about one em;
3. regions: consecutive rows whose gaps line up (no glyph crosses a shared gutter) form a
   region; if most of its rows have text on both sides of the gutters, a region of
   prose-length cells in at most three columns is read column by column and any other is a
   table (first row = header, one ``a | b | c`` line per row); other rows read left to right;
4. paragraphs: lines split where the vertical gap exceeds 0.75 line heights; a one-segment
   row set at least 1.25 times the page's median size is a heading.

Characters keep pdfium's order inside a segment, which is logical order for right-to-left
scripts; two Arabic repairs are applied there (see :func:`_fix_arabic`). Boxes are PDF user
space: x grows right, y grows up.
"""

from __future__ import annotations

import re
import statistics
import unicodedata
from dataclasses import dataclass, field

__all__ = ["Char", "Item", "layout"]

_GAP_EM = 0.9
_PARA_GAP = 0.75
_HEADING_RATIO = 1.25
_ALEFS = frozenset("\u0627\u0623\u0625\u0622\u0671")
_LAM = "\u0644"
_MARKER_RE = re.compile(
    r"^(?:[•●◦▪■□►▸‣∙·*o–-]|\(?[0-9]{1,3}[.)]|\(?[a-zA-Z][.)]|[ivxIVX]{1,4}[.)])$"
)
_LIGATURES = re.compile("[\ufb00-\ufb4f\ufb50-\ufdff\ufe70-\ufefe]+")


@dataclass(slots=True)
class Char:
    """One character (usually one code point) and its loose box from pdfium."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def xc(self) -> float:
        return (self.x0 + self.x1) / 2


@dataclass
class Item:
    """One reading-order unit of a page: ``kind`` is "heading", "paragraph" or "table"."""

    kind: str
    text: str
    header: str | None = None
    size: float = 0.0


@dataclass
class _Row:
    chars: list[Char]
    y0: float
    y1: float
    segments: list[tuple[float, float, list[Char]]] = field(default_factory=list)

    @property
    def height(self) -> float:
        return self.y1 - self.y0


def layout(lines: list[list[Char]]) -> list[Item]:
    """Reading-order items of a page from pdfium's lines (each in stream order)."""
    rows = _rows(lines)
    if not rows:
        return []
    median_h = statistics.median(r.height for r in rows) or 1.0
    for row in rows:
        row.segments = _segments(row)
    items: list[Item] = []
    pending: list[tuple[_Row, str]] = []  # plain lines waiting to become paragraphs

    def flush() -> None:
        items.extend(_paragraphs(pending, median_h))
        pending.clear()

    for region in _regions(rows):
        if len(region.rows) == 1 or region.kind == "plain":
            pending.extend((row, _row_text(row)) for row in region.rows)
            continue
        flush()
        if region.kind == "columns":
            for column in range(len(region.gutters) + 1):
                lines_in_column = [
                    (row, text) for row in region.rows
                    if (text := _cell(row, region.gutters, column))
                ]
                items.extend(_paragraphs(lines_in_column, median_h))
        else:
            table = [[_cell(row, region.gutters, c) for c in range(len(region.gutters) + 1)]
                     for row in region.rows]
            header = " | ".join(table[0])
            body = "\n".join(" | ".join(cells) for cells in table[1:] if any(cells))
            items.append(Item("table", body, header=header))
    flush()
    return items


# --- rows and segments --------------------------------------------------------------------------


def _rows(lines: list[list[Char]]) -> list[_Row]:
    bands = []
    parts = [part for line in lines for part in _split_line(line)]
    for order, line in enumerate(parts):
        ink = [c for c in line if not c.text.isspace()]
        if not ink:
            continue
        y0 = statistics.median(c.y0 for c in ink)
        y1 = statistics.median(c.y1 for c in ink)
        if y1 <= y0:
            y1 = y0 + 1.0
        bands.append((-(y0 + y1) / 2, order, y0, y1, line))
    bands.sort(key=lambda b: (b[0], b[1]))
    rows: list[_Row] = []
    for _, _, y0, y1, line in bands:
        if rows:
            last = rows[-1]
            centre, last_centre = (y0 + y1) / 2, (last.y0 + last.y1) / 2
            if abs(centre - last_centre) < 0.4 * min(y1 - y0, last.height):
                last.chars.extend(line)
                last.y0, last.y1 = min(last.y0, y0), max(last.y1, y1)
                continue
        rows.append(_Row(list(line), y0, y1))
    return rows


def _split_line(line: list[Char]) -> list[list[Char]]:
    """Split a pdfium line where the text jumps to another baseline (pdfium sometimes joins
    a hyphenated line end with the next line)."""
    parts: list[list[Char]] = [[]]
    centre = height = None
    for c in line:
        if not c.text.isspace():
            y, h = (c.y0 + c.y1) / 2, c.y1 - c.y0
            if centre is not None and abs(y - centre) > 0.6 * max(h, height or 0.0):
                parts.append([])
            centre, height = y, h
        parts[-1].append(c)
    return [p for p in parts if p]


def _segments(row: _Row) -> list[tuple[float, float, list[Char]]]:
    """Cut a row where the gap between glyphs exceeds about one em; chars keep stream order."""
    ink = sorted((c for c in row.chars if not c.text.isspace()), key=lambda c: c.x0)
    if not ink:
        return []
    threshold = max(_GAP_EM * row.height, 4.0)
    spans = [[ink[0].x0, ink[0].x1]]
    for c in ink[1:]:
        if c.x0 - spans[-1][1] > threshold:
            spans.append([c.x0, c.x1])
        else:
            spans[-1][1] = max(spans[-1][1], c.x1)
    segments: list[tuple[float, float, list[Char]]] = [(a, b, []) for a, b in spans]
    for c in row.chars:
        x = c.xc
        for a, b, members in segments:
            if a - 0.5 <= x <= b + 0.5:
                members.append(c)
                break
    return segments


def _segment_text(chars: list[Char]) -> str:
    """Text of a segment in stream order; a space is added where two glyphs stand apart by
    more than a third of their height and no space character separates them."""
    chars = _fix_arabic(chars)
    parts: list[str] = []
    prev: Char | None = None
    for c in chars:
        if prev is not None and not c.text.isspace() and not prev.text.isspace():
            gap = max(c.x0 - prev.x1, prev.x0 - c.x1)
            if gap > 0.33 * (c.y1 - c.y0):
                parts.append(" ")
        parts.append(c.text)
        prev = c
    text = "".join(parts)
    text = _LIGATURES.sub(lambda m: unicodedata.normalize("NFKC", m.group(0)), text)
    return " ".join(text.split())


def _row_text(row: _Row) -> str:
    return " ".join(t for _, _, chars in row.segments if (t := _segment_text(chars)))


# --- regions ------------------------------------------------------------------------------------


@dataclass
class _Region:
    rows: list[_Row]
    gutters: list[list[float]]
    kind: str = "plain"


def _regions(rows: list[_Row]) -> list[_Region]:
    regions: list[_Region] = []
    current: _Region | None = None
    for row in rows:
        if current is not None and _fits(row, current.gutters):
            current.rows.append(row)
            continue
        if current is not None:
            regions.append(current)
        gutters = [[a[1], b[0]] for a, b in zip(row.segments, row.segments[1:])]
        current = _Region([row], gutters)
    if current is not None:
        regions.append(current)
    for region in regions:
        _classify(region)
    return regions


def _fits(row: _Row, gutters: list[list[float]]) -> bool:
    """True if ``row`` leaves every gutter open: its glyphs may narrow a gutter from either
    side but must leave at least ``_GAP_EM`` of it, and nothing may sit inside or across it.
    On success the gutters are narrowed to fit the row."""
    if not gutters:
        return False
    narrowed = []
    for lo, hi in gutters:
        for a, b, _ in row.segments:
            if b <= lo or a >= hi:
                continue
            if a < lo and b < hi:
                lo = b
            elif a > lo and b > hi:
                hi = a
            else:
                return False
        if hi - lo < max(_GAP_EM * row.height, 4.0):
            return False
        narrowed.append((lo, hi))
    for gutter, (lo, hi) in zip(gutters, narrowed):
        gutter[0], gutter[1] = lo, hi
    return True


def _classify(region: _Region) -> None:
    rows = region.rows
    if len(rows) < 2 or not region.gutters:
        region.kind = "plain"
        return
    # a first column of list markers ("•", "1.", "a)") is a hanging indent, not a column
    while region.gutters and all(
        not (c := _cell(r, region.gutters, 0)) or _MARKER_RE.match(c) for r in rows
    ):
        region.gutters.pop(0)
        for row in rows:
            row.segments = _merge_first(row, region.gutters)
    if not region.gutters:
        region.kind = "plain"
        return
    columns = len(region.gutters) + 1
    cells = [[_cell(r, region.gutters, c) for r in rows] for c in range(columns)]
    # rows with text on both sides of a gutter; a running header ("Chapter 2 ... 3") above
    # short lines must not turn a page into a table, so most rows have to use the gutters
    filled = sum(1 for i in range(len(rows)) if sum(1 for column in cells if column[i]) > 1)
    if filled < max(2, (len(rows) + 1) // 2):
        region.kind = "plain"
        return
    prose = all(
        statistics.median([len(t) for t in column if t] or [0]) >= 15 for column in cells
    )
    region.kind = "columns" if prose and columns <= 3 and len(rows) >= 3 else "table"


def _merge_first(row: _Row, gutters: list[list[float]]) -> list[tuple[float, float, list[Char]]]:
    """Segments of ``row`` with everything left of the first remaining gutter merged."""
    limit = gutters[0][0] if gutters else float("inf")
    left = [s for s in row.segments if s[1] <= limit + 0.5]
    rest = [s for s in row.segments if s[1] > limit + 0.5]
    if len(left) <= 1:
        return row.segments
    keep = {id(c) for s in left for c in s[2]}
    chars = [c for c in row.chars if id(c) in keep]
    return [(left[0][0], left[-1][1], chars)] + rest


def _cell(row: _Row, gutters: list[list[float]], column: int) -> str:
    """Text of ``row`` between gutter ``column - 1`` and gutter ``column``."""
    lo = gutters[column - 1][1] - 0.5 if column > 0 else float("-inf")
    hi = gutters[column][0] + 0.5 if column < len(gutters) else float("inf")
    parts = [_segment_text(chars) for a, b, chars in row.segments if a >= lo and b <= hi]
    return " ".join(p for p in parts if p)


# --- paragraphs ---------------------------------------------------------------------------------


def _paragraphs(lines: list[tuple[_Row, str]], median_h: float) -> list[Item]:
    items: list[Item] = []
    buf: list[str] = []
    prev: _Row | None = None
    for row, text in lines:
        if not text:
            continue
        heading = (
            row.height >= _HEADING_RATIO * median_h and len(row.segments) == 1 and len(text) < 150
        )
        new_block = (
            prev is None or heading or prev.height >= _HEADING_RATIO * median_h
            or prev.y0 - row.y1 > _PARA_GAP * min(prev.height, row.height)
        )
        if new_block and buf:
            items.append(Item("paragraph", _join(buf)))
            buf = []
        if heading:
            items.append(Item("heading", text, size=row.height / median_h))
            prev = row
            continue
        buf.append(text)
        prev = row
    if buf:
        items.append(Item("paragraph", _join(buf)))
    # a heading row followed by another heading row of the same size is one wrapped heading
    merged: list[Item] = []
    for item in items:
        if (merged and item.kind == merged[-1].kind == "heading"
                and abs(item.size - merged[-1].size) < 0.05):
            merged[-1].text += " " + item.text
        else:
            merged.append(item)
    return merged


def _join(lines: list[str]) -> str:
    """Lines joined by newlines; a line ending in a soft hyphen joins the next directly."""
    out = lines[0]
    for line in lines[1:]:
        if out.endswith(("\u00ad", "\x02")):
            out = out[:-1] + line
        else:
            out += "\n" + line
    return out.replace("\x02", "")


# --- right-to-left repairs ----------------------------------------------------------------------


def _fix_arabic(chars: list[Char]) -> list[Char]:
    """Repair two artefacts of shaped Arabic text (case C15):

    - the lam-alef ligature glyph decoded as alef then lam (both with the same box): swapped
      back to lam, alef, so "خالل" reads "خلال";
    - a combining mark (harakat, tanween) emitted before the letter it sits on, often after
      a spurious space: the space is dropped and the mark follows its letter ("يو ًما" ->
      "يومًا").
    """
    if not any("\u0600" <= c.text <= "\u06ff" for c in chars):
        return chars
    out = list(chars)
    i = 0
    while i < len(out) - 1:
        a, b = out[i], out[i + 1]
        if a.text in _ALEFS and b.text == _LAM and _same_box(a, b):
            out[i], out[i + 1] = b, a
            i += 2
            continue
        i += 1
    fixed: list[Char] = []
    i = 0
    while i < len(out):
        c = out[i]
        if c.text.isspace() and i + 1 < len(out) and _is_mark(out[i + 1].text):
            i += 1
            continue
        if _is_mark(c.text) and i + 1 < len(out):
            nxt = out[i + 1]
            if not _is_mark(nxt.text) and not nxt.text.isspace() and nxt.x0 <= c.xc <= nxt.x1:
                fixed.extend((nxt, c))
                i += 2
                continue
        fixed.append(c)
        i += 1
    return fixed


def _is_mark(text: str) -> bool:
    return len(text) == 1 and unicodedata.category(text) == "Mn"


def _same_box(a: Char, b: Char) -> bool:
    return abs(a.x0 - b.x0) < 0.5 and abs(a.x1 - b.x1) < 0.5 and abs(a.y0 - b.y0) < 0.5
