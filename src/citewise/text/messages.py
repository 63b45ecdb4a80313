"""The replies citewise writes itself (not found, no documents), in the question's language.

Catalogs are GNU gettext files under ``citewise/locale/<language>/LC_MESSAGES/citewise.mo``
(compiled from the ``.po`` beside each; ``tests/test_messages.py`` checks that they agree and
that every message below has a translation). A language without a catalog, or a message a
catalog lacks, gets the English text: the message id itself.
"""

from __future__ import annotations

import gettext
from functools import lru_cache
from pathlib import Path

LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
DOMAIN = "citewise"

NOT_FOUND = "The documents do not contain an answer to this question."
NOT_MENTIONED = ("The documents do not contain an answer to this question: no document "
                 "mentions {names}.")
NO_DOCUMENTS = "No documents are indexed yet: run `citewise ingest PATH` first."
UNREADABLE = "Some files could not be read and may hold the answer: {names}{more}."
MORE = " and {n} more"
OR = " or "
NO_MATCH = ("No indexed document matches the question's path or metadata filters, so nothing "
            "was searched. Stored paths look like {example}: a --path glob matches them, not "
            "the folder you ingested from.")
LANGUAGE_HINT = (
    "The question is in {language}, which the index holds little of, and the embedding model "
    "({model}) does not read it: to ask in another language than the documents', set "
    "CITEWISE_EMBEDDING_MODEL=e5 and run citewise reindex.")

#: every message id with translations; the catalogs' test checks each of them
MESSAGES = (NOT_FOUND, NOT_MENTIONED, NO_DOCUMENTS, UNREADABLE, MORE, OR, LANGUAGE_HINT,
            NO_MATCH)


@lru_cache(maxsize=16)
def _catalog(language: str) -> gettext.NullTranslations:
    return gettext.translation(DOMAIN, LOCALE_DIR, languages=[language], fallback=True)


def translate(message: str, lang: str | None = "", /, **params: object) -> str:
    """``message`` (one of :data:`MESSAGES`) in ``lang`` (an ISO 639-1 code such as
    ``ru`` or ``kk``, as :func:`~citewise.text.language.detect_language` gives; empty or
    unknown: English), its ``{name}`` fields filled from ``params`` (no params: the text is
    returned as it is, braces and all)."""
    text = _catalog(lang).gettext(message) if lang else message
    return text.format(**params) if params else text


__all__ = ["LANGUAGE_HINT", "LOCALE_DIR", "MESSAGES", "MORE", "NOT_FOUND", "NOT_MENTIONED",
           "NO_DOCUMENTS", "NO_MATCH", "OR", "UNREADABLE", "translate"]
