"""The Answerer contract and what every answerer shares: citations and the "not found" reply."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from citewise.text import messages
from citewise.types import Citation, Event, Evidence, Hit

# every answerer's "not found" replies (the answer service translates them)
NOT_FOUND = messages.NOT_FOUND
NO_DOCUMENTS = messages.NO_DOCUMENTS


class Answerer(Protocol):
    def stream(
        self, question: str, evidence: Sequence[Evidence], history: Sequence[tuple[str, str]] = ()
    ) -> Iterator[Event]:
        """Status and token events, then exactly one DoneEvent holding the Answer."""


def to_evidence(hits: Sequence[Hit]) -> list[Evidence]:
    """Number the selected hits 1..n as citations (hits must carry chunk and document)."""
    out = []
    for n, hit in enumerate(hits, start=1):
        chunk, doc = hit.chunk, hit.document
        assert chunk is not None and doc is not None, "hits must be loaded (Retriever.rank)"
        out.append(
            Evidence(
                citation=Citation(
                    n=n, chunk_id=chunk.id, document_id=doc.id, path=doc.path, title=doc.title,
                    section=chunk.section, page=chunk.page, line_start=chunk.line_start,
                    line_end=chunk.line_end, char_start=chunk.char_start, char_end=chunk.char_end,
                    score=float(hit.relevance if hit.relevance is not None else hit.score),
                    symbol=chunk.symbol, format=doc.format, page_label=doc.page_label(chunk.page),
                    page_end=chunk.page_end, page_end_label=doc.page_label(chunk.page_end),
                    also_in=tuple(d.path for d in hit.duplicates),
                ),
                hit=hit,
            )
        )
    return out
