"""Near-miss abstention: does citewise decline a question its documents almost answer?

An off-topic question is easy to decline: no sentence shares its words. The hard case is a
question about a topic the documents cover whose answer they do not hold ("Who founded
citewise?" over citewise's docs). This benchmark makes such questions from XQuAD, where every
article has about five paragraphs with questions on each:

* the collection holds about half of each article's paragraphs (those with an even index in
  the article), so each article's topic, names and vocabulary are indexed;
* a question on a held-out paragraph is **unanswerable**, unless its gold answer text occurs
  in a kept paragraph (then it is left out: the collection may answer it);
* a question on a kept paragraph is **answerable**; its answer is right when it holds a gold
  answer text (SQuAD normalisation), as in ``benchmarks/answers.py``.

Articles are split by their index in the file: even articles are ``dev`` (tune on them), odd
ones ``test`` (held out). Measured per language and split, with the extractive answer
(``llm_provider=none``, the default pipeline otherwise):

* ``declined (unanswerable)``: share of unanswerable questions answered "not found" (higher
  is better);
* ``declined (answerable)``: share of answerable questions declined (lower is better);
* ``accuracy (answerable)``: share of answerable questions answered with a gold answer text;
* ``wrong & cited``: answers given to unanswerable questions, with their citations.

``--features FILE`` also writes, per question, what the abstention rule reads (the best
candidates' scores, cosine, coverage), for studying a rule on the dev split.

Usage::

    python benchmarks/abstention.py [--langs en,ru] [--split dev|test|all] [--step 3]
        [--home /tmp/abst] [--features features.jsonl]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parent)]

from answers import DATASETS, normalise  # noqa: E402

from citewise.answer.selection import name_terms, unknown_names  # noqa: E402
from citewise.config import Settings  # noqa: E402
from citewise.engine import Engine  # noqa: E402


def holes(lang: str, folder: Path, step: int) -> list[dict[str, Any]]:
    """Writes the kept paragraphs of XQuAD ``lang`` into ``folder`` (one ``.txt`` file each,
    titled by their article) and returns every ``step``-th question:
    ``{"id", "question", "answers", "answerable", "split", "gold_file"}``."""
    raw = json.loads((DATASETS / "xquad" / f"xquad.{lang}.json").read_text(encoding="utf-8"))
    folder.mkdir(parents=True, exist_ok=True)
    kept_text: list[str] = []
    questions = []
    for a, article in enumerate(raw["data"]):
        split = "dev" if a % 2 == 0 else "test"
        for p, para in enumerate(article["paragraphs"]):
            keep = p % 2 == 0
            name = f"a{a:02d}-p{p}.txt"
            if keep:
                (folder / name).write_text(f"{article.get('title', '')}\n\n{para['context']}\n",
                                           encoding="utf-8")
                kept_text.append(normalise(para["context"]))
            for qa in para["qas"]:
                questions.append({"id": qa["id"], "question": qa["question"],
                                  "answers": [x["text"] for x in qa["answers"]],
                                  "answerable": keep, "split": split,
                                  "gold_file": name if keep else None})
    corpus = "\n".join(kept_text)
    # a held-out paragraph's question whose answer text is in a kept one may be answerable
    out = [q for q in questions if q["answerable"]
           or not any(normalise(x) in corpus for x in q["answers"])]
    return out[::step]


def features(engine: Engine, question: str) -> dict[str, Any]:
    """What the abstention rule reads for ``question``: names no document holds, and the
    best three candidates' score, cosine, coverage and answer_coverage (abstain off)."""
    service = engine.answers
    _, name_df = engine.store.term_document_frequencies(name_terms(question))
    result = engine.search_evidence(question)
    quiet = service.settings.model_copy(update={"abstain": False})
    service.settings, saved = quiet, service.settings
    try:
        reading = service.read(question, result)
    finally:
        service.settings = saved
    return {"missing_names": unknown_names(question, name_df),
            "hits": len(result.hits),
            "top": [{"score": s.score, "cosine": s.cosine, "coverage": s.coverage,
                     "answer_coverage": s.answer_coverage, "kind": s.candidate.kind,
                     "text": s.candidate.text[:300]} for s in reading.ranked[:3]]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--langs", default="en,ru")
    ap.add_argument("--split", choices=["dev", "test", "all"], default="dev")
    ap.add_argument("--step", type=int, default=3, help="Every STEP-th question.")
    ap.add_argument("--home", type=Path, default=Path("/tmp/citewise-abstention"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--features", type=Path, help="Write per-question features (JSONL).")
    args = ap.parse_args()
    rows = []
    out = args.features.open("w", encoding="utf-8") if args.features else None
    for lang in args.langs.split(","):
        home = args.home / lang
        items = holes(lang, home / "files", args.step)
        items = [q for q in items if args.split in ("all", q["split"])]
        settings = Settings(home=home, llm_provider="none", threads=args.threads,
                            **({"embedding_model": "e5"} if lang != "en" else {}))
        engine = Engine(settings)
        engine.ingest([home / "files"])
        for q in items:
            answer = engine.ask(q["question"], extractive=True)
            right = answer.found and any(normalise(x) in normalise(answer.text)
                                         for x in q["answers"])
            row = {"lang": lang, **q, "found": answer.found, "right": right,
                   "text": answer.text[:400]}
            rows.append(row)
            if out is not None:
                out.write(json.dumps({**row, **features(engine, q["question"])},
                                     ensure_ascii=False) + "\n")
        engine.store.close()
    print("| language | split | unanswerable | declined (unanswerable) | answerable | "
          "declined (answerable) | accuracy (answerable) |")
    print("|---|---|---|---|---|---|---|")
    for lang in args.langs.split(","):
        for split in ("dev", "test"):
            rs = [r for r in rows if r["lang"] == lang and r["split"] == split]
            if not rs:
                continue
            un = [r for r in rs if not r["answerable"]]
            an = [r for r in rs if r["answerable"]]
            print(f"| {lang} | {split} | {len(un)} | "
                  f"{sum(not r['found'] for r in un) / max(1, len(un)):.2f} | {len(an)} | "
                  f"{sum(not r['found'] for r in an) / max(1, len(an)):.2f} | "
                  f"{sum(r['right'] for r in an) / max(1, len(an)):.2f} |")


if __name__ == "__main__":
    main()
