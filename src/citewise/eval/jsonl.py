"""The one JSONL reader: every file citewise reads as one JSON value a line (BEIR corpora and
queries, the legal QA sets, CUAD's clause spans, reranker training examples, the benchmarks'
question files) goes through :func:`read_jsonl`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from citewise.errors import ConfigError


def _not_json(err: json.JSONDecodeError) -> str:
    return f"not valid JSON ({err.msg})"


def read_jsonl(path: str | Path, *, skip_blank: bool = True,
               invalid: Callable[[json.JSONDecodeError], str] = _not_json,
               ) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each line of the UTF-8 file ``path``, lazily, numbered
    from 1. Lines holding only whitespace are skipped unless ``skip_blank`` is False (then
    they are invalid JSON like any other). A line that is not JSON raises ConfigError
    ``"PATH:LINE: " + invalid(error)``; OSError when the file cannot be opened. The values
    are whatever each line holds: checking their shape is the caller's."""
    with Path(path).open(encoding="utf-8") as f:
        for line_no, line in enumerate(f, start=1):
            if skip_blank and not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as err:
                raise ConfigError(f"{path}:{line_no}: {invalid(err)}") from None
            yield line_no, value


def jsonl_values(path: str | Path) -> Iterator[Any]:
    """The values of :func:`read_jsonl` without their line numbers."""
    for _, value in read_jsonl(path):
        yield value
