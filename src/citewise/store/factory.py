"""The one store factory: which backend a location names, and opening it.

A location is either a PostgreSQL URL (``postgresql://user:pass@host:port/db``, the schemes
of :data:`citewise.config.POSTGRES_SCHEMES`) or a SQLite path (a ``.sqlite3`` file, or a
folder meaning ``FOLDER/index.sqlite3``). :func:`open_store` opens the one the settings name
(``CITEWISE_STORE``), :func:`open_location` one given on the command line (``citewise
migrate --from/--to``, which also takes ``sqlite:PATH``).
"""

from __future__ import annotations

from pathlib import Path

from citewise.config import POSTGRES_SCHEMES, Settings, is_postgres_url
from citewise.errors import ConfigError
from citewise.store.base import Store
from citewise.store.sqlite import SQLiteStore

__all__ = ["POSTGRES_SCHEMES", "open_location", "open_store"]


def _postgres(url: str, ef_search: int, named: str, bm25_index: bool = False) -> Store:
    """The PostgreSQL store at ``url``; ConfigError (prefixed ``named``) when the
    ``postgres`` extra is not installed."""
    try:
        from citewise.store.postgres import PostgresStore
    except ModuleNotFoundError as err:
        raise ConfigError(f"{named}: {err}") from None
    return PostgresStore(url, ef_search=ef_search, bm25_index=bm25_index)


def open_store(settings: Settings) -> Store:
    """The store named by ``CITEWISE_STORE``: empty = ``$CITEWISE_HOME/index.sqlite3``; a
    folder or ``.sqlite3`` path = SQLite there; ``postgresql://user:pass@host:port/db`` =
    :class:`~citewise.store.postgres.PostgresStore` (needs ``pip install 'citewise[postgres]'``),
    searched with ``CITEWISE_HNSW_EF_SEARCH`` (BM25 from an in-memory index per process with
    ``CITEWISE_POSTGRES_BM25_INDEX``); SQLite's dense search is exact below
    ``CITEWISE_DENSE_EXACT_BELOW`` chunks.

    Raises ConfigError for another URL scheme, IndexError_ when the index cannot be opened.
    """
    if "://" in settings.store:
        if is_postgres_url(settings.store):
            return _postgres(settings.store, settings.hnsw_ef_search, "CITEWISE_STORE",
                             settings.postgres_bm25_index)
        scheme = settings.store.split("://", 1)[0]
        raise ConfigError(
            f"CITEWISE_STORE: the {scheme!r} backend is not available; give a folder or "
            ".sqlite3 path, or a postgresql://user:password@host:port/database URL"
        )
    return SQLiteStore(settings.index_path, dense_exact_below=settings.dense_exact_below)


def open_location(spec: str) -> Store:
    """A store from a location: ``sqlite:PATH`` (or a plain path; a folder means
    ``PATH/index.sqlite3``) or ``postgresql://user:pass@host:port/db`` (pgvector's default
    ``ef_search``).

    Raises ConfigError for another URL scheme or a missing ``postgres`` extra; IndexError_
    when it cannot be opened."""
    if "://" in spec:
        if not is_postgres_url(spec):
            raise ConfigError(f"{spec!r}: give sqlite:PATH or postgresql://user@host:port/db")
        return _postgres(spec, 100, repr(spec))
    path = Path(spec.removeprefix("sqlite:")).expanduser()
    if path.suffix == "":
        path = path / "index.sqlite3"
    return SQLiteStore(path)
