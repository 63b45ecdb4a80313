"""The source viewer marks the sentence an answer rests on inside the cited passage (the
citation's character span), in Chromium against a real server."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect

from tests.web.conftest import LiveServer, screenshot

LONG = 60_000


OFFICE = ("# Office\n\nThe office opens at 8 am on weekdays. Parking is free for staff in the "
          "north garage. Visitors sign in at the front desk with photo identification. The "
          "canteen serves lunch from noon to 2 pm. The building closes at 7 pm.\n")


def test_the_supporting_sentence_is_marked_inside_the_passage(page, make_app, docs_dir):
    (docs_dir / "office.md").write_text(OFFICE, encoding="utf-8")
    app, _ = make_app(ingest=[docs_dir])
    with LiveServer(app) as server:
        check(page, server)


def check(page, server) -> None:  # type: ignore[no-untyped-def]
    page.goto(server.url + "/")
    page.fill("#question", "When does the canteen serve lunch?")
    page.press("#question", "Enter")
    msg = page.locator(".message.assistant").last
    expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
    with httpx.Client(base_url=server.url) as c:
        chat = c.get("/api/chats").json()["data"][0]
        cite = c.get(f"/api/chats/{chat['id']}").json()["messages"][1]["sources"][0]
        plain = c.get(f"/api/sources/{cite['chunk_id']}").json()
        asked = c.get(f"/api/sources/{cite['chunk_id']}",
                      params={"start": cite["char_start"], "end": cite["char_end"]}).json()
    assert plain["focus_start"] is None  # only when asked
    text = asked["source_text"]
    sentence = text[asked["focus_start"]:asked["focus_end"]]
    passage = text[asked["span_start"]:asked["span_end"]]
    # the part the answer quotes, not the passage: the office hours are not in it
    assert sentence.startswith("The canteen serves lunch from noon to 2 pm."), sentence
    assert "office opens" not in sentence and "office opens" in passage
    assert "The canteen serves lunch from noon to 2 pm." in msg.locator(".answer").inner_text()
    assert sentence in passage and len(sentence) < len(passage)

    msg.locator("button.cite").first.click()
    viewer = page.locator("#viewer")
    expect(viewer).to_be_visible()
    expect(viewer.locator("mark.passage")).to_have_text(passage)
    expect(viewer.locator("mark.passage > mark.sentence")).to_have_text(sentence)
    expect(page.locator("#viewer-where")).to_contain_text(
        "the supporting sentence is highlighted")
    # the sentence stands out from the rest of the passage
    colours = viewer.locator("mark.passage > mark.sentence").evaluate(
        "e => [getComputedStyle(e).backgroundColor,"
        " getComputedStyle(e.parentElement).backgroundColor]")
    assert colours[0] != colours[1]
    screenshot(page, "viewer-sentence.png")

    # a source card (not a citation) opens the passage the same way
    page.keyboard.press("Escape")
    page.locator("#source-cards .card").first.click()
    expect(viewer.locator("mark.sentence")).to_have_text(sentence)
