"""Conformance suite for the chat session store (citewise.chat.sessions.SessionStore).

The same SessionStore code runs on SQLite and PostgreSQL; every backend's test class inherits
:class:`SessionStoreSuite` and supplies one fixture, ``sessions_url``: the URL of an empty
database. The suite opens stores on it (and reopens them, to check what was written lasts).
"""

from __future__ import annotations

import threading
import time

import pytest

from citewise.chat.sessions import ChatInfo, SessionStore, rule_summary

OWNER_A, OWNER_B = "a" * 16, "b" * 16


class SessionStoreSuite:
    @pytest.fixture
    def sessions_url(self) -> str:  # pragma: no cover - each backend overrides this
        raise NotImplementedError

    @pytest.fixture
    def store(self, sessions_url):
        s = SessionStore(sessions_url)
        yield s
        s.close()

    def reopen(self, store: SessionStore) -> SessionStore:
        store.close()
        return SessionStore(store.url)

    def turn(self, store, chat_id, question, answer, **kw):
        store.add_message(chat_id, "user", question)
        return store.add_message(chat_id, "assistant", answer, **kw)

    # --- chats ----------------------------------------------------------------------------
    def test_a_new_chat_is_empty_and_found_by_id(self, store):
        chat = store.create_chat("  How long is   the warranty? ")
        assert isinstance(chat, ChatInfo)
        assert len(chat.id) == 32 and int(chat.id, 16) >= 0
        assert chat.title == "How long is the warranty?" and chat.message_count == 0
        assert chat.created == chat.updated and abs(chat.created - time.time()) < 60
        got = store.get_chat(chat.id)
        assert (got.id, got.title, got.message_count, got.summary) == (
            chat.id, chat.title, 0, "")
        assert store.get_chat("0" * 32) is None
        assert store.messages("0" * 32) == []

    def test_titles_are_cut_and_never_blank(self, store):
        assert store.create_chat("   ").title == "New chat"
        long = store.create_chat("word " * 40)
        assert len(long.title) == 80 and long.title.endswith("…")
        assert store.get_chat(long.id).title == long.title

    def test_ids_are_unique(self, store):
        ids = {store.create_chat("same title").id for _ in range(20)}
        assert len(ids) == 20

    # --- messages -------------------------------------------------------------------------
    def test_messages_come_back_in_order_with_what_they_carry(self, store):
        chat = store.create_chat("warranty")
        sources = [{"n": 1, "path": "kitchen/kettle.md", "page": None, "section": ["Care"]}]
        first = store.add_message(chat.id, "user", "How long is the warranty?",
                                  search_query="kettle warranty")
        second = store.add_message(chat.id, "assistant", "24 months [1]. Ünïcødé ✓",
                                   sources=sources, metrics={"total_ms": 12.5, "llm_tokens": 7})
        assert second > first
        messages = store.messages(chat.id)
        assert [(m.id, m.role, m.content, m.status) for m in messages] == [
            (first, "user", "How long is the warranty?", "complete"),
            (second, "assistant", "24 months [1]. Ünïcødé ✓", "complete")]
        assert messages[0].search_query == "kettle warranty" and messages[0].sources == []
        assert messages[1].sources == sources
        assert messages[1].metrics == {"total_ms": 12.5, "llm_tokens": 7}
        assert messages[0].created <= messages[1].created
        assert store.get_chat(chat.id).message_count == 2

    def test_a_message_touches_its_chat(self, store):
        older = store.create_chat("older")
        newer = store.create_chat("newer")
        time.sleep(0.01)
        store.add_message(older.id, "user", "back to this one")
        touched = store.get_chat(older.id)
        assert touched.updated > older.updated and touched.created == older.created
        assert [c.id for c in store.list_chats()[0]] == [older.id, newer.id]

    def test_a_message_is_updated_in_place(self, store):
        chat = store.create_chat("x")
        mid = store.add_message(chat.id, "assistant", "", status="pending")
        store.update_message(mid, content="The warranty lasts", status="interrupted",
                             sources=[{"n": 2}], metrics={"llm_ms": 3.0})
        (m,) = store.messages(chat.id)
        assert (m.id, m.content, m.status, m.sources, m.metrics) == (
            mid, "The warranty lasts", "interrupted", [{"n": 2}], {"llm_ms": 3.0})

    def test_long_content_round_trips(self, store):
        chat = store.create_chat("long")
        text = "\n".join(f"line {i}: " + "x" * 200 for i in range(500))  # about 100 KB
        store.add_message(chat.id, "assistant", text)
        assert store.messages(chat.id)[0].content == text

    def test_concurrent_writers_lose_no_message(self, store):
        chat = store.create_chat("busy")
        errors: list[Exception] = []

        def write(k: int) -> None:
            try:
                for i in range(10):
                    store.add_message(chat.id, "user", f"writer {k} message {i}")
            except Exception as err:  # noqa: BLE001 - a thread's error fails the test below
                errors.append(err)

        threads = [threading.Thread(target=write, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        messages = store.messages(chat.id)
        assert len(messages) == 40 and len({m.id for m in messages}) == 40
        for k in range(4):  # each writer's messages in the order it wrote them
            mine = [m.content for m in messages if m.content.startswith(f"writer {k} ")]
            assert mine == [f"writer {k} message {i}" for i in range(10)]

    # --- listing, search, paging ----------------------------------------------------------
    def test_chats_are_listed_newest_first_in_pages(self, store):
        chats = []
        for i in range(5):
            chats.append(store.create_chat(f"chat {i}"))
            time.sleep(0.005)
        rows, total = store.list_chats()
        assert total == 5 and [c.id for c in rows] == [c.id for c in reversed(chats)]
        page, total = store.list_chats(limit=2, offset=2)
        assert total == 5 and [c.id for c in page] == [chats[2].id, chats[1].id]
        assert store.list_chats(limit=2, offset=10) == ([], 5)

    def test_search_is_a_case_insensitive_title_substring(self, store):
        for title in ("Kettle warranty", "kettle care", "Toaster", "100% sure", "1000 sure",
                      "under_score", "underXscore"):
            store.create_chat(title)
        assert sorted(c.title for c in store.list_chats(q="KETTLE")[0]) == [
            "Kettle warranty", "kettle care"]
        assert store.list_chats(q="KETTLE")[1] == 2
        assert [c.title for c in store.list_chats(q="100%")[0]] == ["100% sure"]
        assert [c.title for c in store.list_chats(q="under_")[0]] == ["under_score"]
        assert store.list_chats(q="nothing like it") == ([], 0)

    def test_message_counts_in_the_list(self, store):
        chat = store.create_chat("counted")
        self.turn(store, chat.id, "q", "a")
        store.create_chat("empty")
        counts = {c.title: c.message_count for c in store.list_chats()[0]}
        assert counts == {"counted": 2, "empty": 0}

    # --- delete ---------------------------------------------------------------------------
    def test_delete_removes_the_chat_and_all_it_holds(self, store):
        chat = store.create_chat("gone")
        kept = store.create_chat("kept")
        self.turn(store, chat.id, "q", "a")
        self.turn(store, kept.id, "q", "a")
        token = store.add_pending(chat.id, "ingest", {"path": "/data"})
        assert store.delete_chat(chat.id) is True
        assert store.get_chat(chat.id) is None and store.messages(chat.id) == []
        assert store.pending(chat.id) == []
        assert store.take_pending(chat.id, token, "approved") is None
        assert store.delete_chat(chat.id) is False and store.delete_chat("0" * 32) is False
        assert [c.id for c in store.list_chats()[0]] == [kept.id]
        assert len(store.messages(kept.id)) == 2

    # --- owners ---------------------------------------------------------------------------
    def test_an_owner_sees_only_its_own_chats(self, store):
        mine = store.create_chat("mine", owner=OWNER_A)
        theirs = store.create_chat("theirs", owner=OWNER_B)
        open_chat = store.create_chat("open")  # created while reading was open: owner ""
        assert store.list_chats(owner=OWNER_A) == ([store.get_chat(mine.id)], 1)
        assert [c.id for c in store.list_chats(owner="")[0]] == [open_chat.id]
        assert store.list_chats(q="theirs", owner=OWNER_A) == ([], 0)
        assert store.get_chat(theirs.id, OWNER_A) is None
        assert store.get_chat(theirs.id, OWNER_B).title == "theirs"
        assert store.get_chat(theirs.id).title == "theirs"  # owner None: every chat
        assert store.delete_chat(theirs.id, OWNER_A) is False
        assert store.get_chat(theirs.id) is not None
        assert store.delete_chat(theirs.id, OWNER_B) is True
        assert store.list_chats()[1] == 2

    # --- pending actions ------------------------------------------------------------------
    def test_a_pending_action_is_taken_once(self, store):
        chat = store.create_chat("x")
        other = store.create_chat("y")
        approve = store.add_pending(chat.id, "ingest", {"path": "/a", "prune": True})
        reject = store.add_pending(chat.id, "scan", {"path": "/b"})
        assert approve != reject and len(approve) >= 24
        assert {p.token for p in store.pending(chat.id)} == {approve, reject}
        assert store.pending(other.id) == []
        assert store.take_pending(other.id, approve, "approved") is None  # another chat's
        taken = store.take_pending(chat.id, approve, "approved")
        assert (taken.chat_id, taken.action, taken.input) == (chat.id, "ingest",
                                                              {"path": "/a", "prune": True})
        assert store.take_pending(chat.id, approve, "approved") is None
        assert store.take_pending(chat.id, reject, "rejected").action == "scan"
        assert store.take_pending(chat.id, "no-such-token", "approved") is None
        assert store.pending(chat.id) == []

    # --- history --------------------------------------------------------------------------
    def test_history_holds_the_newest_complete_turns(self, store):
        chat = store.create_chat("h")
        for i in range(3):
            self.turn(store, chat.id, f"question {i}", f"Answer {i}.")
        store.add_message(chat.id, "user", "cut off")
        store.add_message(chat.id, "assistant", "partial", status="interrupted")
        asked = store.add_message(chat.id, "user", "the next question", search_query="next q")
        h = store.history(chat.id, turns=5, budget_tokens=10_000, count_tokens=len,
                          summarise=rule_summary, before=asked)
        assert h.turns == tuple((f"question {i}", f"Answer {i}.") for i in range(3))
        assert h.summary == "" and h.last_query == "cut off"
        after = store.history(chat.id, turns=5, budget_tokens=10_000, count_tokens=len,
                              summarise=rule_summary)
        assert after.last_query == "next q"  # a user message's standalone query
        unknown = store.history("0" * 32, turns=5, budget_tokens=100, count_tokens=len,
                                summarise=rule_summary)
        assert (unknown.summary, unknown.turns, unknown.last_query) == ("", (), None)

    def test_older_turns_are_folded_into_a_saved_summary(self, store):
        chat = store.create_chat("h")
        for i in range(4):
            self.turn(store, chat.id, f"question {i}", f"Answer {i} here. Detail {i}.")
        h = store.history(chat.id, turns=1, budget_tokens=10_000, count_tokens=len,
                          summarise=rule_summary)
        assert h.turns == (("question 3", "Answer 3 here. Detail 3."),)
        assert h.summary == ("Q: question 0 A: Answer 0 here. | Q: question 1 A: Answer 1 "
                             "here. | Q: question 2 A: Answer 2 here.")
        assert store.get_chat(chat.id).summary == h.summary
        calls: list[object] = []
        again = store.history(chat.id, turns=1, budget_tokens=10_000, count_tokens=len,
                              summarise=lambda old, turns: calls.append(turns) or old)
        assert calls == [] and again == h  # folded once

    # --- durability -----------------------------------------------------------------------
    def test_everything_is_there_after_reopening(self, store):
        chat = store.create_chat("durable", owner=OWNER_A)
        mid = self.turn(store, chat.id, "How long?", "24 months [1].", sources=[{"n": 1}])
        token = store.add_pending(chat.id, "ingest", {"path": "/a"})
        for i in range(3):
            self.turn(store, chat.id, f"q{i}", f"a{i}.")
        folded = store.history(chat.id, turns=1, budget_tokens=10_000, count_tokens=len,
                               summarise=rule_summary)
        again = self.reopen(store)
        try:
            got = again.get_chat(chat.id, OWNER_A)
            assert (got.title, got.message_count, got.summary) == ("durable", 8, folded.summary)
            assert [m.id for m in again.messages(chat.id)][1] == mid
            assert again.messages(chat.id)[1].sources == [{"n": 1}]
            assert [p.token for p in again.pending(chat.id)] == [token]
            h = again.history(chat.id, turns=1, budget_tokens=10_000, count_tokens=len,
                              summarise=rule_summary)
            assert h == folded
            new = again.create_chat("after reopening")
            assert again.list_chats()[1] == 2 and new.id != chat.id
        finally:
            again.close()

    def test_opening_twice_migrates_once_and_both_see_the_data(self, store):
        chat = store.create_chat("shared")
        second = SessionStore(store.url)
        try:
            second.add_message(chat.id, "user", "from the second store")
            assert [m.content for m in store.messages(chat.id)] == ["from the second store"]
            assert second.get_chat(chat.id).title == "shared"
        finally:
            second.close()

    def test_search_folds_case_beyond_ascii(self, store):
        for title in ("École fees", "Straße map", "Ωmega plan"):
            store.create_chat(title)
        assert [c.title for c in store.list_chats(q="école")[0]] == ["École fees"]
        assert [c.title for c in store.list_chats(q="ÉCOLE")[0]] == ["École fees"]
        assert [c.title for c in store.list_chats(q="ωMEGA")[0]] == ["Ωmega plan"]
        assert store.list_chats(q="straße")[1] == 1
