"""The command line, run in-process through Typer's runner on a real index."""

from __future__ import annotations

import json
import re

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from citewise.cli import app
from tests.conftest import CASES

runner = CliRunner()


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("CITEWISE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CITEWISE_LLM_PROVIDER", "none")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(*args: str):
    result = runner.invoke(app, list(args), catch_exceptions=False)
    return result


def _command_paths(group: TyperGroup, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command and command group under ``group``, as argument paths, read from the app
    itself (so a new command is checked without editing this test)."""
    paths = [prefix]
    for name, command in sorted(group.commands.items()):
        if isinstance(command, TyperGroup):
            paths.extend(_command_paths(command, (*prefix, name)))
        else:
            paths.append((*prefix, name))
    return paths


COMMANDS = _command_paths(typer.main.get_command(app))  # type: ignore[arg-type]


def test_the_command_list_is_read_from_the_app():
    for expected in [("serve",), ("eval", "xquad"), ("eval", "kazakh-legal"),
                     ("eval", "ru-legal"), ("eval", "beir"), ("ingest",), ("train-reranker",)]:
        assert expected in COMMANDS


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "citewise")
def test_every_command_has_help(command):
    result = run(*command, "--help")
    assert result.exit_code == 0
    assert "Usage" in result.output and len(result.output) > 100
    if command:  # its own description, not only the option table
        node = typer.main.get_command(app)
        for name in command:
            node = node.commands[name]  # type: ignore[attr-defined]
        assert (node.help or node.short_help or "").strip(), f"{command} has no help text"


def test_ingest_ask_search_status_end_to_end(env):
    result = run("ingest", str(CASES / "c02_encrypted"))
    assert result.exit_code == 0
    assert "payroll_user_password.pdf: password-protected PDF" in " ".join(result.output.split())
    assert "2 added" in result.output and "1 failed" in result.output

    result = run("ask", "On which day are salaries paid?")
    assert result.exit_code == 0
    assert "25" in result.output and "[1]" in result.output
    assert "Sources" in result.output and "payroll_" in result.output and "p. 1" in result.output
    # progress on stderr before the answer, in order; stdout holds the answer alone
    status = result.stderr.splitlines()
    assert status[0] == "searching the documents"
    assert re.fullmatch(r"reading \d+ passages? from \d+ files?", status[1])
    assert "searching" not in result.stdout and "reading" not in result.stdout

    result = run("ask", "On which day are salaries paid?", "--format", "json")
    assert "searching the documents" not in result.stderr
    answer = json.loads(result.stdout)
    assert answer["found"] is True and answer["citations"][0]["page"] == 1

    result = run("search", "salary payment day", "--format", "json", "--top-k", "3")
    hits = json.loads(result.stdout)["hits"]
    assert hits and {"dense", "bm25", "fused", "rerank", "relevance"} <= set(hits[0])
    assert hits[0]["dense"] is not None and hits[0]["bm25"] is not None
    assert json.loads(result.stdout)["reranked"] is False

    result = run("search", "salary payment day")
    assert result.exit_code == 0 and "BM25" in result.output
    assert "rerank: skipped" in result.output

    status = json.loads(run("status", "--format", "json").stdout)
    assert status["documents"] == 2 and status["chunks"] >= 2
    assert status["failed_documents"] == 1
    assert status["embedding_model"] and status["dimension"] > 0 and status["index_bytes"] > 0


def test_blank_question_is_a_clean_error(env):
    result = runner.invoke(app, ["ask", "   "])
    assert result.exit_code == 1
    assert "the question is empty" in result.output
    assert "Traceback" not in result.output


def test_invalid_setting_names_the_variable(env, monkeypatch):
    monkeypatch.setenv("CITEWISE_TOP_K", "zero")
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 2
    assert "top_k" in result.output


def test_a_list_setting_that_is_not_json_names_the_variable(env, monkeypatch):
    # regression: pydantic-settings' SettingsError escaped as a traceback with exit 1
    monkeypatch.setenv("CITEWISE_CORS_ORIGINS", "https://docs.example.org")
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 2
    assert "CITEWISE_CORS_ORIGINS" in result.output and "JSON" in result.output
    assert "Traceback" not in result.output


def test_a_rerank_language_the_detector_never_returns_is_refused(env, monkeypatch):
    # "english" would never match a detected language code, so nothing would be reranked
    monkeypatch.setenv("CITEWISE_RERANK_LANGUAGES", "en,english")
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 2
    assert "CITEWISE_RERANK_LANGUAGES" in result.output and "english" in result.output


def test_unknown_embedding_model_names_the_setting(env, monkeypatch):
    monkeypatch.setenv("CITEWISE_EMBEDDING_MODEL", "no-such-model")
    result = runner.invoke(app, ["ingest", str(CASES / "c21_delete")])
    assert result.exit_code == 1
    assert "CITEWISE_EMBEDDING_MODEL" in result.output


def test_missing_path_is_reported(env):
    result = runner.invoke(app, ["ingest", "does/not/exist"])
    assert result.exit_code == 1
    assert "does/not/exist: no such file or folder" in " ".join(result.output.split())


def test_broken_toml_is_named_not_a_traceback(env):
    (env / "citewise.toml").write_text("this is [[[ not toml =")
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 1
    assert "citewise.toml: not a valid TOML settings file" in " ".join(result.output.split())


def test_unusable_index_location_is_a_clean_error(env, monkeypatch):
    monkeypatch.setenv("CITEWISE_HOME", "/dev/null/x")
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 1
    assert "cannot open the index at /dev/null/x/index.sqlite3" in " ".join(result.output.split())


def test_setting_error_is_one_line_per_setting(env, monkeypatch):
    monkeypatch.setenv("CITEWISE_TOP_K", "0")
    result = runner.invoke(app, ["status"])
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("invalid setting")]
    assert result.exit_code == 2 and len(lines) == 1 and "CITEWISE_TOP_K" in lines[0]


def test_fifo_in_a_folder_is_skipped_not_read(env):
    import os

    folder = env / "col"
    folder.mkdir()
    os.mkfifo(folder / "pipe.txt")
    (folder / "ok.txt").write_text("The canteen opens at noon.")
    result = run("ingest", str(folder))
    flat = " ".join(result.output.split())
    assert "col/pipe.txt: not a regular file" in flat and "1 added" in flat


def test_ask_streams_an_llm_answer_and_extractive_on_request(env, monkeypatch, llm_url):
    monkeypatch.setenv("CITEWISE_LLM_PROVIDER", "llamacpp")
    monkeypatch.setenv("CITEWISE_LLM_BASE_URL", llm_url)
    monkeypatch.setenv("CITEWISE_LLM_MODEL", "qwen2.5-coder-0.5b")
    assert run("ingest", str(CASES / "c27_injection" / "kettle_warranty.md")).exit_code == 0
    # the kettle is not named by a name only its file holds ("Model K2" would be: then only
    # that file is read, prefer_named_documents), so both files are read
    result = run("ask", "How long is the warranty on the kettle?", "--format", "json")
    answer = json.loads(result.stdout)
    assert answer["mode"] == "llm" and "24" in answer["text"] and answer["cited"] == [1]
    assert answer["model"] == "llamacpp:qwen2.5-coder-0.5b" and answer["unsupported"] == []
    result = run("ask", "How long is the warranty on the Model K2 kettle?", "--extractive")
    assert result.exit_code == 0
    assert "24 months" in result.output and "[1]" in result.output and "Sources" in result.output


def test_chat_keeps_the_conversation_going(env):
    run("ingest", str(CASES / "c02_encrypted"))
    result = runner.invoke(app, ["chat"], input="On which day are salaries paid?\n   \nexit\n")
    assert result.exit_code == 0
    assert "25" in result.output and result.output.count("you>") == 3
    assert "Sources" in result.output


def test_code_is_cited_by_path_lines_and_symbol(env):
    result = run("ingest", str(CASES / "c41_code"))
    assert result.exit_code == 0 and "6 added" in result.output

    result = run("search", "ring area inner radius", "--mode", "sparse", "--format", "json",
                 "--top-k", "1")
    hit = json.loads(result.stdout)["hits"][0]
    assert (hit["path"], hit["line_start"], hit["line_end"], hit["symbol"]) == (
        "c41_code/geometry.cc", 4, 8, "ring_area")

    result = run("ask", "What does ring_area return if the inner radius is not smaller?")
    assert "c41_code/geometry.cc:4-8, ring_area" in result.output


def test_a_withdrawn_answer_is_marked_on_stdout(env, monkeypatch, broken_server):
    """Found by a newcomer: a model answer that fails the support check stayed on screen,
    with the quoted evidence run on after it and the reason only on stderr."""
    broken_server.mode = "wrong-number"
    monkeypatch.setenv("CITEWISE_LLM_PROVIDER", "openai-compatible")
    monkeypatch.setenv("CITEWISE_LLM_BASE_URL", broken_server.url)
    monkeypatch.setenv("CITEWISE_LLM_MODEL", "broken")
    (env / "kettle.md").write_text(
        "# Model K2 kettle\n\nThe Model K2 kettle is covered by a warranty of 24 months from "
        "the date of purchase.\n", encoding="utf-8")
    assert run("ingest", str(env / "kettle.md")).exit_code == 0
    result = run("ask", "How long is the warranty on the Model K2 kettle?")
    assert result.exit_code == 0 and broken_server.requests == 1
    wrong, _, rest = result.stdout.partition("[withdrawn: the text above failed the support")
    assert "36 months" in wrong and rest, result.stdout
    assert "24 months" in rest and "36" not in rest


def test_a_withdrawn_answer_leaves_a_terminal_screen(env, monkeypatch, broken_server):
    """Seen by a newcomer: on a terminal the withdrawn model text stayed on the screen above
    "[withdrawn]". There it is now a draft: the checked answer replaces it, and the reason
    goes to stderr."""
    import io

    from rich.console import Console

    import citewise.cli.ask as ask_cli

    screen = io.StringIO()
    monkeypatch.setattr(ask_cli, "console", Console(file=screen, force_terminal=True,
                                                    width=100))
    broken_server.mode = "wrong-number"
    monkeypatch.setenv("CITEWISE_LLM_PROVIDER", "openai-compatible")
    monkeypatch.setenv("CITEWISE_LLM_BASE_URL", broken_server.url)
    monkeypatch.setenv("CITEWISE_LLM_MODEL", "broken")
    (env / "kettle.md").write_text(
        "# Model K2 kettle\n\nThe Model K2 kettle is covered by a warranty of 24 months from "
        "the date of purchase.\n", encoding="utf-8")
    assert run("ingest", str(env / "kettle.md")).exit_code == 0
    result = run("ask", "How long is the warranty on the Model K2 kettle?")
    assert result.exit_code == 0 and broken_server.requests == 1
    raw = screen.getvalue()
    assert "36 months" in raw  # the draft was shown while it streamed ...
    after = raw.rpartition("\x1b[2K")[2]  # ... and what stays after the last line erased
    assert "24 months" in after and "36 months" not in after and "Sources" in after, repr(raw)
    assert "[withdrawn" not in raw
    assert "withdrawn: the model's answer failed the support check" in result.stderr


def test_an_unsupported_sentence_is_flagged_on_stdout_under_the_answer(env, monkeypatch,
                                                                      broken_server):
    """Regression: a sentence the support check rejected was flagged on stderr only, so the
    answer a user read (or piped) showed it like the supported ones."""
    broken_server.mode = "mixed"
    monkeypatch.setenv("CITEWISE_LLM_PROVIDER", "openai-compatible")
    monkeypatch.setenv("CITEWISE_LLM_BASE_URL", broken_server.url)
    monkeypatch.setenv("CITEWISE_LLM_MODEL", "broken")
    (env / "kettle.md").write_text(
        "# Model K2 kettle\n\nThe Model K2 kettle is covered by a warranty of 24 months from "
        "the date of purchase.\n", encoding="utf-8")
    assert run("ingest", str(env / "kettle.md")).exit_code == 0
    result = run("ask", "How long is the warranty on the Model K2 kettle?")
    assert result.exit_code == 0
    answer, _, rest = result.stdout.partition("not supported by the sources (support ")
    assert "24 months [1]" in answer and rest, result.stdout
    flagged, _, sources = rest.partition("Sources")
    assert "Penguins migrate north every winter" in flagged and "24 months" not in flagged
    assert "kettle.md" in sources


def test_an_empty_file_is_not_named_as_a_file_that_may_hold_the_answer(env, tmp_path):
    """Found by a newcomer: after a folder with an empty file was ingested, every not-found
    reply said the empty file 'could not be read and may hold the answer'. A corrupt file may;
    an empty one cannot."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "good.md").write_text("# Office\n\nThe office is closed on 24 December.\n",
                                    encoding="utf-8")
    (folder / "empty.md").write_text("", encoding="utf-8")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj <<")  # truncated: unreadable
    assert run("ingest", str(folder)).exit_code == 0
    result = run("ask", "Which dog breed won the 1962 sled race?")
    assert result.exit_code == 0
    assert "could not be read and may hold the answer" in result.stdout
    assert "broken.pdf" in result.stdout
    assert "empty.md" not in result.stdout


def test_a_path_filter_that_matches_no_document_says_so(env, tmp_path):
    """Found by a newcomer: ``--path '/abs/folder/*'`` matched no stored path (they are
    relative, 'bad/good.md') and the reply blamed the documents and the failed files."""
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "good.md").write_text("# Office\n\nThe office is closed on 24 December.\n",
                                    encoding="utf-8")
    (folder / "empty.md").write_text("", encoding="utf-8")
    assert run("ingest", str(folder)).exit_code == 0
    result = run("ask", "When is the office closed?", "--path", f"{folder}/*")
    assert result.exit_code == 0
    assert "No indexed document matches the question's path or metadata filters" in result.stdout
    assert "'bad/" in result.stdout and "could not be read" not in result.stdout
    # the stored path's glob finds it
    result = run("ask", "When is the office closed?", "--path", "bad/*")
    assert "24 December" in result.stdout


def test_passages_read_but_not_cited_are_not_listed_as_sources(env):
    """Found by a newcomer: under "Sources" the answer listed passages it never cited (dimmed
    on a terminal only), such as an unrelated benchmark fragment; piped, they read as the
    answer's sources. They are now under a heading of their own."""
    folder = env / "kitchen"
    folder.mkdir()
    (folder / "kettle.md").write_text(
        "# Model K2 kettle\n\nThe Model K2 kettle is covered by a warranty of 24 months from "
        "the date of purchase.\n", encoding="utf-8")
    (folder / "toaster.md").write_text(
        "# Toaster T1\n\nThe T1 toaster has a warranty of 12 months and six browning "
        "levels.\n", encoding="utf-8")
    assert run("ingest", str(folder)).exit_code == 0
    # the kettle is not named by a name only its file holds ("Model K2" would be: then only
    # that file is read, prefer_named_documents), so both files are read
    result = run("ask", "How long is the warranty on the kettle?", "--format", "json")
    answer = json.loads(result.stdout)
    assert answer["cited"] == [1] and len(answer["citations"]) == 2, answer
    result = run("ask", "How long is the warranty on the kettle?")
    text, _, listed = result.stdout.partition("\nSources\n")
    assert "24 months" in text and "[1]" in text and "[2]" not in text
    sources, _, also = listed.partition("Also read, not cited")
    assert "[1] kitchen/kettle.md" in sources and "toaster" not in sources, result.stdout
    assert "[2] kitchen/toaster.md" in also, result.stdout


def test_version_prints_the_installed_version():
    """Regression: `citewise --version` did not exist (exit 2)."""
    from importlib.metadata import version

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"citewise {version('citewise')}"
