"""The answer benchmark: is a cited answer right, rightly cited, honest, and fast?

One command (``python benchmarks/answers.py --split test``) asks every question of seven
collections, each over its own index, and prints one table with bootstrap 95% intervals.
Questions are split ``dev`` (tune on these) and ``test`` (held out: report, never tune); the
split of every question is fixed by the data or by a stable hash, never by run order.

* ``docs``: ``answer_questions/docs.jsonl`` (hand-written questions about citewise's own
  ``docs/``, answerable ones with gold key strings and the gold file and quote, unanswerable
  ones the docs do not answer; split by the file's ``split``), over an index of ``docs/``.
* ``code``: ``answer_questions/code.jsonl`` over one index of two installed packages, the
  folders of ``click`` and ``httpx`` (a row's ``package``, default ``click``; its ``file`` is
  relative to the folder holding the package); figures are also given per package.
* ``xquad-en`` / ``xquad-ru``: near-miss XQuAD (as ``benchmarks/abstention.py`` makes it).
  Article ``i`` of the file's ``data`` list: ``i % 4 == 0`` is RESERVED FOR TRAINING and never
  read here; ``i % 4 == 2`` is dev, odd ``i`` test. The index holds the even-numbered
  paragraphs of every other article (one ``.txt`` each, its title first); a question on a kept
  paragraph is answerable (gold: its answer texts and their character spans), one on a held-out
  paragraph unanswerable unless an answer text occurs in a kept paragraph (then it is left
  out). Per language and split, questions are taken in the order of sha1(question id):
  test 90 answerable + 30 unanswerable, dev 45 + 15.
* ``cuad``: all 141 LegalBench-RAG-mini CUAD questions (gold: character spans; split by
  sha1(query id) parity), plus clause questions written as a lawyer asks them, naming the
  agreement and its parties as LegalBench-RAG-mini does, over the same 22 contracts only
  (gold: the clause spans of ``cuad/clause_spans.dev.jsonl``): every annotated (contract,
  category) pair LegalBench does not already ask about, and 60 pairs whose category the
  contract lacks (unanswerable: the right answer is a decline), split by sha1(id) parity.
  Indexed: the 22 contracts. CUAD's other contracts are reserved for training.
* ``kazakh``: the 54 ``kazakh_legal_qa`` dev questions whose gold document is present (gold:
  their gold document, each indexed document cut to its first 4,000 characters, which hold
  the gold passage; 100 other documents of the corpus, the first non-gold ones by file order,
  are indexed beside them) and KazQAD validation questions (gold: the answer texts and spans of
  its reading-comprehension file; all 697 pool passages indexed), both split by sha1(id)
  parity, KazQAD's first 70 test and 35 dev questions in sha1 order.
* ``ru_legal_qa``: LegalBench-RU rows whose snippet was located in its code
  (``rag_data_located.jsonl``: match exact, whitespace_normalized or prefix_only; gold: that
  character span, a prefix-only one taken as long as its snippet), split by sha1(row) parity.
  Indexing is slow: the 4 MB of 4 codes took 9 minutes on 2 busy cores, so all 8 (12 MB)
  would take about 27; a fixed subset of 4 is indexed (``RU_LEGAL_CODES``: the
  consumer-protection and advertising laws, the civil procedure and labour codes) and only the
  questions over them are asked (the other four codes' rows are left out). The snippets are
  silver data: a question another article answers as well is judged by its one snippet.

Measured per collection (and per package or source where a collection has several), and over
all questions, each share with a bootstrap 95% interval (questions resampled with replacement,
1,000 resamples, fixed seed; the overall row resamples within each collection):

* ``right``: answerable questions: the answer is not "not found" and holds the gold fact (docs,
  code: every key string of one gold alternative, normalised: case, punctuation, articles;
  XQuAD, KazQAD: a gold answer text) or cites a passage overlapping the gold span (CUAD,
  LegalBench-RU) or the gold document (Kazakh legal); unanswerable questions: declined.
* ``right@1``: the same, judged on the first quoted unit only: the text before the answer's
  first citation mark ``[n]`` (the extractive answer quotes its best unit first, each unit
  followed by its ``[n]``), or for span golds the passage that first ``[n]`` names;
  unanswerable questions: declined.
* ``citation precision``: over answerable questions, of the passages an answer cites
  (``answer.cited``), the share that hold the gold (docs/code: the gold file with overlapping
  lines; the others: overlapping a gold span).
* ``declined (unanswerable)`` and ``declined (answerable)``: shares answered "not found".
* ``evidence recall``: answerable questions whose gold is among the passages a writer would get
  (``answer.citations``, the evidence list; a declined answer has none).
* ``s p50 / p95``: seconds of the ``Engine.ask`` call.

Indexes are cached under ``--home`` (one folder per collection and index-relevant settings),
so a rerun re-ingests only changed files. ``--set KEY=VALUE`` overrides a citewise setting for
the whole run; ``--compare KEY=VALUE`` runs a second configuration over the same questions (and
indexes, unless it changes an index setting such as the embedding model) and prints its table
and the paired difference of ``right`` (the same questions resampled for both).

Usage::

    python benchmarks/answers.py [--split dev|test|all] [--collections docs,code,...]
        [--answerers extractive,qwen2.5-coder-1.5b:pick-write] [--evidence sentences,passages]
        [--set KEY=VALUE ...] [--compare KEY=VALUE ...] [--threads 2] [--home DIR]
        [--json rows.json] [--limit 5] [--verbose]

Time (2 cores shared with another job, extractive): the first run builds the indexes in about
15 minutes (LegalBench-RU's 9 of them, Kazakh 3, docs, code and CUAD 1 each); asking the test
split's questions takes about 8 more (docs and CUAD about 1.3 s a question, XQuAD-en 0.4 s,
the others under 0.3 s); a rerun only asks.

An answerer is ``extractive`` (the default) or ``MODEL[:STYLE]`` (STYLE: write, pick,
pick-write), either with an optional ``@K``: at most K passages of evidence (``top_k``), e.g.
``qwen2.5-coder-1.5b:write@3``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import re
import statistics
import string
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from citewise.answer.grounding import check_support, citation_precision
from citewise.config import Settings
from citewise.embed import Embedder
from citewise.engine import Engine
from citewise.errors import AnalyzerMismatchError
from citewise.eval.jsonl import jsonl_values
from citewise.types import Answer, Citation

DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
QUESTIONS = Path(__file__).resolve().parent / "answer_questions"
ROOT = Path(__file__).resolve().parents[1]
COLLECTIONS = ("docs", "code", "xquad-en", "xquad-ru", "cuad", "kazakh", "ru_legal_qa")
CODE_PACKAGES = ("click", "httpx")
#: XQuAD questions per split: (answerable, unanswerable), per language
XQUAD_SAMPLE = {"test": (90, 30), "dev": (45, 15)}
CUAD_UNANSWERABLE = 60
KAZAKH_DISTRACTORS = 100
KAZAKH_CHARS = 4000  # the gold passage is each document's first 900-token chunk
KAZQAD_SAMPLE = {"test": 70, "dev": 35}
#: the LegalBench-RU codes indexed (file name prefixes); the other four are left out for time
RU_LEGAL_CODES = {"Закон РФ от 7 февраля 1992": "consumer protection law",
                  "Федеральный закон от 13 марта 2006": "advertising law",
                  "Гражданский процессуальный кодекс": "civil procedure code",
                  "Трудовой кодекс": "labour code"}
RU_LEGAL_LOCATED = ("exact", "whitespace_normalized", "prefix_only")
#: settings that change what an index holds: a configuration differing in one gets its own
INDEX_FIELDS = ("embedding_model", "embedding_precision", "chunk_tokens", "chunk_overlap",
                "ocr", "ocr_dpi", "max_file_mb", "max_pages")
SEED = 20260601
RESAMPLES = 1000

#: a lawyer's question per CUAD category; ``{ref}`` names the agreement and its parties
CLAUSE_QUESTIONS = {
    "Agreement Date": "What date was the {ref} entered into?",
    "Effective Date": "As of what date is the {ref} effective?",
    "Expiration Date": "When does the initial term of the {ref} end?",
    "Renewal Term": "Does the {ref} renew after its initial term, and for how long?",
    "Notice Period To Terminate Renewal":
        "How much notice must a party give to stop the {ref} from renewing?",
    "Governing Law": "Which jurisdiction's law governs the {ref}?",
    "Most Favored Nation": "Does the {ref} give a party most-favoured-nation terms?",
    "Non-Compete": "What non-compete restriction does the {ref} place on a party?",
    "Exclusivity": "What exclusivity does the {ref} grant?",
    "No-Solicit Of Customers": "Does the {ref} bar a party from soliciting the other's customers?",
    "No-Solicit Of Employees":
        "Does the {ref} prohibit hiring or soliciting the other party's employees?",
    "Non-Disparagement": "Does the {ref} oblige a party not to disparage the other?",
    "Termination For Convenience": "Can a party terminate the {ref} without cause?",
    "Rofr/Rofo/Rofn":
        "Does the {ref} give a party a right of first refusal, first offer or first negotiation?",
    "Change Of Control": "What happens under the {ref} if a party undergoes a change of control?",
    "Anti-Assignment": "May a party assign the {ref} without the other party's consent?",
    "Revenue/Profit Sharing": "How are revenues or profits shared under the {ref}?",
    "Price Restrictions": "Does the {ref} restrict a party's right to change its prices?",
    "Minimum Commitment": "What minimum purchase or payment does the {ref} commit a party to?",
    "Volume Restriction": "Does the {ref} limit the volume a party may buy or use?",
    "Ip Ownership Assignment": "Who owns the intellectual property created under the {ref}?",
    "Joint Ip Ownership": "Is any intellectual property jointly owned under the {ref}?",
    "License Grant": "What licence does the {ref} grant?",
    "Non-Transferable License": "Can the licensee transfer the licence granted by the {ref}?",
    "Affiliate License-Licensor": "Does the {ref} license rights held by the licensor's affiliates?",
    "Affiliate License-Licensee":
        "Does the licence under the {ref} extend to the licensee's affiliates?",
    "Irrevocable Or Perpetual License": "Is the licence under the {ref} perpetual or irrevocable?",
    "Source Code Escrow": "Does the {ref} require source code to be deposited in escrow?",
    "Post-Termination Services": "What must a party still do after the {ref} ends?",
    "Audit Rights": "Can a party audit the other's books or records under the {ref}?",
    "Uncapped Liability": "Which liabilities are left uncapped by the {ref}?",
    "Cap On Liability": "Is liability capped under the {ref}, and at what amount?",
    "Liquidated Damages": "What liquidated damages does the {ref} provide for?",
    "Warranty Duration": "How long does the warranty under the {ref} last?",
    "Insurance": "What insurance must a party carry under the {ref}?",
    "Covenant Not To Sue":
        "Does a party to the {ref} agree not to sue over or contest the other's rights?",
    "Third Party Beneficiary": "Does the {ref} give rights to a third-party beneficiary?",
}
#: categories whose absence from a contract makes a clean unanswerable question (no other
#: category's clause answers it: "uncapped liability" is answered by a cap, so it is not here)
CLAUSE_UNANSWERABLE = (
    "Most Favored Nation", "Non-Compete", "No-Solicit Of Customers", "No-Solicit Of Employees",
    "Non-Disparagement", "Rofr/Rofo/Rofn", "Change Of Control", "Revenue/Profit Sharing",
    "Price Restrictions", "Minimum Commitment", "Joint Ip Ownership", "Source Code Escrow",
    "Audit Rights", "Liquidated Damages", "Insurance", "Covenant Not To Sue",
)


def normalise(text: str) -> str:
    """SQuAD answer normalisation (lower case, no punctuation, no English articles)."""
    text = text.casefold()
    text = "".join(ch for ch in text if ch not in string.punctuation and ch not in "«»—–…")
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def stable(key: str) -> int:
    """A number fixed by ``key`` alone (sha1), for splits and samples that never move."""
    return int(hashlib.sha1(key.encode("utf-8")).hexdigest(), 16)


def half(key: str) -> str:
    """``test`` or ``dev``, by the parity of sha1(``key``)."""
    return "test" if stable(key) % 2 else "dev"


def write_if_changed(path: Path, text: str) -> None:
    """Writes ``text`` unless the file already holds it (an unchanged file is not re-read)."""
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@dataclass
class Collection:
    """What one collection indexes and asks. Each question is a dict: ``id``, ``question``,
    ``answerable``, ``split``, ``group`` (a package or source, "" for none), ``judge`` (``keys``:
    ``answers`` = alternatives of key strings, ``places`` = (file, first line, last line);
    ``text``: ``answers`` = answer texts, ``spans``; ``span``: ``spans`` only), ``spans`` =
    (file name, char start, char end) in the indexed file."""

    name: str
    paths: list[Path]
    items: list[dict[str, Any]]


# --- the collections ------------------------------------------------------------------------

def jsonl_items(name: str, split: str = "all") -> list[dict[str, Any]]:
    rows = list(jsonl_values(QUESTIONS / f"{name}.jsonl"))
    return [r for r in rows if split == "all" or r["split"] == split]


def gold_lines(root: Path, item: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(file, first line, last line) of each gold quote; ValueError naming the question when
    a quote is no longer in its file (the files changed: fix the question set)."""
    out = []
    for place in [{"file": item.get("file"), "quote": item.get("quote")}, *item.get("also", [])]:
        if not place.get("file"):
            continue
        text = (root / place["file"]).read_text(encoding="utf-8")
        at = text.find(place["quote"])
        if at < 0:
            raise ValueError(f"{item['id']}: its quote is no longer in {place['file']}")
        first = text.count("\n", 0, at) + 1
        out.append((place["file"], first, first + place["quote"].count("\n")))
    return out


#: questions left out of this run because their gold quote is no longer in its file
LEFT_OUT: list[str] = []


def keys_items(rows: Iterable[dict[str, Any]], root_of: dict[str, Path],
               default_group: str) -> list[dict[str, Any]]:
    """docs/code rows as questions. A row whose gold quote is no longer in its file (the
    files changed: fix the question set) is left out, named on stderr and in LEFT_OUT."""
    items = []
    for r in rows:
        group = r.get("package", default_group)
        try:
            places = gold_lines(root_of[group], r) if r["answerable"] else []
        except (ValueError, OSError) as err:
            LEFT_OUT.append(str(err))
            print(f"LEFT OUT {err}", file=sys.stderr)
            continue
        items.append({"id": r["id"], "question": r["question"], "answerable": r["answerable"],
                      "split": r["split"], "group": group if default_group else "",
                      "judge": "keys", "answers": r.get("answers") or [], "places": places})
    return items


def docs_collection() -> Collection:
    return Collection("docs", [ROOT / "docs"], keys_items(jsonl_items("docs"), {"": ROOT}, ""))


def code_collection() -> Collection:
    folders = {p: Path(importlib.import_module(p).__file__ or "").parent for p in CODE_PACKAGES}
    roots = {p: f.parent for p, f in folders.items()}
    return Collection("code", list(folders.values()),
                      keys_items(jsonl_items("code"), roots, CODE_PACKAGES[0]))


def xquad_collection(lang: str, files: Path) -> Collection:
    """Near-miss XQuAD over the kept paragraphs of the dev and test articles (module doc)."""
    raw = json.loads((DATASETS / "xquad" / f"xquad.{lang}.json").read_text(encoding="utf-8"))
    folder = files / f"xquad-{lang}"
    kept: list[str] = []
    questions = []
    for a, article in enumerate(raw["data"]):
        if a % 4 == 0:  # reserved for training
            continue
        split = "dev" if a % 4 == 2 else "test"
        title = str(article.get("title", "")).replace("_", " ")
        for p, para in enumerate(article["paragraphs"]):
            keep = p % 2 == 0
            name = f"a{a:02d}-p{p}.txt"
            offset = len(title) + 2
            if keep:
                write_if_changed(folder / name, f"{title}\n\n{para['context']}\n")
                kept.append(normalise(para["context"]))
            for qa in para["qas"]:
                answers = [x["text"] for x in qa["answers"]]
                spans = [(name, offset + x["answer_start"], offset + x["answer_start"]
                          + len(x["text"])) for x in qa["answers"]] if keep else []
                questions.append({"id": f"{lang}-{qa['id']}", "key": qa["id"],
                                  "question": qa["question"], "answerable": keep, "split": split,
                                  "group": "", "judge": "text", "answers": answers,
                                  "spans": spans})
    corpus = "\n".join(kept)
    # a held-out paragraph's question whose answer text is in a kept one may be answerable
    questions = [q for q in questions if q["answerable"]
                 or not any(normalise(x) in corpus for x in q["answers"])]
    items = []
    for split, (n_answerable, n_unanswerable) in XQUAD_SAMPLE.items():
        for answerable, n in ((True, n_answerable), (False, n_unanswerable)):
            bucket = [q for q in questions if q["split"] == split
                      and q["answerable"] == answerable]
            items += sorted(bucket, key=lambda q: stable(q["key"]))[:n]
    return Collection(f"xquad-{lang}", [folder], sorted(items, key=lambda q: stable(q["key"])))


def cuad_collection() -> Collection:
    """LegalBench-RAG-mini's CUAD questions and clause questions over the contracts they name."""
    tests = json.loads((DATASETS / "legalbench_rag_sample" / "cuad_spans.mini.dev.json")
                       .read_text(encoding="utf-8"))["tests"]
    items: list[dict[str, Any]] = []
    refs: dict[str, list[str]] = {}
    asked = set()
    for t in sorted(tests, key=lambda t: t["query_id"]):
        spans = [(s["file_path"].split("/", 1)[1], *s["span"]) for s in t["snippets"]]
        items.append({"id": t["query_id"], "question": t["query"], "answerable": True,
                      "split": half(t["query_id"]), "group": "legalbench", "judge": "span",
                      "spans": spans})
        for name, _, _ in spans:
            asked.add((name, t["cuad_category"]))
            ref = t["query"].split(";", 1)[0].removeprefix("Consider the ").strip()
            refs.setdefault(name, []).append(ref)
    contracts = sorted(refs)
    answerable, unanswerable = [], []
    for row in jsonl_values(DATASETS / "cuad" / "clause_spans.dev.jsonl"):
        name, category = row["contract_file"], row["category"]
        if name not in refs or category not in CLAUSE_QUESTIONS or (name, category) in asked:
            continue
        ref = statistics.mode(refs[name])
        key = f"cuad-clause-{hashlib.sha1(name.encode()).hexdigest()[:8]}-" + re.sub(
            r"[^a-z]+", "-", category.lower()).strip("-")
        item: dict[str, Any] = {"id": key, "question": CLAUSE_QUESTIONS[category].format(ref=ref),
                "answerable": bool(row["clauses"]), "split": half(key), "group": "clauses",
                "judge": "span", "spans": [(name, s, e) for c in row["clauses"]
                                           for s, e in (c.get("parts") or [[c["start"],
                                                                             c["end"]]])]}
        if row["clauses"]:
            answerable.append(item)
        elif category in CLAUSE_UNANSWERABLE:
            unanswerable.append(item)
    items += answerable
    items += sorted(unanswerable, key=lambda q: stable(q["id"]))[:CUAD_UNANSWERABLE]
    files = [DATASETS / "cuad" / "full_contract_txt" / name for name in contracts]
    return Collection("cuad", files, sorted(items, key=lambda q: stable(q["id"])))


def kazakh_collection(files: Path) -> Collection:
    """kazakh_legal_qa dev (gold document) and a KazQAD sample (gold answer texts)."""
    folder = DATASETS / "kazakh_legal_qa"
    questions = [q for q in json.loads((folder / "questions.dev.json").read_text(
        encoding="utf-8"))["questions"] if q["gold_passages"][0]["corpus_file_present"]]
    gold = {q["gold_passages"][0]["corpus_file"].strip() for q in questions}
    docs = list(jsonl_values(folder / "corpus.jsonl"))
    keep = [d for d in docs if d["doc_id"].strip() in gold]
    keep += [d for d in docs if d["doc_id"].strip() not in gold][:KAZAKH_DISTRACTORS]
    legal = files / "kazakh" / "legal"
    by_id = {}
    for i, d in enumerate(keep):
        name = f"legal-{i:03d}.txt"
        write_if_changed(legal / name, d["text"][:KAZAKH_CHARS])
        by_id[d["doc_id"].strip()] = name
    items: list[dict[str, Any]] = [
        {"id": f"kazakh-{q['id']}", "question": q["question"], "answerable": True,
         "split": half(f"kazakh-{q['id']}"), "group": "kazakh_legal_qa", "judge": "span",
         "spans": [(by_id[q["gold_passages"][0]["corpus_file"].strip()], 0, KAZAKH_CHARS)]}
        for q in questions]
    kazqad = files / "kazakh" / "kazqad"
    by_question: dict[str, dict[str, Any]] = {}
    path = DATASETS / "kazqad_val" / "kazqad-reading-comprehension-v1.0-kk-validation.jsonl"
    for row in jsonl_values(path):
        qid, passage = row["id"].split("#", 1)
        name = f"{passage}.txt"
        write_if_changed(kazqad / name, f"{row['title']}\n\n{row['context']}\n")
        offset = len(row["title"]) + 2
        q = by_question.setdefault(qid, {
            "id": f"kazqad-{qid}", "question": row["question"], "answerable": True,
            "split": half(f"kazqad-{qid}"), "group": "kazqad", "judge": "text", "answers": [],
            "spans": []})
        for text, start in zip(row["answers"]["text"], row["answers"]["answer_start"],
                               strict=True):
            q["answers"].append(text)
            q["spans"].append((name, offset + start, offset + start + len(text)))
    for split, n in KAZQAD_SAMPLE.items():
        items += sorted((q for q in by_question.values() if q["split"] == split),
                        key=lambda q: stable(q["id"]))[:n]
    return Collection("kazakh", [legal, kazqad], sorted(items, key=lambda q: stable(q["id"])))


def ru_legal_collection() -> Collection:
    """LegalBench-RU rows located in the indexed codes (RU_LEGAL_CODES)."""
    folder = DATASETS / "ru_legal_qa" / "corpus_files"
    files = sorted(f for f in folder.glob("*.txt") if f.name.startswith(tuple(RU_LEGAL_CODES)))
    names = {f.name for f in files}
    items = []
    for row in jsonl_values(DATASETS / "ru_legal_qa" / "rag_data_located.jsonl"):
        if row["match"] not in RU_LEGAL_LOCATED or row["source_file"] not in names:
            continue
        end = row["end"] if row["end"] is not None else row["start"] + len(row["snippet"])
        key = f"ru-legal-{row['row']:03d}"
        group = next(c for c in RU_LEGAL_CODES if row["source_file"].startswith(c))
        items.append({"id": key, "question": row["question"], "answerable": True,
                      "split": half(key), "group": RU_LEGAL_CODES[group], "judge": "span",
                      "spans": [(row["source_file"], row["start"], end)]})
    return Collection("ru_legal_qa", files, sorted(items, key=lambda q: stable(q["id"])))


def build_collections(wanted: Sequence[str], files: Path) -> list[Collection]:
    makers = {"docs": docs_collection, "code": code_collection,
              "xquad-en": lambda: xquad_collection("en", files),
              "xquad-ru": lambda: xquad_collection("ru", files),
              "cuad": cuad_collection, "kazakh": lambda: kazakh_collection(files),
              "ru_legal_qa": ru_legal_collection}
    return [makers[name]() for name in wanted]


# --- judging --------------------------------------------------------------------------------

def keys_match(text: str, answers: list[list[str]]) -> bool:
    norm = normalise(text)
    return any(all(normalise(k) in norm for k in alt) for alt in answers)


def says(text: str, item: dict[str, Any]) -> bool:
    """Whether ``text`` states the gold fact (keys or answer texts, normalised)."""
    if item["judge"] == "keys":
        return keys_match(text, item["answers"])
    norm = normalise(text)
    return any(normalise(a) in norm for a in item["answers"] if normalise(a))


def holds(c: Citation, item: dict[str, Any]) -> bool:
    """Whether the cited part ``c`` holds the gold: the gold file with overlapping lines
    (docs, code), else a character span overlapping a gold span of the same file."""
    if item["judge"] == "keys":
        return any(c.path.endswith(f) and c.line_start is not None
                   and c.line_start <= last and first <= (c.line_end or c.line_start)
                   for f, first, last in item["places"])
    return any(Path(c.path).name == name and c.char_start < end and start < c.char_end
               for name, start, end in item["spans"])


#: a citation mark as answers write it: "[1]", "[1, 2]", after a space or a line break
_MARK = re.compile(r"(?:^|(?<=\s))\[(\d+(?:\s*,\s*\d+)*)\]")


def first_unit(answer: Answer) -> tuple[str, int | None]:
    """The first quoted unit of ``answer``: its text before the first citation mark that
    names a cited passage, and that passage's number (None when nothing is cited)."""
    if not answer.found:
        return "", None
    for m in _MARK.finditer(answer.text):
        numbers = [int(x) for x in m.group(1).split(",")]
        if any(n in answer.cited for n in numbers):
            return answer.text[:m.start()], numbers[0]
    return answer.text, answer.cited[0] if answer.cited else None


def judge(answer: Answer, item: dict[str, Any]) -> dict[str, Any]:
    by_n = {c.n: c for c in answer.citations}
    cited = [by_n[n] for n in answer.cited if n in by_n]
    answerable = bool(item["answerable"])
    text1, n1 = first_unit(answer)
    first = by_n.get(n1) if n1 is not None else None
    if not answerable:
        right = right1 = not answer.found
    elif item["judge"] == "span":
        right = answer.found and any(holds(c, item) for c in cited)
        right1 = answer.found and first is not None and holds(first, item)
    else:
        right = answer.found and says(answer.text, item)
        right1 = answer.found and says(text1, item)
    if answer.mode == "extractive":
        support_share = 1.0 if answer.found else None
    else:
        support_share = citation_precision(answer.support)
    all_supported = answer.found and (answer.mode == "extractive" or (
        bool(answer.support) and all(x.supported for x in answer.support)))
    return {"right": bool(right), "right1": bool(right1), "answerable": answerable,
            "found": answer.found, "cited": len(cited),
            "cited_gold": sum(holds(c, item) for c in cited) if answerable else 0,
            "evidence": len(answer.citations),
            "evidence_gold": answerable and any(holds(c, item) for c in answer.citations),
            "supported": support_share,
            "wrong_supported": bool(answerable and answer.found and not right
                                    and all_supported)}


# --- running --------------------------------------------------------------------------------

def parse_pairs(pairs: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs as Settings fields (``CITEWISE_TOP_K`` or ``top-k`` name
    ``top_k``); a value starting with ``{`` or ``[`` is read as JSON, others as text that
    the Settings model converts."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--set/--compare takes KEY=VALUE, not {pair!r}")
        key = key.strip().lower().removeprefix("citewise_").replace("-", "_")
        out[key] = json.loads(value) if value.strip()[:1] in ("{", "[") else value
    return out


def configuration(home: Path, threads: int, overrides: dict[str, Any]) -> Settings:
    """The run's Settings (validated: an unknown key or a bad value stops the run)."""
    return Settings(**{"home": home, "threads": threads, "llm_threads": threads, **overrides})


def index_key(settings: Settings) -> str:
    values = {f: str(getattr(settings, f)) for f in INDEX_FIELDS}
    return hashlib.sha1(json.dumps(values, sort_keys=True).encode()).hexdigest()[:8]


class Runner:
    """Builds (or reuses) each collection's index per configuration and asks its questions."""

    def __init__(self, home: Path, answerers: list[str], evidence: list[str],
                 verbose: bool = False) -> None:
        self.home = home
        self.answerers = answerers
        self.evidence = evidence
        self.verbose = verbose
        self.embedders: dict[str, Embedder] = {}
        self.timing: dict[str, dict[str, float]] = {}

    def index(self, settings: Settings, coll: Collection) -> str:
        """The index path of ``coll`` under these settings, ingested (changed files only)."""
        key = index_key(settings)
        s = settings.model_copy(update={"home": self.home / "indexes" / f"{coll.name}-{key}",
                                        "store": "", "llm_provider": "none"})
        t0 = time.perf_counter()
        engine = Engine(s, embedder=self.embedders.get(key))
        try:
            report = engine.ingest(coll.paths, prune=True)
        except AnalyzerMismatchError:  # the text analysis changed since it was built
            engine.reindex()
            report = engine.ingest(coll.paths, prune=True)
        self.embedders.setdefault(key, engine.embedder)
        engine.store.close()
        seconds = time.perf_counter() - t0
        self.timing.setdefault(coll.name, {"index_s": 0.0, "ask_s": 0.0})["index_s"] += seconds
        failed = [f"{f.path} ({f.reason})" for f in report.files if f.status == "failed"]
        print(f"[{coll.name}] index {s.index_path}: {report.count('added')} added, "
              f"{report.count('updated')} updated, {report.count('unchanged')} unchanged, "
              f"{len(failed)} failed, {seconds:.1f} s", file=sys.stderr, flush=True)
        if failed:
            print(f"[{coll.name}] failed: {'; '.join(failed[:5])}", file=sys.stderr)
        return str(s.index_path)

    def engines(self, settings: Settings, store: str) -> dict[tuple[str, str], Engine]:
        out = {}
        embedder = self.embedders.get(index_key(settings))
        for name in self.answerers:
            for mode in self.evidence or [settings.evidence]:
                spec, _, k = name.partition("@")  # "model:style@3": at most 3 passages
                model, _, style = spec.partition(":")
                update: dict[str, Any] = {"store": store, "evidence": mode}
                if model == "extractive":
                    update["llm_provider"] = "none"
                else:
                    update.update(llm_provider="local", llm_model=model,
                                  answer_style=style or "write")
                if k:
                    update["top_k"] = int(k)
                out[(name, mode)] = Engine(settings.model_copy(update=update), embedder=embedder)
        return out

    def ask(self, config: str, settings: Settings, coll: Collection, store: str,
            items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        rows = []
        by_name = self.engines(settings, store)
        t_start = time.perf_counter()
        for i, item in enumerate(items, 1):
            for (name, mode), engine in by_name.items():
                t0 = time.perf_counter()
                answer = engine.ask(item["question"], extractive=name.startswith("extractive"))
                seconds = time.perf_counter() - t0
                if answer.mode == "llm" and not answer.support and answer.found:
                    answer = replace(answer, support=check_support(answer.text, ()))
                row = {"config": config, "collection": coll.name, "group": item["group"],
                       "id": item["id"], "split": item["split"], "question": item["question"],
                       "answerer": name, "evidence_mode": mode, "mode": answer.mode,
                       "fallback": answer.fallback_reason, "seconds": seconds,
                       "text": answer.text,
                       "cited_at": [c.location for c in answer.citations
                                    if c.n in answer.cited],
                       "answer_probability": answer.metrics.get("answer_probability"),
                       "floors_answer": answer.metrics.get("floors_answer"),
                       "first_token_ms": answer.metrics.get("llm_first_token_ms"),
                       "prompt_tokens": answer.metrics.get("prompt_tokens"),
                       **judge(answer, item)}
                rows.append(row)
                if self.verbose:
                    print(json.dumps({k: row[k] for k in (
                        "config", "collection", "id", "answerer", "right", "right1", "found",
                        "seconds")}), file=sys.stderr, flush=True)
            if not self.verbose and (i % 25 == 0 or i == len(items)):
                print(f"[{coll.name}] {config}: {i}/{len(items)} questions",
                      file=sys.stderr, flush=True)
        self.timing[coll.name]["ask_s"] += time.perf_counter() - t_start
        for engine in by_name.values():
            if "store" in engine.__dict__:
                engine.store.close()
        return rows


def run(collections: list[Collection], configs: dict[str, Settings], runner: Runner,
        split: str, limit: int | None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for coll in collections:
        items = [q for q in coll.items if split in ("all", q["split"])][:limit or None]
        if not items:
            continue
        stores: dict[str, str] = {}
        for config, settings in configs.items():
            key = index_key(settings)
            if key not in stores:
                stores[key] = runner.index(settings, coll)
            rows += runner.ask(config, settings, coll, stores[key], items)
    return rows


# --- summarising ----------------------------------------------------------------------------

MEASURES = ("right", "right@1", "citation precision", "declined (unanswerable)",
            "declined (answerable)", "evidence recall")


def ratios(rows: list[dict[str, Any]]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per measure, per question numerator and denominator (the measure is their sums' ratio)."""
    ans = np.array([r["answerable"] for r in rows], dtype=bool)
    found = np.array([r["found"] for r in rows], dtype=bool)
    one = np.ones(len(rows))
    return {
        "right": (np.array([r["right"] for r in rows], dtype=float), one),
        "right@1": (np.array([r["right1"] for r in rows], dtype=float), one),
        "citation precision": (np.array([r["cited_gold"] for r in rows], dtype=float) * ans,
                               np.array([r["cited"] for r in rows], dtype=float) * ans),
        "declined (unanswerable)": ((~found & ~ans).astype(float), (~ans).astype(float)),
        "declined (answerable)": ((~found & ans).astype(float), ans.astype(float)),
        "evidence recall": (np.array([r["evidence_gold"] for r in rows], dtype=float) * ans,
                            ans.astype(float)),
    }


def resample(strata: Sequence[np.ndarray]) -> np.ndarray:
    """RESAMPLES x N row indices: each stratum's questions drawn with replacement (fixed
    seed, so the same rows always give the same interval)."""
    rng = np.random.default_rng(SEED)
    return np.concatenate([s[rng.integers(0, len(s), (RESAMPLES, len(s)))] for s in strata],
                          axis=1)


def interval(num: np.ndarray, den: np.ndarray, idx: np.ndarray) -> list[float] | None:
    """[value, low, high]: the ratio of sums and its bootstrap 95% interval; None when the
    denominator is 0."""
    if den.sum() == 0:
        return None
    n, d = num[idx].sum(axis=1), den[idx].sum(axis=1)
    boot = n[d > 0] / d[d > 0]
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return [float(num.sum() / den.sum()), float(lo), float(hi)]


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def strata_of(rows: list[dict[str, Any]]) -> list[np.ndarray]:
    keys = [r["collection"] for r in rows]
    return [np.array([i for i, k in enumerate(keys) if k == c])
            for c in dict.fromkeys(keys)]


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per collection, per group of a collection with several, and ``all``."""
    out = []
    colls = list(dict.fromkeys(r["collection"] for r in rows))
    parts: list[tuple[str, list[dict[str, Any]]]] = []
    for coll in colls:
        rs = [r for r in rows if r["collection"] == coll]
        parts.append((coll, rs))
        groups = list(dict.fromkeys(r["group"] for r in rs))
        if len(groups) > 1:
            parts += [(f"{coll} / {g}", [r for r in rs if r["group"] == g]) for g in groups]
    if len(colls) > 1:
        parts.append(("all", rows))
    for name, rs in parts:
        idx = resample(strata_of(rs))
        seconds = [r["seconds"] for r in rs]
        out.append({"collection": name, "n": len(rs),
                    "unanswerable": sum(not r["answerable"] for r in rs),
                    **{m: interval(num, den, idx) for m, (num, den) in ratios(rs).items()},
                    "p50_s": _pct(seconds, 0.5), "p95_s": _pct(seconds, 0.95)})
    return out


def _cell(value: list[float] | None) -> str:
    return "-" if value is None else f"{value[0]:.2f} [{value[1]:.2f}, {value[2]:.2f}]"


def table(entries: list[dict[str, Any]]) -> str:
    out = ["| collection | n (unanswerable) | " + " | ".join(MEASURES) + " | s p50 / p95 |",
           "|---|---|" + "---|" * len(MEASURES) + "---|"]
    for e in entries:
        out.append(f"| {e['collection']} | {e['n']} ({e['unanswerable']}) | "
                   + " | ".join(_cell(e[m]) for m in MEASURES)
                   + f" | {e['p50_s']:.2f} / {e['p95_s']:.2f} |")
    return "\n".join(out)


def paired(base: list[dict[str, Any]], other: list[dict[str, Any]]) -> str:
    """The paired difference of ``right`` (other - base) per collection and over all, with a
    bootstrap interval from resampling the questions both answered."""
    by_key = {(r["collection"], r["id"]): r for r in base}
    pairs = [(by_key[(r["collection"], r["id"])], r) for r in other
             if (r["collection"], r["id"]) in by_key]
    out = ["| collection | n | right (base) | right (compare) | difference [95% interval] |",
           "|---|---|---|---|---|"]
    colls = list(dict.fromkeys(a["collection"] for a, _ in pairs))
    for coll in [*colls, *(["all"] if len(colls) > 1 else [])]:
        ps = [(a, b) for a, b in pairs if coll in ("all", a["collection"])]
        a = np.array([x["right"] for x, _ in ps], dtype=float)
        b = np.array([y["right"] for _, y in ps], dtype=float)
        idx = resample(strata_of([x for x, _ in ps]))
        diff = interval(b - a, np.ones(len(ps)), idx)
        assert diff is not None
        out.append(f"| {coll} | {len(ps)} | {a.mean():.2f} | {b.mean():.2f} | "
                   f"{diff[0]:+.3f} [{diff[1]:+.3f}, {diff[2]:+.3f}] |")
    return "\n".join(out)


def report(rows: list[dict[str, Any]], configs: dict[str, Settings],
           labels: dict[str, str]) -> tuple[str, list[dict[str, Any]]]:
    """The tables (Markdown) and the summary entries of every configuration x answerer x
    evidence mode."""
    text, entries = [], []
    runs = list(dict.fromkeys((r["answerer"], r["evidence_mode"]) for r in rows))
    for config in configs:
        for name, mode in runs:
            rs = [r for r in rows if r["config"] == config
                  and (r["answerer"], r["evidence_mode"]) == (name, mode)]
            if not rs:
                continue
            s = summary(rs)
            entries += [{"config": config, "answerer": name, "evidence": mode, **e} for e in s]
            text += [f"\n{labels[config]}, answerer {name}, evidence {mode}:\n", table(s)]
    if len(configs) > 1:
        base, other = list(configs)[:2]
        for name, mode in runs:
            pick = {c: [r for r in rows if r["config"] == c
                        and (r["answerer"], r["evidence_mode"]) == (name, mode)]
                    for c in (base, other)}
            text.append(f"\nPaired difference of right ({labels[other]} minus {labels[base]}), "
                        f"answerer {name}, evidence {mode}:\n")
            text.append(paired(pick[base], pick[other]))
    return "\n".join(text), entries


def counts(collections: list[Collection]) -> str:
    """Questions per collection (and group) and split: all (unanswerable)."""
    out = ["| collection | dev | test | all |", "|---|---|---|---|"]
    total = {"dev": [0, 0], "test": [0, 0], "all": [0, 0]}

    def cells(items: list[dict[str, Any]], add: bool) -> str:
        line = []
        for split in ("dev", "test", "all"):
            qs = [q for q in items if split in ("all", q["split"])]
            un = sum(not q["answerable"] for q in qs)
            if add:
                total[split][0] += len(qs)
                total[split][1] += un
            line.append(f"{len(qs)} ({un})")
        return " | ".join(line)

    for coll in collections:
        out.append(f"| {coll.name} | {cells(coll.items, True)} |")
        groups = list(dict.fromkeys(q["group"] for q in coll.items))
        if len(groups) > 1:
            out += [f"| {coll.name} / {g} | "
                    f"{cells([q for q in coll.items if q['group'] == g], False)} |"
                    for g in groups]
    out.append("| all | " + " | ".join(f"{n} ({u})" for n, u in total.values()) + " |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--answerers", default="extractive",
                    help="Comma-separated: extractive, MODEL[:STYLE][@K] (default: extractive).")
    ap.add_argument("--evidence", default="",
                    help="Comma-separated evidence modes: sentences,passages (default: the "
                         "configuration's).")
    ap.add_argument("--split", default="dev", choices=["dev", "test", "all"],
                    help="Which questions (dev: tune; test: held out).")
    ap.add_argument("--collections", default="",
                    help=f"Comma-separated subset of {','.join(COLLECTIONS)} (default: all).")
    ap.add_argument("--set", dest="overrides", action="append", default=[],
                    metavar="KEY=VALUE", help="A citewise setting for the whole run "
                    "(repeatable), e.g. --set top_k=3.")
    ap.add_argument("--compare", action="append", default=[], metavar="KEY=VALUE",
                    help="Also run a second configuration with these settings (repeatable) "
                         "and print the paired difference of right.")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--home", type=Path, default=Path.home() / ".citewise-bench",
                    help="Indexes and generated corpora (kept between runs).")
    ap.add_argument("--json", type=Path, help="Write every answer (one row per question).")
    ap.add_argument("--limit", type=int, default=None,
                    help="First N questions of each collection (a quick speed check).")
    ap.add_argument("--verbose", action="store_true", help="One line per answer (stderr).")
    ap.add_argument("--count", action="store_true",
                    help="Print the questions per collection and split, and stop.")
    args = ap.parse_args()
    wanted = [c for c in args.collections.split(",") if c] or list(COLLECTIONS)
    unknown = [c for c in wanted if c not in COLLECTIONS]
    if unknown:
        raise SystemExit(f"unknown collection(s) {unknown}; known: {', '.join(COLLECTIONS)}")
    started = time.perf_counter()
    base = parse_pairs(args.overrides)
    configs = {"base": configuration(args.home, args.threads, base)}
    labels = {"base": "base" + (f" ({' '.join(args.overrides)})" if args.overrides else "")}
    if args.compare:
        configs["compare"] = configuration(args.home, args.threads,
                                           {**base, **parse_pairs(args.compare)})
        labels["compare"] = f"compare ({' '.join(args.compare)})"
    collections = build_collections(wanted, args.home / "files")
    if args.count:
        print(counts(collections))
        return
    runner = Runner(args.home, [a for a in args.answerers.split(",") if a],
                    [e for e in args.evidence.split(",") if e], args.verbose)
    rows = run(collections, configs, runner, args.split, args.limit)
    if args.json:
        args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    text, _ = report(rows, configs, labels)
    print(f"Answer benchmark, split {args.split}"
          + (f", first {args.limit} questions of each collection" if args.limit else "") + ":")
    print(text)
    timing = ", ".join(f"{c} {t['index_s']:.0f} + {t['ask_s']:.0f}"
                       for c, t in runner.timing.items())
    print(f"\nSeconds (index + ask): {timing}; total {time.perf_counter() - started:.0f} s")
    if LEFT_OUT:
        print(f"\nLeft out, gold quote not found (fix the question set): {'; '.join(LEFT_OUT)}")


if __name__ == "__main__":
    main()
