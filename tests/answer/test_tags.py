"""PromptTagFilter: the prompt's <evidence>/<passage> markers never reach the reader, however
the stream is cut, and nothing else is changed (issue 18, item 7)."""

from __future__ import annotations

import pytest

from citewise.answer.tags import MAX_HOLD, PromptTagFilter, strip_prompt_tags

LONG_SOURCE = "handbooks/" + "very-long-folder-name/" * 8 + "policy.md, page 3"


def _chunks(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def stream(pieces: list[str]) -> str:
    f = PromptTagFilter()
    return "".join(f.feed(p) for p in pieces) + f.flush()


LEAKY = [
    ("<evidence>The warranty lasts 24 months [1].</evidence>",
     "The warranty lasts 24 months [1]."),
    ('[1] <passage source="a.md">Batteries: 12 months.</passage> [1]',
     "[1] Batteries: 12 months. [1]"),
    ("Answer. </ Evidence > Done <EVIDENCE/> <Passage\nsource='x'>ok</PASSAGE >",
     "Answer.  Done  ok"),
    (f'See <passage source="{LONG_SOURCE}">this</passage>.', "See this."),
]
KEPT = [
    "If a < b and b > c then a < c.",
    "<b>bold</b> and <evidently> and <passages> and <evidence-list>",
    "x<3, 1<2, <<double>>, [1][2], <",
    "A lone tag start at the end <evid",
]


@pytest.mark.parametrize(("text", "expected"), LEAKY)
@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_markers_are_removed_however_the_stream_is_cut(text, expected, size):
    assert stream(_chunks(text, size)) == expected
    assert strip_prompt_tags(text) == expected


@pytest.mark.parametrize("text", KEPT)
@pytest.mark.parametrize("size", [1, 4, 1000])
def test_other_text_is_unchanged(text, size):
    assert stream(_chunks(text, size)) == text


def test_text_is_released_at_once_and_a_partial_tag_held_at_most_max_hold():
    f = PromptTagFilter()
    assert f.feed("The answer ") == "The answer "
    assert f.feed("is <") == "is "  # may be a marker: held
    assert f.feed("/evid") == ""
    assert f.feed("ence>") == ""
    assert f.removed == ["</evidence>"]
    assert f.feed(" 24 < 30") == " 24 < 30"
    # a '<' followed only by spaces is held, then released once past MAX_HOLD characters
    held = "<" + " " * (MAX_HOLD - 1)
    assert f.feed(held) == ""
    assert f.feed(" ") == held + " "
    assert f.flush() == ""


def test_flush_drops_a_cut_off_marker_and_keeps_other_text():
    f = PromptTagFilter()
    assert f.feed('Text <passage source="a') == "Text "
    assert f.flush() == ""
    assert f.removed == ['<passage source="a']
    f = PromptTagFilter()
    assert f.feed("Text <pass") == "Text "
    assert f.flush() == "<pass"  # never became a marker
