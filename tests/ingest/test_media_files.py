"""A docs site's or a repository's folder holds images, fonts and archives beside its pages:
an ingest of the folder skips them (status ``skipped``, nothing stored) instead of listing
each one as failed, and never indexes an SVG's path data as text. Regression: the FastAPI
docs folder (155 Markdown pages, 243 images) gave 187 "failed" lines, and its 56 SVG files
became 5,033 chunks of drawing instructions, more than its pages' 3,342."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

from typer.testing import CliRunner

from citewise.cli import app
from citewise.ingest.pipeline import MEDIA_REASON, is_media, skipped

PAGE = ("# Deploying\n\nRun the service behind a reverse proxy. The proxy terminates TLS and "
        "forwards requests to port 8000.\n")
SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="240" height="80">'
       + "".join(f'<path d="M{i} {i * 3} L{i + 40} {i * 2 + 7} Z" fill="#{i:06x}"/>'
                 for i in range(400)) + "</svg>\n")


def png() -> bytes:
    """A real 1x1 PNG (signature, IHDR, IDAT, IEND with their CRCs)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))


def site(root: Path) -> Path:
    (root / "img").mkdir(parents=True)
    (root / "deploy.md").write_text(PAGE, encoding="utf-8")
    (root / "img" / "logo.PNG").write_bytes(png())
    (root / "img" / "diagram.svg").write_text(SVG, encoding="utf-8")
    (root / "fonts").mkdir()
    (root / "fonts" / "inter.woff2").write_bytes(b"wOF2\x00\x01\x00\x00" + bytes(range(256)))
    return root


def test_media_files_under_a_folder_are_skipped_not_failed_or_indexed(make_engine, tmp_path):
    engine = make_engine()
    report = engine.ingest([site(tmp_path / "docs")])
    by_path = {f.path: f for f in report.files}
    assert by_path["docs/deploy.md"].status == "added"
    for media in ("docs/img/logo.PNG", "docs/img/diagram.svg", "docs/fonts/inter.woff2"):
        assert by_path[media].status == "skipped", media
        assert by_path[media].reason == MEDIA_REASON
    assert report.count("failed") == 0
    assert [d.path for d in engine.store.documents()] == ["docs/deploy.md"]
    # nothing of the SVG reached the index: a search for its drawing text finds no chunk of it
    hits = engine.search("path fill M12 36 L52 31 Z").hits
    assert {h.document.path for h in hits if h.document} <= {"docs/deploy.md"}


def test_a_media_file_named_on_its_own_is_still_read_and_its_failure_named(make_engine, tmp_path):
    root = site(tmp_path / "docs")
    report = make_engine().ingest([root / "img" / "logo.PNG"])
    [result] = report.files
    assert result.status == "failed"
    assert "logo.PNG" in result.path and "binary" in result.reason


def test_an_svg_indexed_by_an_earlier_ingest_is_removed_when_its_folder_is_ingested(
        make_engine, tmp_path):
    engine = make_engine()
    root = site(tmp_path / "docs")
    [svg] = engine.ingest([root / "img" / "diagram.svg"]).files  # named: read as text
    assert svg.status == "added" and svg.chunks > 0
    report = engine.ingest([root])
    assert {f.path: f.status for f in report.files}["docs/img/diagram.svg"] == "skipped"
    assert [d.path for d in engine.store.documents()] == ["docs/deploy.md"]
    hits = engine.search("svg xmlns path fill width height").hits
    assert {h.document.path for h in hits if h.document} <= {"docs/deploy.md"}


def test_the_skip_rule_reads_the_suffix_in_any_case_and_leaves_documents_alone(tmp_path):
    root = tmp_path / "repo"
    for name in ("a.pdf", "b.docx", "c.md", "d.svg", "e.JPG", "f.tar.gz", "g.py", "h.woff"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"x")
    assert {p.name for p in root.iterdir() if skipped(p, root)} == {"d.svg", "e.JPG", "f.tar.gz",
                                                                    "h.woff"}
    assert not is_media(root / "a.pdf") and is_media(root / "f.tar.gz")
    (root / "icons.svg").mkdir()  # a folder named like an image is still walked
    assert not skipped(root / "icons.svg", root)


def test_cli_counts_skipped_files_and_lists_them_only_in_json(tmp_path, monkeypatch):
    monkeypatch.setenv("CITEWISE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CITEWISE_LLM_PROVIDER", "none")
    root = site(tmp_path / "docs")
    runner = CliRunner()
    result = runner.invoke(app, ["ingest", str(root)], catch_exceptions=False)
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "1 added, 0 updated, 0 unchanged, 0 deleted, 0 failed" in text
    assert "3 skipped: empty files and images" in text
    assert "logo.PNG" not in text  # counted, not listed line by line
    result = runner.invoke(app, ["ingest", str(root), "--format", "json"],
                           catch_exceptions=False)
    files = {f["path"]: f["status"] for f in json.loads(result.output)["files"]}
    assert files["docs/img/logo.PNG"] == "skipped" and files["docs/deploy.md"] == "unchanged"


def test_cli_exits_1_when_a_folder_holds_nothing_it_can_read(tmp_path, monkeypatch):
    monkeypatch.setenv("CITEWISE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CITEWISE_LLM_PROVIDER", "none")
    photos = tmp_path / "photos"
    photos.mkdir()
    (photos / "one.png").write_bytes(png())
    (photos / "two.jpg").write_bytes(b"\xff\xd8\xff\xe0" + bytes(64))
    result = CliRunner().invoke(app, ["ingest", str(photos)], catch_exceptions=False)
    assert result.exit_code == 1
    assert "2 skipped: empty files and images" in " ".join(result.output.split())


def test_zero_byte_files_under_a_folder_are_skipped_and_an_old_entry_removed(make_engine,
                                                                             tmp_path):
    """Regression: a code repository's empty ``__init__.py`` files and ``py.typed`` markers
    (184 in FastAPI's repository) were each a ``failed`` line and a failed entry in the
    document list. An empty or blank document (a 0-byte ``.md``, case C06), or an empty file
    named on its own, still fails with its reason."""
    from citewise.ingest.pipeline import EMPTY_REASON

    pkg = tmp_path / "repo" / "kettle"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_bytes(b"")
    (pkg / "py.typed").write_bytes(b"")
    (pkg / "blank.md").write_text("  \n\n", encoding="utf-8")
    (pkg / "empty.md").write_bytes(b"")  # an empty document: failed, as case C06 expects
    (pkg / "boil.py").write_text("def boil(litres: float) -> None:\n    \"\"\"Boil the water.\"\"\"\n",
                                 encoding="utf-8")
    engine = make_engine()
    report = engine.ingest([pkg.parent])
    status = {f.path: (f.status, f.reason) for f in report.files}
    assert status["repo/kettle/__init__.py"] == ("skipped", EMPTY_REASON)
    assert status["repo/kettle/py.typed"] == ("skipped", EMPTY_REASON)
    assert status["repo/kettle/blank.md"][0] == "failed"
    assert status["repo/kettle/empty.md"][0] == "failed" and "empty" in status[
        "repo/kettle/empty.md"][1]
    assert status["repo/kettle/boil.py"][0] == "added"
    assert sorted(d.path for d in engine.store.documents()) == [
        "repo/kettle/blank.md", "repo/kettle/boil.py", "repo/kettle/empty.md"]
    [named] = engine.ingest([pkg / "__init__.py"]).files  # named on its own: it fails
    assert named.status == "failed" and "empty" in named.reason
    assert "__init__.py" in {d.path for d in engine.store.documents()}
    # the folder again: the entry the named ingest recorded goes
    again = {f.path: f.status for f in engine.ingest([pkg.parent]).files}
    assert again["repo/kettle/__init__.py"] == "skipped"
    assert "__init__.py" not in {Path(d.path).name for d in engine.store.documents()}
