"""Conversations: intent routing, planning, the agent's event stream and persisted sessions."""
