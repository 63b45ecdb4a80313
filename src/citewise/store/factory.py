"""Builds the configured store from settings."""

from __future__ import annotations

from citewise.config import Settings
from citewise.errors import ConfigError
from citewise.store.sqlite import SQLiteStore


def open_store(settings: Settings) -> SQLiteStore:
    """The store named by ``CITEWISE_STORE`` (empty = ``$CITEWISE_HOME/index.sqlite3``)."""
    if "://" in settings.store:
        scheme = settings.store.split("://", 1)[0]
        raise ConfigError(
            f"CITEWISE_STORE: the {scheme!r} backend is not available in this version; "
            "leave CITEWISE_STORE empty or give a folder or .sqlite3 path"
        )
    return SQLiteStore(settings.index_path)
