"""Watched folders (``citewise watch``): a real watcher thread over real files and a real
SQLite index; every check polls the store until a deadline instead of sleeping."""

from __future__ import annotations

import hashlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pytest
from typer.testing import CliRunner

from citewise.cli import app
from citewise.engine import Engine
from citewise.ingest.pipeline import IngestReport
from tests.conftest import CASES

T = TypeVar("T")
DEADLINE_S = 60.0  # generous: the machine may be loaded; nothing asserts how fast it is


def wait_for(check: Callable[[], T], what: str, deadline_s: float = DEADLINE_S) -> T:
    """Poll ``check`` until it returns something truthy; fail naming ``what`` at the deadline."""
    end = time.monotonic() + deadline_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"not seen within {deadline_s:.0f} s: {what}")
        time.sleep(0.05)


def paths(engine: Engine) -> dict[str, str]:
    """Indexed documents as ``{path: status}``."""
    return {d.path: d.status for d in engine.store.documents()}


def sha(file: Path) -> str:
    return hashlib.sha256(file.read_bytes()).hexdigest()


@contextmanager
def watching(engine: Engine, *folders: Path, **kwargs) -> Iterator[list[IngestReport]]:
    """``engine.watch(folders)`` in a thread until the block ends; yields the reports seen so
    far (the catch-up's first) once the watcher is ready."""
    reports: list[IngestReport] = []
    ready = threading.Event()
    stop = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            engine.watch(list(folders), stop=stop, debounce_ms=100, on_report=reports.append,
                         on_ready=lambda _roots: ready.set(), **kwargs)
        except BaseException as err:  # noqa: BLE001 - re-raised in the test's thread
            failure.append(err)
            ready.set()

    thread = threading.Thread(target=run, name="test-watcher")
    thread.start()
    try:
        assert ready.wait(DEADLINE_S), "the watcher did not start"
        if failure:
            raise failure[0]
        yield reports
    finally:
        stop.set()
        thread.join(DEADLINE_S)
        assert not thread.is_alive(), "the watcher did not stop when asked"
    if failure:
        raise failure[0]


def test_new_changed_renamed_and_deleted_files_are_applied(engine, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "gym.md").write_text("# Gym\n\nThe gym opens at six in the morning.\n")
    with watching(engine, folder) as reports:
        assert paths(engine) == {"notes/gym.md": "indexed"}  # the catch-up ingest
        assert [f.status for f in reports[0].files] == ["added"]

        (folder / "library.md").write_text("# Library\n\nThe library opens at nine.\n")
        wait_for(lambda: "notes/library.md" in paths(engine), "a new file indexed")

        (folder / "gym.md").write_text("# Gym\n\nThe gym opens at seven on Sundays.\n")
        wait_for(lambda: engine.store.document(_id(engine, "notes/gym.md")).content_hash
                 == sha(folder / "gym.md"), "a changed file re-indexed")
        hits = engine.search("When does the gym open on Sundays?", mode="sparse").hits
        assert hits and "seven on Sundays" in hits[0].chunk.text

        (folder / "library.md").rename(folder / "books.md")
        wait_for(lambda: set(paths(engine)) == {"notes/gym.md", "notes/books.md"},
                 "a renamed file under its new name only")

        (folder / "gym.md").unlink()
        wait_for(lambda: set(paths(engine)) == {"notes/books.md"}, "a deleted file dropped")
    statuses = [f.status for r in reports[1:] for f in r.files]
    assert {"added", "updated", "deleted"} <= set(statuses)
    # the question that found the gym's chunk above finds nothing stale now
    hits = engine.search("When does the gym open on Sundays?", mode="sparse").hits
    assert not any(h.document.path == "notes/gym.md" for h in hits)


def _id(engine: Engine, path: str) -> str:
    return next(d.id for d in engine.store.documents() if d.path == path)


def test_folders_moved_in_and_out_and_skipped_names(engine, tmp_path):
    folder, outside = tmp_path / "docs", tmp_path / "elsewhere"
    folder.mkdir()
    (outside / "guide" / "deep").mkdir(parents=True)
    (outside / "guide" / "deep" / "setup.txt").write_text("Run the installer as root.")
    (outside / "guide" / "faq.txt").write_text("The answer is forty-two.")
    with watching(engine, folder):
        (folder / ".draft.md").write_text("a hidden draft")
        (folder / "node_modules").mkdir()
        (folder / "node_modules" / "pkg.txt").write_text("a package file")
        (outside / "guide").rename(folder / "guide")  # only the folder itself is reported
        wait_for(lambda: set(paths(engine)) == {"docs/guide/faq.txt",
                                                "docs/guide/deep/setup.txt"},
                 "the files of a folder moved in")
        (folder / "guide").rename(outside / "guide")
        wait_for(lambda: paths(engine) == {}, "the documents of a folder moved out dropped")
        (folder / "last.txt").write_text("The last file.")
        wait_for(lambda: set(paths(engine)) == {"docs/last.txt"}, "a file after the moves")
    assert not any(".draft" in p or "node_modules" in p for p in paths(engine))


def test_a_bad_file_is_reported_and_the_watch_goes_on(engine, tmp_path):
    folder = tmp_path / "papers"
    folder.mkdir()
    good = (CASES / "c02_encrypted" / "payroll_plain.pdf").read_bytes()
    with watching(engine, folder) as reports:
        (folder / "broken.pdf").write_bytes(good[:300])  # truncated: cannot be parsed
        wait_for(lambda: paths(engine).get("papers/broken.pdf") == "failed",
                 "the truncated PDF recorded as failed")
        (folder / "payroll.pdf").write_bytes(good)
        wait_for(lambda: paths(engine).get("papers/payroll.pdf") == "indexed",
                 "the next file indexed after the bad one")
        (folder / "broken.pdf").write_bytes(good)  # fixed in place
        wait_for(lambda: paths(engine).get("papers/broken.pdf") == "indexed",
                 "the fixed file indexed")
    failed = [f for r in reports for f in r.files if f.status == "failed"]
    assert failed and failed[0].path == "papers/broken.pdf" and "corrupt" in failed[0].reason


def test_a_restart_catches_up_with_what_changed_while_stopped(engine, tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):
        (folder / name).write_text(f"File {name} says hello.")
    with watching(engine, folder):
        assert set(paths(engine)) == {"kb/a.txt", "kb/b.txt", "kb/c.txt"}
    (folder / "a.txt").unlink()
    (folder / "b.txt").write_text("File b.txt was edited while nobody watched.")
    (folder / "d.txt").write_text("File d.txt is new.")
    with watching(engine, folder) as reports:
        by_path = {f.path: f.status for f in reports[0].files}
        assert by_path == {"kb/a.txt": "deleted", "kb/b.txt": "updated",
                           "kb/c.txt": "unchanged", "kb/d.txt": "added"}
        assert set(paths(engine)) == {"kb/b.txt", "kb/c.txt", "kb/d.txt"}
        assert reports[0].embedded == 2  # c.txt was not embedded again


def test_the_index_inside_a_watched_folder_is_never_read(make_engine, tmp_path):
    folder = tmp_path / "project"
    engine = make_engine(home=folder / "home")  # not hidden: a walk would read it
    folder.mkdir(exist_ok=True)
    (folder / "readme.txt").write_text("The project readme.")
    with watching(engine, folder):
        (folder / "notes.txt").write_text("Some notes.")  # its writes touch the index file
        wait_for(lambda: "project/notes.txt" in paths(engine), "the new file indexed")
    assert not any("index.sqlite3" in p for p in paths(engine)), paths(engine)


def test_watch_refuses_a_file_and_a_missing_folder(engine, tmp_path):
    from citewise.errors import ConfigError

    (tmp_path / "one.txt").write_text("one")
    with pytest.raises(ConfigError, match="one.txt: it is a file"):
        engine.watch([tmp_path / "one.txt"])
    with pytest.raises(ConfigError, match="nowhere: no such folder"):
        engine.watch([tmp_path / "nowhere"])


def test_cli_watch_errors_name_the_path(tmp_path, monkeypatch):
    monkeypatch.setenv("CITEWISE_HOME", str(tmp_path / "home"))
    (tmp_path / "one.txt").write_text("one")
    result = CliRunner().invoke(app, ["watch", str(tmp_path / "one.txt")])
    assert result.exit_code == 1 and "one.txt: it is a file" in " ".join(result.output.split())
    result = CliRunner().invoke(app, ["ingest", "--watch", "--prune", str(tmp_path)])
    assert result.exit_code == 2 and "--prune" in result.output


def test_cli_watch_in_a_subprocess_until_sigterm(tmp_path):
    """``citewise ingest --watch --format json`` prints one JSON report a line, and stops
    cleanly on SIGTERM (exit 0)."""
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "index.md").write_text("# Home\n\nWelcome to the site.\n")
    env = {**os.environ, "CITEWISE_HOME": str(tmp_path / "home"),
           "CITEWISE_LLM_PROVIDER": "none"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "citewise", "ingest", "--watch", str(folder), "--format", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout],  # type: ignore[union-attr]
                     daemon=True).start()
    try:
        first = json.loads(lines.get(timeout=DEADLINE_S))
        assert [(f["path"], f["status"]) for f in first["files"]] == [("site/index.md", "added")]
        (folder / "about.md").write_text("# About\n\nWho we are.\n")
        batch = json.loads(lines.get(timeout=DEADLINE_S))
        assert [(f["path"], f["status"]) for f in batch["files"]] == [("site/about.md", "added")]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 0, err
    assert "watching" in err and "stopped watching" in err
