"""Builds the configured store from settings."""

from __future__ import annotations

from citewise.config import Settings
from citewise.errors import ConfigError
from citewise.store.base import Store
from citewise.store.sqlite import SQLiteStore

#: URL schemes that select the PostgreSQL store.
POSTGRES_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")


def open_store(settings: Settings) -> Store:
    """The store named by ``CITEWISE_STORE``: empty = ``$CITEWISE_HOME/index.sqlite3``; a
    folder or ``.sqlite3`` path = SQLite there; ``postgresql://user:pass@host:port/db`` =
    :class:`~citewise.store.postgres.PostgresStore` (needs ``pip install 'citewise[postgres]'``).

    Raises ConfigError for another URL scheme, IndexError_ when the index cannot be opened.
    """
    if "://" in settings.store:
        scheme = settings.store.split("://", 1)[0]
        if scheme in POSTGRES_SCHEMES:
            try:
                from citewise.store.postgres import PostgresStore
            except ModuleNotFoundError as err:
                raise ConfigError(f"CITEWISE_STORE: {err}") from None
            return PostgresStore(settings.store, ef_search=settings.hnsw_ef_search)
        raise ConfigError(
            f"CITEWISE_STORE: the {scheme!r} backend is not available; give a folder or "
            ".sqlite3 path, or a postgresql://user:password@host:port/database URL"
        )
    return SQLiteStore(settings.index_path)
