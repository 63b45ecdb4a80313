"""Contract scan: check a document against a playbook of rules (see docs/scan.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from citewise.scan.scanner import ScanReport


class ScansDocuments(Protocol):
    """What :func:`scan_document` needs: :meth:`citewise.engine.Engine.scan_document`. A
    Protocol, so this package never imports the engine that wires it."""

    def scan_document(self, document_id: str, playbook: str | Path = "default") -> ScanReport:
        ...


def scan_document(engine: ScansDocuments, document_id: str, playbook: str | Path = "default"
                  ) -> dict[str, Any]:
    """Scan an indexed document (by id) with ``playbook`` where it is (nothing is
    re-ingested, moved or written); returns the JSON of ``citewise scan``.

    Raises NotFoundError when no indexed document has that id, DocumentError when its file
    is gone or changed since it was indexed.
    """
    return engine.scan_document(document_id, playbook).to_json()


__all__ = ["ScansDocuments", "scan_document"]
