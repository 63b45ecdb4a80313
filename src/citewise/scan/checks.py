"""Checking a found clause against a rule: the pluggable :class:`Checker` interface and the
deterministic checker (patterns, numbers, durations, jurisdictions).

A checker gets one rule and one candidate clause and returns a :class:`CheckResult`. The
scanner tries a rule's candidates best first and keeps the first *determinate* result, so a
checker that cannot decide from one passage (no duration stated in it: ``NEEDS_REVIEW``) lets
the next candidate speak; the scanner, not the checker, decides the flag's final verdict
(:mod:`citewise.scan.scanner`). An LLM checker (structured output: verdict, reason, quoted span) plugs in by
implementing the same :class:`Checker` protocol; :func:`locate_quote` turns its quote into a
character span.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Protocol, runtime_checkable

from citewise.scan.jurisdictions import JURISDICTIONS
from citewise.scan.playbook import (
    DurationCheck,
    JurisdictionCheck,
    PatternCheck,
    PresenceCheck,
    Rule,
)


class Verdict(str, Enum):
    """What a flag says about one rule (docs/scan.md, "What each verdict guarantees").

    In a :class:`CheckResult` (one passage judged by a checker) ``NEEDS_REVIEW`` means the
    passage did not hold what the check needs, and ``NOT_FOUND`` that the passage is not a
    clause of the rule's type (the scanner then tries the next candidate).
    """

    #: the clause was found with confidence and its terms meet the rule (for a rule that
    #: forbids the clause: it is there, but a given check accepts its terms)
    COMPLIANT = "compliant"
    #: the clause was found with confidence and its terms break the rule (or, for a rule that
    #: forbids the clause, it is there)
    DEVIATES = "deviates"
    #: a passage was cited but the scan could not decide: the finder is unsure it is a clause
    #: of the type, only a bare heading matched, or the clause holds nothing the check reads
    NEEDS_REVIEW = "needs_review"
    #: no clause of the type was found; never a pass, also for rules that forbid the clause
    NOT_FOUND = "not_found"

    @property
    def label(self) -> str:
        """The words shown to people: ``compliant``, ``deviates``, ``needs review``,
        ``not found``."""
        return self.value.replace("_", " ")


@dataclass(frozen=True)
class Clause:
    """A candidate clause for a rule: ``text == document_text[start:end]``; ``score`` is the
    classifier's score for the rule's clause type (higher is more typical)."""

    clause_type: str
    text: str
    start: int
    end: int
    score: float


@dataclass(frozen=True)
class CheckResult:
    """A checker's answer for one (rule, clause) pair.

    ``verdict`` is COMPLIANT or DEVIATES when the check decided, NEEDS_REVIEW when the
    passage does not hold what the check reads (no period stated, no known jurisdiction),
    NOT_FOUND when the checker judged the passage not to be a clause of the type. ``span`` is
    the decisive part as document offsets (end exclusive), or None for the whole clause.
    ``determinate`` is False when another passage of the type might decide better (the scanner
    then tries the next candidate and keeps this result only if none decides): always so for
    NEEDS_REVIEW, and for a DEVIATES that only says the accepted wording is not in this passage.
    """

    verdict: Verdict
    reason: str
    span: tuple[int, int] | None = None
    determinate: bool = True


@runtime_checkable
class Checker(Protocol):
    """Judges whether a clause satisfies a rule. Implementations must not raise for ordinary
    text; ``name`` is reported with each flag (``deterministic``, ``llm:<model>``...)."""

    name: str

    def check(self, rule: Rule, clause: Clause) -> CheckResult: ...


def locate_quote(clause: Clause, quote: str) -> tuple[int, int] | None:
    """Document offsets of ``quote`` inside the clause, compared with collapsed whitespace and
    case-insensitively; None if it is not there (an LLM may paraphrase)."""
    words = quote.split()
    if not words:
        return None
    pattern = r"\s+".join(re.escape(w) for w in words)
    m = re.search(pattern, clause.text, re.IGNORECASE)
    return (clause.start + m.start(), clause.start + m.end()) if m else None


# --- durations ------------------------------------------------------------------------------

_SMALL = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate(
    "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if w != "_"}
_UNIT_DAYS = {"day": 1.0, "week": 7.0, "month": 365 / 12, "year": 365.0}
_UNIT = re.compile(
    r"\b(?:(?:business|calendar|consecutive|full)\s+)?(day|week|month|year)s?\b", re.IGNORECASE)
_DIGITS_BEFORE = re.compile(r"(\d+(?:\.\d+)?)\s*\)?\s*-?\s*$")
_WORDS_BEFORE = re.compile(r"((?:[a-z]+[\s-]+){1,5})\(?\s*$", re.IGNORECASE)


def words_to_number(words: list[str]) -> int | None:
    """The number spelled by ``words`` (e.g. ['one', 'hundred', 'eighty'] -> 180), or None."""
    total, current, seen = 0, 0, False
    for w in (w.lower() for w in words):
        if w in _SMALL:
            current += _SMALL[w]
        elif w in _TENS:
            current += _TENS[w]
        elif w == "hundred" and seen:
            current *= 100
        elif w == "thousand" and seen:
            total, current = total + current * 1000, 0
        elif w == "and" and seen:
            continue
        else:
            return None
        seen = True
    return total + current if seen else None


def _spelled_before(before: str) -> tuple[int, int] | None:
    """(number, start offset) of the longest run of number words ending ``before`` (an opening
    parenthesis or hyphen may follow it), or None."""
    words = _WORDS_BEFORE.search(before)
    if not words:
        return None
    tokens = list(re.finditer(r"[a-z]+", words.group(1), re.IGNORECASE))
    for i in range(len(tokens)):
        n = words_to_number([t.group(0) for t in tokens[i:]])
        if n is not None:
            return n, words.start() + tokens[i].start()
    return None


@dataclass(frozen=True)
class Duration:
    """A period stated in text: ``value`` ``unit`` (day, week, month, year), its length in
    ``days`` (a month is 365/12 days, a year 365) and its offsets in the searched text."""

    value: float
    unit: str
    days: float
    start: int
    end: int


def find_durations(text: str, offset: int = 0) -> list[Duration]:
    """Every "N unit" period in ``text``: digits ("90 days", "12-month"), words ("ninety
    days"), or both ("twelve (12) months"); offsets are shifted by ``offset``."""
    out = []
    for m in _UNIT.finditer(text):
        before = text[max(0, m.start() - 60):m.start()]
        unit = m.group(1).lower()
        digits = _DIGITS_BEFORE.search(before)
        start = value = None
        if digits:
            value = float(digits.group(1))
            start = m.start() - len(before) + digits.start()
            # "twelve (12)": extend the span over the spelled-out number
            spelled = _spelled_before(before[: digits.start()])
            if spelled is not None and spelled[0] == value:
                start = m.start() - len(before) + spelled[1]
        else:
            spelled = _spelled_before(before)
            if spelled is not None:
                value, start = float(spelled[0]), m.start() - len(before) + spelled[1]
        if value is None or start is None:
            continue
        out.append(Duration(value, unit, value * _UNIT_DAYS[unit], start + offset,
                            m.end() + offset))
    return out


_CLAUSE_END = re.compile(r"[.;](?=\s)|\n\s*\n")


def _near(text: str, d: Duration, offset: int, patterns: list[str], window: int = 80) -> bool:
    """Whether a pattern occurs within ``window`` characters of ``d`` in the same sentence
    (a period or semicolon followed by space, or a blank line, ends the search)."""
    s, e = d.start - offset, d.end - offset
    lo, hi = max(0, s - window), min(len(text), e + window)
    for m in _CLAUSE_END.finditer(text, lo, s):
        lo = m.end()
    stop = _CLAUSE_END.search(text, e, hi)
    hi = stop.start() if stop else hi
    return any(re.search(p, text[lo:hi], re.IGNORECASE) for p in patterns)


def _fmt_days(days: float) -> str:
    months = days * 12 / 365
    if abs(months - round(months)) < 1e-6 and round(months) >= 1 and days >= 28:
        return f"{round(months)} months"
    return f"{days:g} days"


def check_duration(spec: DurationCheck, clause: Clause) -> CheckResult:
    found = [d for d in find_durations(clause.text, clause.start)
             if not spec.near or _near(clause.text, d, clause.start, spec.near)]
    if not found:
        return CheckResult(Verdict.NEEDS_REVIEW, "no period is stated in the clause",
                           determinate=False)

    def said(d: Duration) -> str:
        return clause.text[d.start - clause.start:d.end - clause.start]

    if spec.maximum_days is not None:
        worst = max(found, key=lambda d: d.days)
        if worst.days > spec.maximum_days + 1e-9:
            return CheckResult(Verdict.DEVIATES, f"states {said(worst)!r}, longer than the "
                               f"accepted {_fmt_days(spec.maximum_days)}", (worst.start, worst.end))
    if spec.minimum_days is not None:
        best = max(found, key=lambda d: d.days)
        if best.days < spec.minimum_days - 1e-9:
            return CheckResult(Verdict.DEVIATES, f"states {said(best)!r}, shorter than the "
                               f"required {_fmt_days(spec.minimum_days)}", (best.start, best.end))
        return CheckResult(Verdict.COMPLIANT, f"states {said(best)!r}, at least "
                           f"{_fmt_days(spec.minimum_days)}", (best.start, best.end))
    worst = max(found, key=lambda d: d.days)
    return CheckResult(Verdict.COMPLIANT, f"states {said(worst)!r}, within "
                       f"{_fmt_days(spec.maximum_days or 0)}", (worst.start, worst.end))


# --- jurisdictions --------------------------------------------------------------------------

_ALIASES = {"people's republic of china": "China", "prc": "China",
            "district of columbia": "District of Columbia"}
# longest first, so "West Virginia" wins over "Virginia" and "England and Wales" over "England"
_JURISDICTION = re.compile(
    r"\b(" + "|".join(re.escape(j).replace(r"\ ", r"\s+") for j in
                      sorted(JURISDICTIONS, key=len, reverse=True)) + r"|PRC)\b",
    re.IGNORECASE)
_LAWS_OF = re.compile(r"\blaws?\s+(?:and\s+\w+\s+)?(?:in\s+force\s+)?of\s+(?:the\s+)?"
                      r"(?:(?:State|Commonwealth|Province|Republic|Kingdom)\s+of\s+)?",
                      re.IGNORECASE)


@dataclass(frozen=True)
class Jurisdiction:
    """A jurisdiction named in text: canonical ``name`` and offsets (end exclusive)."""

    name: str
    start: int
    end: int


def _canonical_jurisdiction(found: str) -> str:
    folded = " ".join(found.split()).casefold()
    if folded in _ALIASES:
        return _ALIASES[folded]
    return next(j for j in JURISDICTIONS if j.casefold() == folded)


def find_jurisdictions(text: str, offset: int = 0) -> list[Jurisdiction]:
    """Every known jurisdiction named in ``text``, in order (offsets shifted by ``offset``)."""
    return [Jurisdiction(_canonical_jurisdiction(m.group(1)), m.start() + offset, m.end() + offset)
            for m in _JURISDICTION.finditer(text)]


def governing_jurisdiction(text: str, offset: int = 0) -> Jurisdiction | None:
    """The jurisdiction whose laws govern, read from a governing-law clause: the first one
    right after "laws of (the State of)", else the first one named; None if none is."""
    for m in _LAWS_OF.finditer(text):
        j = _JURISDICTION.match(text, m.end())
        if j:
            return Jurisdiction(_canonical_jurisdiction(j.group(1)), j.start() + offset,
                                j.end() + offset)
    found = find_jurisdictions(text, offset)
    return found[0] if found else None


def check_jurisdiction(spec: JurisdictionCheck, clause: Clause) -> CheckResult:
    j = governing_jurisdiction(clause.text, clause.start)
    allowed = ", ".join(spec.allowed)
    if j is None:
        return CheckResult(Verdict.NEEDS_REVIEW, "no known jurisdiction is named in the "
                           f"clause; accepted: {allowed}", determinate=False)
    if j.name.casefold() in {a.casefold() for a in spec.allowed}:
        return CheckResult(Verdict.COMPLIANT, f"governed by the law of {j.name} (accepted: "
                           f"{allowed})", (j.start, j.end))
    return CheckResult(Verdict.DEVIATES, f"governed by the law of {j.name}, not one of the "
                       f"accepted {allowed}", (j.start, j.end))


# --- patterns -------------------------------------------------------------------------------

def check_patterns(spec: PatternCheck, clause: Clause) -> CheckResult:
    for p in spec.forbid_any:
        m = re.search(p, clause.text, re.IGNORECASE)
        if m:
            return CheckResult(Verdict.DEVIATES, f"contains {m.group(0)!r}, which is not "
                               "accepted", (clause.start + m.start(), clause.start + m.end()))
    for p in spec.require_any:
        m = re.search(p, clause.text, re.IGNORECASE)
        if m:
            return CheckResult(Verdict.COMPLIANT, f"contains {m.group(0)!r}",
                               (clause.start + m.start(), clause.start + m.end()))
    if spec.require_any:
        return CheckResult(Verdict.DEVIATES, "none of the accepted wordings was found",
                           determinate=False)
    return CheckResult(Verdict.COMPLIANT, "no wording that is not accepted was found")


class DeterministicChecker:
    """Checks a rule's ``check`` spec with patterns, numbers, durations and jurisdictions.

    For ``expect: absent`` rules a found clause deviates, unless a non-presence check is given
    and passes.
    """

    name = "deterministic"

    def check(self, rule: Rule, clause: Clause) -> CheckResult:
        spec = rule.check
        if isinstance(spec, PresenceCheck):
            if rule.expect == "absent":
                return CheckResult(Verdict.DEVIATES, f"{rule.clause_type} clause found; "
                                   f"accepted: {rule.accepts}")
            return CheckResult(Verdict.COMPLIANT, f"a {rule.clause_type} clause is present")
        if isinstance(spec, JurisdictionCheck):
            return check_jurisdiction(spec, clause)
        if isinstance(spec, DurationCheck):
            return check_duration(spec, clause)
        return check_patterns(spec, clause)
