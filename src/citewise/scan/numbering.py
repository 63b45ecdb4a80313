"""The contract's own clause numbers ("12.3", "7.2(b)", "IV") for the passages a scan cites.

A clause is cited the way the contract numbers it. The number is read from the text the
parser extracted, so it works for every format: plain text and PDF contracts print their
numbers ("15. The validity..."), and the DOCX parser writes the numbers Word computes for
automatically numbered paragraphs (``w:numPr`` levels of ``numbering.xml``, "1.", "1.1") in
front of their text (:mod:`citewise.ingest.parsers._docx_numbering`), and makes a numbered
clause title followed by its sub-clauses a heading.

:func:`clause_number` looks, nearest first, at the start of the cited passage, then at the
start of its block (for a list block: of the item lines before the passage), then at the
blocks before it. A *section* label ("12.3", "12.", "Section 12.3", "Article IV", "IV.") ends
the search; an *item* label ("(b)", "b)", "(iv)") is kept and the search goes on for the
section it belongs to ("12.3(b)"). The search stops, without a number, at a heading that
carries none and at the start of an exhibit, schedule, annex or the signature block.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass

from citewise.types import Block, BlockKind, ParsedDocument

__all__ = ["Label", "clause_number", "leading_label"]

#: A section label: "12", "12.3", "12.3.1" (each part at most 3 digits, so years are no
#: labels), optionally after "Section"/"Clause"/"Article"/"Sec."/"§", or a Roman numeral after
#: one of those words or before a period. A label closed by "." or ")" must be followed by
#: white space or the end; one without must be followed by the end or by white space and a
#: word that does not start in lower case ("Section 5 of this Agreement" is a reference).
_SECTION = re.compile(
    r"(?P<word>(?:section|clause|article|sec\.|§)\s*)?"
    r"(?:(?P<num>\d{1,3}(?:\.\d{1,3})*)|(?P<roman>[IVXL]{1,6})(?(word)|(?=\.)))"
    r"(?P<close>[.)](?!\d))?"
    r"(?(close)(?=\s|$)|(?=\s*$|\s+(?-i:[^a-z\s])))",
    re.IGNORECASE)
#: An item label: "(b)", "(iv)", "(12)", "b)" followed by white space (cited as "(b)").
_ITEM = re.compile(r"\(?(?P<item>[a-z]{1,2}|[ivxl]{1,6}|\d{1,3})\)(?=\s)", re.IGNORECASE)
#: Blocks where the clause numbering of the body ends.
_STOP = re.compile(r"(?:exhibit|schedule|annex|appendix|attachment|in\s+witness\s+whereof)\b",
                   re.IGNORECASE)


@dataclass(frozen=True)
class Label:
    """A number label at the start of a text: ``text`` as cited ("12.3", "IV", "(b)"),
    ``item`` True for an item label that needs its section, ``length`` the characters it
    takes (with its prefix word and punctuation)."""

    text: str
    item: bool
    length: int


def leading_label(text: str) -> Label | None:
    """The number label ``text`` starts with (leading white space allowed), or None.

    >>> leading_label("12.3 The Supplier shall...").text
    '12.3'
    >>> leading_label("Section 5 of this Agreement") is None
    True
    """
    stripped = text.lstrip()
    lead = len(text) - len(stripped)
    m = _SECTION.match(stripped)
    if m is not None:
        number = m.group("num") or m.group("roman").upper()
        return Label(number, False, lead + m.end())
    m = _ITEM.match(stripped)
    if m is not None:
        return Label(f"({m.group('item')})", True, lead + m.end())
    return None


def _starts(parsed: ParsedDocument, index: int, offset: int
            ) -> Iterator[tuple[Block, str, bool]]:
    """(block, text from a possible label position, whether that is the block's start),
    nearest first: the passage at ``offset``, the item lines (list blocks) or the start of
    its block, then the same in each earlier block."""
    text = parsed.text
    for i in range(index, -1, -1):
        block = parsed.blocks[i]
        end = offset if i == index else block.end
        if i == index and offset > block.start:
            yield block, text[offset:block.end], False
        if block.kind is BlockKind.LIST:
            line = text.rfind("\n", block.start, end)
            while line >= block.start:
                yield block, text[line + 1:block.end], False
                line = text.rfind("\n", block.start, line)
        yield block, text[block.start:block.end], True


def clause_number(parsed: ParsedDocument, offset: int) -> str | None:
    """The contract's number of the clause holding character ``offset`` of ``parsed.text``
    ("12.3", "12.3(b)", "IV"; see the module docstring), or None when it has none."""
    blocks = parsed.blocks
    if not blocks:
        return None
    index = bisect.bisect_right([b.start for b in blocks], offset) - 1
    if index < 0:
        return None
    item: str | None = None
    for block, start, at_block_start in _starts(parsed, index, offset):
        if at_block_start and _STOP.match(start.lstrip()):
            break
        label = leading_label(start)
        if label is not None:
            if not label.item:
                return label.text + (item or "")
            item = item or label.text
        elif at_block_start and block.kind is BlockKind.HEADING:
            break  # a heading without a number: the numbering does not reach above it
    return item
