"""Deterministic checks: durations, jurisdictions, patterns, with exact values and spans."""

from __future__ import annotations

import pytest

from citewise.scan.checks import (
    Checker,
    CheckResult,
    Clause,
    DeterministicChecker,
    Duration,
    Verdict,
    find_durations,
    governing_jurisdiction,
    locate_quote,
    words_to_number,
)
from citewise.scan.playbook import Rule, load_playbook

RULES = {r.id: r for r in load_playbook("default").rules}


def clause(text: str, start: int = 100) -> Clause:
    return Clause("any", text, start, start + len(text), 0.5)


@pytest.mark.parametrize(("words", "value"), [
    (["twelve"], 12), (["ninety"], 90), (["one", "hundred", "eighty"], 180),
    (["two", "thousand", "and", "five"], 2005), (["forty", "five"], 45), (["notice"], None),
])
def test_words_to_number(words, value):
    assert words_to_number(words) == value


def test_find_durations_exact_values_and_spans():
    text = ("renews for successive one-year terms unless either party gives ninety (90) days "
            "notice, within 30 calendar days, or a 12-month period")
    found = find_durations(text, offset=10)
    expected = [(1.0, "year", 365.0, "one-year"), (90.0, "day", 90.0, "ninety (90) days"),
                (30.0, "day", 30.0, "30 calendar days"), (12.0, "month", 365.0, "12-month")]
    assert found == [Duration(v, u, d, 10 + text.index(s), 10 + text.index(s) + len(s))
                     for v, u, d, s in expected]
    assert [d.start for d in found] == [32, 73, 105, 128]
    assert [text[d.start - 10:d.end - 10] for d in found] == [
        "one-year", "ninety (90) days", "30 calendar days", "12-month"]
    assert find_durations("for a year, from time to time") == []


@pytest.mark.parametrize(("text", "name"), [
    (("This Agreement shall be governed by the laws of the State of New York, without regard "
      "to its conflicts of law; the courts of Delaware shall have jurisdiction."), "New York"),
    ("construed in accordance with the laws of England and Wales", "England and Wales"),
    ("governed by West Virginia law", "West Virginia"),
    ("the internal laws of the Commonwealth of Massachusetts", "Massachusetts"),
    ("the laws of the People's Republic of China", "China"),
])
def test_governing_jurisdiction(text, name):
    j = governing_jurisdiction(text, offset=5)
    assert j is not None and j.name == name
    assert " ".join(text[j.start - 5:j.end - 5].split()).casefold() in (
        name.casefold(), "people's republic of china")


def test_governing_law_rule():
    check = DeterministicChecker()
    ok = check.check(RULES["governing-law"], clause(
        "This Agreement is governed by the laws of the State of Delaware."))
    assert ok == CheckResult(Verdict.COMPLIANT,
                             "governed by the law of Delaware (accepted: Delaware, New York)",
                             (100 + 55, 100 + 63))
    bad = check.check(RULES["governing-law"], clause(
        "This Agreement is governed by the laws of California."))
    assert bad.verdict is Verdict.DEVIATES and bad.determinate
    assert bad.reason == "governed by the law of California, not one of the accepted Delaware, New York"
    none = check.check(RULES["governing-law"], clause("The parties agree on the applicable law."))
    assert none.verdict is Verdict.NEEDS_REVIEW and none.determinate is False


def test_liability_cap_minimum_months():
    rule = RULES["liability-cap"]
    check = DeterministicChecker()
    ok = check.check(rule, clause("Liability shall not exceed the fees paid in the twelve (12) "
                                  "months preceding the claim."))
    assert ok.verdict is Verdict.COMPLIANT
    assert ok.reason == "states 'twelve (12) months', at least 12 months"
    short = check.check(rule, clause("Liability shall not exceed the fees paid during the six "
                                     "months prior to the claim."))
    assert short.verdict is Verdict.DEVIATES
    assert short.reason == "states 'six months', shorter than the required 12 months"
    assert short.span == (100 + 52, 100 + 62)
    amount = check.check(rule, clause("Liability shall not exceed $50,000."))
    assert (amount.verdict, amount.reason) == (Verdict.NEEDS_REVIEW,
                                               "no period is stated in the clause")
    assert amount.determinate is False


def test_renewal_maximum_counts_only_renewal_periods():
    rule = RULES["auto-renewal"]
    check = DeterministicChecker()
    text = ("The initial term is five (5) years. Thereafter this Agreement renews automatically "
            "for successive one (1) year periods.")
    assert check.check(rule, clause(text)).verdict is Verdict.COMPLIANT
    long = check.check(rule, clause("This Agreement shall renew for additional two-year terms."))
    assert long.verdict is Verdict.DEVIATES
    assert long.reason == "states 'two-year', longer than the accepted 12 months"


def test_termination_notice_maximum_days():
    rule = RULES["termination-for-convenience"]
    check = DeterministicChecker()
    ok = check.check(rule, clause("Either party may terminate for convenience on sixty (60) "
                                  "days' prior written notice."))
    assert (ok.verdict, ok.reason) == (Verdict.COMPLIANT, "states 'sixty (60) days', within 90 days")
    bad = check.check(rule, clause("Either party may terminate without cause upon six months "
                                   "written notice."))
    assert (bad.verdict, bad.reason) == (
        Verdict.DEVIATES, "states 'six months', longer than the accepted 90 days")


def test_patterns_and_presence_rules():
    check = DeterministicChecker()
    ok = check.check(RULES["assignment"], clause(
        "Neither party may assign this Agreement without consent, which shall not be "
        "unreasonably withheld."))
    assert ok.verdict is Verdict.COMPLIANT and ok.span == (100 + 69, 100 + 97)
    strict = check.check(RULES["assignment"], clause(
        "Neither party may assign this Agreement without the prior written consent of the other."))
    # the clause lacks the accepted wording: it deviates, unless another passage has it
    assert strict.verdict is Verdict.DEVIATES and strict.determinate is False
    found = check.check(RULES["non-compete"], clause("Distributor shall not sell competing goods."))
    assert found == CheckResult(
        Verdict.DEVIATES, "Non-Compete clause found; accepted: No non-compete obligation "
        "binds us.")


def test_checker_protocol_and_quote_location():
    assert isinstance(DeterministicChecker(), Checker)
    c = clause("Neither party may  assign\nthis Agreement.", start=40)
    assert locate_quote(c, "may assign this") == (40 + 14, 40 + 30)
    assert locate_quote(c, "transfer") is None


def test_rule_type_is_the_pydantic_model():
    assert isinstance(RULES["governing-law"], Rule)


def test_verdict_labels_are_the_words_shown():
    assert [v.label for v in Verdict] == ["compliant", "deviates", "needs review", "not found"]
    assert [v.value for v in Verdict] == ["compliant", "deviates", "needs_review", "not_found"]
