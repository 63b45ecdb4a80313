"""``/widget.js`` on a plain page served from another port, calling the API cross origin."""

from __future__ import annotations

import json

import httpx
from playwright.sync_api import expect

from tests.web.conftest import LONG, QUESTION, LiveServer, free_port, open_widget, screenshot
from tests.web.llm import scripted_llm

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Docs</title>
<style>
  body {{ font-family: serif; color: rgb(200, 0, 0); margin: 40px; }}
  button, input {{ background: rgb(0, 128, 0) !important; font-size: 30px !important; }}
  p {{ line-height: 3; }}
</style></head>
<body>
<h1>Product documentation</h1>
<p id="host-p">The widget must not change this paragraph.</p>
<button id="host-button" type="button">A page button</button>
<script src="{api}/widget.js" data-api="{api}"{local}></script>
</body></html>
"""


def page_html(api: str, local: str | None = None) -> str:
    return PAGE.format(api=api, local=f' data-local-api="{local}"' if local else "")


def style(locator, prop: str) -> str:  # type: ignore[no-untyped-def]
    return locator.evaluate(f"e => getComputedStyle(e).getPropertyValue('{prop}')")


def test_widget_prefers_the_local_api_streams_and_links_citations(new_page, make_app, docs_dir,
                                                                  static_site):
    site = static_site()
    app, _ = make_app(ingest=[docs_dir], cors_origins=[site.url])
    dead = f"http://127.0.0.1:{free_port()}"
    with LiveServer(app) as server:
        # data-api is closed; on a localhost page the widget tries data-local-api first
        url = site.write(page_html(api=dead, local=server.url).replace(
            f'src="{dead}/widget.js"', f'src="{server.url}/widget.js"'))
        page = new_page()
        page.goto(url)
        widget = page.locator("citewise-widget")
        launcher = widget.locator(".launcher")
        expect(launcher).to_have_text("Ask")
        expect(launcher).to_have_attribute("aria-expanded", "false")
        expect(widget.locator(".panel")).to_be_hidden()

        # no style crosses the shadow boundary, either way
        assert style(launcher, "background-color") == "rgb(11, 87, 208)"
        assert style(launcher, "font-size") == "15px"
        assert style(widget.locator(".log"), "color") == "rgb(27, 31, 36)"
        assert style(widget.locator(".log"), "font-family").startswith("system-ui")
        assert style(page.locator("#host-button"), "background-color") == "rgb(0, 128, 0)"
        assert style(page.locator("#host-p"), "box-sizing") == "content-box"
        assert style(page.locator("#host-p"), "color") == "rgb(200, 0, 0)"
        assert style(page.locator("body"), "font-family") == "serif"

        launcher.click()
        expect(launcher).to_have_attribute("aria-expanded", "true")
        expect(widget.locator(".status")).to_have_text("2 documents indexed")
        expect(widget).to_have_attribute("data-api", server.url)
        field = widget.locator("input")
        expect(field).to_be_enabled()
        expect(field).to_be_focused()
        field.fill(QUESTION)
        field.press("Enter")
        bot = widget.locator(".msg.bot").last
        expect(bot).to_have_attribute("data-state", "done", timeout=LONG)
        expect(bot).to_contain_text("24 months")

        with httpx.Client(base_url=server.url) as c:
            chats = c.get("/api/chats").json()["data"]
            sources = c.get(f"/api/chats/{chats[0]['id']}").json()["messages"][1]["sources"]
        link = bot.locator("a.cite").first
        expect(link).to_have_text("[1]")
        expect(link).to_have_attribute("href", f"{server.url}/#source={sources[0]['chunk_id']}")
        expect(bot.locator(".sources a")).to_have_text([s["location"] for s in sources])
        assert chats[0]["title"] == QUESTION
        screenshot(page, "widget-desktop.png")

        # a follow-up continues the same chat
        field.fill("And the batteries?")
        field.press("Enter")
        expect(widget.locator(".msg.bot")).to_have_count(2)
        expect(widget.locator(".msg.bot").last).to_have_attribute("data-state", "done",
                                                                 timeout=LONG)
        with httpx.Client(base_url=server.url) as c:
            assert c.get("/api/chats").json()["data"][0]["message_count"] == 4

        # a citation link opens the source viewer of the full UI
        with page.context.expect_page() as opened:
            link.click()
        ui = opened.value
        expect(ui.locator("#viewer")).to_be_visible()
        expect(ui.locator("#viewer mark")).to_contain_text("24 months")
        ui.close()

        # drag the launcher: the panel follows, the position survives a reload
        page.keyboard.press("Escape")
        expect(widget.locator(".panel")).to_be_hidden()
        box = launcher.bounding_box()
        page.mouse.move(box["x"] + 28, box["y"] + 28)
        page.mouse.down()
        page.mouse.move(box["x"] - 300, box["y"] - 200, steps=8)
        page.mouse.up()
        moved = launcher.bounding_box()
        assert (round(moved["x"] - box["x"]), round(moved["y"] - box["y"])) == (-328, -228)
        expect(widget.locator(".panel")).to_be_hidden()  # a drag is not a click
        saved = json.loads(page.evaluate("localStorage.getItem('citewise.widget.position')"))
        assert saved == {"x": round(moved["x"]), "y": round(moved["y"])}
        page.reload()
        assert page.locator("citewise-widget .launcher").bounding_box() == moved
        # keyboard: Shift+arrow moves it, Enter opens it
        launcher = page.locator("citewise-widget .launcher")
        launcher.focus()
        page.keyboard.press("Shift+ArrowLeft")
        assert launcher.bounding_box()["x"] == moved["x"] - 20
        page.keyboard.press("Enter")
        expect(page.locator("citewise-widget .panel")).to_be_visible()


def test_widget_falls_back_to_data_api_and_refuses_other_origins(new_page, make_app, docs_dir,
                                                                 static_site):
    site = static_site()
    app, _ = make_app(ingest=[docs_dir], cors_origins=[site.url])
    dead = f"http://127.0.0.1:{free_port()}"
    with LiveServer(app) as server:
        url = site.write(page_html(api=server.url, local=dead))
        page = new_page()
        page.goto(url)
        page.locator("citewise-widget .launcher").click()
        expect(page.locator("citewise-widget .status")).to_have_text("2 documents indexed")
        expect(page.locator("citewise-widget")).to_have_attribute("data-api", server.url)

        # the same page from http://localhost:PORT is another origin, not in cors_origins:
        # the browser blocks the calls; the widget says why (not "offline"), input disabled
        other = new_page()
        other.goto(url.replace("127.0.0.1", "localhost"))
        other.locator("citewise-widget .launcher").click()
        status = other.locator("citewise-widget .status")
        origin = url.replace("127.0.0.1", "localhost").rsplit("/", 1)[0]
        expect(status).to_have_text(
            f"This site ({origin}) is not allowed to use the assistant: the server must list "
            "it in CITEWISE_CORS_ORIGINS.", timeout=15_000)
        expect(status).to_have_attribute("data-state", "cors")
        expect(other.locator("citewise-widget input")).to_be_disabled()
        # the server answers that origin's preflight without allowing it
        r = httpx.options(f"{server.url}/api/chat/stream", headers={
            "Origin": url.replace("127.0.0.1", "localhost").rsplit("/", 1)[0],
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type"})
        assert "access-control-allow-origin" not in r.headers


def test_widget_mobile_layout_streams(new_page, make_app, docs_dir, static_site, slow_llm):
    slow_llm.delay, slow_llm.interval, slow_llm.tokens = 0.0, 0.3, 8
    site = static_site()
    app, _ = make_app(ingest=[docs_dir], cors_origins=[site.url], llm_provider="llamacpp",
                      llm_base_url=slow_llm.url, llm_model="slow", planner="rules")
    with LiveServer(app) as server:
        url = site.write(page_html(api=server.url))
        page = new_page(375, 667)
        page.goto(url)
        launcher = page.locator("citewise-widget .launcher")
        box = launcher.bounding_box()
        assert (box["x"], box["y"], box["width"]) == (375 - 56 - 20, 667 - 56 - 20, 56)
        launcher.click()
        panel = page.locator("citewise-widget .panel")
        assert panel.bounding_box() == {"x": 0, "y": 0, "width": 375, "height": 667}
        field = page.locator("citewise-widget input")
        expect(field).to_be_enabled()
        field.fill(QUESTION)
        field.press("Enter")
        bot = page.locator("citewise-widget .msg.bot").last
        expect(bot).to_contain_text("The laptop warranty lasts 24 months", timeout=LONG)
        expect(bot).to_have_attribute("data-state", "streaming")  # text before the end
        expect(field).to_be_disabled()
        expect(bot).to_have_attribute("data-state", "done", timeout=LONG)
        expect(bot.locator("a.cite").first).to_have_text("[1]")
        expect(field).to_be_enabled()
        screenshot(page, "widget-mobile.png")
        page.locator("citewise-widget .close").click()
        expect(panel).to_be_hidden()
        expect(launcher).to_be_focused()


def test_widget_js_is_served_as_a_script_and_the_ui_at_root(server):
    with httpx.Client(base_url=server.url) as c:
        js = c.get("/widget.js")
        html = c.get("/")
        css = c.get("/static/app.css")
        missing = c.get("/static/nothing.js")
    assert js.status_code == 200
    assert js.headers["content-type"].startswith("text/javascript")
    assert js.text.startswith("/* citewise widget")
    assert html.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/static/app.js"></script>' in html.text
    assert css.headers["content-type"].startswith("text/css")
    assert missing.status_code == 404


def test_widget_says_when_the_server_is_unreachable(new_page, make_app, docs_dir, static_site):
    site = static_site()
    app, _ = make_app(ingest=[docs_dir], cors_origins=[site.url])
    with LiveServer(app) as server:
        dead = f"http://127.0.0.1:{free_port()}"
        # the script comes from the live server; the API it is pointed at is down
        url = site.write(page_html(api=dead).replace(f'src="{dead}/widget.js"',
                                                     f'src="{server.url}/widget.js"'))
        page = new_page()
        page.goto(url)
        page.locator("citewise-widget .launcher").click()
        status = page.locator("citewise-widget .status")
        expect(status).to_have_text(
            "Cannot reach the assistant's server right now; try again later.", timeout=15_000)
        expect(status).to_have_attribute("data-state", "down")
        expect(page.locator("citewise-widget input")).to_be_disabled()


ANSWER = ("The laptop warranty lasts 24 months from the date of purchase [1].\n\n"
          "```sh\nwarranty --months 24 <b>not bold</b>\n```\n\n"
          "- **Batteries** are covered for 12 months only [1].\n"
          '- <img src="x" onerror="window.pwned = 1"><script>window.pwned = 2</script>'
          "[link](javascript:window.pwned=3)\n")


def test_widget_renders_safe_markdown_and_stops(new_page, make_app, docs_dir, static_site):
    site = static_site()
    with scripted_llm() as llm:
        llm.pieces = [ANSWER[i:i + 12] for i in range(0, len(ANSWER), 12)]
        app, _ = make_app(ingest=[docs_dir], cors_origins=[site.url], llm_provider="llamacpp",
                          llm_base_url=llm.url, llm_model="scripted", planner="rules")
        with LiveServer(app) as server:
            url = site.write(page_html(api=server.url))
            page, widget, field = open_widget(new_page, url)
            field.fill(QUESTION)
            field.press("Enter")
            bot = widget.locator(".msg.bot").last
            expect(bot).to_have_attribute("data-state", "done", timeout=LONG)
            with httpx.Client(base_url=server.url) as c:
                chat = c.get("/api/chats").json()["data"][0]
                saved = c.get(f"/api/chats/{chat['id']}").json()["messages"][1]["content"]
            assert "<img" in saved and "```" in saved, saved  # the model's text, as it came
            # the code fence is a code block, its HTML text; the list a list; no markup ran
            expect(bot.locator("pre code")).to_have_text("warranty --months 24 <b>not bold</b>")
            expect(bot.locator("pre code")).to_have_attribute("data-lang", "sh")
            expect(bot.locator("ul > li")).to_have_count(2)
            expect(bot.locator("li strong")).to_have_text("Batteries")
            expect(bot.locator("ul")).to_contain_text('<img src="x" onerror="window.pwned = 1">')
            assert bot.locator("img, script, b, a[href^='javascript']").count() == 0
            assert page.evaluate("window.pwned") is None
            expect(bot.locator("a.cite").first).to_have_text("[1]")
            screenshot(page, "widget-markdown.png")
            # a visitor whose system is dark gets a dark panel
            assert style(bot, "background-color") == "rgb(246, 247, 249)"
            page.emulate_media(color_scheme="dark")
            assert style(bot, "background-color") == "rgb(15, 18, 22)"
            assert style(bot.locator("p").first, "color") == "rgb(230, 233, 237)"
            screenshot(page, "widget-dark.png")
            page.emulate_media(color_scheme="light")

            # the chat page renders the same text the same way
            ui = new_page()
            ui.goto(server.url + "/")
            ui.locator(".chat-link").first.click()
            answer = ui.locator(".message.assistant .answer")
            expect(answer.locator("pre code")).to_have_text("warranty --months 24 <b>not bold</b>")
            expect(answer.locator("ul > li")).to_have_count(2)
            assert answer.locator("img, script, b, a[href^='javascript']").count() == 0
            assert ui.evaluate("window.pwned") is None

            # Stop: a slow answer stops where it is; the server keeps the part as interrupted
            llm.interval, llm.delay = 0.25, 3.0
            llm.pieces = ["The laptop warranty lasts 24 months [1]. "] + ["More words. "] * 200
            field.fill(QUESTION)
            field.press("Enter")
            bot = widget.locator(".msg.bot").last
            # before the first word: what the server is doing, in its words
            expect(bot.locator(".progress")).to_have_text(
                "Writing the answer with llamacpp (scripted)…", timeout=LONG)
            expect(bot).to_have_attribute("data-stage", "generate")
            stop = widget.get_by_role("button", name="Stop")
            expect(bot).to_contain_text("24 months", timeout=LONG)
            expect(widget.locator("form .send")).to_be_hidden()
            stop.click()
            expect(bot).to_have_attribute("data-state", "stopped")
            expect(bot.locator(".note")).to_have_text("Stopped.")
            expect(stop).to_be_hidden()
            expect(widget.locator("form .send")).to_be_visible()
            expect(field).to_be_enabled()
            with httpx.Client(base_url=server.url) as c:
                for _ in range(50):
                    messages = c.get(f"/api/chats/{chat['id']}").json()["messages"]
                    if len(messages) == 4:
                        break
                    page.wait_for_timeout(100)
            assert messages[3]["status"] == "interrupted"


def test_widget_keeps_the_visitors_chat_across_page_loads(new_page, make_app, docs_dir,
                                                          static_site):
    site = static_site()
    app, _ = make_app(ingest=[docs_dir], cors_origins=[site.url])
    with LiveServer(app) as server:
        url = site.write(page_html(api=server.url))
        page, widget, field = open_widget(new_page, url)
        field.fill(QUESTION)
        field.press("Enter")
        expect(widget.locator(".msg.bot").last).to_have_attribute("data-state", "done",
                                                                 timeout=LONG)
        # another page of the site (here: the same one, loaded again) shows the chat
        page.goto(site.write(page_html(api=server.url), name="other.html"))
        widget.locator(".launcher").click()
        expect(widget.locator(".msg.user")).to_have_text([QUESTION])
        bot = widget.locator(".msg.bot")
        expect(bot).to_contain_text(["24 months"])
        expect(bot.locator("a.cite").first).to_have_text("[1]")
        # a follow-up continues it
        field.fill("And the batteries?")
        field.press("Enter")
        expect(widget.locator(".msg.bot")).to_have_count(2)
        expect(widget.locator(".msg.bot").last).to_have_attribute("data-state", "done",
                                                                 timeout=LONG)
        with httpx.Client(base_url=server.url) as c:
            chats = c.get("/api/chats").json()["data"]
        assert [ch["message_count"] for ch in chats] == [4]

        # New chat starts over: the next question makes a second chat
        widget.get_by_role("button", name="New chat").click()
        expect(widget.locator(".msg")).to_have_count(0)
        field.fill("When are salaries paid?")
        field.press("Enter")
        expect(widget.locator(".msg.bot").last).to_have_attribute("data-state", "done",
                                                                 timeout=LONG)
        with httpx.Client(base_url=server.url) as c:
            chats = c.get("/api/chats").json()["data"]
            assert len(chats) == 2
            # a kept chat the server no longer has is forgotten on the next page
            assert c.delete(f"/api/chats/{chats[0]['id']}").status_code == 204
        page.reload()
        widget.locator(".launcher").click()
        expect(widget.locator(".status")).to_have_text("2 documents indexed")
        page.wait_for_function("localStorage.getItem('citewise.widget.chat') === null")
        expect(widget.locator(".msg")).to_have_count(0)
