"""Pinning a source's document in the chat page (Chromium against a real server): the next
questions are about that document only, and "list the sections" reads it whole."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.web.conftest import LONG, QUESTION, ask


def test_pin_a_sources_document_then_ask_for_its_sections(page, server):
    page.goto(server.url + "/")
    msg = ask(page, QUESTION)
    expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
    page.get_by_role("button", name="Ask only about warranty.md").first.click()
    expect(page.locator("#scope")).to_have_text(re.compile("^Asking about warranty.md"))
    expect(page.locator("#question")).to_be_focused()

    msg = ask(page, "List the sections")
    expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
    expect(msg).to_contain_text("The sections of data/warranty.md, in document order:")
    expect(msg).to_contain_text("Batteries")
    files = page.locator("#source-cards .card .file")
    assert set(files.all_text_contents()) == {"warranty.md"}

    # an ordinary question is searched in the pinned document only
    msg = ask(page, "When are salaries paid?")
    expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
    assert set(files.all_text_contents()) <= {"warranty.md"}
    page.get_by_role("button", name="Stop asking only about warranty.md").click()
    expect(page.locator("#scope")).to_be_hidden()
