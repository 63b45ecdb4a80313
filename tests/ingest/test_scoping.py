"""Scoping a question (issue 23, item 5): the metadata ingest stores (front matter, PDF and
DOCX properties) and the ``paths``/``where`` filters over a real index built by ingesting
real files with the real embedding model."""

from __future__ import annotations

import io
from datetime import datetime
from pathlib import Path

import docx
import pytest
from fpdf import FPDF

from citewise.errors import QueryError
from citewise.ingest.pipeline import parse_file


def make_docx(path: Path, text: str, **properties: object) -> Path:
    document = docx.Document()
    document.add_heading("Travel policy", level=1)
    document.add_paragraph(text)
    for key, value in properties.items():
        setattr(document.core_properties, key, value)
    document.save(str(path))
    return path


def make_pdf(path: Path, text: str, author: str, keywords: str) -> Path:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.multi_cell(0, 8, text)
    pdf.set_author(author)
    pdf.set_subject("Expenses")
    pdf.set_keywords(keywords)
    pdf.set_creation_date(datetime(2024, 3, 5, 10, 0, 0))
    buffer = io.BytesIO()
    pdf.output(buffer)
    path.write_bytes(buffer.getvalue())
    return path


def test_docx_core_properties_become_metadata(tmp_path) -> None:
    path = make_docx(tmp_path / "travel.docx", "Trains are booked in second class.",
                     author="Ana Diaz", subject="Travel", keywords="travel; trains, booking",
                     category="policy", created=datetime(2023, 11, 2, 8, 30))
    parsed = parse_file(path, path.read_bytes())
    assert parsed.metadata["author"] == "Ana Diaz"
    assert parsed.metadata["subject"] == "Travel"
    assert parsed.metadata["keywords"] == ["travel", "trains", "booking"]
    assert parsed.metadata["category"] == "policy"
    assert parsed.metadata["created"] == "2023-11-02"
    assert "comments" not in parsed.metadata and "" not in parsed.metadata.values()


def test_pdf_information_becomes_metadata(tmp_path) -> None:
    path = make_pdf(tmp_path / "expenses.pdf", "Taxi receipts are kept for five years.",
                    author="Ben Ode", keywords="expenses, receipts")
    parsed = parse_file(path, path.read_bytes())
    assert parsed.metadata["author"] == "Ben Ode"
    assert parsed.metadata["subject"] == "Expenses"
    assert parsed.metadata["keywords"] == ["expenses", "receipts"]
    assert parsed.metadata["created"] == "2024-03-05"
    assert "creator" not in parsed.metadata  # not set: left out


def build_corpus(root: Path) -> Path:
    """Five files about refunds and receipts in two folders: Markdown with front matter, a
    DOCX and a PDF with properties."""
    (root / "hr").mkdir(parents=True)
    (root / "finance").mkdir()
    (root / "hr" / "leave.md").write_text(
        "---\ntitle: Leave\nauthor: Ana Diaz\ntags: [hr, leave]\ndraft: false\n---\n"
        "# Leave\n\nUnused leave days are refunded at the end of the year.\n", encoding="utf-8")
    (root / "hr" / "draft.md").write_text(
        "---\nauthor: Ana Diaz\ndraft: true\n---\n# Draft\n\nRefunds of leave days are "
        "being reviewed and may change next year.\n", encoding="utf-8")
    (root / "finance" / "refunds.md").write_text(
        "---\nauthor: Carl\ntags: [finance]\n---\n# Refunds\n\nCustomer refunds are paid "
        "within 14 days of the returned goods arriving.\n", encoding="utf-8")
    make_docx(root / "finance" / "travel.docx", "Travel costs are refunded when receipts "
              "are attached.", author="Dana Roe", keywords="travel, refunds")
    make_pdf(root / "finance" / "expenses.pdf", "Expense refunds need the original receipts, "
             "kept for five years.", author="Ben Ode", keywords="expenses, receipts")
    return root


def scoped(engine):  # type: ignore[no-untyped-def]
    report = engine.ingest([build_corpus(engine.settings.home.parent / "policies")])
    assert sum(1 for f in report.files if f.status == "added") == 5, report.files
    return engine


@pytest.fixture
def scoped_engine(make_engine):
    """A real SQLite index of :func:`build_corpus`."""
    return scoped(make_engine())


#: filters and the paths a search limited by them finds
CASES = [
    ({}, {"policies/hr/leave.md", "policies/hr/draft.md", "policies/finance/refunds.md",
          "policies/finance/travel.docx", "policies/finance/expenses.pdf"}),
    ({"paths": ["hr/"]}, {"policies/hr/leave.md", "policies/hr/draft.md"}),
    ({"paths": ["*.pdf", "*.docx"]}, {"policies/finance/expenses.pdf",
                                      "policies/finance/travel.docx"}),
    ({"where": {"author": "ana diaz", "draft": "false"}}, {"policies/hr/leave.md"}),
    ({"where": {"tags": "finance"}}, {"policies/finance/refunds.md"}),
    ({"where": {"keywords": "receipts"}}, {"policies/finance/expenses.pdf"}),
    ({"where": {"author": ["Dana Roe", "Carl"]}}, {"policies/finance/travel.docx",
                                                   "policies/finance/refunds.md"}),
    ({"where": {"format": "pdf"}}, {"policies/finance/expenses.pdf"}),
    # PDF CreationDate 2024-03-05; python-docx's template says 2013-12-23
    ({"where": {"created": {"gte": "2024-01-01"}}}, {"policies/finance/expenses.pdf"}),
    ({"where": {"created": {"gte": "2013-12", "lt": "2024"}}}, {
        "policies/finance/travel.docx"}),
    ({"paths": ["finance"], "where": {"author": "Ana Diaz"}}, set()),
]


def paths_found(engine, **filters) -> set[str]:
    result = engine.search("refunds of money and receipts", top_k=10, filters=filters)
    return {hit.document.path for hit in result.hits}


def test_search_is_limited_to_paths_and_metadata(scoped_engine) -> None:
    for filters, want in CASES:
        assert paths_found(scoped_engine, **filters) == want, filters


def test_postgres_scopes_as_sqlite_does(make_engine, postgres_url) -> None:
    """The same files on the PostgreSQL store: every filter finds the same documents."""
    engine = scoped(make_engine(store=postgres_url))
    for filters, want in CASES:
        assert paths_found(engine, **filters) == want, filters
    engine.store.close()


def test_a_scoped_answer_cites_only_the_scope(scoped_engine) -> None:
    answer = None
    for event in scoped_engine.ask_stream("How are refunds paid?", extractive=True,
                                          filters={"where": {"author": "Carl"}}):
        answer = getattr(event, "answer", answer)
    assert answer is not None and answer.found
    assert {c.path for c in answer.citations} == {"policies/finance/refunds.md"}


def test_a_bad_filter_is_refused_naming_it(scoped_engine) -> None:
    with pytest.raises(QueryError, match="filter 'paths'"):
        scoped_engine.search("refunds", filters={"paths": "hr"})
    with pytest.raises(QueryError, match="filter 'where'"):
        scoped_engine.search("refunds", filters={"where": {"_root": "x"}})
