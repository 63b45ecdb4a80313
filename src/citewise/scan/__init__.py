"""Contract scan: check a document against a playbook of rules (see docs/scan.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from citewise.errors import ConfigError

if TYPE_CHECKING:
    from citewise.engine import Engine


def scan_document(engine: Engine, document_id: str, playbook: str | Path = "default"
                  ) -> dict[str, Any]:
    """Scan an indexed document (by id) with ``playbook``; the JSON of ``citewise scan``.

    Raises ConfigError when no indexed document has that id or its file is gone.
    """
    doc = engine.store.document(document_id)
    if doc is None or not Path(doc.source_path).is_file():
        raise ConfigError(f"no indexed document with id {document_id!r} whose file still "
                          "exists; upload it again")
    return engine.scan(doc.source_path, playbook).to_json()


__all__ = ["scan_document"]
