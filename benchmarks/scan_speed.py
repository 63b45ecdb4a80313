"""How long ``citewise scan`` takes on a short and a long contract (issue 25: a 3-page contract
in under 10 s, a 50-page one in under 60 s, on 2 cores).

Each contract is scanned end to end, as ``citewise scan FILE`` does it, into a fresh index
in a temporary home: ``Engine.scan`` with the ``default`` playbook and a progress callback
that prints each step as it starts. The first scan of the process also loads the embedding
model and the clause finder (``load``), as a fresh ``citewise scan`` does; the later ones
find them loaded. Printed per contract: characters, pages at 3,000 characters a page, clause
units, each step's milliseconds, the wall time, and the load average before and after.

The contracts (CUAD v1 eval split text files, the same in every run):

* 3 pages: the co-branding agreement of docs/scan.md (8,321 characters);
* 50 pages: ``IMMUNOMEDICSINC_08_07_2019-EX-10.1-PROMOTION AGREEMENT.txt`` (154,812
  characters, 52 pages of 3,000).

Usage::

    python benchmarks/scan_speed.py ../shared/datasets/cuad [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from citewise.config import Settings
from citewise.engine import Engine
from citewise.ingest.parsers.base import parser_for
from citewise.scan.classify import document_units

CONTRACTS = {
    "3 pages": "MphaseTechnologiesInc_20030911_10-K_EX-10.15_1560667_EX-10.15_Co-Branding "
               "Agreement.txt",
    "50 pages": "IMMUNOMEDICSINC_08_07_2019-EX-10.1-PROMOTION AGREEMENT.txt",
}
CHARS_PER_PAGE = 3000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cuad", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(Settings(home=Path(tmp) / "home"))
        for name, file in CONTRACTS.items():
            path = Path(tmp) / file.replace(" ", "_")
            shutil.copyfile(args.cuad / "full_contract_txt" / file, path)
            data = path.read_bytes()
            text = parser_for(path, data).parse(path, data)
            units = len(document_units(text))
            load_before = os.getloadavg()[0]
            started = time.perf_counter()

            def progress(step: str, done: int, total: int, t0: float = started) -> None:
                print(f"  {time.perf_counter() - t0:6.1f} s  {done}/{total} {step}",
                      file=sys.stderr, flush=True)

            print(f"{name}: {file}", file=sys.stderr, flush=True)
            report = engine.scan(path, "default", progress=progress)
            wall = time.perf_counter() - started
            rows.append({"contract": name, "file": file, "chars": len(text.text),
                         "pages": round(len(text.text) / CHARS_PER_PAGE),
                         "units": units, "chunks": report.document.chunk_count,
                         "wall_s": round(wall, 2),
                         "timings_ms": {k: round(v) for k, v in report.timings_ms.items()},
                         "load_before": round(load_before, 2),
                         "load_after": round(os.getloadavg()[0], 2)})
            print(json.dumps(rows[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
