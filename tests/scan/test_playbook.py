"""Playbook loading and validation: every error names the file, the rule id and the field."""

from __future__ import annotations

import pytest

from citewise.errors import ConfigError
from citewise.scan.playbook import (
    DurationCheck,
    JurisdictionCheck,
    PatternCheck,
    Severity,
    bundled,
    load_playbook,
)

VALID_RULE = """
  - id: law
    title: Governing law
    clause_type: governing law
    severity: high
    accepts: Delaware only.
    check: {kind: jurisdiction, allowed: [Delaware]}
"""


def write(tmp_path, text: str):
    path = tmp_path / "book.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_default_playbook_has_the_rules_and_checks():
    book = load_playbook("default")
    assert bundled() == ["default"]
    assert [r.id for r in book.rules] == [
        "governing-law", "liability-cap", "uncapped-liability", "auto-renewal",
        "termination-for-convenience", "non-compete", "exclusivity", "assignment",
        "change-of-control", "audit-rights", "ip-ownership"]
    law = book.rules[0]
    assert law.clause_type == "Governing Law" and law.severity is Severity.HIGH
    assert isinstance(law.check, JurisdictionCheck) and law.check.allowed == ["Delaware", "New York"]
    cap = book.rules[1].check
    assert isinstance(cap, DurationCheck) and cap.minimum_days == 365.0 and cap.maximum_days is None
    assert book.rules[4].check.maximum_days == 90.0
    assert isinstance(book.rules[7].check, PatternCheck)
    assert {r.expect for r in book.rules if r.id in ("non-compete", "exclusivity")} == {"absent"}


def test_user_playbook_from_path_canonicalises_the_clause_type(tmp_path):
    book = load_playbook(write(tmp_path, "name: mine\nrules:" + VALID_RULE))
    assert book.name == "mine" and book.rules[0].clause_type == "Governing Law"
    assert book.source.endswith("book.yaml")


@pytest.mark.parametrize(("rules", "expected"), [
    (VALID_RULE.replace("governing law", "weather"),
     "rule 'law', field clause_type: Value error, unknown clause type 'weather'"),
    (VALID_RULE.replace("high", "urgent"),
     "rule 'law', field severity: Input should be 'high', 'medium' or 'low'"),
    (VALID_RULE.replace("[Delaware]", "[Atlantis]"),
     "rule 'law', field check.allowed: Value error, unknown jurisdiction(s) ['Atlantis']"),
    (VALID_RULE.replace("jurisdiction, allowed: [Delaware]", "duration, near: [notice]"),
     "rule 'law', field check: Value error, give at least one of min_months, max_months"),
    (VALID_RULE.replace("jurisdiction, allowed: [Delaware]", "patterns, require_any: ['(']"),
     "rule 'law', field check.require_any: Value error, invalid regular expression '('"),
    (VALID_RULE.replace("jurisdiction,", "colour,"),
     "rule 'law', field check: Input tag 'colour' found using 'kind' does not match"),
    (VALID_RULE.replace("    accepts: Delaware only.\n", ""),
     "rule 'law', field accepts: Field required"),
    (VALID_RULE.replace("    title: Governing law\n", "    title: Governing law\n    colour: red\n"),
     "rule 'law', field colour: Extra inputs are not permitted"),
    (VALID_RULE + VALID_RULE, "field (playbook): Value error, rule id 'law' is used twice"),
])
def test_invalid_playbook_names_file_rule_and_field(tmp_path, rules, expected):
    path = write(tmp_path, "name: mine\nrules:" + rules)
    with pytest.raises(ConfigError) as err:
        load_playbook(path)
    assert str(err.value).startswith(f"{path}: invalid playbook: ")
    assert expected in str(err.value)


def test_a_rule_without_id_is_named_by_position(tmp_path):
    path = write(tmp_path, "name: mine\nrules:" + VALID_RULE.replace("id: law", "idx: 1"))
    with pytest.raises(ConfigError, match=r"rule #1, field id: Field required"):
        load_playbook(path)


@pytest.mark.parametrize(("text", "expected"), [
    ("rules: [", "not a valid YAML file"),
    ("- a\n- b\n", "a playbook must be a mapping with 'name' and 'rules'"),
    ("name: x\nrules: []\n", "field rules: List should have at least 1 item"),
])
def test_broken_files(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=expected) as err:
        load_playbook(path)
    assert str(err.value).startswith(str(path))


def test_unknown_name_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown playbook 'strict': give a YAML file path or "
                                          r"one of default"):
        load_playbook("strict")
    with pytest.raises(ConfigError, match=r"playbook .*nope.yaml: no such file"):
        load_playbook(tmp_path / "nope.yaml")
