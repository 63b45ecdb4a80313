"""Clause finding of ``citewise scan`` on CUAD: per clause type precision and recall.

For every contract of the chosen split (default ``eval``, 89 contracts never used to build or
tune the classifier; see :mod:`citewise.eval.cuad`) the real scanner runs end to end (ingest
into a fresh index, classify, check) with the playbook, and for each rule's clause type:

* the scanner *predicts* the type when its flag cites a clause it found with confidence
  (score at or above the type's threshold and not a bare heading: the flags that can say
  compliant or deviates; :func:`found_with_confidence`);
* a prediction is *correct* when the cited span shares a character with an annotated clause
  of that type in the contract;
* precision = correct / predicted; recall = correct / contracts annotated with the type;
* ``review`` P/R count every cited clause, the ``needs review`` flags of possible clauses
  (score between the review threshold and the threshold) too;
* ``verdicts`` counts the flags of each verdict, and ``not found`` among contracts that have
  the clause (a miss that a reader is told about).

``detect`` P/R counts only whether the type was reported at all in a contract that has it
(location ignored). Usage::

    CITEWISE_THREADS=1 python benchmarks/scan_cuad.py ../shared/datasets/cuad [--limit N]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from citewise.config import Settings
from citewise.engine import Engine
from citewise.eval.cuad import load_contracts, overlaps
from citewise.ingest.parsers.base import parser_for
from citewise.scan.classify import is_bare_heading
from citewise.scan.playbook import load_playbook
from citewise.scan.scanner import Flag
from citewise.types import Document


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 3) if b else None


def found_with_confidence(flag: Flag, text: str) -> bool:
    """Whether ``flag`` cites a clause found with confidence, one that may be judged
    compliant or deviating: a citation whose score reaches the type's threshold and whose span
    of ``text`` (the contract's extracted text) is not a bare heading. A heading-only flag
    carries the heading's score, which can reach the threshold, but its verdict is always
    ``needs review``; counting it made the end-to-end measure differ from the calibration's
    best-unit rule, which never cites a bare heading."""
    x = flag.citation
    return (x is not None and flag.score is not None and flag.threshold is not None
            and flag.score >= flag.threshold
            and not is_bare_heading(text[x.char_start:x.char_end]))


def evaluate(cuad: Path, split: str = "eval", limit: int = 0, playbook: str = "default",
             home: Path | None = None, progress: bool = False, ingest: bool = True,
             partial: Path | None = None) -> dict:
    """Per-type counts and ratios as a dict (see the module docstring); with ``partial``, the
    figures so far are rewritten to that JSON file after every contract."""
    contracts = load_contracts(cuad, split)
    if limit:
        contracts = contracts[:limit]
    book = load_playbook(playbook)
    types = list(dict.fromkeys(r.clause_type for r in book.rules))
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(Settings(home=home or Path(tmp)))
        scanner = engine.scanner(book)
        counts = {t: Counter() for t in types}
        verdicts: Counter = Counter()
        shifted = 0
        seconds = chars = 0.0
        for i, contract in enumerate(contracts, 1):
            started = time.perf_counter()
            if ingest:
                report = scanner.scan(contract.path)
            else:
                data = contract.path.read_bytes()
                parsed = parser_for(contract.path, data).parse(contract.path, data)
                doc = Document(id=contract.file, path=contract.file, source_path=str(contract.path),
                               title=contract.path.stem, format="text", content_hash="")
                report = scanner.check_document(doc, parsed)
            seconds += time.perf_counter() - started
            chars += len(contract.text())
            if any(lab.unit.text != contract.text()[lab.unit.start:lab.unit.end]
                   for lab in report.clauses):
                shifted += 1  # parsed offsets differ from the file's: spans would be off
            text = contract.text()  # the offsets index it (checked just above)
            for t in types:
                gold = contract.spans.get(t, [])
                flags = [f for f in report.flags if f.clause_type == t]
                every = [f.citation for f in flags if f.citation is not None]
                cited = [f.citation for f in flags
                         if f.citation is not None and found_with_confidence(f, text)]
                c = counts[t]
                c["gold"] += bool(gold)
                c["predicted"] += bool(cited)
                c["detected"] += bool(cited) and bool(gold)
                c["correct"] += any(overlaps((x.char_start, x.char_end), gold) for x in cited)
                c["review_predicted"] += bool(every)
                c["review_correct"] += any(overlaps((x.char_start, x.char_end), gold)
                                           for x in every)
                for f in flags:
                    verdicts[f.verdict.value] += 1
                    verdicts["not_found_with_clause"] += (f.verdict.value == "not_found"
                                                          and bool(gold))
            if progress:
                print(f"{i}/{len(contracts)} {contract.file[:60]}", file=sys.stderr, flush=True)
            if partial is not None:
                partial.write_text(json.dumps(_summary(counts, types, i, split, ingest, book.name,
                                                       seconds, chars, shifted, verdicts),
                                              indent=1))
    return _summary(counts, types, len(contracts), split, ingest, book.name, seconds, chars,
                    shifted, verdicts)


def _summary(counts: dict, types: list[str], n: int, split: str, ingest: bool, playbook: str,
             seconds: float, chars: float, shifted: int, verdicts: Counter) -> dict:
    rows = []
    for t in types:
        c = counts[t]
        rows.append({"clause_type": t, "contracts_with_clause": c["gold"],
                     "predicted": c["predicted"], "correct": c["correct"],
                     "precision": _ratio(c["correct"], c["predicted"]),
                     "recall": _ratio(c["correct"], c["gold"]),
                     "detect_precision": _ratio(c["detected"], c["predicted"]),
                     "detect_recall": _ratio(c["detected"], c["gold"]),
                     "review_precision": _ratio(c["review_correct"], c["review_predicted"]),
                     "review_recall": _ratio(c["review_correct"], c["gold"])})
    total = {k: sum(counts[t][k] for t in types)
             for k in ("gold", "predicted", "correct", "review_predicted", "review_correct")}
    return {"split": split, "ingest": ingest, "contracts": n, "playbook": playbook, "rows": rows,
            "micro_precision": _ratio(total["correct"], total["predicted"]),
            "micro_recall": _ratio(total["correct"], total["gold"]),
            "review_micro_precision": _ratio(total["review_correct"], total["review_predicted"]),
            "review_micro_recall": _ratio(total["review_correct"], total["gold"]),
            "verdicts": dict(verdicts),
            "seconds_per_contract": round(seconds / max(n, 1), 2),
            "seconds_per_10k_chars": round(seconds / max(chars, 1) * 10000, 2),
            "contracts_with_shifted_offsets": shifted}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cuad", type=Path)
    ap.add_argument("--split", default="eval", choices=["train", "calibrate", "eval"])
    ap.add_argument("--limit", type=int, default=0, help="first N contracts by name (0 = all)")
    ap.add_argument("--playbook", default="default")
    ap.add_argument("--no-ingest", action="store_true",
                    help="parse and classify only (no index, no chunk embeddings): same flags "
                    "without chunk ids, about half the time")
    ap.add_argument("--format", choices=["json", "markdown"], default="markdown")
    ap.add_argument("--partial", type=Path, help="rewrite the figures so far to this JSON file")
    args = ap.parse_args()
    result = evaluate(args.cuad, args.split, args.limit, args.playbook, progress=True,
                      ingest=not args.no_ingest, partial=args.partial)
    if args.format == "json":
        print(json.dumps(result, indent=1))
        return
    print(f"{result['contracts']} contracts ({result['split']}), playbook {result['playbook']}"
          f"{', no ingest' if args.no_ingest else ''}\n")
    print("| clause type | contracts with it | cited | correct | precision | recall | "
          "detect P | detect R | review P | review R |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
    for r in result["rows"]:
        print(f"| {r['clause_type']} | {r['contracts_with_clause']} | {r['predicted']} | "
              f"{r['correct']} | {fmt(r['precision'])} | {fmt(r['recall'])} | "
              f"{fmt(r['detect_precision'])} | {fmt(r['detect_recall'])} | "
              f"{fmt(r['review_precision'])} | {fmt(r['review_recall'])} |")
    print(f"\nmicro precision {fmt(result['micro_precision'])}, micro recall "
          f"{fmt(result['micro_recall'])}; with the needs-review citations: precision "
          f"{fmt(result['review_micro_precision'])}, recall "
          f"{fmt(result['review_micro_recall'])}; verdicts {result['verdicts']}; "
          f"{result['seconds_per_contract']} s per contract, "
          f"{result['seconds_per_10k_chars']} s per 10k characters; contracts with shifted "
          f"offsets: {result['contracts_with_shifted_offsets']}")


if __name__ == "__main__":
    main()
