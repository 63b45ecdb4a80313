"""The session store on a real SQLite file, through the conformance suite
(tests/suites/sessions.py)."""

from __future__ import annotations

import pytest

from citewise.chat.sessions import SessionStore
from tests.suites.sessions import SessionStoreSuite


class TestSQLiteSessionStore(SessionStoreSuite):
    @pytest.fixture
    def sessions_url(self, tmp_path):
        return f"sqlite:///{tmp_path / 'sessions.sqlite3'}"


def test_the_sqlite_file_and_its_folders_are_created(tmp_path):
    path = tmp_path / "not" / "yet" / "sessions.sqlite3"
    store = SessionStore(f"sqlite:///{path}")
    try:
        chat = store.create_chat("first")
        assert path.is_file() and store.get_chat(chat.id).title == "first"
    finally:
        store.close()
