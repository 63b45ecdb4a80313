"""Drives ``citewise desktop``'s window in a real Qt event loop (run by tests/desktop as
``python -m tests.desktop.drive OUT FILE...`` under Xvfb, ``DISPLAY`` set; the settings come
from the environment, ``CITEWISE_HOME`` a test's folder).

It starts the window's :class:`~citewise.desktop.server.LocalServer`, opens the window, waits
for the chat page to say the server is up, takes a screenshot of the window from the X server
(``OUT/desktop-window.png``), drops the FILEs on the window as a file manager does (a native Qt
drag enter, move and drop carrying their file URLs), waits until the page has reported each
file's upload (indexed, or an error), takes ``OUT/desktop-drop.png``, follows two links to
another site (a new tab, the same tab) and exports the feedback (a download into
``OUT/downloads``), closes the window and checks that the server has stopped. What it saw is written to ``OUT/result.json``; a step that
does not finish within its time ends the run with ``"error"`` set there (exit 1).
"""

from __future__ import annotations

import json
import socket
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QUrl, Slot

from citewise.config import Settings
from citewise.desktop import window as desktop_window
from citewise.desktop.server import LocalServer

STEP_TIMEOUT = 300.0  # seconds for one step (an upload embeds the file with the real model;
#                       generous for a loaded machine: 2 idle cores need about 10)

# the page's state, as JSON: what the checks and the waits read
STATE_JS = """JSON.stringify({
  title: document.title,
  health: (document.getElementById("health") || {}).dataset?.state || null,
  healthText: (document.getElementById("health") || {}).textContent || "",
  keyStored: sessionStorage.getItem("citewise.adminKey"),
  adminField: (document.getElementById("admin-key") || {}).value || "",
  question: (() => { const q = document.getElementById("question");
    if (!q) return null; const r = q.getBoundingClientRect();
    return {x: r.x, y: r.y, width: r.width, height: r.height,
            visible: r.width > 0 && r.height > 0 && r.bottom <= innerHeight}; })(),
  busy: document.getElementById("messages")?.getAttribute("aria-busy") || "false",
  messages: Array.from(document.querySelectorAll("#messages .message"))
    .map((m) => ({state: m.dataset.state || "", text: m.innerText})),
  error: (() => { const e = document.getElementById("error");
    return e && !e.hidden ? e.textContent : ""; })(),
  dropZone: !(document.getElementById("drop-zone") || {hidden: true}).hidden,
  dpr: devicePixelRatio,
})"""


LINKS_JS = """(() => {
  const a = document.createElement("a");
  a.href = "https://example.org/new-tab";
  a.target = "_blank";
  document.body.append(a);
  a.click();
  a.remove();
  document.getElementById("export-feedback").click();
  setTimeout(() => { location.href = "https://example.org/same-tab"; }, 500);
})()"""


class UrlCatcher(QObject):
    """Stands in for the system browser: records the URLs the window hands to it."""

    def __init__(self, opened: list[str]) -> None:
        super().__init__()
        self.opened = opened

    @Slot(QUrl)
    def show(self, url: QUrl) -> None:
        self.opened.append(url.toString())


class Driver:
    def __init__(self, out: Path, files: list[Path], server: LocalServer) -> None:
        self.out, self.files, self.server = out, files, server
        self.result: dict[str, Any] = {"url": server.url, "files": [f.name for f in files]}
        self.win: desktop_window.ChatWindow | None = None

    # --- plumbing -----------------------------------------------------------------------
    def state(self, then: Callable[[dict[str, Any]], None]) -> None:
        assert self.win is not None
        self.win.page.runJavaScript(STATE_JS, 0, lambda raw: then(json.loads(raw or "{}")))

    def wait(self, name: str, done: Callable[[dict[str, Any]], bool],
             then: Callable[[dict[str, Any]], None]) -> None:
        """Poll the page's state every 250 ms until ``done(state)``, then ``then(state)``."""
        deadline = time.monotonic() + STEP_TIMEOUT

        def poll() -> None:
            def check(state: dict[str, Any]) -> None:
                if done(state):
                    then(state)
                elif time.monotonic() > deadline:
                    self.fail(f"timed out waiting for {name}", state)
                else:
                    desktop_window.QTimer.singleShot(250, poll)
            self.state(check)

        poll()

    def fail(self, why: str, state: dict[str, Any] | None = None) -> None:
        self.result["error"] = why
        self.result["last_state"] = state
        self.finish()

    def finish(self) -> None:
        assert self.win is not None
        self.win.close()

    def screenshot(self, name: str) -> None:
        """The window as the X server shows it (not Qt's own rendering of the widget)."""
        assert self.win is not None
        desktop_window.QApplication.processEvents()
        image = self.win.screen().grabWindow(self.win.winId())
        path = self.out / name
        image.save(str(path), "PNG")
        self.result.setdefault("screenshots", {})[name] = [image.width(), image.height()]

    # --- the steps ----------------------------------------------------------------------
    def start(self, win: desktop_window.ChatWindow) -> None:
        self.win = win
        self.wait("the page to reach the server",
                  lambda s: s.get("health") in ("ok", "degraded"), self.opened)

    def opened(self, state: dict[str, Any]) -> None:
        assert self.win is not None
        self.result["opened"] = state
        self.result["window_title"] = self.win.windowTitle()
        self.result["key_matches"] = state.get("keyStored") == self.server.api_key
        desktop_window.QTimer.singleShot(500, self.shoot_and_drop)

    def shoot_and_drop(self) -> None:
        self.screenshot("desktop-window.png")
        self.drop()
        self.wait("the dropped files' uploads to finish", self.uploads_done, self.dropped)

    def drop(self) -> None:
        """What a file manager's drag does: enter, move and drop events carrying file URLs,
        delivered to the widget that renders the page."""
        from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
        from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent

        assert self.win is not None
        target = self.win.view.focusProxy()
        mime = QMimeData()
        mime.setUrls([QUrl.fromLocalFile(str(f)) for f in self.files])
        where = QPoint(target.width() // 2, target.height() // 2)
        copy = Qt.DropAction.CopyAction
        none, plain = Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier
        with warnings.catch_warnings():  # PySide6 marks the QPoint constructors deprecated
            warnings.simplefilter("ignore", DeprecationWarning)
            enter = QDragEnterEvent(where, copy, mime, none, plain)
            desktop_window.QApplication.sendEvent(target, enter)
            move = QDragMoveEvent(where, copy, mime, none, plain)
            desktop_window.QApplication.sendEvent(target, move)
        self.result["drag_accepted"] = enter.isAccepted() and move.isAccepted()

        def over(state: dict[str, Any]) -> None:  # the files are over the window
            self.result["drop_zone_shown"] = state.get("dropZone")
            self.screenshot("desktop-dragging.png")
            drop = QDropEvent(QPointF(where), copy, mime, none, plain)
            desktop_window.QApplication.sendEvent(target, drop)
            self.result["drop_accepted"] = drop.isAccepted()

        desktop_window.QTimer.singleShot(300, lambda: self.state(over))

    def uploads_done(self, state: dict[str, Any]) -> bool:
        """Every file has its "Attached NAME" turn and no answer is still streaming."""
        messages = state.get("messages", [])
        attached = all(any(f"Attached {f.name}" in m["text"] for m in messages)
                       for f in self.files)
        streaming = any(m["state"] == "streaming" for m in messages)
        return attached and not streaming and state.get("busy") == "false"

    def dropped(self, state: dict[str, Any]) -> None:
        self.result["after_drop"] = state
        desktop_window.QTimer.singleShot(800, self.last_shot)

    def last_shot(self) -> None:
        self.screenshot("desktop-drop.png")
        self.links_and_download()

    def links_and_download(self) -> None:
        """A ``target=_blank`` link and a same-tab navigation to another site (both must go to
        the system browser, caught here by a URL handler), and *Export feedback (JSONL)*
        (saved by the window's download handler)."""
        from PySide6.QtGui import QDesktopServices

        assert self.win is not None
        opened: list[str] = []
        self.catcher = UrlCatcher(opened)
        QDesktopServices.setUrlHandler("https", self.catcher, "show")
        downloads = self.out / "downloads"
        self.win.profile.setDownloadPath(str(downloads))
        self.win.page.runJavaScript(LINKS_JS)
        deadline = time.monotonic() + STEP_TIMEOUT

        def poll() -> None:
            assert self.win is not None
            saved = sorted(p.name for p in downloads.glob("*")) if downloads.is_dir() else []
            if (len(opened) < 2 or not saved) and time.monotonic() < deadline:
                desktop_window.QTimer.singleShot(250, poll)
                return
            self.result["opened_externally"] = opened
            self.result["page_url_after_links"] = self.win.page.url().toString()
            self.result["downloads"] = saved
            self.result["status_bar"] = self.win.statusBar().currentMessage()
            self.finish()

        poll()


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    files = [Path(a).resolve() for a in argv[1:]]
    settings = Settings()
    desktop_window.application()
    server = LocalServer(settings).start()
    driver = Driver(out, files, server)
    try:
        driver.result["exit_code"] = desktop_window.run(
            server.url, server.api_key, settings.home / "desktop", width=1280, height=800,
            on_open=driver.start)
    finally:
        server.stop()
    driver.result["port_open_after_close"] = port_open(server.port)
    (out / "result.json").write_text(json.dumps(driver.result, indent=1), encoding="utf-8")
    return 1 if "error" in driver.result else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
