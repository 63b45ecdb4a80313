"""The migration runner shared by the index stores and the sessions, on real SQLite files."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy import inspect, text

from citewise.chat.sessions import SessionStore
from citewise.store.migrations import Migration, pending, run_migrations
from citewise.store.sqlite import UserVersionLedger


def test_only_the_missing_steps_run_in_order_and_are_recorded(tmp_path):
    db = sqlite3.connect(tmp_path / "x.sqlite3", isolation_level=None)
    ran: list[str] = []

    def step(name: str) -> Migration[sqlite3.Connection]:
        def apply(conn: sqlite3.Connection) -> None:
            ran.append(name)
            conn.execute(f"CREATE TABLE {name} (x)")
        return Migration(name, apply)

    class Names:  # a ledger keeping the names in a table of the same database
        def applied(self, conn: sqlite3.Connection) -> set[str]:
            conn.execute("CREATE TABLE IF NOT EXISTS done (name TEXT)")
            return {r[0] for r in conn.execute("SELECT name FROM done")}

        def record(self, conn: sqlite3.Connection, name: str, position: int) -> None:
            conn.execute("INSERT INTO done VALUES (?)", (name,))

    steps = [step("a"), step("b")]
    assert run_migrations(db, steps, Names()) == ["a", "b"]
    steps.append(step("c"))
    assert pending(steps, Names().applied(db)) == ["c"]
    assert run_migrations(db, steps, Names()) == ["c"]
    assert run_migrations(db, steps, Names()) == []
    assert ran == ["a", "b", "c"]


def test_a_failing_step_leaves_the_index_schema_as_it_was(tmp_path):
    db = sqlite3.connect(tmp_path / "x.sqlite3", isolation_level=None)

    def broken(conn: sqlite3.Connection) -> None:
        raise RuntimeError("step failed")

    steps = [Migration("m001_initial", lambda c: c.execute("CREATE TABLE t (x)")),
             Migration("m002_broken", broken)]
    db.execute("BEGIN IMMEDIATE")
    with pytest.raises(RuntimeError, match="step failed"):
        run_migrations(db, steps, UserVersionLedger())
    db.execute("ROLLBACK")
    assert db.execute("PRAGMA user_version").fetchone()[0] == 0
    assert db.execute("SELECT name FROM sqlite_master WHERE name = 't'").fetchone() is None


def test_sessions_migrated_by_a_newer_version_open_without_migrating(tmp_path):
    url = f"sqlite:///{tmp_path / 's.sqlite3'}"
    SessionStore(url).close()
    db = sqlite3.connect(tmp_path / "s.sqlite3")
    db.execute("UPDATE alembic_version SET version_num = '0099'")
    db.commit()
    db.close()
    store = SessionStore(url)
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0099"
    assert "owner" in {c["name"] for c in inspect(store.engine).get_columns("chats")}
    assert store.create_chat("still works").title == "still works"
    store.close()
