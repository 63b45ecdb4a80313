"""A streaming read replica: queries on a hot standby on another port see what the primary
wrote, through the same store code; writes there are refused by PostgreSQL."""

from __future__ import annotations

import os
import time

import psycopg
import pytest

from citewise.store.postgres import PostgresStore
from citewise.text.analysis import tokenize
from tests import pgserver
from tests.suites.store import DIM, make_doc, unit


@pytest.fixture
def primary_and_replica():
    try:
        primary = pgserver.start()
    except Exception as err:  # noqa: BLE001 - the same rule as the session server
        if os.environ.get("CI"):
            raise
        pytest.skip(f"cannot start PostgreSQL here: {err}")
    try:
        pgserver.wait_ready(primary.url)
        replica = pgserver.start_replica(primary)
        pgserver.wait_ready(replica.url)
    except BaseException:
        primary.stop()
        raise
    yield primary, replica
    replica.stop()
    primary.stop()


def _wait_for_replay(primary_url: str, replica_url: str, timeout_s: float = 30.0) -> None:
    """Block until the replica has replayed the primary's WAL up to now (AssertionError after
    ``timeout_s`` seconds)."""
    with psycopg.connect(primary_url, autocommit=True) as p:
        p.execute("SELECT pg_switch_wal()")  # test servers commit asynchronously: flush it
        lsn = p.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
    deadline = time.monotonic() + timeout_s
    with psycopg.connect(replica_url, autocommit=True) as r:
        while not r.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,)
                            ).fetchone()[0]:
            assert time.monotonic() < deadline, f"the replica did not replay up to {lsn}"
            time.sleep(0.05)


def test_replica_serves_the_primary_index_read_only(primary_and_replica):
    primary, replica = primary_and_replica
    writer = PostgresStore(primary.url)
    writer.bind_model("m", DIM)
    for name, text, vec in (("a.txt", "replicated chunk about harbour cranes", unit(1)),
                            ("b.txt", "another chunk about cranes and ships", unit(0, 1))):
        doc, chunks, vecs = make_doc(name, [text], [vec])
        writer.upsert_document(doc, chunks, vecs)
    _wait_for_replay(primary.url, replica.url)  # streaming replication is asynchronous
    reader = PostgresStore(replica.url)  # the schema came by WAL: nothing to migrate there
    deadline = time.monotonic() + 20
    while reader.info().chunks < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert reader.info().chunks == 2
    assert reader.db.execute("SELECT pg_is_in_recovery()").fetchone()[0] is True
    terms = tokenize("harbour cranes")
    with reader.snapshot():
        assert reader.sparse_search(terms, 5) == writer.sparse_search(terms, 5)
        assert [h.chunk_id for h in reader.dense_search(unit(0, 1), 2)] == ["b.txt-0", "a.txt-0"]
    doc, chunks, vecs = make_doc("c.txt", ["written to the replica"])
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        reader.upsert_document(doc, chunks, vecs)
    reader.close()
    writer.close()
