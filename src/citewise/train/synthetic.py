"""Synthetic training questions for ``citewise train-reranker --synthetic PATH``: a language
model writes one question for each of a seeded sample of the index's passages under ``PATH``
(docT5query style: the passage is the question's positive), and the hard negatives are mined
with citewise's own hybrid search (:func:`~citewise.train.data.resolve_examples`), so a user
can tune the reranker to their own documents.

The model is given as a callable ``write(system, user) -> text`` (the command line wires the
configured provider, the bundled llama.cpp model by default), so this package needs no LLM
client of its own.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path

from citewise.errors import ConfigError
from citewise.retrieve.rerank import passage_text
from citewise.store.base import Store
from citewise.train.data import JsonlExample, ProgressFn

#: The instruction the model gets; the passage follows as the user message.
QUESTION_PROMPT = (
    "Write one question that a reader could ask and that the passage below answers. Use the "
    "passage's own terms, ask about one fact, setting or step in it, and keep it under 25 "
    "words. Reply with the question only, on one line, ending with a question mark."
)
#: Passages shorter than this (characters) are not asked about: a heading or a one-line
#: stub gives no question worth training on.
MIN_PASSAGE_CHARS = 120
#: A written question is kept when it has this many words at least and at most.
QUESTION_WORDS = (3, 40)
_LEAD = re.compile(r"^\s*(?:(?:question|q)\s*\d*\s*[:.)-]\s*|\d+\s*[.)]\s*|[-*•]\s*)",
                   re.IGNORECASE)

Writer = Callable[[str, str], str]


def clean_question(text: str) -> str | None:
    """The question in a model's reply: its first non-empty line, without a leading
    "Question:", number or bullet and surrounding quotes, cut after its first question mark;
    None when that is not a question of :data:`QUESTION_WORDS` words.

    >>> clean_question('Question: "How do I change the embedding model?"\\nIt is ...')
    'How do I change the embedding model?'
    >>> clean_question("The passage describes the installation.") is None
    True
    """
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    line = _LEAD.sub("", line).strip().strip("\"'“”‘’`*").strip()
    if "?" not in line:
        return None
    question = line[:line.index("?") + 1].strip().strip("\"'“”‘’`*").strip()
    if not question.endswith("?"):
        question += "?"
    words = len(question.split())
    return question if QUESTION_WORDS[0] <= words <= QUESTION_WORDS[1] else None


def _under(path: str, root: Path) -> bool:
    try:
        return Path(path).resolve().is_relative_to(root)
    except (OSError, ValueError):
        return False


def sample_passages(store: Store, under: Path, n: int, seed: int) -> list[tuple[str, str]]:
    """(chunk id, passage text as the reranker reads it) of up to ``n`` chunks drawn with
    ``seed`` from the indexed documents whose source path is ``under`` (a file) or inside it
    (a folder), chunks shorter than :data:`MIN_PASSAGE_CHARS` left out; in draw order.
    Raises ConfigError naming ``under`` when no indexed document is there."""
    root = under.expanduser().resolve()
    documents = [d for d in store.documents()
                 if d.status == "indexed" and _under(d.source_path or d.path, root)]
    if not documents:
        raise ConfigError(f"--synthetic {under}: no indexed document is there; run "
                          f"`citewise ingest {under}` first (or give a path that was ingested)")
    ids = [cid for d in documents for cid, _, _ in store.chunk_features(d.id)]
    drawn = random.Random(seed).sample(ids, len(ids))
    out: list[tuple[str, str]] = []
    for start in range(0, len(drawn), 256):
        if len(out) >= n:
            break
        batch = drawn[start:start + 256]
        loaded = store.get_chunks(batch)
        for cid in batch:
            if cid in loaded and len(out) < n:
                chunk, doc = loaded[cid]
                if len(chunk.text.strip()) >= MIN_PASSAGE_CHARS:
                    out.append((cid, passage_text(doc.title, chunk.section, chunk.text)))
    return out


def synthetic_examples(store: Store, under: Path, n: int, seed: int, write: Writer,
                       progress: ProgressFn | None = None) -> tuple[list[JsonlExample], int]:
    """(examples, passages asked): one :class:`~citewise.train.data.JsonlExample` per sampled
    passage (:func:`sample_passages`) for which ``write(QUESTION_PROMPT, passage)`` returned a
    question (:func:`clean_question`), its positive the passage's chunk id and no negative
    (they are mined when the examples are resolved). ``line`` numbers the passages from 1.
    Raises what ``write`` raises (a provider failure stops the preparation)."""
    passages = sample_passages(store, under, n, seed)
    out: list[JsonlExample] = []
    for i, (chunk_id, passage) in enumerate(passages, 1):
        question = clean_question(write(QUESTION_PROMPT, passage))
        if question is not None:
            out.append(JsonlExample(question, (chunk_id,), (), i))
        if progress is not None:
            progress("writing questions", i, len(passages))
    return out, len(passages)


__all__ = ["QUESTION_PROMPT", "clean_question", "sample_passages", "synthetic_examples"]
