"""Whole-document coverage: how much of a document its summary cites.

For each file given, a fresh index of those files is built, "Summarize FILE" is asked with the
file pinned (``Engine.ask_stream(documents=[FILE])``), and the answer is scored by
:func:`citewise.answer.summarize.section_coverage`: the share of the document's sections (the
distinct section paths of its chunks) that the summary cites at least once. Also printed: how
it was read (sent whole, or the number of map-reduce parts), the document's tokens, the
summary's sentences, whether its citations follow document order (Kendall-style: the share of
consecutive cited pairs in order), and the time.

Usage::

    python benchmarks/wholedoc.py docs/install.md docs/index.md [--answerer extractive|local]
        [--model qwen2.5-coder-1.5b] [--threads 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path

from citewise.answer.summarize import section_coverage
from citewise.answer.wholedoc import document_evidence
from citewise.config import Settings
from citewise.engine import Engine
from citewise.types import DoneEvent


def in_order(cited: list[int]) -> float:
    """Share of consecutive cited numbers that go forward (1.0: document order)."""
    pairs = list(itertools.pairwise(cited))
    return sum(b >= a for a, b in pairs) / len(pairs) if pairs else 1.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--answerer", choices=["extractive", "local"], default="local")
    ap.add_argument("--model", default="")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as home:
        settings = Settings(home=Path(home),
                            llm_provider="none" if args.answerer == "extractive" else "local",
                            llm_model=args.model, llm_threads=args.threads, threads=args.threads,
                            llm_timeout=600.0)
        engine = Engine(settings)
        engine.ingest(args.files)
        for f in args.files:
            doc = next(d for d in engine.store.documents() if d.source_path.endswith(f.name))
            evidence = document_evidence(doc, engine.store.chunks_of(doc.id))
            t0 = time.perf_counter()
            answer = None
            for event in engine.ask_stream(f"Summarize {doc.path}", documents=[doc.id],
                                           extractive=args.answerer == "extractive"):
                if isinstance(event, DoneEvent):
                    answer = event.answer
            assert answer is not None
            seconds = time.perf_counter() - t0
            sections = {ev.chunk.section for ev in evidence}
            cited = list(answer.cited)
            row = {
                "file": doc.path, "chunks": len(evidence), "sections": len(sections),
                "document_tokens": sum(engine.embedder.count_tokens(ev.chunk.text)
                                       for ev in evidence),
                "mode": answer.mode, "fallback": answer.fallback_reason,
                "whole": answer.metrics.get("whole"), "parts": answer.metrics.get("parts"),
                "coverage": round(section_coverage(answer, evidence), 3),
                "in_order": round(in_order(cited), 3), "cited": cited,
                "seconds": round(seconds, 1), "text": answer.text,
            }
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "text"}), flush=True)
            print(answer.text, file=sys.stderr, flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
