"""The chat UI at ``/`` in Chromium against a real ``citewise`` server."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import expect

from tests.web.conftest import LONG, QUESTION, LiveServer, PortServer, ask, free_port, screenshot


def test_ask_stream_cite_and_view_the_highlighted_span(page, server):
    page.goto(server.url + "/")
    expect(page.locator("#health")).to_have_text("2 documents · quoted answers (no LLM)")
    expect(page.locator("#chat-list-empty")).to_be_visible()

    msg = ask(page, QUESTION)
    expect(page.locator(".message.user p").last).to_have_text(QUESTION)
    expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
    assert int(msg.get_attribute("data-tokens")) >= 1  # the answer came as token events
    expect(page.locator("#question")).to_have_value("")

    with httpx.Client(base_url=server.url) as c:
        chats = c.get("/api/chats").json()
        assert chats["count"] == 1
        detail = c.get(f"/api/chats/{chats['data'][0]['id']}").json()
    answer = detail["messages"][1]
    sources = answer["sources"]
    assert sources[0]["path"].endswith("warranty.md")
    assert "24 months" in answer["content"]

    # the answer as rendered: the saved text with each [n] as a badge showing n
    text = msg.locator(".answer").inner_text()
    assert re.sub(r"\s+", "", text) == re.sub(r"\s+|\[|\]", "", answer["content"])
    badges = msg.locator(".answer button.cite")
    expect(badges.first).to_have_text("1")
    expect(badges.first).to_have_attribute("aria-label", f"Source 1: {sources[0]['location']}")

    # the process: plan, search call and result, timing
    steps = msg.locator(".process .step")
    expect(steps.filter(has_text=f"Search: “{QUESTION}” (top 5, hybrid)")).to_have_count(1)
    expect(steps.filter(has_text="searching the documents")).to_have_count(1)
    expect(steps.filter(has_text=re.compile(r"^reading \d+ passages? from \d+ files?$"))
           ).to_have_count(1)
    expect(steps.filter(has_text=re.compile(r"^Answered in \d+\.\d s$"))).to_have_count(1)
    expect(msg.locator(".process")).not_to_have_attribute("open", "")

    # the chat list and title
    expect(page.locator(".chat-link")).to_have_text([QUESTION])
    expect(page.locator("#chat-title")).to_have_text(QUESTION)

    # sources panel: one card per source with file, place, score, excerpt
    cards = page.locator("#source-cards .card")
    expect(cards).to_have_count(len(sources))
    first = cards.first
    expect(first.locator(".file")).to_have_text("warranty.md")
    expect(first.locator(".where")).to_contain_text("Warranty")
    expect(first.locator(".score")).to_have_text(f"score {sources[0]['score']:.2f}")
    expect(first.locator(".excerpt")).to_contain_text("24 months")

    # a badge selects the card and opens the viewer with the cited span highlighted
    badges.first.click()
    expect(first).to_have_class(re.compile(r"\bselected\b"))
    viewer = page.locator("#viewer")
    expect(viewer).to_be_visible()
    with httpx.Client(base_url=server.url) as c:
        src = c.get(f"/api/sources/{sources[0]['chunk_id']}").json()
    assert src["span_start"] is not None
    cited = src["source_text"][src["span_start"]:src["span_end"]]
    assert "24 months" in cited
    expect(viewer.locator("mark.passage")).to_have_count(1)
    assert viewer.locator("mark.passage").text_content() == cited
    assert viewer.locator("#viewer-text").text_content() == src["source_text"]
    # inside the passage, the sentence the citation was narrowed to (its char span)
    c0, c1 = sources[0]["char_start"], sources[0]["char_end"]
    sentence = src["source_text"][src["span_start"] + c0 - src["char_start"]:
                                  src["span_start"] + c1 - src["char_start"]]
    assert sentence.startswith("The laptop warranty lasts 24 months"), sentence
    expect(viewer.locator("mark.passage mark.sentence")).to_have_text(sentence)
    expect(page.locator("#viewer-title")).to_have_text("warranty.md — Warranty")
    lines = f"lines {src['line_start']}-{src['line_end']}" if src["line_end"] != src[
        "line_start"] else f"line {src['line_start']}"
    expect(page.locator("#viewer-where")).to_contain_text(lines)
    expect(page.locator("#viewer-where")).to_contain_text(
        f"characters {src['char_start']}-{src['char_end']}")
    screenshot(page, "chat-viewer.png")
    page.keyboard.press("Escape")
    expect(viewer).to_be_hidden()

    # a card opens the viewer too
    first.click()
    expect(viewer).to_be_visible()
    page.locator("#viewer .close").click()
    expect(viewer).to_be_hidden()
    msg.locator(".process summary").click()
    screenshot(page, "chat-answer.png")


def test_chat_list_new_switch_delete_and_deep_link(page, server):
    page.goto(server.url + "/")
    expect(ask(page, QUESTION)).to_have_attribute("data-state", "done", timeout=LONG)
    page.click("#new-chat")
    expect(page.locator("#chat-title")).to_have_text("New chat")
    expect(page.locator(".message")).to_have_count(0)
    expect(page.locator("#source-cards .card")).to_have_count(0)
    expect(ask(page, "When are salaries paid?")).to_have_attribute("data-state", "done",
                                                                   timeout=LONG)
    expect(page.locator(".chat-link")).to_have_text(["When are salaries paid?", QUESTION])
    expect(page.locator("#source-cards .card .file").first).to_have_text("payroll.md")

    # switch: the first chat's messages and sources come back from the server
    page.locator(".chat-link", has_text=QUESTION).click()
    expect(page.locator("#chat-title")).to_have_text(QUESTION)
    expect(page.locator(".message.user > p")).to_have_text([QUESTION])
    expect(page.locator(".message.assistant .answer")).to_contain_text(["24 months"])
    expect(page.locator("#source-cards .card .file").first).to_have_text("warranty.md")
    expect(page.locator(".chat-link", has_text=QUESTION)).to_have_attribute("aria-current",
                                                                             "page")
    # a follow-up goes into the same chat
    expect(ask(page, "And the batteries?")).to_have_attribute("data-state", "done", timeout=LONG)
    with httpx.Client(base_url=server.url) as c:
        chats = {ch["title"]: ch for ch in c.get("/api/chats").json()["data"]}
        assert chats[QUESTION]["message_count"] == 4
        chunk_id = c.get(f"/api/chats/{chats[QUESTION]['id']}").json()["messages"][1][
            "sources"][0]["chunk_id"]

    # delete the open chat: it leaves the list and the view is a new chat
    page.get_by_role("button", name=f"Delete chat: {QUESTION}").click()
    expect(page.locator(".chat-link")).to_have_text(["When are salaries paid?"])
    expect(page.locator("#chat-title")).to_have_text("New chat")
    with httpx.Client(base_url=server.url) as c:
        assert [ch["title"] for ch in c.get("/api/chats").json()["data"]] == [
            "When are salaries paid?"]

    # a link to a source (as the widget makes) opens the viewer
    page.goto(f"{server.url}/#source={chunk_id}")
    expect(page.locator("#viewer")).to_be_visible()
    expect(page.locator("#viewer mark.passage")).to_contain_text("24 months")


def test_keyboard_only(page, server):
    page.goto(server.url + "/")
    expect(page.locator("#question")).to_be_focused()
    page.keyboard.type("When are salaries paid?")
    page.keyboard.press("Shift+Enter")  # a new line, not a send
    expect(page.locator("#question")).to_have_value("When are salaries paid?\n")
    page.keyboard.press("Enter")
    msg = page.locator(".message.assistant").last
    expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
    badge = msg.locator("button.cite").first
    badge.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#viewer")).to_be_visible()
    expect(page.locator("#viewer mark.sentence")).to_contain_text("25th")
    page.keyboard.press("Escape")
    expect(page.locator("#viewer")).to_be_hidden()
    # every control has an accessible name
    for sel in ["#question", "#send", "#file", "#new-chat", "#admin-key"]:
        name = page.locator(sel).evaluate(
            "e => e.labels && e.labels.length ? e.labels[0].textContent.trim()"
            " : (e.getAttribute('aria-label') || e.textContent.trim())")
        assert name, sel


def test_streamed_tokens_appear_before_the_answer_ends_and_stop_works(
        page, make_app, docs_dir, slow_llm):
    slow_llm.delay, slow_llm.interval, slow_llm.tokens = 0.0, 0.25, 400
    app, _ = make_app(ingest=[docs_dir], llm_provider="llamacpp", llm_base_url=slow_llm.url,
                      llm_model="slow", planner="rules")
    with LiveServer(app) as server:
        page.goto(server.url + "/")
        msg = ask(page, QUESTION)
        answer = msg.locator(".answer")
        expect(answer).to_contain_text("The laptop warranty lasts 24 months", timeout=LONG)
        expect(answer).to_contain_text("More words. More words.")
        expect(msg).to_have_attribute("data-state", "streaming")  # still going: streamed
        expect(msg).to_have_attribute("aria-busy", "true")
        expect(answer.locator("button.cite").first).to_have_text("1")
        page.click("#stop")
        expect(msg).to_have_attribute("data-state", "stopped")
        expect(msg.locator(".note")).to_have_text("Stopped.")
        assert slow_llm.written < 100
        expect(page.locator("#send")).to_be_enabled()
        with httpx.Client(base_url=server.url) as c:
            chat = c.get("/api/chats").json()["data"][0]
            for _ in range(50):
                messages = c.get(f"/api/chats/{chat['id']}").json()["messages"]
                if len(messages) == 2:
                    break
                page.wait_for_timeout(100)
        assert messages[1]["status"] == "interrupted"
        # reopening the chat shows the partial answer as stopped
        page.locator(".chat-link").first.click()
        expect(page.locator(".message.assistant .note")).to_have_text(
            "This answer was stopped before it was complete.")


def test_errors_empty_query_refused_query_server_down_then_back(page, make_app, docs_dir):
    app, _ = make_app(ingest=[docs_dir])
    port = free_port()
    error = page.locator("#error")
    with PortServer(app, port) as server:
        page.goto(server.url + "/")
        expect(page.locator("#health")).to_have_attribute("data-state", "ok")
        page.press("#question", "Enter")  # empty: nothing is sent
        expect(error).to_have_text("Type a question first.")
        expect(page.locator(".message")).to_have_count(0)
        # zero-width spaces only: the server refuses it, its reason is shown
        with httpx.Client(base_url=server.url) as c:
            refused = c.post("/api/chat/stream", json={"query": "\u200b\u200b"})
        assert refused.status_code == 422
        ask(page, "\u200b\u200b")
        expect(error).to_have_text(f"The server refused the question: {refused.json()['detail']}")
        expect(page.locator(".message.assistant").last).to_have_attribute("data-state", "error")
        with httpx.Client(base_url=server.url) as c:
            assert c.get("/api/chats").json()["count"] == 0
    # the server is gone
    msg = ask(page, QUESTION)
    expect(msg).to_have_attribute("data-state", "error")
    expected = (f"Cannot reach the citewise server at http://127.0.0.1:{port}. Check that "
                "`citewise serve` is running, then try again.")
    expect(error).to_have_text(expected)
    expect(msg.locator(".error-text")).to_have_text(expected)
    expect(page.locator("#health")).to_have_text("server unreachable")
    screenshot(page, "chat-server-down.png")
    # it comes back on the same port: the same page works again
    app, _ = make_app()
    with PortServer(app, port):
        page.click("#new-chat")
        expect(error).to_be_hidden()
        msg = ask(page, QUESTION)
        expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
        expect(msg.locator(".answer")).to_contain_text("24 months")
        expect(page.locator("#health")).to_have_text("2 documents · quoted answers (no LLM)")


def test_provider_failure_is_explained_and_the_answer_quotes(page, make_app, docs_dir):
    dead = f"http://127.0.0.1:{free_port()}/v1"
    app, _ = make_app(ingest=[docs_dir], llm_provider="llamacpp", llm_base_url=dead,
                      llm_model="gone", planner="rules")
    with LiveServer(app) as server:
        page.goto(server.url + "/")
        expect(page.locator("#health")).to_have_text("2 documents · LLM: llamacpp (unreachable)")
        msg = ask(page, QUESTION)
        expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
        expect(msg.locator(".answer")).to_contain_text("24 months")
        with httpx.Client(base_url=server.url) as c:
            chat = c.get("/api/chats").json()["data"][0]
        warning = msg.locator(".warning").first
        expect(warning).to_contain_text(re.compile(
            r"^The language model could not answer \(.+\), so this answer quotes the "
            r"documents instead\.$"))
        assert chat["message_count"] == 2


CONTRACT = """SERVICES AGREEMENT

1. Term. This Agreement starts on the Effective Date and renews automatically for successive
terms of one (1) year unless either party gives notice of non-renewal.

2. Termination. Either party may terminate this Agreement for convenience upon thirty (30)
days prior written notice to the other party.

3. Governing Law. This Agreement shall be governed by the laws of the State of New York.

4. Limitation of Liability. In no event shall either party's aggregate liability exceed the
fees paid under this Agreement in the twelve (12) months before the claim.
"""


def test_attach_upload_approve_or_reject_and_result_cards(page, server, tmp_path):
    from citewise.scan.playbook import load_playbook

    contract = tmp_path / "services-agreement.txt"
    contract.write_text(CONTRACT, encoding="utf-8")
    page.goto(server.url + "/")
    expect(page.locator("#health")).to_have_text("2 documents · quoted answers (no LLM)")
    page.set_input_files("#file", str(contract))
    expect(page.locator(".message.user").first).to_have_text("Attached services-agreement.txt")
    upload = page.locator(".message.assistant").first
    expect(upload).to_have_attribute("data-state", "done", timeout=LONG)
    card = upload.locator(".result-card.file")
    expect(card.locator("strong")).to_have_text("services-agreement.txt")
    expect(card.locator(".badge")).to_have_text("added")
    expect(upload.locator(".answer")).to_have_text(
        "services-agreement.txt is in the collection now.")
    expect(page.locator("#health")).to_have_text("3 documents · quoted answers (no LLM)")

    # the choice: a contract may be checked against the playbook
    choices = upload.get_by_role("group", name="What next with services-agreement.txt?")
    expect(choices.get_by_role("button", name="Ask about it")).to_be_focused()
    choices.get_by_role("button", name="Check it against the playbook").click()

    # the approval prompt (interrupt); rejecting runs nothing
    turn = page.locator(".message.assistant").nth(1)
    prompt = turn.locator(".approval")
    expect(prompt.locator("p").first).to_have_text(
        "Check services-agreement.txt against the contract playbook?")
    expect(turn).to_have_attribute("data-state", "waiting", timeout=LONG)
    expect(prompt.get_by_role("button", name="Approve")).to_be_focused()
    prompt.get_by_role("button", name="Reject").click()
    expect(turn).to_have_attribute("data-state", "done", timeout=LONG)
    expect(turn.locator(".answer")).to_have_text(
        "Cancelled: scan of services-agreement.txt was not run.")
    expect(prompt.get_by_role("button", name="Approve")).to_be_disabled()

    # attach it again and approve: the playbook's flags come back as cards
    page.set_input_files("#file", str(contract))
    again = page.locator(".message.assistant").nth(2)
    expect(again.locator(".result-card.file .badge")).to_have_text("unchanged", timeout=LONG)
    again.get_by_role("button", name="Check it against the playbook").click()
    turn = page.locator(".message.assistant").nth(3)
    turn.locator(".approval").get_by_role("button", name="Approve").click(timeout=LONG)
    expect(turn).to_have_attribute("data-state", "done", timeout=120_000)
    rules = [r.title for r in load_playbook("default").rules]
    flags = turn.locator(".result-card.flag")
    expect(flags).to_have_count(len(rules))
    assert sorted(flags.locator("strong").all_text_contents()) == sorted(rules)
    expect(turn.locator(".answer")).to_have_text(f"Scan finished: {len(rules)} flag(s).")
    law = flags.filter(has=page.locator("strong", has_text="Governing law"))
    expect(law.locator(".badge").nth(1)).to_have_text("compliant")
    expect(law.locator("blockquote.clause-quote")).to_have_text(
        "3. Governing Law. This Agreement shall be governed by the laws of the State of New York.")
    expect(law.locator("button.link")).to_contain_text("Show the clause (section 3 · line 9)")
    # a forbidden clause the scan did not find reads "not found" (never "compliant")
    compete = flags.filter(has=page.locator("strong", has_text="Non-compete"))
    expect(compete.locator(".badge").nth(1)).to_have_text("not found")
    expect(compete.locator("blockquote")).to_have_count(0)
    law.locator("button.link").click()
    expect(page.locator("#viewer-title")).to_have_text("services-agreement.txt")
    expect(page.locator("#viewer mark.passage")).to_contain_text(
        "governed by the laws of the State of New York")
    page.keyboard.press("Escape")
    screenshot(page, "chat-attach-scan.png")

    # reopened: the decisions as made (no stale "Waiting for approval"), the flags rebuilt
    page.reload()
    page.locator(".chat-link").first.click()
    answers = page.locator(".message.assistant .answer")
    expect(answers.filter(has_text="Waiting for approval")).to_have_count(0)
    expect(answers.filter(has_text="Rejected: scan of services-agreement.txt.")).to_have_count(1)
    expect(answers.filter(has_text="Approved: scan of services-agreement.txt.")).to_have_count(1)
    expect(page.locator(".approval")).to_have_count(0)
    reopened = page.locator(".message.assistant").filter(has_text="Scan finished")
    expect(reopened.locator(".result-card.flag")).to_have_count(len(rules))
    law = reopened.locator(".result-card.flag").filter(
        has=page.locator("strong", has_text="Governing law"))
    expect(law.locator(".badge").nth(1)).to_have_text("compliant")


ONBOARDING = """# Welcome aboard

On your first day you receive a laptop and a badge at the front desk. Your manager introduces
you to the team before lunch. The team parties on Fridays are optional.
"""


def test_attach_a_note_offers_no_scan_and_ask_about_it_searches_only_it(page, server,
                                                                          tmp_path):
    note = tmp_path / "onboarding.md"
    note.write_text(ONBOARDING, encoding="utf-8")
    page.goto(server.url + "/")
    expect(page.locator("#health")).to_have_text("2 documents · quoted answers (no LLM)")
    page.set_input_files("#file", str(note))
    upload = page.locator(".message.assistant").first
    expect(upload).to_have_attribute("data-state", "done", timeout=LONG)
    choices = upload.get_by_role("group", name="What next with onboarding.md?")
    expect(choices.get_by_role("button")).to_have_text(["Ask about it", "Just keep it indexed"])
    expect(choices).to_contain_text(
        "It does not read like a contract, so no playbook check is offered.")
    with httpx.Client(base_url=server.url) as c:
        docs = {d["path"].rsplit("/", 1)[-1]: d["id"] for d in c.get("/api/documents").json()[
            "data"]}
        fit = c.get(f"/api/scan/fit/{docs['onboarding.md']}").json()
        assert fit["contract"] is False
        assert c.get("/api/scan/fit/nope").status_code == 404
    expect(page.locator(".message")).to_have_count(2)  # nothing was asked on its own

    # ask about it: the next questions search only that file, until the chip's x
    choices.get_by_role("button", name="Ask about it").click()
    expect(page.locator("#scope")).to_have_text(re.compile("^Asking about onboarding.md"))
    expect(page.locator("#question")).to_be_focused()
    msg = ask(page, "When do I get my laptop and badge?")
    expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
    files = page.locator("#source-cards .card .file")
    expect(files.first).to_have_text("onboarding.md")
    assert set(files.all_text_contents()) == {"onboarding.md"}
    page.get_by_role("button", name="Stop asking only about onboarding.md").click()
    expect(page.locator("#scope")).to_be_hidden()
    msg = ask(page, QUESTION)
    expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
    expect(page.locator("#source-cards .card .file").first).to_have_text("warranty.md")


DROP_JS = """([names, texts]) => {
  const data = new DataTransfer();
  names.forEach((n, i) => data.items.add(new File([texts[i]], n, { type: "text/plain" })));
  const fire = (type) => document.querySelector("#messages").dispatchEvent(
    new DragEvent(type, { dataTransfer: data, bubbles: true, cancelable: true }));
  fire("dragenter");
  fire("dragover");
  window.__dropData = data;
}"""


def test_files_dropped_on_the_page_are_uploaded_one_by_one_with_their_cards(page, server):
    page.goto(server.url + "/")
    expect(page.locator("#health")).to_have_text("2 documents · quoted answers (no LLM)")
    page.evaluate(DROP_JS, [["onboarding.md", "empty.txt"], [ONBOARDING, "   \n"]])
    expect(page.locator("#drop-zone")).to_be_visible()
    expect(page.locator("#drop-zone")).to_have_text("Drop files to add them to the collection")
    page.evaluate("""() => document.querySelector("#messages").dispatchEvent(new DragEvent(
        "drop", { dataTransfer: window.__dropData, bubbles: true, cancelable: true }))""")
    expect(page.locator("#drop-zone")).to_be_hidden()
    expect(page.locator(".message.user")).to_have_text(["Attached onboarding.md",
                                                        "Attached empty.txt"], timeout=LONG)
    uploads = page.locator(".message.assistant")
    expect(uploads.nth(1)).to_have_attribute("data-state", "done", timeout=LONG)
    expect(uploads.nth(0)).to_contain_text("onboarding.md is in the collection now.")
    expect(uploads.nth(1)).to_contain_text("empty.txt could not be indexed.")
    expect(page.locator("#health")).to_have_text("3 documents · quoted answers (no LLM)")
