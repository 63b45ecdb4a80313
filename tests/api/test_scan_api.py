"""POST /api/scan on a CUAD contract as PDF and DOCX, with the same checks as the CLI."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.scan.test_cli_scan import check_report, write_docx, write_pdf


def test_scan_endpoint_on_pdf_and_docx(make_app, tmp_path):
    app, engine = make_app()
    write_pdf(tmp_path / "contract.pdf")
    write_docx(tmp_path / "contract.docx")
    with TestClient(app, base_url="http://127.0.0.1") as c:
        for name, fmt, paged in (("contract.pdf", "pdf", True), ("contract.docx", "docx", False)):
            with (tmp_path / name).open("rb") as f:
                r = c.post("/api/scan", files={"file": (name, f)}, data={"playbook": "default"})
            assert r.status_code == 200, r.text
            check_report(r.json(), name, fmt, paged)
        assert {d.path for d in engine.store.documents()} == {"contract.pdf", "contract.docx"}
        r = c.post("/api/scan", files={"file": ("../../evil.txt", b"Governed by Mars law.")},
                   data={"playbook": "../default"})
        assert r.status_code == 422  # the playbook is a bundled name, never a path
        r = c.post("/api/scan", files={"file": ("x.exe", b"MZ")})
        assert r.status_code == 400 and "not accepted" in r.json()["detail"]
