"""A how-to question gets the fix that follows the problem it describes.

Documentation states a problem, then what to do about it. The question repeats the problem's
words, so the problem sentence ranked first and the fix, sharing few of them, was not quoted
(answer benchmark docs-30: "pip wants to download gigabytes of CUDA libraries ... How do I
avoid that?" quoted the problem only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from citewise.answer.selection import gives_instruction

# one line a paragraph, as many Markdown files are written
PROBLEM = ("From the public package index alone, pip picks the CUDA build of torch, which "
           "downloads several gigabytes of libraries that the tool never uses.")
FIX = "Install the CPU-only wheel first from the CPU index, then the extra."
DISK = ("The CUDA libraries take several gigabytes of disk. The default install downloads no "
        "CUDA libraries at all. Its libraries take about two gigabytes, most of them the "
        "bundled model.")
MIRROR = ("A package mirror serves the same CUDA libraries as the public package index. pip "
          "reads the mirror's address from its configuration file.")
INSTALL = (f"# Installing the GPU extra\n\nThe gpu extra adds the training tools. {PROBLEM} "
           f"{FIX}\n\n## Disk space\n\n{DISK}\n\n## Mirrors\n\n{MIRROR}\n\n"
           "## Uninstalling\n\nRemove the virtual environment folder to uninstall everything.\n")


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "install.md").write_text(INSTALL, encoding="utf-8")
    return folder


def test_a_how_to_question_quotes_the_fix_after_the_problem(make_engine, docs) -> None:
    engine = make_engine()
    engine.ingest([docs])
    answer = engine.ask("pip downloads gigabytes of CUDA libraries. How do I avoid that?",
                        extractive=True)
    first = answer.text.split("[1]")[0]
    assert "pip picks the CUDA build" in first and FIX in first, answer.text
    # one passage: its citation is the paragraph's line (line 3 of the file)
    c = answer.citations[0]
    assert c.path.endswith("install.md") and (c.line_start, c.line_end) == (3, 3)


def test_a_question_that_asks_why_is_not_given_the_fix(make_engine, docs) -> None:
    engine = make_engine()
    engine.ingest([docs])
    answer = engine.ask("Why does pip download gigabytes of CUDA libraries for the gpu extra?",
                        extractive=True)
    assert "pip picks the CUDA build" in answer.text and FIX not in answer.text


@pytest.mark.parametrize(("sentence", "instruction"), [
    (FIX, True),
    ("Set CITEWISE_MIN_SCORE a little lower.", True),
    ("Run citewise search with --mode sparse to see what BM25 finds.", True),
    ("Use pip install 'citewise[train]' for training.", True),
    ("The index lives in CITEWISE_HOME.", True),  # names the variable to set
    ("From the public package index alone, pip picks the CUDA build.", False),
    ("citewise picks a parser by the file's content first.", False),
    ("Files that have not changed since the last ingest are skipped.", False),
])
def test_an_instruction_is_an_imperative_or_names_what_to_set(sentence, instruction) -> None:
    assert gives_instruction(sentence) is instruction
