"""The ingest pipeline on real files: identity, incremental updates, per-file failures."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import CASES


def test_same_name_in_two_folders_is_two_documents(engine, tmp_path):
    for sub, text in (("a", "Alpha team meets on Mondays."), ("b", "Beta team meets on Fridays.")):
        (tmp_path / "col" / sub).mkdir(parents=True)
        (tmp_path / "col" / sub / "notes.txt").write_text(text)
    report = engine.ingest([tmp_path / "col"])
    assert sorted(f.path for f in report.files) == ["col/a/notes.txt", "col/b/notes.txt"]
    assert len({d.id for d in engine.store.documents()}) == 2


def test_unchanged_files_are_not_reembedded(engine, tmp_path):
    folder = tmp_path / "col"
    folder.mkdir()
    (folder / "one.txt").write_text("The library opens at nine.")
    (folder / "two.txt").write_text("The gym opens at six.")
    first = engine.ingest([folder])
    assert first.embedded == 2
    again = engine.ingest([folder])
    assert [f.status for f in again.files] == ["unchanged", "unchanged"] and again.embedded == 0
    (folder / "two.txt").write_text("The gym opens at seven.")
    (folder / "copy").mkdir()  # same title and text as one.txt: the same embedded text
    (folder / "copy" / "one.txt").write_text("The library opens at nine.")
    third = engine.ingest([folder])
    assert sorted(f.status for f in third.files) == ["added", "unchanged", "updated"]
    assert third.embedded == 1  # copy/one.txt reuses one.txt's vector (content-hash cache)


def test_a_file_that_breaks_later_loses_its_old_chunks(engine, tmp_path):
    folder = tmp_path / "col"
    folder.mkdir()
    good = (CASES / "c02_encrypted" / "payroll_plain.pdf").read_bytes()
    (folder / "payroll.pdf").write_bytes(good)
    engine.ingest([folder])
    assert engine.store.info().chunks > 0
    (folder / "payroll.pdf").write_bytes(good[:300])  # truncated: now unreadable
    report = engine.ingest([folder])
    assert report.files[0].status == "failed" and "corrupt" in report.files[0].reason
    assert engine.store.info().chunks == 0
    assert not engine.ask("On which day are salaries paid?").found


def test_prune_removes_documents_whose_files_are_gone(engine, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "x.txt").write_text("Xylophone lessons are on Tuesdays.")
    (b / "y.txt").write_text("Yoga classes are on Wednesdays.")
    engine.ingest([a, b])
    (b / "y.txt").unlink()
    assert [f.status for f in engine.ingest([a]).files] == ["unchanged"]  # b not re-scanned
    assert len(engine.store.documents()) == 2
    report = engine.ingest([a], prune=True)
    assert "deleted" in [f.status for f in report.files]
    assert [d.path for d in engine.store.documents()] == ["a/x.txt"]


def test_a_corrupt_pdf_is_reported_with_what_to_do(engine, tmp_path):
    """A newcomer's random-bytes x.pdf and truncated PDF were reported as "not a valid PDF
    file: corrupt or unsupported content" and "corrupt or unsupported PDF (...)" with no next
    step; docs/ingestion.md promises "re-export or re-download it"."""
    import os

    folder = tmp_path / "col"
    folder.mkdir()
    (folder / "x.pdf").write_bytes(os.urandom(4096))
    good = (CASES / "c02_encrypted" / "payroll_plain.pdf").read_bytes()
    (folder / "trunc.pdf").write_bytes(good[:300])
    (folder / "notes.md").write_text("# Notes\n\nThe kettle warranty lasts two years.\n")
    report = engine.ingest([folder])
    reasons = {Path(f.path).name: f.reason for f in report.files if f.status == "failed"}
    assert set(reasons) == {"x.pdf", "trunc.pdf"}, reasons
    assert all(r.endswith("re-export or re-download it") for r in reasons.values()), reasons


def test_each_failed_document_stores_its_kind_of_failure(engine, tmp_path):
    """The kind (DocumentError.kind) is stored with the failed document, so the answer's
    not-found reply tells an empty file from other failures without reading the message;
    a file fixed later loses it."""
    folder = tmp_path / "col"
    folder.mkdir()
    (folder / "empty.md").write_text("")
    (folder / "blank.txt").write_text("   \n\n")
    good = (CASES / "c02_encrypted" / "payroll_plain.pdf").read_bytes()
    (folder / "trunc.pdf").write_bytes(good[:300])
    (folder / "blob.txt").write_bytes(bytes(range(256)) * 8)
    (folder / "notes.md").write_text("# Notes\n\nThe kettle warranty lasts two years.\n")
    engine.ingest([folder])
    kinds = {Path(d.path).name: (d.status, d.error_kind) for d in engine.store.documents()}
    assert kinds == {"empty.md": ("failed", "empty"), "blank.txt": ("failed", "empty"),
                     "trunc.pdf": ("failed", "corrupt"), "blob.txt": ("failed", "unsupported"),
                     "notes.md": ("indexed", "")}, kinds
    (folder / "empty.md").write_text("# Filled\n\nThe kettle is descaled monthly.\n")
    engine.ingest([folder])
    assert {d.path: d.error_kind for d in engine.store.documents()}["col/empty.md"] == ""


def test_a_new_parse_version_re_reads_unchanged_files(make_engine, tmp_path, monkeypatch):
    """Regression: a parser fix (Markdown heading ids, PARSE_VERSION 2) never reached an
    existing index: the file's bytes were unchanged, so the next ingest kept the old blocks
    ("Install { #install }" in the section path) and reported it unchanged."""
    from citewise.ingest import pipeline

    page = tmp_path / "docs" / "install.md"
    page.parent.mkdir()
    page.write_text("# Install { #install }\n\nRun pip install citewise.\n", encoding="utf-8")
    monkeypatch.setattr(pipeline, "PARSE_VERSION", pipeline.PARSE_VERSION - 1)
    engine = make_engine()
    assert [f.status for f in engine.ingest([page.parent]).files] == ["added"]
    assert [f.status for f in engine.ingest([page.parent]).files] == ["unchanged"]
    monkeypatch.undo()
    engine = make_engine()
    report = engine.ingest([page.parent])
    assert [f.status for f in report.files] == ["updated"]
    [hit] = engine.search("pip install citewise").hits[:1]
    assert hit.chunk.section == ("Install",)
    assert [f.status for f in engine.ingest([page.parent]).files] == ["unchanged"]
