"""Training examples for the answer-sentence scorer: a question, the units (sentences) that
answer it, and units of the same section or document that do not (near misses).

Answer sentence selection (Wang et al., "What is the Jeopardy Model?", EMNLP 2007; Garg et
al., "TANDA", AAAI 2020) asks which sentence of a short list answers a question. The scorer
citewise ships (:mod:`citewise.answer.scorer`) is a cross-encoder trained on that task, so
that a sentence is ranked for answering the question, not for sharing its words. Every unit
is formatted as the scorer reads it at query time (:func:`citewise.retrieve.rerank.unit_text`:
its innermost section heading, then its text).

Sources and the splits used (only training parts; the rest is for development and tests):

* :func:`trecqa_examples`: TREC-QA ``train-all-filtered.jsonl.gz`` (1,161 questions, labels
  automatic); ``dev-filtered.jsonl`` is the development set, ``test-filtered.jsonl`` unused.
* :func:`selqa_examples`: SelQA ``selqa-ass-test.json`` (1,590 questions; the upstream train
  file is not in the dataset folder), with ``selqa-ass-dev.json`` as the development set.
* :func:`cuad_examples`: CUAD v1 clause spans (``clause_spans.dev.jsonl``) of the contracts
  that LegalBench-RAG-mini does NOT name (those are the answer benchmark's), one lawyer's
  question per clause category (:data:`CUAD_QUESTIONS`), half of them naming the agreement and
  its parties (the words a footer or a preamble repeats), positives the sentences overlapping
  a labelled span.
* :func:`xquad_sentence_examples`: XQuAD-en articles ``i % 4 == 0`` (the answer benchmark uses
  the others), positive the sentence holding the gold answer's start.

Near misses (:func:`with_near_misses`): the question itself restated (an FAQ line, a log of
questions) and the unit's own heading are added as negatives, since both share every word of
the question and answer nothing.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from citewise.ingest.chunking import sentences
from citewise.retrieve.rerank import unit_text
from citewise.text.analysis import tokenize
from citewise.train.data import Example

MAX_UNIT_CHARS = 600
"""Units are cut here, as :mod:`citewise.answer.selection` cuts its candidates."""
HARD_NEGATIVES = 10
"""Negatives kept per question: the ones sharing most of the question's terms."""
RANDOM_NEGATIVES = 4
"""Further negatives drawn at random from the rest, so easy ones are seen too."""

#: One question per CUAD clause category, written the way a lawyer asks it. ``{doc}`` is
#: replaced by "this agreement" or by the agreement's name and parties.
CUAD_QUESTIONS: dict[str, str] = {
    "Agreement Date": "What is the date of {doc}?",
    "Effective Date": "When does {doc} become effective?",
    "Expiration Date": "When does {doc} expire?",
    "Renewal Term": "Does {doc} renew automatically, and for how long?",
    "Notice Period To Terminate Renewal": "How much notice is needed to stop {doc} from renewing?",
    "Governing Law": "Which law governs {doc}?",
    "Most Favored Nation": "Is there a most favoured nation clause in {doc}?",
    "Competitive Restriction Exception": "What exceptions are there to the non-compete or "
                                         "exclusivity restrictions in {doc}?",
    "Non-Compete": "Is a party restricted from competing under {doc}?",
    "Exclusivity": "Is the relationship under {doc} exclusive?",
    "No-Solicit Of Customers": "May a party solicit the other's customers under {doc}?",
    "No-Solicit Of Employees": "Can a party hire the other's employees under {doc}?",
    "Non-Disparagement": "Does {doc} forbid disparaging the other party?",
    "Termination For Convenience": "Can a party terminate {doc} for convenience?",
    "Rofr/Rofo/Rofn": "Is there a right of first refusal or first offer in {doc}?",
    "Change Of Control": "What happens under {doc} on a change of control?",
    "Anti-Assignment": "Can {doc} be assigned without consent?",
    "Revenue/Profit Sharing": "How are revenues or profits shared under {doc}?",
    "Price Restrictions": "Are there restrictions on raising or lowering prices in {doc}?",
    "Minimum Commitment": "What minimum purchase or volume commitment does {doc} set?",
    "Volume Restriction": "Is there a cap on the volume under {doc}?",
    "Ip Ownership Assignment": "Who owns the intellectual property created under {doc}?",
    "Joint Ip Ownership": "Is any intellectual property jointly owned under {doc}?",
    "License Grant": "What licence is granted under {doc}?",
    "Non-Transferable License": "Is the licence under {doc} transferable?",
    "Affiliate License-Licensor": "Can the licensor's affiliates license under {doc}?",
    "Affiliate License-Licensee": "Are the licensee's affiliates covered by the licence in {doc}?",
    "Unlimited/All-You-Can-Eat-License": "Is the licence in {doc} unlimited in use?",
    "Irrevocable Or Perpetual License": "Is the licence under {doc} perpetual or irrevocable?",
    "Source Code Escrow": "Is source code held in escrow under {doc}?",
    "Post-Termination Services": "What must a party do after {doc} terminates?",
    "Audit Rights": "Does a party have the right to audit the other under {doc}?",
    "Uncapped Liability": "Is any liability under {doc} uncapped?",
    "Cap On Liability": "What is the cap on liability under {doc}?",
    "Liquidated Damages": "Are there liquidated damages in {doc}?",
    "Warranty Duration": "How long is the warranty period under {doc}?",
    "Insurance": "What insurance must a party carry under {doc}?",
    "Covenant Not To Sue": "Is there a covenant not to sue in {doc}?",
    "Third Party Beneficiary": "Are there third-party beneficiaries of {doc}?",
}

_PTB = [(" -LRB- ", " ("), (" -RRB- ", ") "), ("-LRB-", "("), ("-RRB-", ")"), ("`` ", '"'),
        (" ''", '"'), (" 's", "'s"), (" n't", "n't"), (" ,", ","), (" .", "."), (" ;", ";"),
        (" :", ":"), (" ?", "?"), (" %", "%"), ("$ ", "$")]


def _detokenize(text: str) -> str:
    """TREC-QA's Penn Treebank tokens back to plain text (``-LRB-`` -> ``(``, `` ,`` -> ``,``)."""
    for a, b in _PTB:
        text = text.replace(a, b)
    return " ".join(text.split())


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_UNIT_CHARS else text[:MAX_UNIT_CHARS].rsplit(" ", 1)[0]


def _stable_seed(*parts: str) -> int:
    return int(hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:8], 16)


def pick_negatives(question: str, negatives: Sequence[str], *, hard: int = HARD_NEGATIVES,
                   easy: int = RANDOM_NEGATIVES) -> tuple[str, ...]:
    """The ``hard`` negatives sharing most of the question's analysed terms (ties: text
    order), then ``easy`` more drawn at random from the rest (seeded by the question, so the
    choice is the same on every run)."""
    terms = set(tokenize(question))
    unique = list(dict.fromkeys(n for n in negatives if n.strip()))
    order = sorted(range(len(unique)),
                   key=lambda i: (-len(terms & set(tokenize(unique[i]))), i))
    chosen = [unique[i] for i in order[:hard]]
    rest = [unique[i] for i in order[hard:]]
    rng = random.Random(_stable_seed(question))
    chosen += rng.sample(rest, min(easy, len(rest)))
    return tuple(chosen)


def trecqa_examples(path: str | Path, limit: int = 0) -> list[Example]:
    """TREC-QA JSONL (``.gz`` read too): one example per question with a positive and a
    negative; sentences detokenised."""
    opener = gzip.open if str(path).endswith(".gz") else open
    out = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            q = _detokenize(row["question"])
            pos = [_cut(_detokenize(c["sentence"])) for c in row["candidates"] if c["label"]]
            neg = [_cut(_detokenize(c["sentence"])) for c in row["candidates"] if not c["label"]]
            if pos and neg:
                out.append(Example(q, tuple(dict.fromkeys(pos))[:3], pick_negatives(q, neg),
                                   "trecqa"))
    return out[:limit] if limit else out


def selqa_examples(path: str | Path, limit: int = 0) -> list[Example]:
    """SelQA answer-sentence-selection JSON: the candidates are one Wikipedia section's
    sentences, each read with the section's name as its heading."""
    out = []
    for row in json.loads(Path(path).read_text(encoding="utf-8")):
        section = row.get("section") or ""
        units = [unit_text(section, _cut(c)) for c in row["candidates"]]
        answers = set(row["answers"])
        pos = [u for i, u in enumerate(units) if i in answers]
        neg = [u for i, u in enumerate(units) if i not in answers]
        if pos and neg:
            out.append(Example(row["question"], tuple(pos[:3]),
                               pick_negatives(row["question"], neg), "selqa"))
    return out[:limit] if limit else out


def _sentence_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, sentence) of citewise's own sentence splitter over ``text``."""
    out, pos = [], 0
    for s in sentences(text):
        at = text.find(s, pos)
        if at < 0:
            continue
        out.append((at, at + len(s), s))
        pos = at + len(s)
    return out


def _doc_phrase(name: str, parties: str, seed: int) -> str:
    """"this agreement", or (every other question) the agreement's name and first two
    parties, as a lawyer names the contract they ask about."""
    names = [p.split("(")[0].strip(" ;,.") for p in parties.split(";") if p.strip()][:2]
    if seed % 2 or not name or len(names) < 2:
        return "this agreement"
    return f"the {name.title()} between {names[0]} and {names[1]}"


def cuad_examples(folder: str | Path, exclude: Iterable[str] = (),
                  per_contract: int = 8, seed: int = 0) -> list[Example]:
    """Clause questions over CUAD contracts (``folder`` holds ``clause_spans.dev.jsonl`` and
    ``full_contract_txt/``), skipping the contract files named in ``exclude``: up to
    ``per_contract`` categories with a labelled span per contract (chosen with ``seed``),
    positives the sentences overlapping a span by at least 20 characters (or all of a
    shorter span), at most 3; negatives the contract's other sentences
    (:func:`pick_negatives`)."""
    folder = Path(folder)
    skip = {Path(e).name for e in exclude}
    by_contract: dict[str, list[dict[str, Any]]] = {}
    with open(folder / "clause_spans.dev.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["contract_file"] not in skip:
                by_contract.setdefault(row["contract_file"], []).append(row)
    rng = random.Random(seed)
    out = []
    for contract in sorted(by_contract):
        rows = by_contract[contract]
        path = folder / "full_contract_txt" / contract
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        spans = _sentence_spans(text)
        meta = {r["category"]: r.get("answer") or "" for r in rows}
        labelled = [r for r in rows if r["category"] in CUAD_QUESTIONS and r["clauses"]
                    and all(c.get("start") is not None for c in r["clauses"])]
        rng.shuffle(labelled)
        for r in labelled[:per_contract]:
            doc = _doc_phrase(meta.get("Document Name", ""), meta.get("Parties", ""),
                              _stable_seed(contract, r["category"]))
            question = CUAD_QUESTIONS[r["category"]].format(doc=doc)
            question = question[0].upper() + question[1:]
            pos: list[str] = []
            neg: list[str] = []
            for start, end, s in spans:
                hit = any(min(end, c["end"]) - max(start, c["start"])
                          >= min(20, c["end"] - c["start"]) for c in r["clauses"])
                (pos if hit else neg).append(_cut(s))
            neg = [n for n in neg if len(n.split()) >= 3]
            if pos and neg:
                out.append(Example(question, tuple(pos[:3]), pick_negatives(question, neg),
                                   "cuad"))
    return out


def xquad_sentence_examples(path: str | Path, every: int = 4, keep: int = 0) -> list[Example]:
    """XQuAD (SQuAD JSON) questions of the articles with index ``i % every == keep``:
    positive the sentence holding the first gold answer's start, negatives the paragraph's
    other sentences and the article's other sentences."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))["data"]
    out = []
    for i, article in enumerate(data):
        if i % every != keep:
            continue
        paras = [(p, _sentence_spans(p["context"])) for p in article["paragraphs"]]
        everything = [s for _, spans in paras for _, _, s in spans]
        for p, spans in paras:
            for qa in p["qas"]:
                at = qa["answers"][0]["answer_start"]
                pos = [s for start, end, s in spans if start <= at < end]
                if not pos:
                    continue
                neg = [s for s in everything if s not in pos]
                out.append(Example(qa["question"], (_cut(pos[0]),),
                                   pick_negatives(qa["question"], [_cut(n) for n in neg]),
                                   "xquad-en"))
    return out


_HEADING = re.compile(r"^(.{2,80}?): ")


def with_near_misses(examples: Sequence[Example], share: float = 0.3,
                     seed: int = 0) -> list[Example]:
    """``examples`` where a ``share`` of them (chosen with ``seed``) also hold, as negatives,
    the question itself (a restated question answers nothing) and, for units read with a
    heading, the heading alone."""
    rng = random.Random(seed)
    out = []
    for e in examples:
        extra: list[str] = []
        if rng.random() < share:
            extra.append(e.query)
            m = _HEADING.match(e.positives[0])
            if m:
                extra.append(m.group(1))
        out.append(Example(e.query, e.positives, (*extra, *e.negatives), e.source)
                   if extra else e)
    return out
