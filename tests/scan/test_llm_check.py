"""The LLM clause checker against the real 0.5B llama.cpp server, and its fallback."""

from __future__ import annotations

import pytest

from citewise.answer.providers import OpenAICompatible
from citewise.scan.checks import Clause, DeterministicChecker, Verdict
from citewise.scan.llm_check import LLMChecker, parse_reply
from citewise.scan.playbook import load_playbook

TEXAS = ("This Agreement shall be governed by and construed in accordance with the laws of the "
         "State of Texas.")


def _rule(rule_id: str):  # type: ignore[no-untyped-def]
    return next(r for r in load_playbook("default").rules if r.id == rule_id)


def _clause(text: str) -> Clause:
    return Clause("Governing Law", text, 1000, 1000 + len(text), 0.5)


@pytest.mark.parametrize(("reply", "parsed"), [
    ('{"verdict": "deviates", "reason": "Texas law.", "quote": "State of Texas"}',
     (Verdict.DEVIATES, "Texas law.", "State of Texas")),
    ('Sure! {"verdict": "Not this clause", "reason": "a notice clause"} done',
     (Verdict.NOT_FOUND, "a notice clause", "")),
    ('{"verdict": "maybe", "reason": "?"}', None),
    ('{"verdict": "compliant", "reason": ""}', None),
    ("no json here", None),
    ('{"verdict": "compliant", "reason": "ok"', None),
])
def test_parse_reply(reply: str, parsed) -> None:  # type: ignore[no-untyped-def]
    assert parse_reply(reply) == parsed


def test_the_real_model_judges_a_governing_law_clause(llm_url: str) -> None:
    provider = OpenAICompatible("llamacpp", llm_url, "qwen2.5-coder-0.5b", None, 120.0)
    checker = LLMChecker(provider, DeterministicChecker())
    result = checker.check(_rule("governing-law"), _clause(TEXAS))
    assert checker.name == "llm:llamacpp:qwen2.5-coder-0.5b"
    # the format and the plumbing, not the judgement: the 0.5B test model answered "compliant"
    # for Texas here (wrong; the rule wants Delaware or New York), which is why scan_checker
    # "auto" keeps the rule checks for local models
    assert result.verdict in (Verdict.COMPLIANT, Verdict.DEVIATES, Verdict.NOT_FOUND)
    assert result.reason and "LLM check failed" not in result.reason  # it answered in format
    if result.span is not None:
        start, end = result.span
        assert 1000 <= start < end <= 1000 + len(TEXAS)


def test_a_failing_model_falls_back_to_the_rule_check(closed_port_url: str) -> None:
    provider = OpenAICompatible("llamacpp", closed_port_url, "m", None, 5.0)
    checker = LLMChecker(provider, DeterministicChecker())
    result = checker.check(_rule("governing-law"), _clause(TEXAS))
    expected = DeterministicChecker().check(_rule("governing-law"), _clause(TEXAS))
    assert result.verdict is expected.verdict is Verdict.DEVIATES
    assert result.reason.startswith(expected.reason)
    assert "LLM check failed" in result.reason and "unreachable" in result.reason
    assert checker.failures == 1


def test_auto_uses_rules_for_the_local_model_and_the_llm_for_a_remote_one(make_engine,
                                                                          llm_settings) -> None:
    assert isinstance(make_engine(llm_provider="local").scan_checker(), DeterministicChecker)
    assert isinstance(make_engine(**llm_settings).scan_checker(), LLMChecker)
    assert isinstance(make_engine(**llm_settings).scan_checker("rules"), DeterministicChecker)
