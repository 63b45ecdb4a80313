"""Choosing the evidence passages from ranked sentence candidates (no model needed)."""

from __future__ import annotations

from citewise.answer.selection import Candidate, Scored, sentence_evidence
from citewise.types import Chunk, Citation, Evidence, Hit


def _chunk(n: int, path: str, text: str) -> Evidence:
    chunk = Chunk(id=f"c{n}", document_id=path, ordinal=n, text=text, source_text=text,
                  char_start=0, char_end=len(text))
    citation = Citation(n=n, chunk_id=chunk.id, document_id=path, path=path, title=path,
                        section=(), page=None, line_start=1, line_end=1, char_start=0,
                        char_end=len(text), score=0.5)
    return Evidence(citation=citation, hit=Hit(chunk_id=chunk.id, score=0.5, chunk=chunk))


def _ranked(pool: list[Evidence], scores: list[float]) -> list[Scored]:
    out = [Scored(Candidate(i, ev.chunk.text, 0, len(ev.chunk.text)), score, 0.0, 0.0)
           for i, (ev, score) in enumerate(zip(pool, scores, strict=True))]
    return sorted(out, key=lambda s: -s.score)


def test_one_file_gets_its_share_before_the_others_and_the_rest_only_with_room() -> None:
    """With 5 chunks of a file in the pool (evidence_per_file), its 4th and 5th best
    sentences pushed the only sentence of another file out of the evidence (seen on the docs
    question "Which API endpoint do I call to upload files into the index?")."""
    pool = [_chunk(i, "api.md", f"Sentence {i} of the API page.") for i in range(1, 6)]
    pool.append(_chunk(6, "limitations.md", "POST /api/documents writes the files."))
    ranked = _ranked(pool, [0.9, 0.8, 0.7, 0.6, 0.55, 0.5])
    chosen = sentence_evidence(pool, ranked, max_passages=5, budget_tokens=500,
                               max_per_file=3)
    # best first: the API page's 4th sentence came back in the room left, the 5th did not
    assert [ev.chunk.text for ev in chosen] == [
        *(f"Sentence {i} of the API page." for i in range(1, 5)),
        "POST /api/documents writes the files."]
    # without the share the fifth passage is the API page's again
    plain = sentence_evidence(pool, ranked, max_passages=5, budget_tokens=500)
    assert [ev.citation.path for ev in plain] == ["api.md"] * 5


def test_a_single_file_still_fills_the_evidence() -> None:
    pool = [_chunk(i, "contract.txt", f"Clause {i} of the contract.") for i in range(1, 7)]
    ranked = _ranked(pool, [0.9, 0.8, 0.7, 0.6, 0.55, 0.5])
    chosen = sentence_evidence(pool, ranked, max_passages=5, budget_tokens=500,
                               max_per_file=3)
    assert len(chosen) == 5
    assert [ev.chunk.text for ev in chosen] == [f"Clause {i} of the contract."
                                                for i in range(1, 6)]


def test_list_terms_are_the_plural_things_a_question_asks_to_be_listed() -> None:
    from citewise.answer.selection import list_terms

    assert list_terms("Which file formats can citewise ingest?") == {"file", "format"}
    assert list_terms("What verdicts can a scan flag have?") == {"verdict"}
    assert list_terms("List the supported databases.") == {"support", "databas"}
    # one thing asked for, or a verb ending in s after the noun: no list
    assert list_terms("Which fusion method merges the dense and BM25 results?") == set()
    assert list_terms("What is an extractive answer?") == set()
    assert "формат" in list_terms("Какие форматы файлов поддерживаются?")


def test_a_quoted_indented_line_of_code_is_cited_with_its_own_characters(make_engine,
                                                                          tmp_path) -> None:
    """Regression (requests' api.py): a function split into pieces leaves pieces that start
    with an indented line (``    return request("post", ...)``); a quote of one was cited
    from the indent with the stripped text's length, so the cited characters were the indent
    and the quote without its last four characters."""
    from citewise.answer.selection import candidates

    doc_lines = "\n".join(f"    Line {i} of the documentation of every keyword argument this "
                          f"helper passes on to the transport, with its default." for i in range(40))
    source = (f'def post(url, data=None, json=None, **kwargs):\n    """Send a POST request.\n\n'
              f'{doc_lines}\n    """\n\n    return request("post", url, data=data, json=json, '
              f'**kwargs)\n')
    path = tmp_path / "src" / "client.py"
    path.parent.mkdir()
    path.write_text(source, encoding="utf-8")
    engine = make_engine()
    engine.ingest([path.parent])
    [doc] = engine.store.documents()
    # the function's last piece: the docstring's last lines (indented) and the return line
    pieces = [c for c in engine.store.chunks_of(doc.id)
              if c.text.startswith("    ") and "return request(" in c.text]
    assert len(pieces) == 1
    chunk = pieces[0]
    hit = Hit(chunk_id=chunk.id, score=0.9, chunk=chunk, document=doc)
    citation = Citation(n=1, chunk_id=chunk.id, document_id=doc.id, path=doc.path,
                        title=doc.title, section=chunk.section, page=None,
                        line_start=chunk.line_start, line_end=chunk.line_end,
                        char_start=chunk.char_start, char_end=chunk.char_end, score=0.9)
    ev = Evidence(citation=citation, hit=hit)
    [candidate] = candidates(ev, 0)
    [quoted] = sentence_evidence([ev], [Scored(candidate, 0.9, 0.5, 0.5)])
    c = quoted.citation
    assert source[c.char_start:c.char_end].strip() == candidate.text.strip()
    assert source[c.char_end - 9:c.char_end] == "**kwargs)"
    assert source[c.char_start:c.char_end].lstrip().startswith("Line 3")
