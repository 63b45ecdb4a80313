"""The sessions database's schema: its migrations and their ledger, run by
:func:`citewise.store.migrations.run_migrations` (the runner of every citewise schema).

Versions of citewise before this module ran the first two steps as Alembic revisions
(``0001`` and ``0002``), and Alembic recorded the newest one in its one-row
``alembic_version`` table. The steps below make the same tables, columns, defaults and
indexes, in SQLAlchemy Core on SQLite and PostgreSQL alike, and :class:`VersionTable` keeps
``alembic_version`` as Alembic did, so a sessions database from any version opens unchanged.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Column,
    Connection,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    inspect,
    text,
)

from citewise.store.migrations import Migration


def initial(conn: Connection) -> None:
    """``0001``: chats, their messages, and actions waiting for approval."""
    metadata = MetaData()
    chats = Table(
        "chats", metadata,
        Column("id", String(32), primary_key=True),
        Column("title", String(200), nullable=False),
        Column("created", Float, nullable=False),
        Column("updated", Float, nullable=False),
        Column("summary", Text, nullable=False, server_default=""),
        Column("summarized_upto", Integer, nullable=False, server_default="0"),
    )
    messages = Table(
        "messages", metadata,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("chat_id", String(32), ForeignKey("chats.id", ondelete="CASCADE"),
               nullable=False),
        Column("role", String(16), nullable=False),
        Column("content", Text, nullable=False),
        Column("status", String(16), nullable=False),
        Column("search_query", Text, nullable=True),
        Column("sources", JSON, nullable=False),
        Column("metrics", JSON, nullable=False),
        Column("created", Float, nullable=False),
    )
    pending = Table(
        "pending_actions", metadata,
        Column("token", String(64), primary_key=True),
        Column("chat_id", String(32), ForeignKey("chats.id", ondelete="CASCADE"),
               nullable=False),
        Column("action", String(16), nullable=False),
        Column("input", JSON, nullable=False),
        Column("status", String(16), nullable=False),
        Column("created", Float, nullable=False),
    )
    Index("ix_chats_updated", chats.c.updated)
    Index("ix_messages_chat_id", messages.c.chat_id, messages.c.id)
    Index("ix_pending_actions_chat_id", pending.c.chat_id)
    metadata.create_all(conn, checkfirst=False)


def owner(conn: Connection) -> None:
    """``0002``: the owner tag of each chat (a hash of the read key that created it; "" when
    reading is open), so one key never lists, reads or continues another key's chats."""
    conn.execute(text("ALTER TABLE chats ADD COLUMN owner VARCHAR(32) DEFAULT '' NOT NULL"))
    conn.execute(text("CREATE INDEX ix_chats_owner_updated ON chats (owner, updated)"))


def feedback(conn: Connection) -> None:
    """``0003``: a reader's verdict on an assistant message (thumbs up or down, a comment,
    thumbs on single sources), one row per message, exported as reranker training data."""
    metadata = MetaData()
    Table("chats", metadata, Column("id", String(32), primary_key=True))
    Table("messages", metadata, Column("id", Integer, primary_key=True))
    table = Table(
        "feedback", metadata,
        Column("message_id", Integer, ForeignKey("messages.id", ondelete="CASCADE"),
               primary_key=True, autoincrement=False),
        Column("chat_id", String(32), ForeignKey("chats.id", ondelete="CASCADE"),
               nullable=False),
        Column("rating", Integer, nullable=False, server_default="0"),
        Column("comment", Text, nullable=False, server_default=""),
        Column("sources", JSON, nullable=False),
        Column("updated", Float, nullable=False),
    )
    Index("ix_feedback_chat_id", table.c.chat_id)
    table.create(conn, checkfirst=False)


#: The sessions schema, oldest first; the first two names are the Alembic revision ids they
#: had.
MIGRATIONS: list[Migration[Connection]] = [Migration("0001", initial), Migration("0002", owner),
                                           Migration("0003", feedback)]


class VersionTable:
    """The sessions database's migration ledger: ``alembic_version``, one row holding the
    name of the newest migration applied (the ones before it are applied too)."""

    def applied(self, conn: Connection) -> set[str]:
        """The migrations up to the recorded one; none when the table is missing or empty;
        all when the recorded name is unknown (a newer citewise migrated it)."""
        if not inspect(conn).has_table("alembic_version"):
            return set()
        recorded = set(conn.execute(text("SELECT version_num FROM alembic_version")).scalars())
        names = [m.name for m in MIGRATIONS]
        if not recorded:
            return set()
        if not recorded <= set(names):
            return set(names)
        newest = max(names.index(name) for name in recorded)
        return set(names[: newest + 1])

    def record(self, conn: Connection, name: str, position: int) -> None:
        """Make ``name`` the one recorded version (creating the table as Alembic does)."""
        if not inspect(conn).has_table("alembic_version"):
            table = Table("alembic_version", MetaData(),
                          Column("version_num", String(32), nullable=False),
                          PrimaryKeyConstraint("version_num", name="alembic_version_pkc"))
            table.create(conn)
        conn.execute(text("DELETE FROM alembic_version"))
        conn.execute(text("INSERT INTO alembic_version (version_num) VALUES (:name)"),
                     {"name": name})
