"""Browser fixtures: Debian's Chromium driven by Playwright against real uvicorn servers.

Chromium must be at ``/usr/bin/chromium`` (``apt-get install -y chromium``; ``.ci/run`` installs
it) or at ``$CITEWISE_CHROMIUM``: without it these tests fail, they are never skipped.
Screenshots go to ``test-artefacts/web/`` at the repository root (git-ignored).
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections.abc import Callable, Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright

from tests.api.conftest import (  # noqa: F401  (fixtures used by the browser tests)
    PAYROLL,
    WARRANTY,
    LiveServer,
    docs_dir,
    free_port,
    make_app,
    slow_llm,
)

CHROMIUM = Path(os.environ.get("CITEWISE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
ARTEFACTS = Path(__file__).resolve().parents[2] / "test-artefacts" / "web"
QUESTION = "How long does the laptop warranty last?"
#: ms to wait for an answer to finish (``data-state`` ``done``) in a browser test
LONG = 60_000


class PortServer(LiveServer):
    """A :class:`LiveServer` on a given port (to restart a server where the page expects it)."""

    def __init__(self, app, port: int) -> None:  # type: ignore[no-untyped-def]
        import uvicorn

        self.app = app
        self.url = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                                    log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    """Chromium for the tests of this package; Playwright is stopped when they are done.

    While Playwright's sync API is started, the main thread has a running asyncio event loop
    (its dispatcher marks it running between calls), so ``asyncio.run`` and ``anyio.run`` fail
    there ("cannot be called from a running event loop"). Package scope confines that to
    tests/web: in one pytest process with the other tests (the README's command), the tests
    that run an event loop of their own (tests/api/test_mcp.py, test_concurrency.py, ...) never
    run while it is up, whatever the order."""
    if not CHROMIUM.is_file():
        pytest.fail(f"the browser tests need Chromium at {CHROMIUM}: apt-get install -y chromium "
                    "(or set CITEWISE_CHROMIUM)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()
    # the main thread as a test that runs an event loop needs it: none running, none set
    asyncio.set_event_loop(None)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    pytest.fail(f"an event loop is still running in the main thread after Playwright stopped: "
                f"{loop!r}")


@pytest.fixture
def new_page(browser):
    """``new_page(width=1280, height=800) -> Page`` in a fresh context; an uncaught script
    error on any page fails the test."""
    contexts, errors = [], []

    def make(width: int = 1280, height: int = 800) -> Page:
        context = browser.new_context(viewport={"width": width, "height": height})
        context.set_default_timeout(30_000)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda err: errors.append(str(err)))
        return page

    yield make
    for c in contexts:
        c.close()
    assert errors == []


@pytest.fixture
def page(new_page) -> Page:
    return new_page()


@pytest.fixture
def server(make_app, docs_dir):  # noqa: F811 - the imported fixtures, requested by name
    """``citewise``'s app on the two-document collection (no LLM: quoted answers)."""
    app, _ = make_app(ingest=[docs_dir])
    with LiveServer(app) as s:
        yield s


class Site:
    """A plain HTTP server on 127.0.0.1 serving one folder; write the page after its URL is
    known (a server that allows the site's origin needs the URL first)."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True)
        self.root = root
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0),
                                         functools.partial(_Quiet, directory=str(root)))
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def write(self, html: str, name: str = "index.html") -> str:
        (self.root / name).write_text(html, encoding="utf-8")
        return f"{self.url}/{name}"


@pytest.fixture
def static_site(tmp_path):
    """``static_site() -> Site``: a static web site on its own port."""
    sites: list[Site] = []

    def make() -> Site:
        sites.append(Site(tmp_path / f"site{len(sites)}"))
        return sites[-1]

    yield make
    for s in sites:
        s.httpd.shutdown()
        s.httpd.server_close()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def open_widget(new_page: Callable[[], Page], url: str) -> tuple[Page, Locator, Locator]:
    """Load ``url`` in a new page (the ``new_page`` fixture) and open the widget on it;
    returns (the page, the ``citewise-widget`` element, its question field) once the field
    is enabled, that is once the widget has reached its server."""
    page = new_page()
    page.goto(url)
    widget = page.locator("citewise-widget")
    widget.locator(".launcher").click()
    field = widget.locator("input")
    expect(field).to_be_enabled()
    return page, widget, field


def ask(page: Page, question: str) -> Locator:
    """Type ``question`` into the chat page's question field and press Enter; returns the
    last assistant message (the answer to come)."""
    page.fill("#question", question)
    page.press("#question", "Enter")
    return page.locator(".message.assistant").last


def screenshot(page: Page, name: str) -> Path:
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTEFACTS / name
    page.screenshot(path=str(path), full_page=False)
    return path
