"""What every ``citewise`` command shares: the consoles, the output-format and top-k options,
the engine built from the settings, clean error lines and progress display."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError
from pydantic_settings import SettingsError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from citewise.config import Settings
from citewise.errors import CitewiseError

if TYPE_CHECKING:
    from citewise.engine import Engine

ProgressFn = Callable[[str, int, int], None]
"""A progress callback: ``(item, done, total)``, ``total`` 0 while unknown."""

console = Console()
err_console = Console(stderr=True)


class OutputFormat(str, Enum):
    """``--format``: ``text`` for people (tables, colours), ``json`` for programs (one JSON
    document on stdout)."""

    text = "text"
    json = "json"


FormatOpt = Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")]
TopKOpt = Annotated[int | None, typer.Option("--top-k", "-k", min=1, max=100,
                                             help="Number of sources (default: CITEWISE_TOP_K).")]


def build_engine() -> Engine:
    """An :class:`~citewise.engine.Engine` over ``Settings()`` (environment, ``.env``,
    ``citewise.toml``); raises what the settings and the engine raise (ValidationError,
    ConfigError)."""
    from citewise.engine import Engine

    return Engine(Settings())


@contextmanager
def errors() -> Iterator[None]:
    """Print citewise errors as one clean line and exit 1 (2 for bad settings)."""
    try:
        yield
    except CitewiseError as err:
        err_console.print(f"[bold red]error:[/] {escape(str(err))}")
        raise typer.Exit(1) from None
    except ValidationError as err:  # a setting from the environment, .env or citewise.toml
        for e in err.errors():
            name = ".".join(str(p) for p in e["loc"])
            err_console.print(
                f"[bold red]invalid setting:[/] {name} (CITEWISE_{name.upper()}): "
                f"{escape(e['msg'])}, got {escape(repr(e.get('input')))}"
            )
        raise typer.Exit(2) from None
    except SettingsError as err:  # a list or object setting whose value is not JSON
        found = re.search(r'field "(\w+)"', str(err))
        name = found.group(1) if found else "a list or object setting"
        env = f" (CITEWISE_{name.upper()})" if found else ""
        err_console.print(f"[bold red]invalid setting:[/] {name}{env}: the value is not valid "
                          "JSON; give a JSON list or object, for example '[\"a\", \"b\"]' "
                          "(see docs/configuration.md)")
        raise typer.Exit(2) from None


def plain_progress(item: str, done: int, total: int) -> None:
    """Progress as an occasional stderr line, for logs (every 5 % of a known total)."""
    if total and (done == total or done % max(1, total // 20) == 0):
        print(f"{item}: {done}/{total}", file=sys.stderr, flush=True)


@contextmanager
def progress_bar(label: str, enabled: bool) -> Iterator[ProgressFn | None]:
    """A transient rich progress bar on stderr labelled ``label``: yields its update callback,
    or None when not ``enabled`` (the caller then shows nothing or :func:`plain_progress`)."""
    if not enabled:
        yield None
        return
    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), TextColumn("{task.fields[item]}", style="dim"),
        console=err_console, transient=True,
    ) as bar:
        task = bar.add_task(label, total=None, item="")

        def update(item: str, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total or None, item=item[-60:])

        yield update


def jsonable(obj: Any) -> Any:
    """``obj`` as plain JSON values (dataclasses as dicts, anything else unknown as its
    ``str``), for ``--format json``."""
    return json.loads(json.dumps(obj, default=lambda o: asdict(o) if hasattr(o, "__dataclass_fields__") else str(o)))
