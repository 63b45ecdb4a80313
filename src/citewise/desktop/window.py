"""The desktop window: the chat page of a :class:`~citewise.desktop.server.LocalServer` in Qt
WebEngine (PySide6, the ``desktop`` extra).

Importing this module imports PySide6; without it the import raises
:class:`~citewise.errors.DesktopError` naming ``pip install 'citewise[desktop]'``.

What the window adds to the page:

- **The admin key.** A script run at document creation, before the page's own scripts, on the
  server's origin only, puts the server's key where the page keeps the key a person types under
  *Admin key*: ``sessionStorage["citewise.adminKey"]``. Uploads and approvals then work.
- **Storage.** A named profile keeps the page's ``localStorage`` (theme, visitor token) and its
  cache in ``$CITEWISE_HOME/desktop``, so the window remembers them between runs.
- **Other sites.** A link to anything but the server's origin (a source's URL in an answer)
  opens in the system browser; the window itself never leaves the chat page.
- **Dropped files** need nothing here: Qt WebEngine delivers a drop from the file manager to the
  page as an HTML5 ``drop`` event carrying the files, and the page uploads them.
- **Downloads** (*Export feedback (JSONL)*) are saved in the system's download folder; the
  status bar says where.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from citewise.errors import DesktopError

try:
    from PySide6.QtCore import QCoreApplication, Qt, QTimer, QUrl
    from PySide6.QtGui import QDesktopServices
    from PySide6.QtWebEngineCore import (
        QWebEngineDownloadRequest,
        QWebEnginePage,
        QWebEngineProfile,
        QWebEngineScript,
        QWebEngineSettings,
    )
    from PySide6.QtWebEngineWidgets import QWebEngineView
    from PySide6.QtWidgets import QApplication, QMainWindow
except ImportError as err:  # the desktop extra is not installed
    raise DesktopError("citewise desktop needs Qt WebEngine (PySide6), which the default "
                       "install leaves out: pip install 'citewise[desktop]'") from err

#: Where the page keeps the admin key (app.js, ``KEY_STORE``).
KEY_STORE = "citewise.adminKey"
#: The window's title until the page sets its own.
TITLE = "citewise"


def _same_origin(url: QUrl, origin: QUrl) -> bool:
    return (url.scheme(), url.host(), url.port()) == (origin.scheme(), origin.host(),
                                                       origin.port())


def key_script(origin: str, api_key: str) -> str:
    """The JavaScript that hands the page its admin key: sets ``sessionStorage[KEY_STORE]`` when
    the document's origin is ``origin`` (``http://127.0.0.1:PORT``), nothing elsewhere."""
    # a document without storage (about:blank before the first load) throws on the access
    return (f"try {{ if (location.origin === {json.dumps(origin)}) "
            f"sessionStorage.setItem({json.dumps(KEY_STORE)}, {json.dumps(api_key)}); }} "
            "catch (e) { /* no storage here */ }")


class _ExternalPage(QWebEnginePage):
    """The page a ``target=_blank`` link opens: its first navigation goes to the system browser
    and the page is dropped."""

    def acceptNavigationRequest(self, url: QUrl | str, type: QWebEnginePage.NavigationType,  # noqa: A002, N802 - Qt's names
                                isMainFrame: bool) -> bool:  # noqa: N803
        QDesktopServices.openUrl(QUrl(url))
        self.deleteLater()
        return False


class ChatPage(QWebEnginePage):
    """The chat page: navigations stay on ``origin``; anything else opens in the system
    browser (``blob:`` and ``data:`` URLs, which downloads use, stay)."""

    def __init__(self, profile: QWebEngineProfile, origin: QUrl, parent: QMainWindow) -> None:
        super().__init__(profile, parent)
        self.origin = origin

    def acceptNavigationRequest(self, url: QUrl | str, type: QWebEnginePage.NavigationType,  # noqa: A002, N802 - Qt's names
                                isMainFrame: bool) -> bool:  # noqa: N803
        url = QUrl(url)
        if _same_origin(url, self.origin) or url.scheme() in ("blob", "data", "about"):
            return True
        QDesktopServices.openUrl(url)
        return False

    def createWindow(self, type: QWebEnginePage.WebWindowType) -> QWebEnginePage:  # noqa: A002, N802
        return _ExternalPage(self.profile(), self)


class ChatWindow(QMainWindow):
    """A main window showing ``url`` (the server's chat page) with ``api_key`` handed to the
    page; ``storage``: the folder of the profile's local storage and cache."""

    def __init__(self, url: str, api_key: str, storage: Path, *, width: int = 1280,
                 height: int = 800) -> None:
        super().__init__()
        self.setWindowTitle(TITLE)
        self.resize(width, height)
        origin = QUrl(url)
        # the profile outlives its page (Qt warns otherwise): it belongs to the application
        self.profile = QWebEngineProfile("citewise", QCoreApplication.instance())
        storage.mkdir(parents=True, exist_ok=True)
        self.profile.setPersistentStoragePath(str(storage / "storage"))
        self.profile.setCachePath(str(storage / "cache"))
        script = QWebEngineScript()
        script.setName("citewise-admin-key")
        script.setSourceCode(key_script(f"{origin.scheme()}://{origin.authority()}", api_key))
        script.setInjectionPoint(QWebEngineScript.InjectionPoint.DocumentCreation)
        script.setWorldId(QWebEngineScript.ScriptWorldId.MainWorld)
        script.setRunsOnSubFrames(False)
        self.profile.scripts().insert(script)
        self.profile.downloadRequested.connect(self._download)
        self.page = ChatPage(self.profile, origin, self)
        self.page.settings().setAttribute(
            QWebEngineSettings.WebAttribute.JavascriptCanAccessClipboard, True)
        self.view = QWebEngineView(self)
        self.view.setPage(self.page)
        self.view.titleChanged.connect(lambda title: self.setWindowTitle(title or TITLE))
        self.setCentralWidget(self.view)
        self.view.load(origin)

    def _download(self, request: QWebEngineDownloadRequest) -> None:
        request.accept()
        where = Path(request.downloadDirectory()) / request.downloadFileName()
        self.statusBar().showMessage(f"Saved {where}", 10_000)

    def dispose(self) -> None:
        """Delete the page before its profile (Qt WebEngine needs that order)."""
        self.view.setPage(None)  # type: ignore[arg-type]  # Qt accepts None: no page
        self.page.deleteLater()
        self.profile.deleteLater()


def application(argv: list[str] | None = None) -> QApplication:
    """The process's QApplication, made on the first call.

    As root (a container), Chromium refuses to start with its sandbox, so it is turned off
    (``QTWEBENGINE_DISABLE_SANDBOX=1``) unless that variable is already set. Raises
    DesktopError when no display is reachable (Linux: neither ``DISPLAY`` nor
    ``WAYLAND_DISPLAY`` and no ``QT_QPA_PLATFORM``), before Qt would abort the process."""
    existing = QApplication.instance()
    if isinstance(existing, QApplication):
        return existing
    if sys.platform.startswith("linux") and not any(
            os.environ.get(v) for v in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")):
        raise DesktopError("citewise desktop needs a display: none is set (DISPLAY, "
                           "WAYLAND_DISPLAY); run it in a desktop session, or use `citewise "
                           "serve` and a browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        os.environ.setdefault("QTWEBENGINE_DISABLE_SANDBOX", "1")
    QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
    app = QApplication(argv if argv is not None else [sys.argv[0]])
    app.setApplicationName("citewise")
    return app


def run(url: str, api_key: str, storage: Path, *, width: int = 1280, height: int = 800,
        on_open: Callable[[ChatWindow], None] | None = None) -> int:
    """Show a :class:`ChatWindow` on ``url`` and run Qt's event loop until the window is
    closed, Ctrl-C or SIGTERM; returns the loop's exit code (0 when closed). ``on_open`` is
    called with the window once it is shown (tests drive it from there)."""
    app = application()
    window = ChatWindow(url, api_key, storage, width=width, height=height)
    previous: list[tuple[signal.Signals, Any]] = []

    def quit_on(signum: int, frame: FrameType | None) -> None:
        app.quit()

    for signum in (signal.SIGINT, signal.SIGTERM):
        previous.append((signum, signal.signal(signum, quit_on)))
    # Python runs signal handlers only between bytecodes: a timer lets it in while Qt waits
    wake = QTimer()
    wake.timeout.connect(lambda: None)
    wake.start(200)
    try:
        window.show()
        if on_open is not None:
            on_open(window)
        return app.exec()
    finally:
        wake.stop()
        for number, handler in previous:
            signal.signal(number, handler)
        window.close()
        window.dispose()
        app.processEvents()
