"""The sessions schema on databases made by earlier versions of citewise, which created and
upgraded it with Alembic: each is rebuilt here by the SQL those versions left in SQLite (the
Alembic revision ``0001`` alone, then ``0002``), then opened by the current code, which adds
``0003`` (the feedback table)."""

from __future__ import annotations

import sqlite3

from sqlalchemy import inspect, text

from citewise.chat.sessions import SessionStore

# what Alembic revision 0001 left in a SQLite file (sqlite_master of a database it created)
ALEMBIC_0001 = [
    ("CREATE TABLE alembic_version (\n\tversion_num VARCHAR(32) NOT NULL, \n\t"
    "CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)\n)"),
    ("CREATE TABLE chats (\n\tid VARCHAR(32) NOT NULL, \n\ttitle VARCHAR(200) NOT NULL, \n\t"
    "created FLOAT NOT NULL, \n\tupdated FLOAT NOT NULL, \n\tsummary TEXT DEFAULT '' NOT NULL, "
    "\n\tsummarized_upto INTEGER DEFAULT '0' NOT NULL, \n\tPRIMARY KEY (id)\n)"),
    "CREATE INDEX ix_chats_updated ON chats (updated)",
    ("CREATE TABLE messages (\n\tid INTEGER NOT NULL, \n\tchat_id VARCHAR(32) NOT NULL, \n\t"
    "role VARCHAR(16) NOT NULL, \n\tcontent TEXT NOT NULL, \n\tstatus VARCHAR(16) NOT NULL, "
    "\n\tsearch_query TEXT, \n\tsources JSON NOT NULL, \n\tmetrics JSON NOT NULL, \n\t"
    "created FLOAT NOT NULL, \n\tPRIMARY KEY (id), \n\tFOREIGN KEY(chat_id) REFERENCES chats "
    "(id) ON DELETE CASCADE\n)"),
    "CREATE INDEX ix_messages_chat_id ON messages (chat_id, id)",
    ("CREATE TABLE pending_actions (\n\ttoken VARCHAR(64) NOT NULL, \n\tchat_id VARCHAR(32) NOT "
    "NULL, \n\taction VARCHAR(16) NOT NULL, \n\tinput JSON NOT NULL, \n\tstatus VARCHAR(16) NOT "
    "NULL, \n\tcreated FLOAT NOT NULL, \n\tPRIMARY KEY (token), \n\tFOREIGN KEY(chat_id) "
    "REFERENCES chats (id) ON DELETE CASCADE\n)"),
    "CREATE INDEX ix_pending_actions_chat_id ON pending_actions (chat_id)",
    "INSERT INTO alembic_version VALUES ('0001')",
]
# and what revision 0002 added to it
ALEMBIC_0002 = [
    "ALTER TABLE chats ADD COLUMN owner VARCHAR(32) DEFAULT '' NOT NULL",
    "CREATE INDEX ix_chats_owner_updated ON chats (owner, updated)",
    "UPDATE alembic_version SET version_num = '0002'",
]


def old_database(path, statements) -> None:
    db = sqlite3.connect(path)
    for statement in statements:
        db.execute(statement)
    db.execute("INSERT INTO chats (id, title, created, updated) VALUES "
               "('c1', 'old chat', 1.0, 2.0)")
    db.execute("INSERT INTO messages (chat_id, role, content, status, sources, metrics, "
               "created) VALUES ('c1', 'user', 'an old question', 'complete', '[]', '{}', 1.0)")
    db.commit()
    db.close()


def schema_of(path) -> list[tuple[str, str]]:
    db = sqlite3.connect(path)
    rows = db.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name")
    out = [(n, s) for n, s in rows]
    db.close()
    return out


def version_of(store: SessionStore) -> str:
    with store.engine.connect() as conn:
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one()


def test_a_database_at_alembic_0001_is_upgraded_and_keeps_its_chats(tmp_path):
    path = tmp_path / "old.sqlite3"
    old_database(path, ALEMBIC_0001)
    store = SessionStore(f"sqlite:///{path}")
    assert version_of(store) == "0003"
    assert "owner" in {c["name"] for c in inspect(store.engine).get_columns("chats")}
    assert inspect(store.engine).has_table("feedback")
    chat = store.get_chat("c1", owner="")  # the new column's default: open reading
    assert chat is not None and chat.title == "old chat" and chat.message_count == 1
    assert [m.content for m in store.messages("c1")] == ["an old question"]
    store.close()


def test_a_database_at_alembic_0002_gains_only_the_feedback_table(tmp_path):
    path = tmp_path / "old.sqlite3"
    old_database(path, ALEMBIC_0001 + ALEMBIC_0002)
    before = schema_of(path)
    store = SessionStore(f"sqlite:///{path}")
    assert version_of(store) == "0003"
    assert store.get_chat("c1").title == "old chat"
    store.close()
    after = schema_of(path)
    assert [row for row in after if row not in before] == [
        (name, sql) for name, sql in after if name in ("feedback", "ix_feedback_chat_id")]
    assert [row for row in before if row not in after] == []  # nothing else changed
    SessionStore(f"sqlite:///{path}").close()
    assert schema_of(path) == after  # nothing migrated twice


def test_a_new_database_gets_the_schema_an_upgraded_one_has(tmp_path):
    old = tmp_path / "old.sqlite3"
    old_database(old, ALEMBIC_0001 + ALEMBIC_0002)
    SessionStore(f"sqlite:///{old}").close()  # Alembic's 0002, then 0003
    new = tmp_path / "new.sqlite3"
    SessionStore(f"sqlite:///{new}").close()
    assert schema_of(new) == schema_of(old)
