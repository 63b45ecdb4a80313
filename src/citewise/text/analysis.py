"""Text analysis for BM25: the same function analyses chunks at index time and queries.

Steps, in order:

1. Unicode NFKC normalisation and full case folding (``str.casefold``), ``ё`` folded to ``е``.
2. Tokenisation into runs of letters, digits, combining marks and ``_`` in any script
   (``regex`` classes ``\\p{L}\\p{N}\\p{M}``), so Cyrillic, Kazakh, Arabic or Devanagari words stay
   whole. Han characters are segmented into words with ``jieba``.
3. Identifiers: ``camelCase``, ``PascalCase``, ``snake_case`` and ``dotted.paths`` yield their
   parts, then each compound component of a dotted path whole, then the whole identifier
   (dots as ``_``), so ``invalidateMetadataRuntime``, "invalidate metadata runtime" and
   ``cache.invalidateMetadataRuntime()`` all meet.
4. Stop words: Lucene's 33 English stop words are dropped (as Anserini's BEIR baselines do).
5. Stemming, chosen from the language of the whole text (a chunk or a question), detected by
   :func:`citewise.text.language.detect_language`: Cyrillic words get the Kazakh suffix
   stemmer (:mod:`citewise.text.kazakh`) in Kazakh text and Snowball Russian otherwise;
   Latin-script words get Snowball English (``PyStemmer``); other scripts are kept as they are.
   Query and chunk meet when both are in the same language; the retriever passes the
   question's language to every analysis of a part of the question.

:data:`ANALYZER_VERSION` names this analysis. Indexes record the version their BM25 terms were
made with, and an index made with another version must be re-analysed (``citewise reindex``)
before it is searched or written to, so the terms of one index never mix two analyses.

The output tokens contain only letters, digits, marks and ``_``, which is exactly the token
alphabet of the FTS5 ``unicode61`` tokenizer configured in :mod:`citewise.store.sqlite`, so the
analysed text round-trips through FTS5 unchanged.
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Callable
from functools import lru_cache

import regex

from citewise.text.kazakh import stem as kazakh_stem
from citewise.text.language import detect_language

#: Version of the analysis below, recorded in every index (see the module docstring).
#: 1: script-based stemming (Russian for all Cyrillic); 2: stemming by detected language.
ANALYZER_VERSION = "2"
_WORD = regex.compile(r"[\p{L}\p{N}\p{M}_]+(?:[.'’][\p{L}\p{N}\p{M}_]+)*")
_HAN = regex.compile(r"\p{Han}")
_CAMEL = regex.compile(r"\p{Lu}?\p{Ll}+|\p{Lu}+(?=\p{Lu}\p{Ll}|\b|\d|_)|\p{Lu}+|\p{N}+")
_CYRILLIC = regex.compile(r"\p{Cyrillic}")
_LATIN = regex.compile(r"^[\p{Latin}\p{N}_]+$")

ENGLISH_STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)


@lru_cache(maxsize=1)
def _stemmers() -> tuple[object, object]:
    import Stemmer

    return Stemmer.Stemmer("english"), Stemmer.Stemmer("russian")


@lru_cache(maxsize=1)
def _jieba():  # type: ignore[no-untyped-def]
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba


#: the characters that join an identifier's components (``a.b``, ``don't``), compiled once
#: (the module-level ``regex`` functions look each pattern up in a cache on every call)
_JOINER = regex.compile(r"[.'’]")
_JOINERS = regex.compile(r"[.'’]+")


def normalize(text: str) -> str:
    """NFKC + case folding + ``ё``->``е``; the form every token is compared in."""
    return unicodedata.normalize("NFKC", text).casefold().replace("ё", "е")


def _identifier_parts(raw: str) -> list[str]:
    """The words an identifier adds before itself: ``fooBar_baz.quxQuux`` ->
    [foo, bar, baz, qux, quux, fooBar_baz, quxQuux]; [] for a plain word."""
    components = [c for c in _JOINERS.split(raw) if c]
    parts: list[str] = []
    compounds: list[str] = []
    for component in components:
        pieces = [p for piece in component.split("_") for p in (_CAMEL.findall(piece) or
                                                                ([piece] if piece else []))]
        parts.extend(pieces)
        if len(pieces) > 1 and len(components) > 1:
            compounds.append(component)
    return parts + compounds if len(parts) > 1 else []


def _han_words(run: str) -> list[str]:
    return [w for w in _jieba().lcut(run) if w.strip()]


@lru_cache(maxsize=200_000)
def _stem(token: str, kazakh: bool) -> str:
    english, russian = _stemmers()
    if _CYRILLIC.search(token):
        if kazakh:
            return kazakh_stem(token)
        return str(russian.stemWord(token))  # type: ignore[attr-defined]
    if _LATIN.match(token) and not token.isdigit():
        return str(english.stemWord(token))  # type: ignore[attr-defined]
    return token


def tokenize(text: str, language: str | None = None, *, stem: bool = True) -> list[str]:
    """Analysed tokens of ``text`` in order (duplicates kept, stop words dropped).

    ``language``: the ISO 639-1 code that chooses the Cyrillic stemmer (``kk``: Kazakh, any
    other: Russian); detected from ``text`` when None. ``stem=False`` keeps every word
    unstemmed (for measuring the stemmers). Returns an empty list for empty or
    punctuation-only text; never raises on any ``str``.
    """
    kazakh = (language or detect_language(text)) == "kk"
    tokens: list[str] = []
    for match in _WORD.finditer(text):
        raw = match.group()
        words: list[str]
        if _HAN.search(raw):
            words = _han_words(normalize(raw))
        else:
            parts = _identifier_parts(raw)
            whole = normalize(raw)
            words = [normalize(p) for p in parts] + [_JOINER.sub("_", whole)] if parts else [whole]
        for word in words:
            if word in ENGLISH_STOP_WORDS or not _WORD.fullmatch(word):
                continue
            tokens.append(_stem(word, kazakh) if stem else word)
    return tokens


@lru_cache(maxsize=100_000)
def _word_terms(raw: str, kazakh: bool) -> frozenset[str]:
    return frozenset(tokenize(raw, "kk" if kazakh else "en"))


def term_set(text: str, language: str | None = None) -> frozenset[str]:
    """The distinct terms of ``text``: ``frozenset(tokenize(text, language))``, computed word
    by word with each distinct word's terms cached, so that scanning many overlapping texts
    (a passage's windows, the same passages for one question after another) analyses each
    word once. ``language`` as for :func:`tokenize` (detected from ``text`` when None)."""
    kazakh = (language or detect_language(text)) == "kk"
    out: set[str] = set()
    for raw in set(_WORD.findall(text)):
        out.update(_word_terms(raw, kazakh))
    return frozenset(out)


def identifier_parts(text: str, language: str | None = None) -> dict[str, list[str]]:
    """``{identifier term: its part terms}`` for each ``snake_case``, ``camelCase`` or
    ``PascalCase`` identifier of ``text``, analysed as :func:`tokenize` does (``"the default
    top_k"`` -> ``{"top_k": ["top", "k"]}``). Plain words and dotted paths are left out: a
    path's last part is what its definition names (``click.edit`` is defined as ``edit``)."""
    kazakh = (language or detect_language(text)) == "kk"
    out: dict[str, list[str]] = {}
    for match in _WORD.finditer(text):
        raw = match.group()
        if _HAN.search(raw) or _JOINER.search(raw):
            continue
        parts = _identifier_parts(raw)
        if not parts:
            continue
        whole = normalize(raw)
        if whole in ENGLISH_STOP_WORDS or not _WORD.fullmatch(whole):
            continue
        terms = [_stem(normalize(p), kazakh) for p in parts]
        out[_stem(whole, kazakh)] = [t for t in terms
                                     if t not in ENGLISH_STOP_WORDS and _WORD.fullmatch(t)]
    return out


def without_known_parts(terms: list[str], parts: dict[str, list[str]],
                        known: Callable[[str], bool]) -> list[str]:
    """``terms`` (a query's analysed terms, :func:`tokenize`) without the parts of each
    identifier that ``known`` says the index holds whole: every chunk holding ``top_k`` also
    holds ``top`` and ``k``, so the parts add no recall, only chunks that say "top" and "k"
    about something else ("the top ranks ... a larger k"). One occurrence of a part is removed
    per identifier, so a part the query also says on its own stays. An identifier the index
    does not hold keeps its parts (they may meet "top k" written apart)."""
    drop: list[str] = []
    for whole, its in parts.items():
        if whole in terms and known(whole):
            drop.extend(its)
    out = list(terms)
    for term in drop:
        if term in out:
            out.remove(term)
    return out


def analyze(text: str, language: str | None = None) -> str:
    """Tokens joined by single spaces: the form stored in the FTS5 index (``language`` as in
    :func:`tokenize`)."""
    return " ".join(tokenize(text, language))


#: Interrogatives and auxiliaries (English, Russian, Kazakh), as analysed: they ask, they
#: are not asked about, and a small collection may hold none of them.
QUESTION_WORDS = frozenset(tokenize(
    "what when where which who whom whose why how do does did can could should would will "
    "shall may might must is are was were be been has have had i my me you your please until "
    "что когда где какой какая какое какие кто почему зачем как ли можно чем сколько "
    "не қашан қайда қандай кім неге қалай ма ме ба бе па пе қанша қай"))


def content_terms(text: str, language: str | None = None) -> list[str]:
    """The analysed terms of ``text`` (:func:`tokenize`) without :data:`QUESTION_WORDS`,
    first occurrences in order: what a question asks about."""
    return [t for t in dict.fromkeys(tokenize(text, language)) if t not in QUESTION_WORDS]
