"""The source viewer marks the sentence an answer rests on inside the cited passage (the
citation's character span), in Chromium against a real server."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect

from tests.web.conftest import LONG, LiveServer, screenshot

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


TRAVEL = ("Travel policy. Employees book flights through the travel desk. Economy class is used "
          "for flights under six hours. Business class is allowed for flights longer than six "
          "hours when a director approves it in advance. Hotels are booked near the office.")
EXPENSES = "Expenses. Receipts are uploaded to the expense tool within thirty days of the trip."


def write_pdf(path) -> None:  # type: ignore[no-untyped-def]
    from fpdf import FPDF

    pdf = FPDF(format="letter")
    pdf.set_font("Helvetica", size=11)
    for text in (TRAVEL, EXPENSES):
        pdf.add_page()
        for _ in range(12):  # the text sits lower on the page
            pdf.ln(10)
        pdf.multi_cell(0, 5, text)
    pdf.output(str(path))


def test_a_pdf_source_shows_its_page_with_the_sentence_marked(page, make_app, docs_dir):
    write_pdf(docs_dir / "travel.pdf")
    app, _ = make_app(ingest=[docs_dir])
    with LiveServer(app) as server:
        page.goto(server.url + "/")
        page.fill("#question", "When are receipts uploaded to the expense tool?")
        page.press("#question", "Enter")
        msg = page.locator(".message.assistant").last
        expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
        with httpx.Client(base_url=server.url) as c:
            chat = c.get("/api/chats").json()["data"][0]
            cite = c.get(f"/api/chats/{chat['id']}").json()["messages"][1]["sources"][0]
            assert cite["path"].endswith("travel.pdf") and cite["page"] == 2
            boxes = c.get(f"/api/sources/{cite['chunk_id']}/page/2", params={
                "start": cite["char_start"], "end": cite["char_end"]}).json()
            png = c.get(f"/api/sources/{cite['chunk_id']}/page/2.png")
            wrong = c.get(f"/api/sources/{cite['chunk_id']}/page/3.png")  # not its page
        assert png.headers["content-type"] == "image/png" and png.content[:4] == b"\x89PNG"
        assert wrong.status_code == 404
        assert boxes["pages"] == 2 and "Receipts are uploaded" in boxes["matched"]
        assert boxes["boxes"] and all(0 <= v <= 1 for b in boxes["boxes"] for v in b)
        top = boxes["boxes"][0][1]
        assert 0.4 < top < 0.55  # below the 12 blank lines (12 cm) the page starts with

        msg.locator("button.cite").first.click()
        viewer = page.locator("#viewer")
        img = viewer.locator(".pdf-page img")
        expect(img).to_be_visible()
        expect(img).to_have_attribute("alt", "Page 2 of travel.pdf")
        page.wait_for_function(
            "() => { const i = document.querySelector('.pdf-page img');"
            " return i && i.complete && i.naturalWidth > 0; }")
        box = viewer.locator(".pdf-box").first
        expect(box).to_be_visible()
        expect(viewer.locator(".pdf-page figcaption")).to_have_text(
            "Page 2 of 2: the cited text is highlighted")
        # the box sits where the sentence is on the rendered page
        sheet = viewer.locator(".pdf-sheet").bounding_box()
        marked = box.bounding_box()
        assert abs((marked["y"] - sheet["y"]) / sheet["height"] - top) < 0.01
        # the text view is still there, the sentence marked
        expect(viewer.locator("mark.passage")).to_contain_text("Receipts are uploaded")
        screenshot(page, "viewer-pdf-page.png")
        page.keyboard.press("Escape")

        # a Markdown source shows no page
        page.fill("#question", "When are salaries paid?")
        page.press("#question", "Enter")
        msg = page.locator(".message.assistant").last
        expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
        msg.locator("button.cite").first.click()
        expect(viewer.locator("mark.passage")).to_contain_text("25th")
        expect(viewer.locator(".pdf-page")).to_have_count(0)
