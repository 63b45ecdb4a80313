"""Persisted chat sessions: chats, their messages, and actions waiting for approval.

Design. Three tables, reached through SQLAlchemy 2 so that the same code runs on the default
SQLite file (``$CITEWISE_HOME/sessions.sqlite3``) and on PostgreSQL (``CITEWISE_SESSIONS_URL=
postgresql://...``, the psycopg 3 driver; it may be the index's database):

- ``chats``: id (32 hex), title (the first question, cut to 80 characters), ``created`` and
  ``updated`` (Unix seconds), the rolling ``summary`` of the turns folded out of the
  prompt, up to message id ``summarized_upto``, and ``owner``, the tag of the read key that
  created it (:func:`citewise.api.auth.owner`; "" when reading is open). Methods taking
  ``owner`` see only that owner's chats; ``owner=None`` sees all.
- ``messages``: one row per user or assistant message, in id order. ``status`` is
  ``complete``, ``interrupted`` (the client left mid-answer: the partial text is kept),
  ``error`` or ``pending`` (an action waits for approval). A user message keeps the
  standalone ``search_query`` it was searched with (a rewritten follow-up); an assistant
  message keeps its ``sources`` (citations as JSON) and ``metrics``.
- ``pending_actions``: an INGEST or SCAN waiting for approval, found by its random
  ``token``; taken exactly once.
- ``feedback``: a reader's verdict on one assistant message: ``rating`` (1 up, -1 down, 0
  none), a ``comment``, and ``sources``, thumbs on single cited passages (chunk id -> 1 or
  -1). :meth:`SessionStore.training_examples` turns it into reranker training examples.

The schema is created and upgraded when a :class:`SessionStore` opens, by the migrations of
:mod:`citewise.chat.schema` (``0001``, ``0002``, ...), recorded in ``alembic_version`` as the
Alembic migrations of earlier versions did.

History for the prompt (:meth:`SessionStore.history`): the newest complete turns that fit
both ``history_turns`` and a token budget; older turns are folded into the chat's rolling
summary by a summariser (the LLM when one is configured, :func:`rule_summary` otherwise).
Follow-up questions are detected and rewritten into standalone queries by
:func:`is_follow_up` and :func:`rewrite_follow_up` (the rule) or :func:`rewrite_with_llm`.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from sqlalchemy import (
    JSON,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    create_engine,
    delete,
    event,
    func,
    select,
    update,
)
from sqlalchemy.engine import CursorResult
from sqlalchemy.engine import Engine as SAEngine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker
from sqlalchemy.sql.elements import ColumnElement

from citewise.answer.budget import SUMMARY_QUESTION
from citewise.answer.providers import ChatProvider
from citewise.chat import schema
from citewise.config import sqlalchemy_url
from citewise.errors import ProviderError
from citewise.store.migrations import run_migrations
from citewise.text.analysis import content_terms

Turn = tuple[str, str]  # (question, answer)
CountTokens = Callable[[str], int]
Summariser = Callable[[str, Sequence[Turn]], str]


class Base(DeclarativeBase):
    pass


class ChatRow(Base):
    __tablename__ = "chats"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    created: Mapped[float] = mapped_column(Float)
    updated: Mapped[float] = mapped_column(Float, index=True)
    summary: Mapped[str] = mapped_column(Text, default="")
    summarized_upto: Mapped[int] = mapped_column(Integer, default=0)
    owner: Mapped[str] = mapped_column(String(32), default="")


class MessageRow(Base):
    __tablename__ = "messages"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    chat_id: Mapped[str] = mapped_column(String(32), ForeignKey("chats.id", ondelete="CASCADE"))
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))
    search_query: Mapped[str | None] = mapped_column(Text, nullable=True)
    sources: Mapped[list[Any]] = mapped_column(JSON, default=list)
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created: Mapped[float] = mapped_column(Float)


class PendingRow(Base):
    __tablename__ = "pending_actions"

    token: Mapped[str] = mapped_column(String(64), primary_key=True)
    chat_id: Mapped[str] = mapped_column(String(32), ForeignKey("chats.id", ondelete="CASCADE"))
    action: Mapped[str] = mapped_column(String(16))
    input: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16))
    created: Mapped[float] = mapped_column(Float)


class FeedbackRow(Base):
    __tablename__ = "feedback"

    message_id: Mapped[int] = mapped_column(
        Integer, ForeignKey("messages.id", ondelete="CASCADE"), primary_key=True)
    chat_id: Mapped[str] = mapped_column(String(32), ForeignKey("chats.id", ondelete="CASCADE"))
    rating: Mapped[int] = mapped_column(Integer, default=0)
    comment: Mapped[str] = mapped_column(Text, default="")
    sources: Mapped[dict[str, int]] = mapped_column(JSON, default=dict)
    updated: Mapped[float] = mapped_column(Float)


@dataclass(frozen=True)
class Feedback:
    """A verdict on an assistant message: ``rating`` 1, -1 or 0, ``comment``, and
    ``sources`` (chunk id -> 1 or -1)."""

    message_id: int
    rating: int = 0
    comment: str = ""
    sources: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ChatInfo:
    id: str
    title: str
    created: float
    updated: float
    message_count: int
    summary: str = ""


@dataclass(frozen=True)
class MessageInfo:
    id: int
    role: str
    content: str
    status: str
    created: float
    search_query: str | None = None
    sources: list[Any] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PendingAction:
    token: str
    chat_id: str
    action: str
    input: dict[str, Any]


@dataclass(frozen=True)
class History:
    """What goes into the prompt: the rolling ``summary`` ("" when none), the newest complete
    ``turns`` (oldest first), and the last standalone question searched (None at first)."""

    summary: str
    turns: tuple[Turn, ...]
    last_query: str | None

    def for_prompt(self) -> tuple[Turn, ...]:
        """The turns, preceded by the summary as one pseudo-turn when there is one."""
        if not self.summary:
            return self.turns
        return ((SUMMARY_QUESTION, self.summary), *self.turns)


def migrate(engine: SAEngine) -> None:
    """Bring the sessions database to the newest schema (:mod:`citewise.chat.schema`) in one
    transaction; raises SQLAlchemy's errors (nothing changed then)."""
    with engine.begin() as conn:
        run_migrations(conn, schema.MIGRATIONS, schema.VersionTable())


def _fold(text: str | None) -> str | None:
    return None if text is None else text.casefold()


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    # SQLite's lower() folds ASCII letters only, so the chat search (ILIKE, which SQLite
    # runs as lower(x) LIKE lower(y)) missed "École" for "école": Python's case folding
    # replaces it on these connections
    dbapi_conn.create_function("lower", 1, _fold, deterministic=True)
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


class SessionStore:
    """Chats and messages in the database at ``url`` (a SQLAlchemy URL). Thread-safe: every
    method opens its own short transaction. Opening runs the migrations."""

    def __init__(self, url: str) -> None:
        if url.startswith("sqlite:///"):
            Path(url.removeprefix("sqlite:///")).expanduser().parent.mkdir(
                parents=True, exist_ok=True)
        self.url = url = sqlalchemy_url(url)
        self.engine = create_engine(url)
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        migrate(self.engine)
        self._session = sessionmaker(self.engine, expire_on_commit=False)
        self._fold_lock = threading.Lock()

    def close(self) -> None:
        self.engine.dispose()

    # --- chats ----------------------------------------------------------------------------
    def create_chat(self, title: str, owner: str = "") -> ChatInfo:
        now = time.time()
        title = " ".join(title.split())
        title = title if len(title) <= 80 else title[:79] + "…"
        row = ChatRow(id=uuid.uuid4().hex, title=title or "New chat", created=now, updated=now,
                      summary="", summarized_upto=0, owner=owner)
        with self._session() as s, s.begin():
            s.add(row)
        return ChatInfo(row.id, row.title, now, now, 0)

    def get_chat(self, chat_id: str, owner: str | None = None) -> ChatInfo | None:
        with self._session() as s:
            row = s.get(ChatRow, chat_id)
            if row is None or (owner is not None and row.owner != owner):
                return None
            count = s.scalar(select(func.count()).where(MessageRow.chat_id == chat_id)) or 0
            return ChatInfo(row.id, row.title, row.created, row.updated, count, row.summary)

    def list_chats(self, *, limit: int = 50, offset: int = 0, q: str | None = None,
                   owner: str | None = None) -> tuple[list[ChatInfo], int]:
        """Chats, most recently updated first, and the total that match ``q`` (a
        case-insensitive substring of the title: Unicode case folding on SQLite; on
        PostgreSQL ILIKE, which folds by the database's LC_CTYPE, ASCII only under C)."""
        counts = (select(MessageRow.chat_id, func.count().label("n"))
                  .group_by(MessageRow.chat_id).subquery())
        where: list[ColumnElement[bool]] = (
            [ChatRow.title.ilike(f"%{_escape_like(q)}%", escape="\\")] if q else [])
        if owner is not None:
            where.append(ChatRow.owner == owner)
        with self._session() as s:
            total = s.scalar(select(func.count()).select_from(ChatRow).where(*where)) or 0
            page = (select(ChatRow.id).where(*where)
                    .order_by(ChatRow.updated.desc(), ChatRow.id).limit(limit).offset(offset)
                    .subquery())
            rows = s.execute(
                select(ChatRow, func.coalesce(counts.c.n, 0))
                .join(page, page.c.id == ChatRow.id)
                .outerjoin(counts, counts.c.chat_id == ChatRow.id)
                .order_by(ChatRow.updated.desc(), ChatRow.id)
            ).all()
        return [ChatInfo(r.id, r.title, r.created, r.updated, n, r.summary) for r, n in rows], total

    def rename_chat(self, chat_id: str, title: str, owner: str | None = None) -> ChatInfo | None:
        """Give the chat ``title`` (spaces collapsed, cut to 200 characters; blank: "New
        chat"); None when there is no such chat of ``owner``'s. ``updated`` is kept, so a
        rename does not move the chat in the list."""
        if self.get_chat(chat_id, owner) is None:
            return None
        title = " ".join(title.split())[:200] or "New chat"
        with self._session() as s, s.begin():
            s.execute(update(ChatRow).where(ChatRow.id == chat_id).values(title=title))
        return self.get_chat(chat_id, owner)

    def delete_chat(self, chat_id: str, owner: str | None = None) -> bool:
        if owner is not None and self.get_chat(chat_id, owner) is None:
            return False
        with self._session() as s, s.begin():
            s.execute(delete(FeedbackRow).where(FeedbackRow.chat_id == chat_id))
            s.execute(delete(MessageRow).where(MessageRow.chat_id == chat_id))
            s.execute(delete(PendingRow).where(PendingRow.chat_id == chat_id))
            deleted = s.execute(delete(ChatRow).where(ChatRow.id == chat_id))
            return cast("CursorResult[Any]", deleted).rowcount > 0

    # --- messages -------------------------------------------------------------------------
    def add_message(self, chat_id: str, role: str, content: str, *, status: str = "complete",
                    search_query: str | None = None, sources: Sequence[Any] = (),
                    metrics: dict[str, Any] | None = None) -> int:
        """Append a message; returns its id. Touches the chat's ``updated``."""
        now = time.time()
        row = MessageRow(chat_id=chat_id, role=role, content=content, status=status,
                         search_query=search_query, sources=list(sources),
                         metrics=dict(metrics or {}), created=now)
        with self._session() as s, s.begin():
            s.add(row)
            s.execute(update(ChatRow).where(ChatRow.id == chat_id).values(updated=now))
            s.flush()
            return row.id

    def update_message(self, message_id: int, **values: Any) -> None:
        """Set ``content``, ``status``, ``search_query``, ``sources`` or ``metrics``."""
        with self._session() as s, s.begin():
            s.execute(update(MessageRow).where(MessageRow.id == message_id).values(**values))

    def messages(self, chat_id: str) -> list[MessageInfo]:
        with self._session() as s:
            rows = s.scalars(select(MessageRow).where(MessageRow.chat_id == chat_id)
                             .order_by(MessageRow.id)).all()
            return [MessageInfo(r.id, r.role, r.content, r.status, r.created, r.search_query,
                                list(r.sources or []), dict(r.metrics or {})) for r in rows]

    def truncate(self, chat_id: str, message_id: int) -> int:
        """Delete message ``message_id`` of ``chat_id`` and every later one (with their
        feedback and pending actions), as when a question is edited or an answer
        regenerated; returns how many messages went. The rolling summary is kept only while
        it covers no deleted message."""
        with self._session() as s, s.begin():
            ids = s.scalars(select(MessageRow.id).where(MessageRow.chat_id == chat_id,
                                                        MessageRow.id >= message_id)).all()
            if not ids:
                return 0
            s.execute(delete(FeedbackRow).where(FeedbackRow.message_id.in_(ids)))
            for p in s.scalars(select(PendingRow).where(PendingRow.chat_id == chat_id)).all():
                if int((p.input or {}).get("message_id", 0)) >= message_id:
                    s.delete(p)
            s.execute(delete(MessageRow).where(MessageRow.id.in_(ids)))
            chat = s.get(ChatRow, chat_id)
            if chat is not None and chat.summarized_upto >= message_id:
                chat.summary, chat.summarized_upto = "", 0
            return len(ids)

    # --- feedback -------------------------------------------------------------------------
    def set_feedback(self, chat_id: str, message_id: int, *, rating: int, comment: str = "",
                     sources: dict[str, int] | None = None) -> Feedback | None:
        """Record (or replace) the feedback on assistant message ``message_id`` of
        ``chat_id``; None when the chat has no such assistant message. ``sources`` keeps
        only chunk ids the message cites."""
        with self._session() as s, s.begin():
            msg = s.get(MessageRow, message_id)
            if msg is None or msg.chat_id != chat_id or msg.role != "assistant":
                return None
            cited = {str(c.get("chunk_id")) for c in msg.sources or [] if isinstance(c, dict)}
            kept = {k: (1 if v > 0 else -1) for k, v in (sources or {}).items()
                    if k in cited and v}
            row = s.get(FeedbackRow, message_id)
            if row is None:
                row = FeedbackRow(message_id=message_id, chat_id=chat_id)
                s.add(row)
            row.rating, row.comment, row.sources = rating, comment, kept
            row.updated = time.time()
        return Feedback(message_id, rating, comment, kept)

    def feedback(self, chat_id: str) -> dict[int, Feedback]:
        """The feedback on the chat's messages, by message id."""
        with self._session() as s:
            rows = s.scalars(select(FeedbackRow).where(FeedbackRow.chat_id == chat_id)).all()
            return {r.message_id: Feedback(r.message_id, r.rating, r.comment,
                                           dict(r.sources or {})) for r in rows}

    def training_examples(self, owner: str | None = None) -> list[dict[str, Any]]:
        """Reranker training examples from the feedback on chats of ``owner`` (None: all),
        in the shape ``citewise train-reranker --jsonl`` reads: ``{"query", "positive",
        "negative"}`` with chunk ids. The query is the question as it was searched (a
        rewritten follow-up's standalone form). A source with its own thumb goes where the
        thumb says; the other sources the answer cites follow the answer's thumb (up:
        positive, down: negative). Examples without a positive are left out (a question
        with only wrong passages teaches a reranker nothing it can rank against)."""
        query = (select(FeedbackRow, MessageRow)
                 .join(MessageRow, MessageRow.id == FeedbackRow.message_id)
                 .join(ChatRow, ChatRow.id == FeedbackRow.chat_id)
                 .order_by(FeedbackRow.message_id))
        if owner is not None:
            query = query.where(ChatRow.owner == owner)
        with self._session() as s:
            rows = s.execute(query).all()
            out = []
            for fb, msg in rows:
                question = s.scalars(
                    select(MessageRow).where(MessageRow.chat_id == msg.chat_id,
                                             MessageRow.id < msg.id, MessageRow.role == "user")
                    .order_by(MessageRow.id.desc()).limit(1)).first()
                if question is None:
                    continue
                cited = _cited_numbers(msg.content)
                positive: list[str] = []
                negative: list[str] = []
                for c in msg.sources or []:
                    chunk = str(c.get("chunk_id", "")) if isinstance(c, dict) else ""
                    if not chunk:
                        continue
                    vote = (fb.sources or {}).get(chunk)
                    if vote is None and c.get("n") in cited:
                        vote = fb.rating
                    if vote and vote > 0:
                        positive.append(chunk)
                    elif vote and vote < 0:
                        negative.append(chunk)
                if positive:
                    out.append({"query": question.search_query or question.content,
                                "positive": positive, "negative": negative})
        return out

    # --- pending actions ------------------------------------------------------------------
    def add_pending(self, chat_id: str, action: str, input: dict[str, Any]) -> str:
        """Record an action waiting for approval; returns its resume token."""
        token = secrets.token_urlsafe(24)
        with self._session() as s, s.begin():
            s.add(PendingRow(token=token, chat_id=chat_id, action=action, input=dict(input),
                             status="pending", created=time.time()))
        return token

    def pending(self, chat_id: str) -> list[PendingAction]:
        with self._session() as s:
            rows = s.scalars(select(PendingRow).where(PendingRow.chat_id == chat_id,
                                                      PendingRow.status == "pending")).all()
            return [PendingAction(r.token, r.chat_id, r.action, dict(r.input)) for r in rows]

    def take_pending(self, chat_id: str, token: str, status: str) -> PendingAction | None:
        """Mark the pending action ``token`` of ``chat_id`` as ``status`` (approved or
        rejected) and return it; None when there is none (unknown, or already taken)."""
        with self._session() as s, s.begin():
            done = cast("CursorResult[Any]", s.execute(
                update(PendingRow)
                .where(PendingRow.token == token, PendingRow.chat_id == chat_id,
                       PendingRow.status == "pending")
                .values(status=status)
            )).rowcount
            if not done:
                return None
            row = s.get(PendingRow, token)
            assert row is not None
            return PendingAction(row.token, row.chat_id, row.action, dict(row.input))

    # --- history --------------------------------------------------------------------------
    def history(self, chat_id: str, *, turns: int, budget_tokens: int,
                count_tokens: CountTokens, summarise: Summariser,
                before: int | None = None) -> History:
        """The history to send with the next question (see the module docstring).

        Complete (question, answer) pairs newer than the summary are kept newest first while
        they fit ``turns`` and ``budget_tokens`` (measured by ``count_tokens``, summary
        included); the older ones are folded into the rolling summary with ``summarise(old
        summary, turns) -> new summary``, which is saved. Only messages with an id below
        ``before`` count (the question being answered is not its own history).
        """
        with self._session() as s:
            chat = s.get(ChatRow, chat_id)
            if chat is None:
                return History("", (), None)
            summary, upto = chat.summary, chat.summarized_upto
            where = [MessageRow.chat_id == chat_id]
            if before is not None:
                where.append(MessageRow.id < before)
            rows = s.scalars(select(MessageRow).where(*where).order_by(MessageRow.id)).all()
        last_query = next((r.search_query or r.content for r in reversed(rows)
                           if r.role == "user"), None)
        pairs: list[tuple[int, Turn]] = []
        question: MessageRow | None = None
        for r in rows:
            if r.role == "user":
                question = r
            elif r.role == "assistant" and question is not None:
                if r.status == "complete" and r.id > upto:
                    pairs.append((r.id, (question.content, r.content)))
                question = None
        kept: list[tuple[int, Turn]] = []
        used = count_tokens(summary) if summary else 0
        for mid, (q, a) in reversed(pairs):
            cost = count_tokens(q) + count_tokens(a)
            if len(kept) >= turns or used + cost > budget_tokens:
                break
            kept.append((mid, (q, a)))
            used += cost
        kept.reverse()
        folded = pairs[: len(pairs) - len(kept)]
        if folded:
            with self._fold_lock:
                summary = summarise(summary, [t for _, t in folded])
                with self._session() as s, s.begin():
                    s.execute(update(ChatRow).where(ChatRow.id == chat_id)
                              .values(summary=summary, summarized_upto=folded[-1][0]))
        return History(summary, tuple(t for _, t in kept), last_query)


_CITATION = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")


def _cited_numbers(text: str) -> set[int]:
    """The source numbers ``[n]`` / ``[n, m]`` in an answer's text."""
    return {int(n) for m in _CITATION.finditer(text) for n in m.group(1).split(",")}


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# --- summaries ------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?。])\s")


def _first_sentence(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    first = _SENTENCE_END.split(text, maxsplit=1)[0]
    return first if len(first) <= limit else first[: limit - 1] + "…"


def rule_summary(summary: str, turns: Sequence[Turn], max_chars: int = 1200) -> str:
    """The rolling summary without an LLM: each folded turn as "Q: question A: first
    sentence of the answer", appended; the oldest text is dropped past ``max_chars``."""
    parts = [summary] if summary else []
    parts += [f"Q: {_first_sentence(q)} A: {_first_sentence(a)}" for q, a in turns]
    text = " | ".join(parts)
    return text if len(text) <= max_chars else "…" + text[-(max_chars - 1):]


SUMMARY_PROMPT = (
    "You summarise a conversation between a user and an assistant about the user's "
    "documents. Reply with the summary only: at most three sentences, plain text."
)
#: The request after the conversation (the 1.5B model, told only to summarise "for an
#: assistant that will continue it", wrote the conversation's next, invented turn instead).
SUMMARY_REQUEST = (
    "Summarise the conversation above: the questions the user asked and what the answers "
    "said, keeping names, numbers and dates. Do not continue the conversation."
)
_TURN_MARKER = re.compile(r"\b(?:User|Assistant|Q\d*|A\d*)\s*:", re.IGNORECASE)


def llm_summariser(provider: ChatProvider, max_tokens: int = 160) -> Summariser:
    """A summariser that asks ``provider``; on a ProviderError, or a reply that goes on with
    the conversation instead of summarising it (it writes "User:" or "Assistant:" turns), it
    falls back to :func:`rule_summary` (a summary is never worth failing a question for)."""

    def summarise(summary: str, turns: Sequence[Turn]) -> str:
        lines = [f"Earlier summary: {summary}"] if summary else []
        for q, a in turns:
            lines += [f"User: {q}", f"Assistant: {a}"]
        convo = "<conversation>\n" + "\n".join(lines) + "\n</conversation>"
        try:
            text = "".join(provider.stream(
                [{"role": "system", "content": SUMMARY_PROMPT},
                 {"role": "user", "content": f"{convo}\n\n{SUMMARY_REQUEST}"}],
                max_tokens=max_tokens, temperature=0.0))
        except ProviderError:
            return rule_summary(summary, turns)
        text = " ".join(text.split())
        if not text or _TURN_MARKER.search(text):
            return rule_summary(summary, turns)
        return text

    return summarise


# --- follow-up questions --------------------------------------------------------------------

_CONTINUATION = re.compile(
    r"^(and|but|or|also|so|then|what about|how about|and what about|and how about|"
    r"what of|same for|and for|and the)\b", re.IGNORECASE)
_ANAPHORA = re.compile(
    r"\b(it|its|it's|that|this|those|these|they|them|their|theirs|he|she|his|her|"
    r"the (first|second|third|last|other|former|latter|same)( one)?|one|ones)\b",
    re.IGNORECASE)
_WORD = re.compile(r"\w+")


def is_follow_up(query: str, last_query: str | None) -> bool:
    """Whether ``query`` leans on the previous question: there is one, and ``query`` is
    short (at most 8 words) and starts with a continuation ("and", "what about", ...) or
    refers back ("it", "that", "the second one", ...)."""
    if not last_query:
        return False
    words = _WORD.findall(query)
    if not words or len(words) > 8:
        return False
    text = query.strip()
    return bool(_CONTINUATION.match(text) or _ANAPHORA.search(text))


def rewrite_follow_up(query: str, last_query: str) -> str:
    """The rule: the previous standalone question followed by the follow-up, so both sets of
    terms reach the search ("How long is the warranty? and for batteries?")."""
    return f"{' '.join(last_query.split())} {' '.join(query.split())}"


REWRITE_PROMPT = (
    "You rewrite questions and never answer them. Rewrite the user's last message as one "
    "standalone question that can be understood without the conversation, keeping its "
    "meaning. Reply with the rewritten question only."
)


#: the least share of a rewrite's content terms that the user typed in this conversation
REWRITE_OWN_WORDS = 0.6


def usable_rewrite(text: str, query: str, questions: Sequence[str]) -> bool:
    """Whether ``text``, a model's rewrite of the follow-up ``query``, is a rewrite: at least
    :data:`REWRITE_OWN_WORDS` of its content terms are words of ``query`` or of the earlier
    ``questions`` (a rewrite restates what the user asked; the bundled 1.5B model often
    answered instead, copying a settings row with a made-up default: "Setting: min_score;
    ... Default: 0.5", which was then searched), it keeps a content term of ``query`` when
    ``query`` has one, and it is a question when ``query`` is one (ends with "?"). Measured
    on benchmarks/followups.py (docs/benchmarks.md)."""
    terms = content_terms(text)
    if not terms:
        return False
    own = set(content_terms(" ".join([*questions, query])))
    asked = set(content_terms(query))
    if sum(t in own for t in terms) < REWRITE_OWN_WORDS * len(terms):
        return False
    if asked and not asked & set(terms):
        return False
    return not query.rstrip().endswith("?") or text.rstrip().endswith("?")


def rewrite_with_llm(provider: ChatProvider, query: str, turns: Sequence[Turn],
                     last_query: str, max_tokens: int = 64) -> str:
    """The follow-up rewritten by ``provider``; the rule's rewrite when the provider fails
    or returns nothing usable (:func:`usable_rewrite`)."""
    # the conversation, then the task restated after it: asked only "User (last message):
    # ...", the bundled 1.5B model answered 8 of 24 follow-ups instead of rewriting them
    # (benchmarks/followups.py)
    lines = ["Conversation:"]
    for q, a in turns[-3:]:
        lines += [f"User: {q}", f"Assistant: {_first_sentence(a, 300)}"]
    lines += ["", f"Last message: {query}",
              "Rewrite the last message as a standalone question."]
    try:
        text = "".join(provider.stream(
            [{"role": "system", "content": REWRITE_PROMPT},
             {"role": "user", "content": "\n".join(lines)}],
            max_tokens=max_tokens, temperature=0.0))
    except ProviderError:
        return rewrite_follow_up(query, last_query)
    text = " ".join(text.split()).strip("\"'` ")
    questions = [q for q, _ in turns[-3:]] + [last_query]
    return (text if usable_rewrite(text, query, questions)
            else rewrite_follow_up(query, last_query))


__all__ = ["ChatInfo", "Feedback", "History", "MessageInfo", "PendingAction", "SessionStore",
           "is_follow_up", "llm_summariser", "migrate", "rewrite_follow_up",
           "rewrite_with_llm", "rule_summary", "usable_rewrite"]
