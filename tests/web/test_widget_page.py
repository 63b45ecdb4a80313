"""The widget sends its host page's path with each question (issue 24, item 7): on a page
built from ``docs/server.md`` the answer prefers that document and says so; on a page that
maps to no document nothing is preferred; ``data-page="off"`` sends no path."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.api.test_page_context import AMBIGUOUS, PAGES
from tests.web.conftest import LONG, LiveServer, open_widget, screenshot

HTML = """<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title></head>
<body><h1>{title}</h1>
<script src="{api}/widget.js" data-api="{api}"{extra}></script>
</body></html>
"""


def ask_from(new_page, url: str) -> tuple[dict, object]:  # type: ignore[no-untyped-def]
    """Ask the ambiguous question in the widget on ``url``; returns the JSON body the widget
    sent to /api/chat/stream and the answer's element once it is done."""
    page, widget, field = open_widget(new_page, url)
    field.fill(AMBIGUOUS)
    with page.expect_request(lambda r: r.url.endswith("/api/chat/stream")) as sent:
        field.press("Enter")
    bot = widget.locator(".msg.bot").last
    expect(bot).to_have_attribute("data-state", "done", timeout=LONG)
    return sent.value.post_data_json, bot


def test_widget_sends_its_page_path_and_the_answer_prefers_that_page(new_page, make_app,
                                                                     static_site, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in PAGES.items():
        (docs / name).write_text(text, encoding="utf-8")
    site = static_site()
    app, _ = make_app(ingest=[docs], cors_origins=[site.url])
    with LiveServer(app) as server:
        for folder in ("server", "blog", "quiet"):
            (site.root / folder).mkdir()
        on_server = site.write(HTML.format(title="Running the server", api=server.url, extra=""),
                               "server/index.html")
        on_blog = site.write(HTML.format(title="Blog", api=server.url, extra=""),
                             "blog/index.html")
        quiet = site.write(HTML.format(title="Quiet", api=server.url, extra=' data-page="off"'),
                           "server/quiet.html")

        body, bot = ask_from(new_page, on_server.removesuffix("index.html"))
        assert body["page"] == "/server/" and body["query"] == AMBIGUOUS
        expect(bot.locator(".sources a").first).to_contain_text("docs/server.md")
        expect(bot.locator(".note.page")).to_have_text(
            "Preferring docs/server.md (the page you are on).")
        screenshot(bot.page, "widget-page-context.png")

        body, bot = ask_from(new_page, on_blog)
        assert body["page"] == "/blog/index.html"
        expect(bot.locator(".sources a").first).not_to_contain_text("docs/server.md")
        expect(bot.locator(".note.page")).to_have_count(0)

        body, bot = ask_from(new_page, quiet)
        assert body["page"] is None
        expect(bot.locator(".note.page")).to_have_count(0)
