"""Context budgeting (case N03): history, evidence and instructions always fit the model's
context; never an upstream 400 or a silent cut.

The servers here are real HTTP servers on 127.0.0.1: one that reports its context length in
``/v1/models`` and refuses (HTTP 400, llama.cpp's message) a prompt that does not fit, as a
real server does, and the real llama.cpp server of :mod:`tests.llm_fixtures`.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from citewise.answer import llm, pick, service
from citewise.answer.budget import SUMMARY_QUESTION, estimate_tokens, fit_prompt
from citewise.answer.prompts import build_messages
from citewise.answer.providers import Message, reported_context
from citewise.errors import ProviderError
from citewise.types import DoneEvent, StatusEvent
from tests.conftest import CASES
from tests.llm_fixtures import JSONHandler, serving

N03 = CASES / "n03_context_overflow"
QUESTION = json.loads((N03 / "queries.json").read_text())[0]["q"]
SETTINGS = json.loads((N03 / "settings.json").read_text())
WINDOW = SETTINGS["n_ctx"]
PASSAGE = re.compile(r'^\[(\d+)\] \(([^\n]+?)\) ', re.MULTILINE)


def _history() -> list[tuple[str, str]]:
    """The case's 12 turns as (question, answer) pairs, oldest first."""
    messages = json.loads((N03 / "history_12_turns.json").read_text())
    return [(q["content"], a["content"]) for q, a in zip(messages[::2], messages[1::2],
                                                         strict=True)]


def _handbooks(tmp_path: Path) -> Path:
    folder = tmp_path / "handbooks"
    folder.mkdir()
    for path in sorted(N03.glob("handbook_*.md")):
        shutil.copy2(path, folder / path.name)
    return folder


class _Window(JSONHandler):
    """A chat server with a context of ``server.window`` tokens (counted with
    ``server.count`` plus 4 per message, as a chat template adds): it reports the window in
    ``/v1/models``, refuses a prompt plus ``max_tokens`` over it with HTTP 400, and otherwise
    answers from the passage of handbook_07.md section 7.9 it was sent, citing its number."""

    def do_GET(self) -> None:
        self.server.auth.add(self.headers.get("Authorization"))
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [
                {"id": "windowed", "object": "model", "context_length": self.server.window}]})
        else:
            self._json(404, {"error": {"message": "not found", "type": "not_found"}})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        server = self.server
        messages = body["messages"]
        tokens = sum(server.count(m["content"]) + 4 for m in messages)
        server.prompts.append((tokens, messages))
        if tokens + body["max_tokens"] > server.window:
            server.refused += 1
            self._json(400, {"error": {"code": 400, "type": "exceed_context_size_error",
                                       "message": "the request exceeds the available context "
                                                  "size, try increasing it"}})
            return
        sent = PASSAGE.findall("\n".join(m["content"] for m in messages))
        n = next((int(n) for n, src in sent if "handbook_07.md > 7.9" in src), None)
        text = (f"Weekend overtime is compensated at 175 percent of the hourly base rate [{n}]."
                if n else "The documents do not contain an answer to this question.")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for piece, finish in ((text, None), ("", "stop")):
            chunk = {"choices": [{"index": 0, "delta": {"content": piece},
                                  "finish_reason": finish}], "object": "chat.completion.chunk",
                     "id": "x", "created": 0, "model": "windowed"}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


@pytest.fixture
def windowed(embedder) -> Iterator[ThreadingHTTPServer]:
    with serving(_Window, window=WINDOW, count=embedder.count_tokens, prompts=[], refused=0,
                 auth=set()) as server:
        yield server


def _engine(make_engine, tmp_path: Path, server, **overrides):
    settings = {"llm_provider": "openai-compatible", "llm_base_url": server.url,
                "llm_model": "windowed", "llm_api_key": "sk-test-windowed",
                # the server's own report (4096) must win over this setting
                "llm_context": 32768, "llm_max_tokens": SETTINGS["max_tokens"],
                "top_k": SETTINGS["top_k"], "chunk_tokens": SETTINGS["chunk_tokens"],
                "history_turns": 12, **overrides}
    engine = make_engine(**settings)
    engine.ingest([_handbooks(tmp_path)])
    return engine


def test_n03_pick_then_write_keeps_room_for_both_calls(make_engine, tmp_path,
                                                      windowed) -> None:
    engine = _engine(make_engine, tmp_path, windowed, answer_style="pick-write")
    events = list(engine.ask_stream(QUESTION, history=_history()))
    answer = next(e for e in events if isinstance(e, DoneEvent)).answer
    assert windowed.refused == 0 and len(windowed.prompts) == 2  # the pick, then the write
    picking, writing = windowed.prompts
    assert writing[0] > picking[0] and writing[0] + SETTINGS["max_tokens"] <= WINDOW
    assert writing[1][:len(picking[1])] == picking[1]  # the same prompt, continued
    assert answer.mode == "llm" and "175 percent" in answer.text
    assert set(answer.cited) <= _sent_numbers(picking[1])


def _sent_numbers(messages: list[dict[str, str]]) -> set[int]:
    return {int(n) for n, _ in PASSAGE.findall(messages[-1]["content"])}


def test_n03_long_history_is_trimmed_to_the_reported_window(make_engine, tmp_path,
                                                            windowed) -> None:
    history = _history()
    assert sum(windowed.count(q) + windowed.count(a) for q, a in history) > WINDOW  # overflows
    engine = _engine(make_engine, tmp_path, windowed)
    events = list(engine.ask_stream(QUESTION, history=history))
    answer = next(e for e in events if isinstance(e, DoneEvent)).answer
    assert windowed.refused == 0 and len(windowed.prompts) == 1
    tokens, messages = windowed.prompts[0]
    assert tokens + SETTINGS["max_tokens"] <= WINDOW
    # the rules and the question are whole; the newest turns are the ones kept
    assert messages[0]["role"] == "system" and "Rules:" in messages[0]["content"]
    assert f"Question: {QUESTION}" in messages[-1]["content"]
    kept = [m["content"] for m in messages[1:-1]]
    assert 0 < len(kept) < 2 * len(history) and kept[-1] == history[-1][1]
    assert kept[0] == history[-len(kept) // 2][0]
    notices = [e.message for e in events if isinstance(e, StatusEvent) and e.stage == "notice"]
    assert len(notices) == 1 and "4,096 tokens" in notices[0]
    assert f"the {len(history) - len(kept) // 2} oldest earlier turns" in notices[0]
    assert answer.mode == "llm" and answer.fallback_reason is None
    assert "175 percent" in answer.text
    assert answer.cited and set(answer.cited) <= _sent_numbers(messages)
    cited = {c.n: c for c in answer.citations}
    assert cited[answer.cited[0]].path.endswith("handbook_07.md")
    assert answer.metrics["context_window"] == WINDOW
    assert answer.metrics["history_dropped"] == len(history) - len(kept) // 2
    assert windowed.auth == {"Bearer sk-test-windowed"}  # the probe carries the key


def test_many_long_passages_lose_the_lowest_ranked_first(make_engine, tmp_path,
                                                         windowed) -> None:
    windowed.window = 2400  # a small model's window: the two turns and some passages overflow
    engine = _engine(make_engine, tmp_path, windowed, evidence="passages", context_tokens=6000)
    events = list(engine.ask_stream(QUESTION, history=_history()[-2:]))
    answer = next(e for e in events if isinstance(e, DoneEvent)).answer
    assert windowed.refused == 0 and len(windowed.prompts) == 1
    tokens, messages = windowed.prompts[0]
    assert tokens + SETTINGS["max_tokens"] <= windowed.window
    sent = _sent_numbers(messages)
    notice = next(e.message for e in events if isinstance(e, StatusEvent)
                  and e.stage == "notice")
    dropped = [int(n) for n in re.findall(r"\[(\d+)\]", notice)]
    # history goes first (both turns), then passages from the lowest rank up
    assert "left out all 2 earlier turns and the lowest-ranked" in notice
    assert len(messages) == 2  # the rules, then the evidence and the question
    assert sent == set(range(1, len(sent) + 1))
    assert dropped == list(range(len(sent) + 1, SETTINGS["top_k"] + 1))
    assert answer.mode == "llm" and set(answer.cited) <= sent
    assert {c.n for c in answer.citations} == sent
    assert "175 percent" in answer.text


def test_the_summary_outlives_the_turns_it_summarises(embedder) -> None:
    history = [(SUMMARY_QUESTION, "The user asked about overtime rules 1 to 9."), *_history()]
    build = _build(QUESTION, embedder.count_tokens)
    fitted = fit_prompt((), history, build=build, count_tokens=embedder.count_tokens,
                        window=WINDOW, reserve=512, evidence_tokens=1200)
    assert fitted.history[0] == history[0] and fitted.history[-1] == history[-1]
    assert fitted.dropped_turns == len(history) - len(fitted.history) and not fitted.dropped_summary
    assert fitted.prompt_tokens <= WINDOW - 512
    assert fitted.notice and "summary" not in fitted.notice
    # a window with room for the summary alone: every turn goes, the summary stays
    small = fit_prompt((), history, build=build, count_tokens=embedder.count_tokens,
                       window=900, reserve=512, evidence_tokens=1200)
    assert small.history == (history[0],) and small.dropped_turns == len(history) - 1


def test_a_prompt_that_fits_is_sent_as_it_is(embedder) -> None:
    history = _history()[-1:]
    fitted = fit_prompt((), history, build=_build(QUESTION, embedder.count_tokens),
                        count_tokens=embedder.count_tokens, window=WINDOW, reserve=512,
                        evidence_tokens=1200)
    assert fitted.history == tuple(history) and fitted.notice is None
    assert fitted.metrics()["history_dropped"] == 0


def test_the_fitted_messages_are_the_prompt_built_once_with_the_turns_kept(embedder) -> None:
    real = _build(QUESTION, embedder.count_tokens)
    calls: list[tuple[tuple, tuple, int]] = []

    def build(evidence, history, budget_tokens):
        calls.append((tuple(evidence), tuple(history), budget_tokens))
        return real(evidence, history, budget_tokens)

    fitted = fit_prompt((), _history(), build=build, count_tokens=embedder.count_tokens,
                        window=WINDOW, reserve=512, evidence_tokens=1200)
    assert fitted.history and fitted.dropped_turns  # some turns kept, the oldest left out
    # the passages are chosen without the turns; the turns kept go in once, last
    assert [c for c in calls if c[1]] == [calls[-1]]
    assert calls[-1] == (fitted.evidence, fitted.history, fitted.evidence_tokens)
    assert list(fitted.messages) == real(fitted.evidence, fitted.history,
                                         fitted.evidence_tokens)
    assert estimate_tokens(fitted.messages, embedder.count_tokens) == fitted.prompt_tokens
    # no turn to put in: the prompt tried is the one returned, not built again
    calls.clear()
    alone = fit_prompt((), (), build=build, count_tokens=embedder.count_tokens,
                       window=WINDOW, reserve=512, evidence_tokens=1200)
    assert calls == [((), (), 1200)] and list(alone.messages) == real((), (), 1200)


@pytest.mark.parametrize("style", ["write", "pick-write"])
def test_the_answerer_sends_the_fitted_prompt_without_building_it_again(
        make_engine, tmp_path, windowed, monkeypatch, style) -> None:
    built: list[list[Message]] = []
    builder = service._builder

    def recording(*args):  # the answer stage's own builder, each prompt it builds recorded
        build = builder(*args)

        def recorded(evidence, history, budget_tokens):
            built.append(build(evidence, history, budget_tokens))
            return built[-1]
        return recorded

    def rebuilt(*args, **kwargs):
        raise AssertionError("the answerer built its prompt again")

    monkeypatch.setattr(service, "_builder", recording)
    monkeypatch.setattr(llm, "build_messages", rebuilt)
    monkeypatch.setattr(pick, "pick_messages", rebuilt)
    engine = _engine(make_engine, tmp_path, windowed, answer_style=style)
    events = list(engine.ask_stream(QUESTION, history=_history()))
    answer = next(e for e in events if isinstance(e, DoneEvent)).answer
    assert answer.mode == "llm" and answer.fallback_reason is None
    assert answer.metrics["history_dropped"] > 0  # fitted: the oldest turns left out
    sent = windowed.prompts[0][1]  # the answer, or for pick-write the picking call
    assert sent == built[-1] and built.count(sent) == 1
    assert float(estimate_tokens(sent, windowed.count)) == answer.metrics["prompt_budget_tokens"]


def test_instructions_that_cannot_fit_are_refused_with_a_reason(embedder) -> None:
    build = _build(QUESTION, embedder.count_tokens, instructions="Be polite. " * 2000)
    with pytest.raises(ProviderError, match="4,096 tokens") as err:
        fit_prompt((), _history(), build=build, count_tokens=embedder.count_tokens,
                   window=WINDOW, reserve=512, evidence_tokens=1200)
    assert "CITEWISE_LLM_MAX_TOKENS" in str(err.value)


def test_overlong_instructions_give_the_extractive_answer_without_a_call(
        make_engine, tmp_path, windowed) -> None:
    engine = _engine(make_engine, tmp_path, windowed)
    events = list(engine.ask_stream(QUESTION, instructions="Be polite. " * 2000))
    answer = next(e for e in events if isinstance(e, DoneEvent)).answer
    assert windowed.prompts == [] and answer.mode == "extractive"
    assert "context of 4,096 tokens" in (answer.fallback_reason or "")
    assert any(isinstance(e, StatusEvent) and e.stage == "fallback" for e in events)


def test_the_reported_context_is_read_from_the_models_entry(windowed, broken_server) -> None:
    assert reported_context(windowed.url, "windowed") == WINDOW
    assert reported_context(windowed.url, "another") == WINDOW  # the only entry
    assert reported_context(broken_server.url, "broken") is None  # an entry without one


def test_an_unreachable_server_reports_no_context(closed_port_url) -> None:
    assert reported_context(closed_port_url, "any", timeout=1.0) is None


def test_llama_cpp_reports_its_window_in_props(llm_url) -> None:
    assert reported_context(llm_url, "qwen2.5-coder-0.5b") == 4096


def _sample(language: str) -> str:
    datasets = CASES.parent.parent / "datasets"
    if language == "kk":
        with (datasets / "kazqad_val" / "corpus.jsonl").open(encoding="utf-8") as f:
            return " ".join(json.loads(next(f))["text"] for _ in range(3))[:3000]
    if language == "en":
        return (N03 / "handbook_07.md").read_text(encoding="utf-8")[:3000]
    data = json.loads((datasets / "xquad" / f"xquad.{language}.json").read_text("utf-8"))
    return " ".join(p["context"] for p in data["data"][0]["paragraphs"])[:3000]


@pytest.mark.parametrize("language", ["en", "kk", "ru", "zh"])
def test_the_estimate_is_above_the_chat_models_own_count(llm_url, embedder,
                                                         language: str) -> None:
    """Compared with llama.cpp's count of the same chat (its template, its tokenizer): an
    English WordPiece vocabulary alone under-counts Kazakh by a fifth."""
    import httpx

    root = llm_url.removesuffix("/v1")
    messages = [{"role": "system", "content": "You answer questions."},
                {"role": "user", "content": _sample(language)}]
    prompt = httpx.post(f"{root}/apply-template", json={"messages": messages}).json()["prompt"]
    real = len(httpx.post(f"{root}/tokenize", json={"content": prompt}).json()["tokens"])
    assert real > 500
    assert real <= estimate_tokens(messages, embedder.count_tokens) <= 2.6 * real


def _build(question: str, count_tokens, instructions: str = ""):
    def build(evidence, history, budget_tokens):
        return build_messages(question, evidence, history, budget_tokens=budget_tokens,
                              count_tokens=count_tokens, instructions=instructions)
    return build


@pytest.mark.slow
def test_n03_through_the_real_llama_cpp_server(make_engine, tmp_path, llm_settings) -> None:
    """The case as it happened: the whole history and the evidence sent to a real 4096-token
    llama.cpp server; without the budget it answers HTTP 400."""
    engine = make_engine(**{**llm_settings, "llm_max_tokens": SETTINGS["max_tokens"],
                            "top_k": SETTINGS["top_k"], "chunk_tokens": SETTINGS["chunk_tokens"],
                            "history_turns": 12})
    engine.ingest([_handbooks(tmp_path)])
    events = list(engine.ask_stream(QUESTION, history=_history()))
    answer = next(e for e in events if isinstance(e, DoneEvent)).answer
    assert "HTTP 400" not in (answer.fallback_reason or "")
    assert any(isinstance(e, StatusEvent) and e.stage == "notice" for e in events)
    assert answer.metrics["context_window"] == 4096
    assert answer.metrics["prompt_budget_tokens"] <= 4096 - SETTINGS["max_tokens"]
    # seen: "The compensation rate for weekend overtime is 175 percent of the hourly base
    # rate. [1]", [1] being handbook_07.md section 7.9
    assert answer.mode == "llm" and "175 percent" in answer.text
    cited = {c.n: c for c in answer.citations}
    assert answer.cited and set(answer.cited) <= set(cited)
    assert cited[answer.cited[0]].path.endswith("handbook_07.md")
