"""What a reader does with an answer, in Chromium against a real server: copy it with its
citations, rate it and its sources (stored with the chat, exported as reranker training
JSONL), regenerate it, edit the question and send it again; and with chats: rename, search,
the colour theme."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import expect

from citewise.train.data import read_jsonl
from tests.web.conftest import LONG, QUESTION, ask, screenshot


def watch_copied(button) -> None:  # type: ignore[no-untyped-def]
    """Record in ``window.__copied`` whether ``button``'s label ever reads "Copied": the
    label shows for 1.5 s only, which a check polling a loaded browser can miss (seen in
    CI), so the check waits for the record instead of the transient text."""
    button.evaluate("b => { window.__copied = false; new MutationObserver(() => {"
                    " if (b.textContent === 'Copied') window.__copied = true; })"
                    ".observe(b, {childList: true, characterData: true, subtree: true}); }")


def saved_chat(server) -> dict:  # type: ignore[no-untyped-def]
    with httpx.Client(base_url=server.url) as c:
        chat = c.get("/api/chats").json()["data"][0]
        return c.get(f"/api/chats/{chat['id']}").json()


def test_copy_feedback_and_its_export_as_training_jsonl(page, server, tmp_path):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    page.goto(server.url + "/")
    msg = ask(page, QUESTION)
    expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
    # the sources get their thumbs once the answer is saved, without touching the answer
    expect(page.get_by_role("button", name="Source 1 is relevant")).to_be_visible()
    detail = saved_chat(server)
    answer = detail["messages"][1]
    sources = answer["sources"]

    # copy: the answer's text with its [n] markers, then the sources it cites
    watch_copied(msg.locator(".action.copy"))
    msg.get_by_role("button", name="Copy the answer with its sources").click()
    page.wait_for_function("window.__copied === true")
    copied = page.evaluate("navigator.clipboard.readText()")
    cited = sorted({int(n) for n in re.findall(r"\[(\d+)\]", answer["content"])})
    assert copied.startswith(answer["content"].strip())
    assert "[1]" in copied.split("\n\nSources:\n")[0]
    listed = copied.split("\n\nSources:\n")[1].splitlines()
    assert sorted(int(re.match(r"\[(\d+)\]", line).group(1)) for line in listed) == cited
    assert f"[1] {sources[0]['location']}" in listed

    # thumbs up with a comment, and a thumb down on one source
    up = msg.get_by_role("button", name="Good answer")
    up.click()
    expect(up).to_have_attribute("aria-pressed", "true")
    expect(msg).to_have_attribute("data-saved", "1")
    msg.get_by_label("What was good? (optional)").fill("Exact, with the right clause.")
    msg.get_by_role("button", name="Save feedback").click()
    expect(msg.locator(".feedback-thanks")).to_have_text("Thanks: your feedback is saved.")
    assert len(sources) >= 2, sources
    wrong = sources[1]
    page.get_by_role("button", name=f"Source {wrong['n']} is not relevant").click()
    expect(page.get_by_role("button", name=f"Source {wrong['n']} is not relevant")
           ).to_have_attribute("aria-pressed", "true")
    fb = saved_chat(server)["messages"][1]["feedback"]
    assert fb == {"rating": 1, "comment": "Exact, with the right clause.",
                  "sources": {wrong["chunk_id"]: -1}}

    # the export: what `citewise train-reranker --jsonl` reads
    with page.expect_download() as info:
        page.click("#export-feedback")
    path = tmp_path / "feedback.jsonl"
    info.value.save_as(path)
    examples = read_jsonl(path)
    assert len(examples) == 1
    ex = examples[0]
    assert ex.query == QUESTION
    assert ex.negative == (wrong["chunk_id"],) or list(ex.negative) == [wrong["chunk_id"]]
    assert set(ex.positive) == {s["chunk_id"] for s in sources if s["n"] in cited} - {
        wrong["chunk_id"]}

    # reopened: the thumbs are as they were saved
    page.reload()
    page.locator(".chat-link").first.click()
    again = page.locator(".message.assistant").last
    expect(again.get_by_role("button", name="Good answer")).to_have_attribute("aria-pressed",
                                                                             "true")
    expect(again.get_by_role("button", name="Bad answer")).to_have_attribute("aria-pressed",
                                                                            "false")
    expect(page.get_by_role("button", name=f"Source {wrong['n']} is not relevant")
           ).to_have_attribute("aria-pressed", "true")
    screenshot(page, "answer-feedback.png")

    # clearing the thumb (a second click) leaves nothing to export
    again.get_by_role("button", name="Good answer").click()
    expect(again).to_have_attribute("data-saved", "0")
    with httpx.Client(base_url=server.url) as c:
        assert c.get("/api/chats/feedback.jsonl").text == ""


def test_regenerate_and_edit_and_resend_replace_the_turn(page, server):
    page.goto(server.url + "/")
    msg = ask(page, QUESTION)
    expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
    msg.get_by_role("button", name="Good answer").click()
    expect(msg).to_have_attribute("data-saved", "1")
    first = saved_chat(server)

    # regenerate: the same question again, in place of the old turn (here and on the server)
    old = msg.element_handle()
    msg.get_by_role("button", name="Ask this question again").click()
    old.wait_for_element_state("hidden")  # the old turn leaves the page
    redo = page.locator(".message.assistant").last
    expect(redo).to_have_attribute("data-state", "done", timeout=LONG)
    expect(redo).not_to_have_attribute("data-saved", "1")
    expect(page.locator(".message.user > p")).to_have_text([QUESTION])
    expect(page.locator(".message.assistant")).to_have_count(1)
    expect(redo.locator(".answer")).to_contain_text("24 months")
    second = saved_chat(server)
    assert second["id"] == first["id"]
    assert [m["role"] for m in second["messages"]] == ["user", "assistant"]
    assert second["messages"][0]["created"] > first["messages"][1]["created"]  # new rows
    assert second["messages"][1]["feedback"] is None  # the old answer's feedback went with it

    # edit: the question changes and is sent again, replacing the turn
    page.locator(".message.user").get_by_role(
        "button", name="Edit this question and send it again").click()
    box = page.get_by_label("Edited question (Enter sends, Escape cancels)")
    expect(box).to_have_value(QUESTION)
    box.fill("When are salaries paid?")
    box.press("Enter")
    expect(page.locator(".message.user > p")).to_have_text(["When are salaries paid?"])
    edited = page.locator(".message.assistant").last
    expect(edited).to_have_attribute("data-state", "done", timeout=LONG)
    expect(edited.locator(".answer")).to_contain_text("25th")
    third = saved_chat(server)
    question = third["messages"][0]
    assert (question["role"], question["content"]) == ("user", "When are salaries paid?")
    assert len(third["messages"]) == 2
    # Escape cancels an edit
    page.locator(".message.user").get_by_role(
        "button", name="Edit this question and send it again").click()
    page.get_by_label("Edited question (Enter sends, Escape cancels)").press("Escape")
    expect(page.locator(".message.user > p")).to_have_text(["When are salaries paid?"])
    expect(page.locator(".edit-form")).to_have_count(0)

    # a refused question saved nothing: editing it sends the new one after the kept turn
    refused = ask(page, "\u200b\u200b")
    expect(refused).to_have_attribute("data-state", "error")
    page.locator(".message.user").last.get_by_role(
        "button", name="Edit this question and send it again").click()
    box = page.get_by_label("Edited question (Enter sends, Escape cancels)")
    box.fill("And the batteries?")
    box.press("Enter")
    expect(page.locator(".message.user > p")).to_have_text(
        ["When are salaries paid?", "And the batteries?"])
    expect(page.locator(".message.assistant").last).to_have_attribute("data-state", "done",
                                                                     timeout=LONG)
    fourth = saved_chat(server)
    assert [m["content"] for m in fourth["messages"] if m["role"] == "user"] == [
        "When are salaries paid?", "And the batteries?"]


def test_rename_and_search_chats(page, server):
    page.goto(server.url + "/")
    expect(ask(page, QUESTION)).to_have_attribute("data-state", "done", timeout=LONG)
    page.click("#new-chat")
    expect(page.locator("#rename")).to_be_hidden()  # nothing to rename yet
    expect(ask(page, "When are salaries paid?")).to_have_attribute("data-state", "done",
                                                                   timeout=LONG)
    # rename the open chat from its header
    page.click("#rename")
    field = page.get_by_label("New name of the chat (Enter saves, Escape cancels)")
    expect(field).to_have_value("When are salaries paid?")
    field.fill("Payday")
    field.press("Enter")
    expect(page.locator("#chat-title")).to_have_text("Payday")
    expect(page.locator(".chat-link")).to_have_text(["Payday", QUESTION])
    with httpx.Client(base_url=server.url) as c:
        titles = [ch["title"] for ch in c.get("/api/chats").json()["data"]]
    assert titles == ["Payday", QUESTION]
    # Escape keeps the old name
    page.click("#rename")
    field.fill("Something else")
    field.press("Escape")
    expect(page.locator("#chat-title")).to_have_text("Payday")

    # search the chat list by title
    page.fill("#chat-search", "warranty")
    expect(page.locator(".chat-link")).to_have_text([QUESTION])
    page.fill("#chat-search", "PAY")
    expect(page.locator(".chat-link")).to_have_text(["Payday"])
    page.fill("#chat-search", "no such chat")
    expect(page.locator(".chat-link")).to_have_count(0)
    expect(page.locator("#chat-list-empty")).to_have_text("No chats match “no such chat”.")
    page.fill("#chat-search", "")
    expect(page.locator(".chat-link")).to_have_count(2)


def background(page) -> str:  # type: ignore[no-untyped-def]
    return page.evaluate("getComputedStyle(document.body.parentElement).backgroundColor")


def test_dark_mode_follows_the_system_and_the_toggle(new_page, server):
    page = new_page()
    page.emulate_media(color_scheme="dark")
    page.goto(server.url + "/")
    theme = page.locator("#theme")
    expect(theme).to_have_text("Theme: system (dark)")
    assert background(page) == "rgb(15, 18, 22)"
    msg = ask(page, QUESTION)
    expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
    panel = msg.evaluate("e => getComputedStyle(e).backgroundColor")
    text = msg.evaluate("e => getComputedStyle(e).color")
    assert (panel, text) == ("rgb(24, 28, 34)", "rgb(230, 233, 237)")
    screenshot(page, "dark-mode.png")

    theme.click()  # light, whatever the system says
    expect(theme).to_have_text("Theme: light")
    assert background(page) == "rgb(246, 247, 249)"
    theme.click()
    expect(theme).to_have_text("Theme: dark")
    page.emulate_media(color_scheme="light")
    assert background(page) == "rgb(15, 18, 22)"  # the choice beats the system now
    page.reload()  # and is kept
    expect(theme).to_have_text("Theme: dark")
    assert background(page) == "rgb(15, 18, 22)"
    theme.click()  # back to the system's (light now)
    expect(theme).to_have_text("Theme: system (light)")
    assert background(page) == "rgb(246, 247, 249)"
    page.emulate_media(color_scheme="dark")
    expect(theme).to_have_text("Theme: system (dark)")
    assert background(page) == "rgb(15, 18, 22)"


def test_keyboard_shortcuts(page, server):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    page.goto(server.url + "/")
    msg = ask(page, QUESTION)
    expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
    page.locator("#chat-title").click()  # focus off the fields
    watch_copied(msg.locator(".action.copy"))
    page.keyboard.press("Control+Shift+C")  # copy the last answer
    page.wait_for_function("window.__copied === true")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert "24 months" in copied and "\n\nSources:\n[1] " in copied
    page.keyboard.press("Control+k")
    expect(page.locator("#chat-search")).to_be_focused()
    page.keyboard.type("warranty")
    expect(page.locator(".chat-link")).to_have_text([QUESTION])
    page.locator("#chat-title").click()
    page.keyboard.press("/")
    expect(page.locator("#question")).to_be_focused()
    expect(page.locator("#question")).to_have_value("")  # the slash is not typed
    page.keyboard.press("Control+Shift+O")
    expect(page.locator("#chat-title")).to_have_text("New chat")
    expect(page.locator(".message")).to_have_count(0)
    page.locator(".shortcuts summary").click()
    expect(page.locator(".shortcuts dl")).to_contain_text("copy the last answer")
