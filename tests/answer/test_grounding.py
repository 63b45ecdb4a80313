"""Citation editing and support scoring on real evidence objects (no model needed)."""

from __future__ import annotations

import pytest

from citewise.answer.grounding import (
    Attributor,
    CitationFilter,
    check_support,
    citation_numbers,
    citation_precision,
    cited_sentences,
)
from citewise.types import Chunk, Citation, Evidence, Hit

PASSAGES = {
    1: "The Model K2 kettle carries a warranty of 24 months from the date of purchase.",
    2: "Descale the kettle every 4 weeks with citric acid; never use vinegar.",
    3: "The K2 holds 1.7 litres and boils in about 3 minutes.",
}


def _evidence() -> list[Evidence]:
    out = []
    for n, text in PASSAGES.items():
        chunk = Chunk(id=f"c{n}", document_id=f"d{n}", ordinal=0, text=text, source_text=text,
                      char_start=0, char_end=len(text))
        citation = Citation(n=n, chunk_id=chunk.id, document_id=chunk.document_id,
                            path=f"doc{n}.md", title=f"doc{n}", section=(), page=None,
                            line_start=1, line_end=1, char_start=0, char_end=len(text), score=0.5)
        out.append(Evidence(citation=citation, hit=Hit(chunk_id=chunk.id, score=0.5, chunk=chunk)))
    return out


def _through(filter_: CitationFilter, pieces: list[str]) -> str:
    return "".join(filter_.feed(p) for p in pieces) + filter_.flush()


@pytest.mark.parametrize(
    ("inner", "numbers"),
    [("1", [1]), ("1, 3", [1, 3]), ("2-4", [2, 3, 4]), ("2–3", [2, 3]), ("1;1", [1])],
)
def test_citation_numbers(inner: str, numbers: list[int]) -> None:
    assert citation_numbers(inner) == numbers


def test_filter_removes_citations_to_missing_passages_across_token_boundaries() -> None:
    f = CitationFilter({1, 2, 3})
    out = _through(f, ["The warranty is 24 months", " [", "7", "]", ". Descale", " monthly [2",
                       ", 9]."])
    assert out == "The warranty is 24 months. Descale monthly [2]."
    assert f.removed == ["7", "9"]
    assert f.cited == [2]


def test_filter_drops_placeholders_and_keeps_ordinary_brackets() -> None:
    f = CitationFilter({1})
    assert _through(f, ["It is [sic] fine [n] and [1]."]) == "It is [sic] fine and [1]."


def test_filter_releases_an_unclosed_bracket_once_it_is_too_long_to_be_a_citation() -> None:
    f = CitationFilter({1})
    held = f.feed("see [")
    assert held == "see"  # the space and "[" wait for a possible citation
    text = held + f.feed("a long aside that never closes") + f.flush()
    assert text == "see [a long aside that never closes"


def test_cited_sentences_attach_trailing_citations_to_the_sentence_they_follow() -> None:
    assert cited_sentences("It lasts 24 months. [1] Use citric acid [2]. It holds 1.7 litres.") \
        == [("It lasts 24 months. [1]", [1]), ("Use citric acid [2].", [2]),
            ("It holds 1.7 litres.", [])]


def test_support_flags_a_sentence_its_citation_does_not_support() -> None:
    ev = _evidence()
    support = check_support("The warranty is 24 months [1]. The warranty is 36 months [2].",
                            ev, threshold=0.5)
    assert [s.citations for s in support] == [(1,), (2,)]
    assert support[0].supported and support[0].support == 1.0
    assert not support[1].supported  # [2] is about descaling, and 36 is nowhere
    assert citation_precision(support) == 0.5


def test_a_wrong_number_costs_twice_a_word() -> None:
    # terms: warranti (1), 36 (2), month (1); 36 is not in passage 1 -> (1 + 1) / 4
    (s,) = check_support("The warranty is 36 months [1].", _evidence())
    assert s.support == pytest.approx(0.5)
    (s,) = check_support("The warranty is 24 months [1].", _evidence())
    assert s.support == pytest.approx(1.0)


def test_attributor_cites_the_supporting_passage_for_an_uncited_sentence() -> None:
    a = Attributor(_evidence(), threshold=0.5)
    pieces = ["The K2 warranty", " lasts 24 months.", " Descale it", " with citric acid [2].",
              " The sky is green."]
    out = "".join(a.feed(p) for p in pieces) + a.flush()
    assert out == ("The K2 warranty lasts 24 months. [1] Descale it with citric acid [2]. "
                   "The sky is green.")
    assert a.added == [1]


def test_attributor_leaves_a_sentence_cited_after_its_end_alone() -> None:
    a = Attributor(_evidence(), threshold=0.5)
    out = "".join(a.feed(p) for p in ["It boils in 3 minutes.", " ", "[3]", " Done."]) + a.flush()
    assert out == "It boils in 3 minutes. [3] Done."
    assert a.added == []


def test_a_checked_sentence_reads_as_written_without_its_citation_marks() -> None:
    """Regression: the text shown for an unsupported sentence kept the space before each
    removed mark ("passage and passage ."), as `citewise ask` printed it."""
    support = check_support("The warranty is in passage [1] and in the manual [3].", _evidence())
    assert [s.text for s in support] == ["The warranty is in passage and in the manual."]
