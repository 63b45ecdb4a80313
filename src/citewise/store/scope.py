"""Scoping a search to documents by path glob and metadata field (the ``paths`` and ``where``
filters of :mod:`citewise.store.base`), the same way in every store.

Both filters select whole documents, so a store resolves them to document ids here, in
Python, from its documents (cached until its next write), and joins those ids in its SQL
like ``document_ids``: they apply before ranking, and SQLite and PostgreSQL agree exactly.

``paths`` is a list of globs; a document passes when its path matches one of them. A glob is
matched against whole path components anywhere in the path (``*.md`` matches
``data/notes.md``; ``guides`` matches every file in a folder named ``guides`` and below): ``*``
matches within one component, ``**`` across components, ``?`` one character, ``[abc]`` one of
these; a leading ``/`` anchors the glob at the start of the path. Matching is case-sensitive.

``where`` maps a field to a value, a list of values, or a range (``{"gte": "2024-01-01",
"lt": "2025-01-01"}``: bounds ``gt``, ``gte``, ``lt``, ``lte``); a document passes when, for
every field, its value equals one of the values (letter case ignored) or lies in the range
(numbers compared as numbers, anything else as text, so ISO dates compare by date). The field is a key of the
document's metadata (Markdown front matter; PDF and DOCX properties such as ``author``,
``subject``, ``keywords``), or ``format`` or ``title`` when the metadata has no such key. A
list-valued field (``tags: [hr, policy]``) passes when one of its items equals a value;
``true``/``false`` match YAML booleans. Keys starting with ``_`` are internal and refused.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import date
from functools import lru_cache
from typing import Any

from citewise.types import Document

#: document fields a ``where`` key falls back to when the metadata has no such key
DOCUMENT_FIELDS = ("format", "title")
#: the bounds of a ``where`` range, with the comparison each makes
BOUNDS: dict[str, Callable[[Any, Any], bool]] = {
    "gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le}
MAX_PATTERN = 500


def check_scope(filters: Mapping[str, Any]) -> None:
    """Raise ValueError naming the filter when ``paths`` or ``where`` is malformed."""
    paths = filters.get("paths")
    if paths is not None:
        if isinstance(paths, str) or not isinstance(paths, Iterable):
            raise ValueError("filter 'paths' must be a list of path globs, such as "
                             "['docs/**/*.md']")
        if not list(paths):
            raise ValueError("filter 'paths' needs at least one path glob")
        for pattern in paths:
            if not isinstance(pattern, str) or not pattern.strip("/ "):
                raise ValueError(f"filter 'paths': {pattern!r} is not a path glob (give a "
                                 "file or folder name, or a pattern such as '*.md')")
            if len(pattern) > MAX_PATTERN:
                raise ValueError(f"filter 'paths': a glob longer than {MAX_PATTERN} characters")
    where = filters.get("where")
    if where is not None:
        if not isinstance(where, Mapping):
            raise ValueError("filter 'where' must map metadata fields to values, such as "
                             "{'author': 'Ana'}")
        for key, value in where.items():
            if not isinstance(key, str) or not key.strip():
                raise ValueError("filter 'where': a field name is empty")
            if key.startswith("_"):
                raise ValueError(f"filter 'where': field {key!r} is internal (names starting "
                                 "with '_' cannot be filtered on)")
            if isinstance(value, Mapping):
                bad = set(value) - set(BOUNDS)
                if not value or bad or not all(isinstance(v, str | int | float)
                                               and not isinstance(v, bool)
                                               for v in value.values()):
                    raise ValueError(f"filter 'where': field {key!r}: a range takes bounds "
                                     f"{', '.join(BOUNDS)} with a text or number each")
                continue
            values = value if isinstance(value, list | tuple) else [value]
            if not values or not all(isinstance(v, str | int | float | bool) for v in values):
                raise ValueError(f"filter 'where': field {key!r} needs a value, a list of "
                                 "values (text, numbers or true/false) or a range")


def has_scope(filters: Mapping[str, Any] | None) -> bool:
    """Whether ``filters`` holds a ``paths`` or ``where`` filter."""
    return bool(filters) and (filters.get("paths") is not None  # type: ignore[union-attr]
                              or filters.get("where") is not None)  # type: ignore[union-attr]


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """The regular expression of one path glob (see the module docstring)."""
    anchored = pattern.startswith("/")
    body = pattern.strip().strip("/")
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if body.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif body.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[" and (end := body.find("]", i + 2)) > 0:
            inner = body[i + 1:end]
            negate = inner.startswith("!")
            inner = re.escape(inner[1:] if negate else inner).replace("\\-", "-")
            out.append(f"[{'^' if negate else ''}{inner}]")
            i = end + 1
        else:
            out.append(re.escape(ch))
            i += 1
    return re.compile(("^" if anchored else "(?:^|/)") + "".join(out) + "(?:/|$)")


def path_matches(path: str, patterns: Iterable[str]) -> bool:
    return any(glob_regex(p).search(path) for p in patterns)


def _texts(value: Any) -> list[str]:
    """A metadata value as comparable strings (a list gives one per item)."""
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, list | tuple | set):
        return [t for item in value for t in _texts(item)]
    if isinstance(value, date):
        return [value.isoformat()]
    if value is None or isinstance(value, dict):
        return []
    return [str(value).strip().casefold()]


def _comparable(a: str, b: str) -> tuple[Any, Any]:
    """Two values as numbers when both are numbers, else as text."""
    try:
        return float(a), float(b)
    except ValueError:
        return a, b


def in_range(have: Iterable[str], bounds: Mapping[str, Any]) -> bool:
    """Whether one of the values ``have`` lies within every bound of ``bounds``."""
    limits = [(BOUNDS[name], _texts(limit)[0]) for name, limit in bounds.items()]
    return any(all(compare(*_comparable(value, limit)) for compare, limit in limits)
               for value in have)


def where_matches(document: Document, where: Mapping[str, Any]) -> bool:
    for key, wanted in where.items():
        if key in document.metadata:
            have = set(_texts(document.metadata[key]))
        elif key in DOCUMENT_FIELDS:
            have = set(_texts(getattr(document, key)))
        else:
            return False
        if isinstance(wanted, Mapping):
            if not in_range(have, wanted):
                return False
            continue
        values = wanted if isinstance(wanted, list | tuple) else [wanted]
        if not have & {t for v in values for t in _texts(v)}:
            return False
    return True


def in_scope(document: Document, filters: Mapping[str, Any]) -> bool:
    """Whether ``document`` passes the ``paths`` and ``where`` filters."""
    paths = filters.get("paths")
    if paths is not None and not path_matches(document.path, paths):
        return False
    where = filters.get("where")
    return where is None or where_matches(document, where)


def scoped_document_ids(store: Any, filters: Mapping[str, Any] | None) -> list[str] | None:
    """The ids of ``store``'s indexed documents passing ``filters``' ``paths`` and ``where``
    ([] when none does), or None when neither filter is given. The documents are read once
    per store write (``store.generation()``)."""
    if not filters or not has_scope(filters):
        return None
    generation = store.generation()
    cached = getattr(store, "_scope_documents", None)
    if cached is None or cached[0] != generation:
        cached = (generation, [d for d in store.documents() if d.status == "indexed"])
        store._scope_documents = cached
    return [d.id for d in cached[1] if in_scope(d, filters)]


#: ``--where`` operators and the range bound each gives (``=`` is equality)
_OPERATORS = {">=": "gte", "<=": "lte", ">": "gt", "<": "lt", "=": ""}
_CONDITION = re.compile(r"^\s*([^=<>]+?)\s*(>=|<=|>|<|=)\s*(.*?)\s*$", re.DOTALL)


def parse_where(items: Iterable[str], option: str = "--where") -> dict[str, Any] | None:
    """``--where`` conditions as a ``where`` filter: ``["author=Ana", "tags=hr", "tags=policy",
    "created>=2024-01-01", "created<2025"]`` -> ``{"author": "Ana", "tags": ["hr",
    "policy"], "created": {"gte": "2024-01-01", "lt": "2025"}}`` (a field given twice with
    ``=`` matches either value; bounds of one field all apply); None for no items. Raises
    ValueError naming ``option`` for an item that is no condition, or a field given both
    ways."""
    where: dict[str, Any] = {}
    for item in items:
        m = _CONDITION.match(item)
        if not m or not m[3]:
            raise ValueError(f"{option} {item!r}: give FIELD=VALUE (or FIELD>=VALUE, <=, >, "
                             "<), such as author=Ana or created>=2024-01-01")
        key, bound, value = m[1], _OPERATORS[m[2]], m[3]
        before = where.get(key)
        if before is not None and isinstance(before, dict) != bool(bound):
            raise ValueError(f"{option}: field {key!r} is given both as a value and as a range")
        if bound:
            where[key] = {**(before or {}), bound: value}
        elif before is None:
            where[key] = value
        else:
            where[key] = [*before, value] if isinstance(before, list) else [before, value]
    if not where:
        return None
    try:
        check_scope({"where": where})
    except ValueError as err:
        raise ValueError(str(err).replace("filter 'where'", option, 1)) from None
    return where


def cli_filters(where: Iterable[str] = (), paths: Iterable[str] = (),
                collections: Iterable[str] = (), language: str | None = None,
                ) -> dict[str, Any] | None:
    """The store filters of ``citewise ask``/``search``'s ``--where``, ``--path``,
    ``--collection`` and ``--language`` options (None when none is given). Raises ValueError
    naming the option."""
    out: dict[str, Any] = {}
    if (parsed := parse_where(where)) is not None:
        out["where"] = parsed
    if paths := list(paths):
        try:
            check_scope({"paths": paths})
        except ValueError as err:
            raise ValueError(str(err).replace("filter 'paths'", "--path", 1)) from None
        out["paths"] = paths
    if collections := list(collections):
        out["collections"] = collections
    if language is not None:
        if not re.fullmatch(r"[a-z]{2,3}", language):
            raise ValueError(f"--language {language!r}: give an ISO 639-1 code, such as en")
        out["language"] = language
    return out or None


__all__ = ["check_scope", "cli_filters", "glob_regex", "has_scope", "in_scope", "parse_where",
           "path_matches", "scoped_document_ids"]
