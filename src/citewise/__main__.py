"""``python -m citewise``: the ``citewise`` command (what MCP clients spawn for stdio)."""

from citewise.cli import app

app(prog_name="citewise")
