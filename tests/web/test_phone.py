"""Phone widths in Chromium against a real server: nothing may be wider than the screen once
a chat is open (it was 413-418 px on a 390 px phone: the chat title's one line set the
column's width)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.web.conftest import LONG, QUESTION, screenshot

WIDE = """() => [...document.querySelectorAll('body *')]
  .filter(e => e.getClientRects().length && e.getBoundingClientRect().right > innerWidth + 0.5
               && !e.closest('.visually-hidden'))
  .map(e => `${e.tagName.toLowerCase()}.${e.className}`)"""


def overflow(page) -> tuple[int, list[str]]:  # type: ignore[no-untyped-def]
    return (page.evaluate("document.documentElement.scrollWidth"), page.evaluate(WIDE))


@pytest.mark.parametrize("width", [360, 390, 414])
def test_no_horizontal_overflow_on_phones(new_page, server, width):
    page = new_page(width, 800)
    page.goto(server.url + "/")
    assert overflow(page) == (width, [])
    page.fill("#question", QUESTION)
    page.press("#question", "Enter")
    msg = page.locator(".message.assistant").last
    expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
    expect(page.locator("#chat-title")).to_have_text(QUESTION)
    expect(page.locator("#source-cards .card").first).to_be_visible()
    assert overflow(page) == (width, [])
    long = "Warranty-terms-and-conditions-of-the-laptops-for-the-whole-team-2026"
    page.click("#rename")
    page.keyboard.press("Control+A")
    page.keyboard.type(long)
    page.keyboard.press("Enter")
    expect(page.locator(".chat-link")).to_have_text([long])
    assert overflow(page) == (width, [])
    page.locator(".chat-link").first.click()  # the chat reopened from the list
    expect(page.locator(".message.assistant .answer")).to_contain_text("24 months")
    assert overflow(page) == (width, [])
    page.locator(".message.user").get_by_role("button", name="Edit this question and send it again").click()
    assert overflow(page) == (width, [])
    page.keyboard.press("Escape")
    msg.locator("button.cite").first.click()
    expect(page.locator("#viewer")).to_be_visible()
    assert overflow(page) == (width, [])
    if width == 390:
        screenshot(page, "phone-390-viewer.png")
        page.keyboard.press("Escape")
        page.emulate_media(color_scheme="dark")
        screenshot(page, "phone-390-dark.png")
