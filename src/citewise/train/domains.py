"""Reranker training examples from contracts (CUAD) and source code, and the per-source sampling
that mixes every domain into one training set.

* :func:`cuad_examples`: clause-type questions over the labelled spans of CUAD's *train*
  contracts (:func:`citewise.eval.cuad.load_contracts`, the same split the clause scan learns
  from), **minus every contract a LegalBench-RAG CUAD question is about** (12 of LegalBench's 22
  CUAD contracts fall in that split, and LegalBench-RAG is where the reranker is evaluated). A
  question names the contract and asks for one clause type, in the form of LegalBench-RAG's
  questions (``"Consider the <document name>; <question>"``), with the question text from CUAD's
  own category descriptions (``categories.json``). Its positives are the chunks that overlap a
  labelled span of that type; its hard negatives are the best-ranked chunks of the same
  contract that overlap none (the contract is named, so a chunk of another contract is not the
  confusion a reranker must fix).
* :func:`code_examples`: docstring -> definition pairs from installed Python packages (never
  ``click``, which ``benchmarks/code_search.py`` evaluates on). The question is the first
  sentence of a function's or class's docstring, the positive the chunk holding its ``def`` /
  ``class`` line **with that sentence taken out** (so the pair is not a verbatim match), the
  negatives the best-ranked other chunks of the package.
* :func:`sample_per_source`: at most ``n`` questions of each source, drawn with a fixed seed,
  so that a large source cannot crowd out a small one.

Negatives are mined with citewise's own hybrid retrieval, as for SciFact and XQuAD
(:mod:`citewise.train.data`).
"""

from __future__ import annotations

import ast
import importlib
import json
import random
import re
from collections.abc import Sequence
from pathlib import Path

from citewise.config import SearchMode, Settings
from citewise.errors import ConfigError
from citewise.eval.cuad import Contract, load_contracts
from citewise.train.data import MINING_DEPTH, Example, ProgressFn, _hit_passage
from citewise.types import Hit

CUAD_SKIPPED_CATEGORIES = frozenset({"Document Name", "Parties"})
"""Categories that are not a clause (the title line, the party names)."""
CODE_EXCLUDED = frozenset({"click"})
"""Packages never trained on: the code search benchmark's collection."""


def legalbench_contracts(legalbench: Path) -> set[str]:
    """The CUAD contract file names LegalBench-RAG's CUAD questions are about
    (``cuad_spans.mini.dev.json`` under the LegalBench-RAG folder); raises ConfigError naming
    the file when it is missing."""
    file = legalbench / "cuad_spans.mini.dev.json"
    if not file.is_file():
        raise ConfigError(f"{file}: LegalBench-RAG CUAD questions not found (needed to keep "
                          "their contracts out of training)")
    tests = json.loads(file.read_text(encoding="utf-8"))["tests"]
    return {s["file_path"].split("/", 1)[1] for t in tests for s in t["snippets"]}


def _category_questions(cuad: Path) -> dict[str, str]:
    """Category -> question, from CUAD's ``categories.json`` descriptions: a description that is
    a question is kept, any other becomes "Which clause ... is about <category>? <description>"."""
    file = cuad / "categories.json"
    if not file.is_file():
        raise ConfigError(f"{file}: CUAD categories not found")
    out = {}
    for c in json.loads(file.read_text(encoding="utf-8")):
        desc = c["description"].strip()
        out[c["category"]] = (desc if desc.endswith("?") else
                              f"Which clause of this contract is about {c['category'].lower()}? "
                              f"{desc.rstrip('.')}.")
    return out


def _document_name(contract: Contract, text: str) -> str:
    spans = contract.spans.get("Document Name")
    if spans:
        start, end = spans[0]
        name = " ".join(text[start:end].split())
        if 3 <= len(name) <= 120:
            return name.title() if name.isupper() else name
    return "agreement"


def cuad_examples(cuad: str | Path, legalbench: str | Path, settings: Settings,
                  negatives: int = 3, max_contracts: int = 0, seed: int = 0,
                  progress: ProgressFn | None = None) -> list[Example]:
    """Clause-type questions over CUAD train contracts not in LegalBench-RAG (see the module
    docstring). ``max_contracts`` (0 = all) contracts are drawn with ``seed`` and ingested with
    the ingest pipeline into ``settings.home / "cuad-train"`` (reused when it already holds
    them). Raises ConfigError when a dataset file is missing."""
    from citewise.embed import load_embedder
    from citewise.ingest.pipeline import Ingestor
    from citewise.retrieve.retriever import Retriever
    from citewise.store.sqlite import SQLiteStore

    cuad, legalbench = Path(cuad), Path(legalbench)
    questions = _category_questions(cuad)
    excluded = legalbench_contracts(legalbench)
    contracts = [c for c in load_contracts(cuad, "train") if c.file not in excluded]
    if max_contracts:
        contracts = sorted(random.Random(seed).sample(contracts, min(max_contracts,
                                                                       len(contracts))),
                           key=lambda c: c.file)
    # the ingest and search parts themselves: this package sits below the engine
    folder = settings.home / "cuad-train"
    folder.mkdir(parents=True, exist_ok=True)
    embedder = load_embedder(settings.embedding_model, settings.threads,
                             settings.embed_batch_size, settings.embedding_precision)
    store = SQLiteStore(folder / "index.sqlite3")
    try:
        Ingestor(settings, store, embedder).ingest([c.path for c in contracts])
        retriever = Retriever(settings, store, embedder)
        out = []
        for i, contract in enumerate(contracts):
            if progress:
                progress("mining negatives (cuad)", i, len(contracts))
            name = _document_name(contract, contract.text())
            for category, spans in sorted(contract.spans.items()):
                if category in CUAD_SKIPPED_CATEGORIES or category not in questions:
                    continue
                query = f"Consider the {name}; {questions[category]}"
                hits = retriever.rank(query, mode=SearchMode.HYBRID, k=MINING_DEPTH,
                                      rerank=False)
                example = _cuad_example(query, hits, contract.file, spans, negatives)
                if example is not None:
                    out.append(example)
        return out
    finally:
        store.close()


def _cuad_example(query: str, hits: Sequence[Hit], file: str, spans: list[tuple[int, int]],
                  negatives: int) -> Example | None:
    positives: list[str] = []
    negs: list[str] = []
    for h in hits:
        if h.chunk is None or h.document is None or Path(h.document.path).name != file:
            continue
        a, b = h.chunk.char_start, h.chunk.char_end
        if any(a < e and s < b for s, e in spans):
            if len(positives) < 2:
                positives.append(_hit_passage(h))
        elif len(negs) < negatives:
            negs.append(_hit_passage(h))
    if not positives or not negs:
        return None
    return Example(query, tuple(positives), tuple(negs), "cuad")


# --- code --------------------------------------------------------------------------------
def _first_sentence(doc: str) -> str:
    first = doc.strip().split("\n\n")[0]
    first = " ".join(first.split())
    m = re.match(r"(.+?[.!?])(\s|$)", first)
    return (m.group(1) if m else first).strip()


def docstring_questions(source: str) -> list[tuple[str, int, str]]:
    """``(qualified name, def/class line, first docstring sentence)`` of every function and
    class of ``source`` whose docstring's first sentence has 5 to 40 words and is not a
    reST/Sphinx directive."""
    out = []

    def walk(nodes: list[ast.stmt], prefix: str) -> None:
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                doc = ast.get_docstring(node)
                if doc:
                    sentence = _first_sentence(doc)
                    if 5 <= len(sentence.split()) <= 40 and not sentence.startswith((":", "..")):
                        out.append((prefix + node.name, node.lineno, sentence))
                if isinstance(node, ast.ClassDef):
                    walk(node.body, prefix + node.name + ".")

    try:
        walk(ast.parse(source).body, "")
    except SyntaxError:
        return []
    return out


def code_examples(packages: Sequence[str], settings: Settings, negatives: int = 3,
                  max_queries: int = 0, seed: int = 0,
                  progress: ProgressFn | None = None) -> list[Example]:
    """Docstring -> definition examples from the installed ``packages`` (see the module
    docstring); with ``max_queries``, at most that many questions of each package, drawn with
    ``seed`` before mining (0 = all). Each package is indexed with the tree-sitter code parser into
    ``settings.home / "code-train"``. Raises ConfigError for a package that is not installed
    or is one of :data:`CODE_EXCLUDED`."""
    from citewise.embed import load_embedder
    from citewise.ingest.parsers import code
    from citewise.ingest.pipeline import Ingestor
    from citewise.retrieve.retriever import Retriever
    from citewise.store.sqlite import SQLiteStore

    bad = sorted(set(packages) & CODE_EXCLUDED)
    if bad:
        raise ConfigError(f"code packages: {', '.join(bad)} is the code benchmark's collection; "
                          "train on other packages")
    embedder = load_embedder(settings.embedding_model, settings.threads,
                             settings.embed_batch_size, settings.embedding_precision)
    folder = settings.home / "code-train"
    folder.mkdir(parents=True, exist_ok=True)
    out: list[Example] = []
    for package in packages:
        try:
            module = importlib.import_module(package)
        except ImportError as err:
            raise ConfigError(f"code package {package!r} is not installed") from err
        root = Path(module.__file__).resolve().parent.parent  # type: ignore[arg-type]
        store = SQLiteStore(folder / f"{package}.sqlite3")
        try:
            files = sorted((root / package).rglob("*.py"))
            asked: list[tuple[str, str, int, str]] = []
            if not store.info().chunks:
                items = []
                for file in files:
                    rel = file.relative_to(root).as_posix()
                    data = file.read_bytes()
                    if data.strip():
                        items.append((rel, rel, code.parse(file, data)))
                Ingestor(settings, store, embedder).index_parsed(items, total=len(items))
            for file in files:
                rel = file.relative_to(root).as_posix()
                for _, line, sentence in docstring_questions(file.read_text(encoding="utf-8",
                                                                            errors="replace")):
                    asked.append((sentence, rel, line, package))
            if max_queries and len(asked) > max_queries:
                asked = random.Random(seed).sample(asked, max_queries)
            retriever = Retriever(settings, store, embedder)
            for i, (sentence, rel, line, source) in enumerate(asked):
                if progress and i % 20 == 0:
                    progress(f"mining negatives (code {package})", i, len(asked))
                hits = retriever.rank(sentence, mode=SearchMode.HYBRID, k=MINING_DEPTH,
                                      rerank=False)
                example = _code_example(sentence, hits, rel, line, negatives, f"code:{source}")
                if example is not None:
                    out.append(example)
        finally:
            store.close()
    return out


def _holds_line(h: Hit, file: str, line: int) -> bool:
    c = h.chunk
    return (c is not None and h.document is not None and c.line_start is not None
            and h.document.path == file and c.line_start <= line <= (c.line_end or c.line_start))


def _code_example(sentence: str, hits: Sequence[Hit], file: str, line: int, negatives: int,
                  source: str) -> Example | None:
    positive = next((h for h in hits if _holds_line(h, file, line)), None)
    if positive is None:
        return None
    negs = [_hit_passage(h) for h in hits
            if h.chunk is not None and h.chunk_id != positive.chunk_id][:negatives]
    text = _hit_passage(positive).replace(sentence, "")
    words = sentence.split()
    if len(words) > 1 and text == _hit_passage(positive):  # the docstring wraps lines
        text = re.sub(r"\s+".join(map(re.escape, words)), "", text)
    if not negs:
        return None
    return Example(sentence, (text,), tuple(negs), source)


# --- mixing ------------------------------------------------------------------------------
def sample_per_source(examples: Sequence[Example], n: int, seed: int = 0) -> list[Example]:
    """At most ``n`` examples of each ``Example.source`` (``n`` 0 = all), drawn with
    ``random.Random(seed)`` per source, in source order of first appearance; code examples of
    every package count as one source (``code``)."""
    groups: dict[str, list[Example]] = {}
    for e in examples:
        groups.setdefault(e.source.split(":", 1)[0], []).append(e)
    out: list[Example] = []
    for items in groups.values():
        out += items if not n or len(items) <= n else random.Random(seed).sample(items, n)
    return out
