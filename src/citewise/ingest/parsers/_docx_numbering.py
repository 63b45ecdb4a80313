"""Word list numbers as Word renders them (case N06).

An automatically numbered paragraph holds only its text; the number ("4.2", "(b)", "iii.")
is computed by Word from ``word/numbering.xml``: the paragraph's ``w:numPr`` (direct, or from
its paragraph style) names a list instance (``w:num``) and a level; the instance points to an
abstract definition (``w:abstractNum``) whose levels give a start value, a number format and a
level text such as ``%1.%2``. :class:`Numbering` replays that in document order:

* counters belong to the abstract definition, so list instances that share one continue
  each other's numbering; an instance with a ``w:startOverride`` restarts its level the first
  time it is used;
* using a level restarts the deeper levels (``w:lvlRestart`` can delay or stop that);
* ``%N`` is level N's current value in that level's format (decimal, letters, roman numerals,
  zero-padded, ordinals; ``w:isLgl`` forces decimal), a level not used yet shows its start;
* bullets (``numFmt="bullet"``) and ``none`` levels give no number; ``numId`` 0 switches
  numbering off; ``w:numStyleLink`` follows a numbering style to its definition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ListLabel", "Numbering", "format_number"]

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MAX_LEVELS = 9


@dataclass(frozen=True)
class ListLabel:
    """A list paragraph's rendered ``number`` ("4.2"; "" for a bullet or a ``none`` level),
    its list instance ``num_id`` and 0-based ``level``."""

    number: str
    bullet: bool
    num_id: str
    level: int


@dataclass
class _Level:
    start: int = 1
    fmt: str = "decimal"
    text: str = ""
    restart: int | None = None  # w:lvlRestart (1-based level index, 0 = never)
    legal: bool = False


@dataclass
class _Abstract:
    levels: dict[int, _Level] = field(default_factory=dict)
    counters: list[int | None] = field(default_factory=lambda: [None] * _MAX_LEVELS)


@dataclass
class _Instance:
    abstract: _Abstract | None
    overrides: dict[int, int] = field(default_factory=dict)  # level -> startOverride
    level_overrides: dict[int, _Level] = field(default_factory=dict)
    used: set[int] = field(default_factory=set)


def _val(element: Any, name: str) -> str | None:
    child = element.find(_W + name) if element is not None else None
    return child.get(_W + "val") if child is not None else None


def _int(value: str | None, default: int | None = None) -> int | None:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _level(lvl: Any) -> _Level:
    level = _Level()
    level.start = _int(_val(lvl, "start"), 1) or 0
    level.fmt = _val(lvl, "numFmt") or "decimal"
    level.text = _val(lvl, "lvlText") or ""
    restart = lvl.find(_W + "lvlRestart")
    if restart is not None:
        level.restart = _int(restart.get(_W + "val"))
    legal = lvl.find(_W + "isLgl")
    level.legal = legal is not None and legal.get(_W + "val") in (None, "1", "true", "on")
    return level


class Numbering:
    """The list numbers of one document, computed paragraph by paragraph in document order.

    ``root`` is the ``w:numbering`` element (None: the document has no numbering part);
    ``style_numbering`` maps paragraph style ids to the ``(numId, ilvl)`` their style sets.
    """

    def __init__(self, root: Any | None, style_numbering: dict[str, tuple[str, int]]) -> None:
        self.style_numbering = style_numbering
        self.instances: dict[str, _Instance] = {}
        if root is None:
            return
        abstracts: dict[str, _Abstract] = {}
        links: dict[str, str] = {}  # abstractNumId -> numbering style it links to
        style_of: dict[str, str] = {}  # numbering style -> abstractNumId that defines it
        for element in root.iterchildren(_W + "abstractNum"):
            aid = element.get(_W + "abstractNumId") or ""
            abstract = _Abstract()
            for lvl in element.iterchildren(_W + "lvl"):
                ilvl = _int(lvl.get(_W + "ilvl"), 0) or 0
                if 0 <= ilvl < _MAX_LEVELS:
                    abstract.levels[ilvl] = _level(lvl)
            abstracts[aid] = abstract
            if (link := _val(element, "numStyleLink")) is not None:
                links[aid] = link
            if (defines := _val(element, "styleLink")) is not None:
                style_of[defines] = aid
        for aid, style in links.items():  # a list that takes its levels from a style
            target = style_of.get(style)
            if target is not None and target in abstracts and not abstracts[aid].levels:
                abstracts[aid] = abstracts[target]
        for num in root.iterchildren(_W + "num"):
            instance = _Instance(abstracts.get(_val(num, "abstractNumId") or ""))
            for override in num.iterchildren(_W + "lvlOverride"):
                ilvl = _int(override.get(_W + "ilvl"), 0) or 0
                start = _int(_val(override, "startOverride"))
                if start is not None:
                    instance.overrides[ilvl] = start
                lvl = override.find(_W + "lvl")
                if lvl is not None:
                    instance.level_overrides[ilvl] = _level(lvl)
                    if start is None and lvl.find(_W + "start") is not None:
                        instance.overrides[ilvl] = instance.level_overrides[ilvl].start
            self.instances[num.get(_W + "numId") or ""] = instance

    def label(self, p: Any, style_id: str | None) -> ListLabel | None:
        """The list label of paragraph ``p`` (its counters advance), or None when it is not a
        list paragraph."""
        num_id, ilvl = None, None
        if style_id and style_id in self.style_numbering:
            num_id, ilvl = self.style_numbering[style_id]
        numpr = p.find(f"{_W}pPr/{_W}numPr")
        if numpr is not None:
            num_id = _val(numpr, "numId") or num_id
            ilvl = _int(_val(numpr, "ilvl"), ilvl)
        if num_id is None or num_id == "0":
            return None
        ilvl = min(max(ilvl or 0, 0), _MAX_LEVELS - 1)
        instance = self.instances.get(num_id)
        if instance is None or instance.abstract is None:
            return ListLabel("", True, num_id, ilvl)  # unresolvable: a plain list item
        abstract = instance.abstract
        level = self._level(instance, ilvl)
        counters = abstract.counters
        if ilvl in instance.overrides and ilvl not in instance.used:
            counters[ilvl] = instance.overrides[ilvl]
        elif counters[ilvl] is None:
            counters[ilvl] = level.start
        else:
            counters[ilvl] = (counters[ilvl] or 0) + 1
        instance.used.add(ilvl)
        for deeper in range(ilvl + 1, _MAX_LEVELS):
            restart = self._level(instance, deeper).restart
            if restart is None or (restart and ilvl + 1 <= restart):
                counters[deeper] = None
        if level.fmt == "bullet":
            return ListLabel("", True, num_id, ilvl)
        if level.fmt == "none" or not level.text:
            return ListLabel("", False, num_id, ilvl)
        text = level.text
        for n in range(_MAX_LEVELS, 0, -1):  # %10 does not exist; longest first anyway
            token = f"%{n}"
            if token not in text:
                continue
            other = self._level(instance, n - 1)
            value = counters[n - 1]
            if value is None:
                value = other.start
            fmt = "decimal" if level.legal and n - 1 < ilvl else other.fmt
            text = text.replace(token, format_number(value, fmt))
        return ListLabel(text.strip(), False, num_id, ilvl)

    @staticmethod
    def _level(instance: _Instance, ilvl: int) -> _Level:
        if ilvl in instance.level_overrides:
            return instance.level_overrides[ilvl]
        assert instance.abstract is not None
        return instance.abstract.levels.get(ilvl) or _Level(text=f"%{ilvl + 1}.")


def format_number(value: int, fmt: str) -> str:
    """``value`` in Word number format ``fmt`` (unknown formats read as decimal)."""
    if fmt in ("lowerLetter", "upperLetter"):
        text = _letters(value)
        return text.upper() if fmt == "upperLetter" else text
    if fmt in ("lowerRoman", "upperRoman"):
        text = _roman(value)
        return text.lower() if fmt == "lowerRoman" else text
    if fmt == "decimalZero":
        return f"{value:02d}"
    if fmt == "ordinal":
        suffix = "th" if 10 <= value % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(
            value % 10, "th")
        return f"{value}{suffix}"
    if fmt in ("decimalEnclosedParen",):
        return f"({value})"
    return str(value)


def _letters(value: int) -> str:
    """Word's letter numbering: a..z, then aa..zz, aaa.. (the letter repeated)."""
    if value <= 0:
        return str(value)
    letter = chr(ord("a") + (value - 1) % 26)
    return letter * ((value - 1) // 26 + 1)


def _roman(value: int) -> str:
    if not 0 < value < 4000:
        return str(value)
    out = []
    for n, s in ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
                 (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")):
        while value >= n:
            out.append(s)
            value -= n
    return "".join(out)
