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


def _sharded(urls: list[str], ef_search: int, named: str, bm25_index: bool = False) -> Store:
    """The collection sharded across ``urls``; ConfigError (prefixed ``named``) when the
    ``postgres`` extra is not installed."""
    try:
        from citewise.store.sharded import ShardedPostgresStore
    except ModuleNotFoundError as err:
        raise ConfigError(f"{named}: {err}") from None
    return ShardedPostgresStore(urls, ef_search=ef_search, bm25_index=bm25_index)


def open_store(settings: Settings) -> Store:
    """The store named by ``CITEWISE_STORE``: empty = ``$CITEWISE_HOME/index.sqlite3``; a
    folder or ``.sqlite3`` path = SQLite there; ``postgresql://user:pass@host:port/db`` =
    :class:`~citewise.store.postgres.PostgresStore` (needs ``pip install 'citewise[postgres]'``),
    searched with ``CITEWISE_HNSW_EF_SEARCH`` (BM25 from an in-memory index per process with
    ``CITEWISE_POSTGRES_BM25_INDEX``); SQLite's dense search is exact below
    ``CITEWISE_DENSE_EXACT_BELOW`` chunks.

    With ``CITEWISE_POSTGRES_SHARDS`` (two or more URLs) the collection is sharded across
    those servers (:class:`~citewise.store.sharded.ShardedPostgresStore`, the same search
    settings); ``CITEWISE_STORE`` must then be empty.

    Raises ConfigError for another URL scheme or both settings given, IndexError_ when the
    index cannot be opened (ShardUnavailableError naming a shard's server).
    """
    if settings.postgres_shards:
        if settings.store:
            raise ConfigError(
                "CITEWISE_STORE and CITEWISE_POSTGRES_SHARDS are both set: a sharded collection "
                "is named by CITEWISE_POSTGRES_SHARDS alone; empty CITEWISE_STORE")
        return _sharded(settings.postgres_shards, settings.hnsw_ef_search,
                        "CITEWISE_POSTGRES_SHARDS", settings.postgres_bm25_index)
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
    ``PATH/index.sqlite3``), ``postgresql://user:pass@host:port/db`` (pgvector's default
    ``ef_search``), or two or more such URLs, comma-separated: a collection sharded across
    them (``citewise migrate --to URL1,URL2`` copies an index into shards).

    Raises ConfigError for another URL scheme or a missing ``postgres`` extra; IndexError_
    when it cannot be opened."""
    if "," in spec and "://" in spec:
        urls = [u.strip() for u in spec.split(",") if u.strip()]
        if not all(is_postgres_url(u) for u in urls):
            raise ConfigError(f"{spec!r}: shards are postgresql://user@host:port/db URLs, "
                              "comma-separated")
        return _sharded(urls, 100, "sharded location")
    if "://" in spec:
        if not is_postgres_url(spec):
            raise ConfigError(f"{spec!r}: give sqlite:PATH or postgresql://user@host:port/db")
        return _postgres(spec, 100, repr(spec))
    path = Path(spec.removeprefix("sqlite:")).expanduser()
    if path.suffix == "":
        path = path / "index.sqlite3"
    return SQLiteStore(path)
