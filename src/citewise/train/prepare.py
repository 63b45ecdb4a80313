"""The data preparation of ``citewise train-reranker``: the request is checked, every source it
names is turned into :class:`~citewise.train.data.Example` values, in a fixed order (SciFact,
then each XQuAD file, then CUAD, then code, then each user JSONL file, then each ``--synthetic``
path's questions written by a language model), each with a line saying
where it came from; ``per_source`` then caps each source to a seeded sample
(:func:`~citewise.train.domains.sample_per_source`), so that every domain weighs alike.

The command line only maps its options onto :class:`TrainingRequest` and shows progress; the
index a user JSONL file refers to comes in as a callable, so that it is opened only when a
JSONL file is given (this package sits below the engine that owns the index).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from citewise.config import Settings
from citewise.errors import ConfigError
from citewise.retrieve.retriever import Retriever
from citewise.train.data import (
    Example,
    JsonlExample,
    ProgressFn,
    read_jsonl,
    resolve_examples,
    scifact_examples,
    xquad_examples,
)
from citewise.train.domains import code_examples, cuad_examples, sample_per_source
from citewise.train.synthetic import Writer, synthetic_examples


@dataclass(frozen=True)
class TrainingRequest:
    """Where the examples come from and how many to take: ``scifact`` a BEIR SciFact folder
    (its train qrels only), ``xquad`` XQuAD ``.json`` files (their training articles),
    ``jsonl`` user example files (:func:`~citewise.train.data.read_jsonl`). ``negatives`` hard
    negatives per question, ``dev_queries`` SciFact train queries kept out, ``max_queries``
    questions per source (0 = all), ``corpus_docs`` SciFact abstracts indexed (0 = all).
    ``cuad`` a CUAD v1 folder (its train contracts, less those of the LegalBench-RAG folder
    ``legalbench``; ``cuad_contracts`` of them drawn with ``seed``, 0 = all), ``code`` installed
    package names (:func:`~citewise.train.domains.code_examples`); ``per_source`` at most that
    many questions of each source, drawn with ``seed`` (0 = all), after ``max_queries``.
    ``synthetic`` paths (files or folders) of the index whose passages get questions written
    by a language model, ``synthetic_questions`` passages drawn with ``seed`` per path
    (:mod:`citewise.train.synthetic`)."""

    scifact: Path | None = None
    xquad: tuple[Path, ...] = ()
    jsonl: tuple[Path, ...] = ()
    negatives: int = 3
    dev_queries: int = 0
    max_queries: int = 0
    corpus_docs: int = 0
    cuad: Path | None = None
    legalbench: Path | None = None
    cuad_contracts: int = 0
    code: tuple[str, ...] = ()
    per_source: int = 0
    seed: int = 0
    synthetic: tuple[Path, ...] = ()
    synthetic_questions: int = 200


@dataclass
class PreparedExamples:
    """The examples of every source, in source order, and one description per source (for
    the report and the model card)."""

    examples: list[Example] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)


def check_request(request: TrainingRequest, out: Path, save_torch: Path | None) -> None:
    """The checks that need no data, made before any slow work. Raises ConfigError when the
    request names no source, ``out`` does not end in ``.onnx``, or ``save_torch`` is an
    existing file rather than a folder, or ``cuad`` comes without ``legalbench`` (whose
    contracts must stay out of training), or a ``synthetic`` path does not exist."""
    if not (request.scifact or request.xquad or request.jsonl or request.cuad or request.code
            or request.synthetic):
        raise ConfigError("give training data: --scifact, --xquad, --cuad, --code, --jsonl "
                          "and/or --synthetic")
    for path in request.synthetic:
        if not path.expanduser().exists():
            raise ConfigError(f"--synthetic {path}: no such file or folder; give a file or "
                              "folder you have ingested")
    if request.cuad and not request.legalbench:
        raise ConfigError("--cuad needs --legalbench FOLDER: the LegalBench-RAG contracts "
                          "are kept out of training")
    if out.suffix != ".onnx":  # checked again by train_reranker(); here before any slow work
        raise ConfigError(f"{out}: the reranker file name must end in .onnx")
    if save_torch is not None and save_torch.exists() and not save_torch.is_dir():
        raise ConfigError(f"--save-torch {save_torch}: is a file; give a folder")


def read_user_files(request: TrainingRequest) -> list[list[JsonlExample]]:
    """Every JSONL file of the request parsed, one list per file in request order, so that a
    bad line fails before minutes of mining. Raises ConfigError as
    :func:`~citewise.train.data.read_jsonl` does."""
    return [read_jsonl(path) for path in request.jsonl]


def gather_examples(request: TrainingRequest, settings: Settings,
                    user_files: list[list[JsonlExample]],
                    index: Callable[[], Retriever | None],
                    progress: ProgressFn | None = None,
                    write: Writer | None = None) -> PreparedExamples:
    """The examples of every source of ``request``. SciFact and XQuAD negatives are mined
    over their own corpora (indexed under ``settings.home / "eval"``); ``user_files`` (from
    :func:`read_user_files`, one list per ``request.jsonl`` path) are resolved against the
    retriever that ``index`` returns, called once and only when there are user files (None:
    no index to resolve chunk ids or mine negatives in). ``request.synthetic`` paths need that
    index and ``write``, the language model (:data:`~citewise.train.synthetic.Writer`). Raises
    ConfigError for a malformed data set, a synthetic path with no index, no model or nothing
    indexed under it, and what the retrieval or the model raises."""
    out = PreparedExamples()
    opened: list[Retriever | None] = []

    def retriever() -> Retriever | None:
        if not opened:
            opened.append(index())
        return opened[0]

    if request.scifact:
        out.examples += scifact_examples(request.scifact, settings, request.negatives,
                                         request.dev_queries, request.max_queries,
                                         request.corpus_docs, progress)
        out.sources.append(f"scifact train (dev {request.dev_queries}, "
                           f"corpus {request.corpus_docs or 'all'})")
    for path in request.xquad:
        out.examples += xquad_examples(path, settings, request.negatives, request.max_queries,
                                       progress)
        out.sources.append(f"{path.name} train articles")
    if request.cuad:
        assert request.legalbench is not None  # check_request
        out.examples += cuad_examples(request.cuad, request.legalbench, settings,
                                      request.negatives, request.cuad_contracts, request.seed,
                                      progress)
        out.sources.append(f"cuad train contracts ({request.cuad_contracts or 'all'}, "
                           "less LegalBench-RAG's)")
    if request.code:
        out.examples += code_examples(request.code, settings, request.negatives,
                                      request.max_queries, request.seed, progress)
        out.sources.append(f"code docstrings ({', '.join(request.code)})")
    if user_files:
        for path, items in zip(request.jsonl, user_files, strict=True):
            out.examples += resolve_examples(items, path.name, retriever(), request.negatives)
            out.sources.append(path.name)
    for path in request.synthetic:
        found = retriever()
        if found is None:
            raise ConfigError(f"--synthetic {path}: the index is empty; run `citewise ingest "
                              f"{path}` first")
        if write is None:
            raise ConfigError(f"--synthetic {path}: no language model to write the questions "
                              "(CITEWISE_LLM_PROVIDER is none); use the bundled one (local) "
                              "or a provider")
        items, asked = synthetic_examples(found.store, path, request.synthetic_questions,
                                          request.seed, write, progress)
        out.examples += resolve_examples(items, f"synthetic {path.name}", found,
                                         request.negatives)
        out.sources.append(f"synthetic questions on {path} ({len(items)} of {asked} passages, "
                           f"seed {request.seed})")
    if request.per_source:
        out.examples = sample_per_source(out.examples, request.per_source, request.seed)
        out.sources.append(f"at most {request.per_source} questions a source (seed {request.seed})")
    return out
