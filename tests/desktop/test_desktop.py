"""``citewise desktop``: the local server it starts and stops, the window under Xvfb (a real X
server, the window's pixels read back from it), files dropped on it, and the error without
the ``desktop`` extra.

The window tests run Qt WebEngine in a subprocess (``tests/desktop/drive.py``, or the
``citewise desktop`` command itself) on a private Xvfb display: Xvfb must be installed
(``apt-get install -y xvfb``; ``.ci/run`` installs it) or they fail, never skip. They take
15-50 s each on 2 idle cores (Chromium's start, the real embedding model indexing the dropped
file), hence ``slow``. Screenshots are written to ``test-artefacts/desktop/`` (not committed).
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from citewise.cli import app
from citewise.config import Settings
from citewise.desktop.server import LocalServer

ROOT = Path(__file__).resolve().parents[2]
ARTEFACTS = ROOT / "test-artefacts" / "desktop"
NOTE = "# Onboarding\n\nNew starters get their laptop on the first day from the IT desk.\n"


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


# --- the local server (no window) --------------------------------------------------------
def test_local_server_picks_a_free_loopback_port_requires_its_key_and_stops(tmp_path):
    settings = Settings(home=tmp_path / "home", llm_provider="none")
    with LocalServer(settings) as server:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", server.url)
        assert server.port != settings.port and port_open(server.port)
        assert len(server.api_key) >= 40  # 32 random bytes, URL-safe base64
        assert server.settings is not None and server.settings.host == "127.0.0.1"
        health = httpx.get(server.url + "/api/health", timeout=30)
        assert health.status_code == 200
        # an admin endpoint: refused without the run's key even from localhost, allowed with it
        url = server.url + "/api/documents/no-such-document"
        assert httpx.delete(url, timeout=30).status_code == 401
        with_key = httpx.delete(url, headers={"X-API-Key": server.api_key}, timeout=30)
        assert with_key.status_code == 404
    assert not port_open(server.port)
    server.stop()  # a second stop is harmless


def test_local_server_keeps_a_configured_admin_key(tmp_path):
    settings = Settings(home=tmp_path / "home", llm_provider="none", api_key="my-admin-key")
    with LocalServer(settings) as server:
        assert server.api_key == "my-admin-key"
    with LocalServer(Settings(home=tmp_path / "home", llm_provider="none")) as a, \
            LocalServer(Settings(home=tmp_path / "home2", llm_provider="none")) as b:
        assert a.port != b.port and a.api_key != b.api_key  # a fresh key per run


def test_without_the_desktop_extra_the_command_names_the_pip_command(monkeypatch):
    for name in list(sys.modules):
        if name == "PySide6" or name.startswith("PySide6.") or name == "citewise.desktop.window":
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "PySide6", None)  # import PySide6 raises ImportError
    result = CliRunner().invoke(app, ["desktop"])
    assert result.exit_code == 1
    assert "pip install 'citewise[desktop]'" in " ".join(result.output.split())


def test_the_key_script_sets_the_key_on_the_servers_origin_only():
    from citewise.desktop.window import KEY_STORE, key_script

    assert KEY_STORE == "citewise.adminKey"  # where app.js keeps the key (KEY_STORE there)
    assert 'const KEY_STORE = "citewise.adminKey";' in (
        ROOT / "src/citewise/web/static/app.js").read_text(encoding="utf-8")
    script = key_script("http://127.0.0.1:4242", 'k"); alert("x')
    assert script.startswith('try { if (location.origin === "http://127.0.0.1:4242") ')
    assert 'sessionStorage.setItem("citewise.adminKey", "k\\"); alert(\\"x");' in script


# --- the window under Xvfb ---------------------------------------------------------------
@pytest.fixture(scope="module")
def display() -> Iterator[str]:
    """A private Xvfb display (``:N``, the first free number, 1280x800, 24-bit)."""
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        pytest.fail("the desktop tests need Xvfb: apt-get install -y xvfb (.ci/run installs it)")
    read, write = os.pipe()
    proc = subprocess.Popen([xvfb, "-displayfd", str(write), "-screen", "0", "1280x800x24",
                             "-nolisten", "tcp", "-noreset"], pass_fds=(write,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    # Xvfb writes the number, then a newline: read both (closing early would kill it with
    # SIGPIPE), then wait for its socket
    number, deadline = b"", time.monotonic() + 30
    while not number.endswith(b"\n") and time.monotonic() < deadline:
        ready, _, _ = select.select([read], [], [], 1)
        if ready:
            chunk = os.read(read, 64)
            if not chunk:
                break
            number += chunk
    os.close(read)
    socket_file = Path(f"/tmp/.X11-unix/X{number.decode().strip()}")
    while number and not socket_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    if not number.strip() or not socket_file.exists() or proc.poll() is not None:
        proc.kill()
        proc.wait(timeout=10)
        pytest.fail(f"Xvfb did not start (display {number!r})")
    number = number.strip()
    yield f":{number.decode()}"
    proc.terminate()
    proc.wait(timeout=10)


def gui_env(display: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(DISPLAY=display, QT_QPA_PLATFORM="xcb", CITEWISE_HOME=str(home),
               CITEWISE_LLM_PROVIDER="none", PYTHONPATH=os.pathsep.join(
                   [str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop("CITEWISE_API_KEY", None)
    return env


def read_png(path: Path) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


def assert_not_blank(pixels: np.ndarray) -> None:
    """A rendered page, not an empty or one-colour window: many colours, none covering
    almost everything, and dark text on the light page."""
    flat = pixels.reshape(-1, 3)
    colours, counts = np.unique(flat, axis=0, return_counts=True)
    assert len(colours) > 50, f"only {len(colours)} colours: a blank window"
    assert counts.max() / len(flat) < 0.9, "one colour covers 90 % of the window"
    assert (flat.mean(axis=1) < 80).mean() > 0.001, "no dark pixels: no text drawn"


def screen_text(pixels: np.ndarray) -> str:
    """The words on the screenshot, read by OCR (RapidOCR, the ``ocr`` extra)."""
    from citewise.ingest.ocr import load_ocr

    return " ".join(line.text for line in load_ocr(threads=2).read(pixels))


def squash(text: str) -> str:
    return re.sub(r"[^a-z0-9.]", "", text.lower())


@pytest.mark.slow  # Chromium (Qt WebEngine) starting, the embedding model indexing the drop
def test_window_shows_the_chat_page_and_indexes_files_dropped_on_it(display, tmp_path):
    note = tmp_path / "onboarding.md"
    note.write_text(NOTE, encoding="utf-8")
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4 not really a PDF")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "tests.desktop.drive", str(out), str(note),
                           str(broken)], cwd=ROOT, env=gui_env(display, tmp_path / "home"),
                          capture_output=True, text=True, timeout=900, check=False)
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    for png in out.glob("*.png"):
        shutil.copy(png, ARTEFACTS / png.name)
    assert (out / "result.json").is_file(), proc.stderr[-4000:]
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    assert "error" not in result, (result, proc.stderr[-4000:])
    assert proc.returncode == 0 and result["exit_code"] == 0

    # the page, from its own server, with the key handed over where the page keeps it
    opened = result["opened"]
    assert result["window_title"] == "citewise" == opened["title"]
    assert opened["health"] == "ok" and opened["question"]["visible"]
    assert result["key_matches"] and opened["adminField"] == opened["keyStored"]
    # a native drag and drop: the page showed its drop zone, then each file was uploaded
    assert result["drag_accepted"] and result["drop_accepted"]
    assert result["drop_zone_shown"] is True
    texts = [m["text"] for m in result["after_drop"]["messages"]]
    assert any("onboarding.md is in the collection now." in t and "1 chunks" in t
               for t in texts), texts
    assert any("broken.pdf could not be indexed." in t and "corrupt or unsupported PDF" in t
               for t in texts), texts
    assert result["after_drop"]["healthText"].startswith("1 documents")
    # other sites open in the system browser, the window stays on the page; downloads saved
    assert result["opened_externally"] == ["https://example.org/new-tab",
                                           "https://example.org/same-tab"]
    assert result["page_url_after_links"].startswith(result["url"])
    assert result["downloads"] == ["citewise-feedback.jsonl"]
    assert result["status_bar"].startswith("Saved ") and result["status_bar"].endswith(
        "citewise-feedback.jsonl")
    # closing the window stopped the server
    assert result["port_open_after_close"] is False

    # the screenshots, as the X server shows the window
    assert result["screenshots"]["desktop-window.png"] == [1280, 800]
    window = read_png(out / "desktop-window.png")
    assert window.shape == (800, 1280, 3)
    assert_not_blank(window)
    seen = squash(screen_text(window))
    for words in ("citewise", "New chat", "Sources", "Send"):
        assert squash(words) in seen, (words, seen)
    dropped = read_png(out / "desktop-drop.png")
    assert_not_blank(dropped)
    seen = squash(screen_text(dropped))
    for words in ("onboarding.md is in the collection now", "broken.pdf could not be indexed",
                  "Ask about it"):
        assert squash(words) in seen, (words, seen)


@pytest.mark.slow  # Chromium (Qt WebEngine) starting
def test_the_command_serves_while_the_window_is_open_and_stops_on_sigterm(display, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "citewise", "desktop", "--width", "900",
                             "--height", "700"], cwd=ROOT, env=gui_env(display, tmp_path / "home"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line, deadline = "", time.monotonic() + 120
        while "server on" not in line:
            assert time.monotonic() < deadline and proc.poll() is None, line
            line = proc.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        assert found, line
        url, port = found.group(0), int(found.group(1))
        assert httpx.get(url + "/api/health", timeout=30).status_code == 200
        page = httpx.get(url + "/", timeout=30)
        assert page.status_code == 200 and "<title>citewise</title>" in page.text
        # uploads need the run's random key, which only the window has
        upload = httpx.post(url + "/api/documents", files={"files": ("a.md", b"# A\n\nText.\n")},
                            timeout=30)
        assert upload.status_code == 401
        time.sleep(2)  # let the window open before it is told to go
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert proc.returncode == 0, err[-3000:]
    assert "server stopped" in err
    assert not port_open(port)
