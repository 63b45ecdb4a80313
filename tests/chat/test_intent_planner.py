"""Intent routing and the planner's directives (rules, parser, and the real small LLM)."""

from __future__ import annotations

import pytest

from citewise.answer.factory import open_provider
from citewise.chat.intent import GREETINGS, Intent, classify
from citewise.chat.planner import Directive, LLMPlanner, Plan, RulePlanner, parse_plan
from citewise.chat.sessions import History
from citewise.config import Settings
from citewise.types import ThinkingEvent

NO_HISTORY = History("", (), None)
WARRANTY = History("", (("How long is the laptop warranty?", "24 months [1]."),),
                   "How long is the laptop warranty?")


@pytest.mark.parametrize("text", sorted(GREETINGS) + ["Hello!", "  HEY ", "hiya?", "yo."])
def test_greetings_of_s0(text):
    assert classify(text) is Intent.GREETING


@pytest.mark.parametrize("text", ["hello there, what is the fee?", "history", "hi there friend", "gm team"])
def test_not_greetings(text):
    assert classify(text) is Intent.QUESTION


def test_thanks_and_attachment():
    assert classify("Thank you!") is Intent.THANKS
    assert classify("hello", attachment="abc") is Intent.SCAN


@pytest.mark.parametrize("text,expected", [
    ("Plan: look it up.\nSEARCH: warranty length", Plan(Directive.SEARCH, "warranty length",
                                                        ("look it up.",))),
    ("search :   warranty   ", Plan(Directive.SEARCH, "warranty")),
    ("**SEARCH:** \"warranty\" ", Plan(Directive.SEARCH, "warranty")),
    ("I will ingest it.\ningest: /data/a.pdf\nSEARCH: x",
     Plan(Directive.INGEST, "/data/a.pdf", ("I will ingest it.",))),
    ("Answer:", Plan(Directive.ANSWER, "")),
    ("scan - 0123456789abcdef01234567", Plan(Directive.SCAN, "0123456789abcdef01234567")),
    ("I think we should look.", Plan(Directive.SEARCH, "the exact query",
                                     ("I think we should look.",))),
    ("SEARCH:", Plan(Directive.SEARCH, "the exact query")),
    ("", Plan(Directive.SEARCH, "the exact query")),
])
def test_parse_plan(text, expected):
    assert parse_plan(text, "the exact query") == expected


def test_llm_plan_keeps_the_exact_query_unless_follow_up():
    plan = Plan(Directive.SEARCH, "laptop warranty duration")
    assert LLMPlanner.check(plan, "How long is the warranty?", NO_HISTORY).argument == (
        "How long is the warranty?")
    follow = LLMPlanner.check(Plan(Directive.SEARCH, "battery warranty length"),
                              "and for batteries?", WARRANTY)
    assert follow == Plan(Directive.SEARCH, "battery warranty length", rewritten=True)
    assert LLMPlanner.check(Plan(Directive.INGEST, "/etc/passwd"), "what is x?",
                            NO_HISTORY).directive is Directive.SEARCH
    assert LLMPlanner.check(Plan(Directive.ANSWER, ""), "what?", NO_HISTORY).directive is (
        Directive.SEARCH)


def _run(gen):  # type: ignore[no-untyped-def]
    events = []
    try:
        while True:
            events.append(next(gen))
    except StopIteration as stop:
        return events, stop.value


def test_rule_planner():
    events, plan = _run(RulePlanner().run("ingest ./notes/a.md", NO_HISTORY))
    assert plan == Plan(Directive.INGEST, "./notes/a.md",
                        ("The user asks to add a file to the collection.",))
    assert events == [ThinkingEvent("The user asks to add a file to the collection.")]
    _, plan = _run(RulePlanner().run("scan 0123456789abcdef01234567", NO_HISTORY))
    assert plan.directive is Directive.SCAN
    _, plan = _run(RulePlanner().run("and for batteries?", WARRANTY))
    assert plan.argument == "How long is the laptop warranty? and for batteries?"
    assert plan.rewritten
    _, plan = _run(RulePlanner().run("What is the refund policy?", WARRANTY))
    assert plan.argument == "What is the refund policy?" and not plan.rewritten


@pytest.mark.slow
def test_llm_planner_with_the_real_small_model(llm_settings, tmp_path):
    provider = open_provider(Settings(home=tmp_path, **llm_settings))
    assert provider is not None
    query = "How long does the laptop warranty last?"
    events, plan = _run(LLMPlanner(provider, max_tokens=48).run(query, NO_HISTORY))
    assert plan.directive is Directive.SEARCH
    assert plan.argument == query  # reaches the search unchanged
    assert type(events[0]).__name__ == "StatusEvent"
    assert all(isinstance(e, ThinkingEvent) for e in events[1:])
