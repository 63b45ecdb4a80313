"""m002_owner: the owner tag of each chat (a hash of the read key that created it; "" when
reading is open), so one key never lists, reads or continues another key's chats.

Revision ID: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("chats") as batch:
        batch.add_column(sa.Column("owner", sa.String(32), nullable=False, server_default=""))
    op.create_index("ix_chats_owner_updated", "chats", ["owner", "updated"])


def downgrade() -> None:
    op.drop_index("ix_chats_owner_updated", "chats")
    with op.batch_alter_table("chats") as batch:
        batch.drop_column("owner")
