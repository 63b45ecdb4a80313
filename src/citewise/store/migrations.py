"""The one migration runner for every schema citewise keeps: the SQLite index, the PostgreSQL
index and the chat sessions (SQLite or PostgreSQL, through SQLAlchemy).

A schema is an ordered list of named :class:`Migration` steps, each applied once. Which steps
a database already has is kept by a :class:`Ledger`, the one part each schema chooses, so that
databases made by earlier versions of citewise open unchanged:

* the SQLite index counts its steps in ``PRAGMA user_version``
  (:class:`~citewise.store.sqlite.UserVersionLedger`);
* the PostgreSQL index lists their names in the ``citewise_migrations`` table
  (:class:`~citewise.store.postgres.MigrationTable`);
* the sessions database keeps the last step's id in Alembic's one-row ``alembic_version``
  table, where the Alembic migrations of earlier versions left it
  (:class:`~citewise.chat.sessions.VersionTable`).

The runner applies the missing steps in order, recording each right after it, inside the
caller's transaction (and lock, where the backend takes one), so a failure leaves the schema
as it was. A step the ledger lists but the code does not know (a database migrated by a newer
citewise) is left alone.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

C = TypeVar("C")
C_contra = TypeVar("C_contra", contravariant=True)


@dataclass(frozen=True)
class Migration(Generic[C]):
    """One schema step: ``apply(connection)`` runs its DDL (and data changes) on a
    connection or cursor of the schema's database; ``name`` is how the ledger knows it."""

    name: str
    apply: Callable[[C], None]


def named(steps: Sequence[Callable[[C], None]]) -> list[Migration[C]]:
    """``steps`` as migrations named by their function names (``m001_initial``, ...)."""
    return [Migration(step.__name__, step) for step in steps]


class Ledger(Protocol[C_contra]):
    """Where a database records the migrations it has."""

    def applied(self, conn: C_contra) -> Collection[str]:
        """The names of the migrations this database has (empty for a new database)."""
        ...

    def record(self, conn: C_contra, name: str, position: int) -> None:
        """Note that migration ``name``, number ``position`` (1-based) of the schema's list,
        was applied."""
        ...


def pending(migrations: Sequence[Migration[C]], applied: Collection[str]) -> list[str]:
    """The names of ``migrations`` not in ``applied``, in order."""
    return [m.name for m in migrations if m.name not in applied]


def run_migrations(conn: C, migrations: Sequence[Migration[C]], ledger: Ledger[C]) -> list[str]:
    """Apply each of ``migrations`` that ``ledger`` does not list, in order, recording each
    after it; returns the names applied now ([] when the schema is current). Runs in the
    caller's transaction; raises what a step raises (the caller rolls back)."""
    done = ledger.applied(conn)
    ran: list[str] = []
    for position, migration in enumerate(migrations, start=1):
        if migration.name not in done:
            migration.apply(conn)
            ledger.record(conn, migration.name, position)
            ran.append(migration.name)
    return ran
