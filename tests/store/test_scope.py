"""The path globs and the ``--where``/``--path`` option parsing of :mod:`citewise.store.scope`
(the filters themselves are tested on both stores by tests/suites/store.py)."""

from __future__ import annotations

import pytest

from citewise.store.scope import cli_filters, parse_where, path_matches


@pytest.mark.parametrize(("pattern", "path", "matches"), [
    ("*.md", "data/notes.md", True),
    ("*.md", "data/notes.mdx", False),
    ("data", "data/sub/notes.md", True),
    ("sub", "data/sub/notes.md", True),
    ("ub", "data/sub/notes.md", False),
    ("/sub", "data/sub/notes.md", False),
    ("/data/*.md", "data/notes.md", True),
    ("/data/*.md", "data/sub/notes.md", False),
    ("/data/**/*.md", "data/sub/deep/notes.md", True),
    ("/data/**/*.md", "data/notes.md", True),
    ("data/", "data/notes.md", True),
    ("not[xy]s.md", "data/notes.md", False),
    ("no[t]es.md", "data/notes.md", True),
    ("no[!t]es.md", "data/notes.md", False),
    ("n?tes.md", "data/notes.md", True),
    ("n?tes.md", "data/n/tes.md", False),
    ("a+b (1).md", "x/a+b (1).md", True),  # regex characters are literal
    ("*.MD", "data/notes.md", False),  # case-sensitive
])
def test_path_globs(pattern, path, matches) -> None:
    assert path_matches(path, [pattern]) is matches


def test_where_options_are_parsed_and_bad_ones_named() -> None:
    assert parse_where([]) is None
    assert parse_where(["author=Ana Diaz", "tags=hr", "tags=policy", "note=a=b"]) == {
        "author": "Ana Diaz", "tags": ["hr", "policy"], "note": "a=b"}
    assert parse_where(["created>=2024-01-01", "created<2025", "n<=3", "n>1"]) == {
        "created": {"gte": "2024-01-01", "lt": "2025"}, "n": {"lte": "3", "gt": "1"}}
    for bad in ("author", "=Ana", "_root=/x", "author=", "a>"):
        with pytest.raises(ValueError, match="--where"):
            parse_where([bad])
    with pytest.raises(ValueError, match="both as a value and as a range"):
        parse_where(["year=2024", "year>2020"])
    assert cli_filters() is None
    assert cli_filters(["a=1"], ["docs/"], ["hr"], "en") == {
        "where": {"a": "1"}, "paths": ["docs/"], "collections": ["hr"], "language": "en"}
    with pytest.raises(ValueError, match="--path"):
        cli_filters(paths=[" / "])
    with pytest.raises(ValueError, match="--language"):
        cli_filters(language="English")
