"""The answer as it happens, in Chromium against a real server and a real (scripted) LLM
server: live progress from the first event, the sources found as soon as retrieval ends, the
view following the text unless the reader scrolls up, cited sources marked and first."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import expect

from tests.web.conftest import LONG, QUESTION, LiveServer, ask, screenshot
from tests.web.llm import passages, scripted_llm


def record_progress(page) -> None:  # type: ignore[no-untyped-def]
    """Keep every text the progress line shows in window.progressSeen."""
    page.evaluate("""() => {
      window.progressSeen = [];
      new MutationObserver(() => {
        for (const p of document.querySelectorAll('.progress:not([hidden]) .progress-text')) {
          const t = p.textContent;
          if (window.progressSeen[window.progressSeen.length - 1] !== t) window.progressSeen.push(t);
        }
      }).observe(document.getElementById('messages'),
                 {subtree: true, childList: true, characterData: true, attributes: true});
    }""")


def test_progress_and_sources_show_before_the_first_word(new_page, make_app, docs_dir):
    with scripted_llm() as llm:
        llm.delay = 6.0  # the model is slow to start: the page must say what is going on
        llm.pieces = ["The laptop warranty lasts 24 months [1]."]
        app, _ = make_app(ingest=[docs_dir], llm_provider="llamacpp", llm_base_url=llm.url,
                          llm_model="scripted", planner="rules")
        with LiveServer(app) as server:
            page = new_page()
            page.goto(server.url + "/")
            record_progress(page)
            msg = ask(page, QUESTION)
            progress = msg.locator(".progress")
            # while the model has not written a word: the stage the server names, and the
            # passages retrieval found
            expect(progress).to_have_text(
                re.compile(r"^Writing the answer with llamacpp \(scripted\)…$"), timeout=LONG)
            expect(msg).to_have_attribute("data-stage", "generate")
            found = page.locator("#source-cards .card.found")
            expect(found.first).to_be_visible()
            expect(found.first.locator(".file")).to_have_text(re.compile(r"\.md$"))
            expect(found.first.locator(".score")).to_have_text(re.compile(r"^relevance -?\d"))
            expect(page.locator("#sources-note")).to_contain_text("found")
            assert msg.get_attribute("data-tokens") is None  # no token yet
            assert msg.get_attribute("data-state") == "streaming"
            screenshot(page, "live-progress.png")

            expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
            expect(progress).to_be_hidden()
            seen = page.evaluate("window.progressSeen")
            assert seen[0] == "Sending the question…"  # from the moment it is sent
            assert "Writing the answer with llamacpp (scripted)…" in seen
            # every stage the line showed stays in Process, in the order the server sent it
            steps = msg.locator(".process .step").all_text_contents()
            at = [next(i for i, t in enumerate(steps) if re.match(p, t)) for p in (
                r"^searching the documents$", r"^\d+ passages? found",
                r"^reading \d+ passages? from", r"^writing the answer with llamacpp")]
            assert at == sorted(at), steps
            # the found cards gave way to the numbered sources
            expect(page.locator("#source-cards .card.found")).to_have_count(0)
            expect(page.locator("#source-cards .card.cited")).to_have_count(1)


def test_cited_sources_are_marked_and_ordered_by_first_citation(new_page, make_app, docs_dir):
    (docs_dir / "returns.md").write_text(
        "# Returns\n\nA laptop may be returned within 30 days of purchase for a refund.\n",
        encoding="utf-8")
    cited: list[int] = []

    def respond(prompt: str) -> list[str]:
        # cite the warranty and battery passages, the higher number first (so the order of
        # citation differs from the numbers' order), each with its own sentence
        texts = passages(prompt)
        pick = {n: t for n, t in texts.items() if "24 months" in t or "12 months" in t}
        cited[:] = sorted(pick, reverse=True)
        return [f"{pick[n].strip().splitlines()[-1]} [{n}]. " for n in cited]

    with scripted_llm() as llm:
        llm.respond = respond
        app, _ = make_app(ingest=[docs_dir], llm_provider="llamacpp", llm_base_url=llm.url,
                          llm_model="scripted", planner="rules", top_k=5)
        with LiveServer(app) as server:
            page = new_page()
            page.goto(server.url + "/")
            msg = ask(page, "How long are the laptop and its batteries covered?")
            expect(msg).to_have_attribute("data-state", "done", timeout=LONG)
            with httpx.Client(base_url=server.url) as c:
                chat = c.get("/api/chats").json()["data"][0]
                saved = c.get(f"/api/chats/{chat['id']}").json()["messages"][1]
            assert saved["metrics"].get("fallback") is None, saved
            numbers = [s["n"] for s in saved["sources"]]
            assert len(numbers) >= 3, numbers  # two cited, at least one not
            assert len(cited) == 2 and cited[0] > cited[1]
            order = [int(n) for n in re.findall(r"\[(\d+)\]", saved["content"])]
            assert order == cited, saved["content"]
            expected = cited + [n for n in numbers if n not in cited]
            cards = page.locator("#source-cards .card")
            expect(cards).to_have_count(len(numbers))
            assert [int(c.get_attribute("data-n")) for c in cards.all()] == expected
            expect(page.locator("#source-cards .card.cited .badge.cited")).to_have_count(2)
            uncited = page.locator("#source-cards .card.uncited")
            expect(uncited).to_have_count(len(numbers) - 2)
            expect(uncited.first.locator(".badge")).to_have_text("not cited")
            expect(page.locator("#sources-note")).to_have_text(
                f"2 cited · {len(numbers) - 2} more found but not cited")
            # reopened from the server: the same order and marks
            page.reload()
            page.locator(".chat-link").first.click()
            expect(cards).to_have_count(len(numbers))
            assert [int(c.get_attribute("data-n")) for c in cards.all()] == expected
            expect(page.locator("#source-cards .card.cited")).to_have_count(2)
            screenshot(page, "cited-sources.png")


def test_the_view_follows_the_answer_until_the_reader_scrolls_up(new_page, make_app,
                                                                  docs_dir):
    with scripted_llm() as llm:
        llm.interval = 0.06
        llm.pieces = ["The laptop warranty lasts 24 months [1].\n\n"] + [
            f"Line {i} of a long answer.\n\n" for i in range(400)]
        app, _ = make_app(ingest=[docs_dir], llm_provider="llamacpp", llm_base_url=llm.url,
                          llm_model="scripted", planner="rules")
        with LiveServer(app) as server:
            page = new_page(1280, 600)
            page.goto(server.url + "/")
            msg = ask(page, QUESTION)
            box = page.locator("#messages")
            gap = "e => e.scrollHeight - e.scrollTop - e.clientHeight"
            # the text outgrows the pane; the view stays at its end
            page.wait_for_function(
                "() => { const m = document.getElementById('messages');"
                " return m.scrollHeight > 2 * m.clientHeight; }", timeout=LONG)
            page.wait_for_timeout(300)
            assert box.evaluate(gap) < 60
            assert msg.get_attribute("data-state") == "streaming"
            expect(page.locator("#jump")).to_be_hidden()

            # the reader scrolls up: the view stays where they are while text keeps coming
            box.hover()
            page.mouse.wheel(0, -100_000)
            page.wait_for_function("() => document.getElementById('messages').scrollTop < 5")
            tokens = int(msg.get_attribute("data-tokens"))
            page.wait_for_timeout(1500)
            assert int(msg.get_attribute("data-tokens")) > tokens  # still streaming
            assert box.evaluate("e => e.scrollTop") < 5
            expect(page.locator("#jump")).to_be_visible()

            # "Jump to the latest" follows again
            page.click("#jump")
            page.wait_for_timeout(500)
            assert box.evaluate(gap) < 60
            expect(page.locator("#jump")).to_be_hidden()
            page.keyboard.press("Escape")  # the shortcut for Stop
            expect(msg).to_have_attribute("data-state", "stopped")
