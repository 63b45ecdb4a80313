"""m001_initial: chats, their messages, and actions waiting for approval.

Revision ID: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "chats",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("updated", sa.Float, nullable=False),
        sa.Column("summary", sa.Text, nullable=False, server_default=""),
        sa.Column("summarized_upto", sa.Integer, nullable=False, server_default="0"),
    )
    op.create_index("ix_chats_updated", "chats", ["updated"])
    op.create_table(
        "messages",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("chat_id", sa.String(32), sa.ForeignKey("chats.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("search_query", sa.Text, nullable=True),
        sa.Column("sources", sa.JSON, nullable=False),
        sa.Column("metrics", sa.JSON, nullable=False),
        sa.Column("created", sa.Float, nullable=False),
    )
    op.create_index("ix_messages_chat_id", "messages", ["chat_id", "id"])
    op.create_table(
        "pending_actions",
        sa.Column("token", sa.String(64), primary_key=True),
        sa.Column("chat_id", sa.String(32), sa.ForeignKey("chats.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("input", sa.JSON, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created", sa.Float, nullable=False),
    )
    op.create_index("ix_pending_actions_chat_id", "pending_actions", ["chat_id"])


def downgrade() -> None:
    op.drop_table("pending_actions")
    op.drop_table("messages")
    op.drop_table("chats")
