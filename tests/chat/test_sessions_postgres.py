"""Chat sessions on a real PostgreSQL server, in the same database as the index: the same
session code (SQLAlchemy and citewise.chat.schema's migrations) as on SQLite, reached with the index's postgresql:// URL."""

from __future__ import annotations

import threading

from sqlalchemy import inspect, text

from citewise.chat.sessions import SessionStore, rule_summary
from citewise.config import Settings
from citewise.store.postgres import PostgresStore


def test_sessions_share_the_index_database(postgres_url, tmp_path):
    index = PostgresStore(postgres_url)
    settings = Settings(home=tmp_path, store=postgres_url)
    assert settings.sessions_database == postgres_url  # no second setting needed
    s = SessionStore(settings.sessions_database)
    assert s.engine.dialect.name == "postgresql" and s.engine.dialect.driver == "psycopg"
    with s.engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0003"
    assert set(inspect(s.engine).get_table_names()) == {
        "alembic_version", "chats", "messages", "pending_actions", "feedback", "citewise_migrations",
        "citewise_meta", "documents", "chunks", "postings", "term_stats", "collection_stats"}
    chat = s.create_chat("  Warranty   question ")
    s.add_message(chat.id, "user", "How long is the warranty?", search_query="warranty")
    s.add_message(chat.id, "assistant", "Two years [1].",
                  sources=[{"n": 1, "file": "w.md", "page": 2}], metrics={"total_ms": 12.5})
    s.close()
    again = SessionStore(postgres_url)  # reopening migrates nothing twice and keeps the data
    info = again.get_chat(chat.id)
    assert (info.title, info.message_count) == ("Warranty question", 2)
    messages = again.messages(chat.id)
    assert [m.content for m in messages] == ["How long is the warranty?", "Two years [1]."]
    assert messages[1].sources == [{"n": 1, "file": "w.md", "page": 2}]
    assert messages[1].metrics == {"total_ms": 12.5}
    assert messages[0].search_query == "warranty"
    again.close()
    index.close()


def test_history_folds_older_turns_on_postgres(postgres_url):
    s = SessionStore(postgres_url)
    chat = s.create_chat("q")
    for i in range(5):
        s.add_message(chat.id, "user", f"question {i}")
        s.add_message(chat.id, "assistant", f"Answer {i} is here. More detail {i}.")
    h = s.history(chat.id, turns=2, budget_tokens=1000, count_tokens=len,
                  summarise=rule_summary)
    assert h.turns == (("question 3", "Answer 3 is here. More detail 3."),
                       ("question 4", "Answer 4 is here. More detail 4."))
    assert h.summary == ("Q: question 0 A: Answer 0 is here. | Q: question 1 A: Answer 1 is "
                         "here. | Q: question 2 A: Answer 2 is here.")
    assert s.get_chat(chat.id).summary == h.summary
    s.close()


def test_search_escapes_wildcards_and_delete_cascades_on_postgres(postgres_url):
    s = SessionStore(postgres_url)
    for title in ("100% sure", "1000 sure", "under_score", "underXscore"):
        s.create_chat(title)
    assert [c.title for c in s.list_chats(q="100%")[0]] == ["100% sure"]
    assert [c.title for c in s.list_chats(q="UNDER_")[0]] == ["under_score"]  # ILIKE
    victim = s.list_chats(q="1000")[0][0]
    s.add_message(victim.id, "user", "hello")
    s.add_pending(victim.id, "ingest", {"path": "/a"})
    assert s.delete_chat(victim.id)
    assert s.list_chats()[1] == 3
    with s.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM messages")).scalar() == 0
    s.close()


def test_pending_action_is_taken_exactly_once_by_concurrent_approvers(postgres_url):
    s = SessionStore(postgres_url)
    chat = s.create_chat("x")
    token = s.add_pending(chat.id, "ingest", {"path": "/a"})
    results: list[object] = []
    barrier = threading.Barrier(6)

    def approve() -> None:
        barrier.wait()
        results.append(s.take_pending(chat.id, token, "approved"))

    threads = [threading.Thread(target=approve) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    taken = [r for r in results if r is not None]
    assert len(results) == 6 and len(taken) == 1
    assert taken[0].input == {"path": "/a"}
    s.close()
