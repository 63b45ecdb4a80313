"""Chat sessions on a real SQLite file: migrations, history with a rolling summary,
follow-up detection, pending actions."""

from __future__ import annotations

from sqlalchemy import inspect, text

from citewise.chat.sessions import (
    SessionStore,
    is_follow_up,
    rewrite_follow_up,
    rule_summary,
)


def store(tmp_path) -> SessionStore:
    return SessionStore(f"sqlite:///{tmp_path / 'sessions.sqlite3'}")


def test_migrations_create_the_schema_once(tmp_path):
    s = store(tmp_path)
    with s.engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0003"
    assert set(inspect(s.engine).get_table_names()) == {
        "alembic_version", "chats", "messages", "pending_actions", "feedback"}
    chat = s.create_chat("  A   title ")
    s.close()
    again = store(tmp_path)  # reopening runs no migration twice and keeps the data
    assert again.get_chat(chat.id).title == "A title"


def test_history_keeps_recent_turns_and_folds_older_ones(tmp_path):
    s = store(tmp_path)
    chat = s.create_chat("q")
    for i in range(5):
        s.add_message(chat.id, "user", f"question {i}")
        s.add_message(chat.id, "assistant", f"Answer {i} is here. More detail {i}.")
    s.add_message(chat.id, "user", "partial one")
    s.add_message(chat.id, "assistant", "cut", status="interrupted")
    h = s.history(chat.id, turns=2, budget_tokens=1000, count_tokens=len,
                  summarise=rule_summary)
    assert h.turns == (("question 3", "Answer 3 is here. More detail 3."),
                       ("question 4", "Answer 4 is here. More detail 4."))
    assert h.summary == ("Q: question 0 A: Answer 0 is here. | Q: question 1 A: Answer 1 is "
                         "here. | Q: question 2 A: Answer 2 is here.")
    assert h.last_query == "partial one"
    assert h.for_prompt()[0] == ("(summary of the earlier conversation)", h.summary)
    assert s.get_chat(chat.id).summary == h.summary  # saved: folded once
    calls = []
    h2 = s.history(chat.id, turns=2, budget_tokens=1000, count_tokens=len,
                   summarise=lambda old, turns: calls.append(turns) or old)
    assert calls == [] and h2 == h
    tight = s.history(chat.id, turns=2, budget_tokens=len(h.summary) + 45, count_tokens=len,
                      summarise=rule_summary)
    assert tight.turns == (("question 4", "Answer 4 is here. More detail 4."),)


def test_follow_up_rule():
    last = "How long is the laptop warranty?"
    assert is_follow_up("and for batteries?", last)
    assert is_follow_up("what about the second one?", last)
    assert is_follow_up("Does it cover water damage?", last)
    assert not is_follow_up("and for batteries?", None)
    assert not is_follow_up("What is the refund policy for online orders?", last)
    assert rewrite_follow_up("and  for batteries?", last) == (
        "How long is the laptop warranty? and for batteries?")


def test_pending_action_is_taken_once(tmp_path):
    s = store(tmp_path)
    chat = s.create_chat("x")
    token = s.add_pending(chat.id, "ingest", {"path": "/a"})
    assert [p.token for p in s.pending(chat.id)] == [token]
    assert s.take_pending("other", token, "approved") is None
    taken = s.take_pending(chat.id, token, "approved")
    assert taken is not None and taken.input == {"path": "/a"}
    assert s.take_pending(chat.id, token, "approved") is None
    assert s.pending(chat.id) == []


def test_list_search_escapes_wildcards(tmp_path):
    s = store(tmp_path)
    for title in ("100% sure", "1000 sure", "under_score", "underXscore"):
        s.create_chat(title)
    assert [c.title for c in s.list_chats(q="100%")[0]] == ["100% sure"]
    assert [c.title for c in s.list_chats(q="under_")[0]] == ["under_score"]
    assert s.delete_chat(s.list_chats(q="1000")[0][0].id)
    assert s.list_chats()[1] == 3


def test_chats_are_kept_per_owner(tmp_path):
    s = store(tmp_path)
    mine = s.create_chat("mine", owner="a" * 16)
    theirs = s.create_chat("theirs", owner="b" * 16)
    rows, total = s.list_chats(owner="a" * 16)
    assert [r.id for r in rows] == [mine.id] and total == 1
    assert s.get_chat(theirs.id, "a" * 16) is None
    assert s.get_chat(theirs.id).title == "theirs"  # owner None: every chat
    assert s.delete_chat(theirs.id, "a" * 16) is False and s.get_chat(theirs.id) is not None
    assert s.list_chats()[1] == 2


def test_feedback_truncate_and_training_examples(tmp_path):
    s = store(tmp_path)
    chat = s.create_chat("warranty", owner="a")
    other = s.create_chat("payroll", owner="b")
    sources = [{"n": 1, "chunk_id": "c1"}, {"n": 2, "chunk_id": "c2"}, {"n": 3, "chunk_id": "c3"}]
    s.add_message(chat.id, "user", "and batteries?", search_query="warranty batteries")
    answer = s.add_message(chat.id, "assistant", "Two years [1], batteries one [2].",
                           sources=sources)
    # the answer's thumb covers its cited sources; a source's own thumb wins; uncited ids
    # and ids the answer does not have are dropped
    fb = s.set_feedback(chat.id, answer, rating=1, comment=" ok ",
                        sources={"c2": -1, "c3": 1, "nope": 1})
    assert fb is not None and fb.sources == {"c2": -1, "c3": 1}
    assert s.set_feedback(chat.id, answer - 1, rating=1) is None  # a question: refused
    assert s.set_feedback(other.id, answer, rating=1) is None  # another chat's message
    s.add_message(other.id, "user", "When is payday?")
    down = s.add_message(other.id, "assistant", "The 25th [1].",
                         sources=[{"n": 1, "chunk_id": "p1"}])
    s.set_feedback(other.id, down, rating=-1)  # no positive: not an example
    assert s.training_examples() == [{"query": "warranty batteries", "positive": ["c1", "c3"],
                                      "negative": ["c2"]}]
    assert s.training_examples("b") == []
    assert s.feedback(chat.id)[answer].comment == " ok "
    # renaming keeps the chat's place; truncating drops the turn and its feedback
    assert s.rename_chat(chat.id, "  Batteries  ", owner="b") is None
    assert s.rename_chat(chat.id, "  Batteries  ", owner="a").title == "Batteries"
    assert s.truncate(chat.id, answer - 1) == 2
    assert s.messages(chat.id) == [] and s.feedback(chat.id) == {}
    assert s.truncate(chat.id, answer - 1) == 0
    assert s.training_examples() == []
