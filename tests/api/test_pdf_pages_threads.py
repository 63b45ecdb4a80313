"""The source viewer's PDF pages from many threads at once (regression: the API's worker
threads rendered a page and searched another page's text in pdfium at the same time, and
pdfium, which is not thread-safe, crashed the server process with a segmentation fault)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_pages_rendered_and_searched_from_many_threads_do_not_crash(tmp_path):
    from fpdf import FPDF

    pdf = FPDF(format="letter")
    pdf.set_font("Helvetica", size=11)
    for n in range(4):
        pdf.add_page()
        pdf.multi_cell(0, 5, f"Page {n + 1}. The deposit is refundable until the end of May. " * 30)
    path = tmp_path / "pages.pdf"
    pdf.output(str(path))
    # in a process of its own: without the lock the crash ends the process, not the test run
    code = textwrap.dedent(f"""
        import threading
        from citewise.api.pdf_pages import render_png, text_boxes
        errors = []
        def work(i):
            try:
                for k in range(40):
                    page = (i + k) % 4 + 1
                    if (i + k) % 2:
                        assert render_png({str(path)!r}, page, scale=0.5).startswith(b"\\x89PNG")
                    else:
                        found = text_boxes({str(path)!r}, page, "The deposit is refundable")
                        assert found.boxes and found.page == page
            except Exception as err:
                errors.append(repr(err))
        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
        assert not errors, errors
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.strip() == "ok"
