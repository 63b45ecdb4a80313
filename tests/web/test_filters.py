"""The chat page's "Search only in…" fields (Chromium against a real server): a path glob
keeps the sources to the matching files, and clearing it searches everything again."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.web.conftest import LONG, QUESTION, ask


def test_path_glob_restricts_the_sources(page, server):
    page.goto(server.url + "/")
    page.locator("#filters summary").click()
    page.locator("#filter-paths").fill("payroll*")
    msg = ask(page, QUESTION)
    expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
    files = page.locator("#source-cards .card .file")
    assert "warranty.md" not in files.all_text_contents()

    page.locator("#filter-paths").fill("")
    msg = ask(page, QUESTION)
    expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
    assert "warranty.md" in files.all_text_contents()


def test_a_filter_the_server_refuses_shows_its_reason(page, server):
    page.goto(server.url + "/")
    page.locator("#filters summary").click()
    page.locator("#filter-language").fill("e1")
    page.locator("#question").fill(QUESTION)
    page.locator("#question").press("Enter")
    expect(page.locator("#error")).to_be_visible(timeout=LONG)
    expect(page.locator("#error")).to_contain_text("language")
