"""The page a question is asked from, as a preference for the document it was built from.

The widget on a documentation site sends the host page's URL path (``/install/``,
``/docs/install.html``); a site generator built that page from one source file
(``docs/install.md``). :func:`document_for_page` finds that file among the indexed documents
by comparing path *keys*, and retrieval and the answer then prefer its passages
(:data:`PAGE_PRIOR`) without dropping better evidence from others.

The rule (:func:`page_key`, :func:`document_key`):

1. A page path loses its query and fragment, is percent-decoded, and split on ``/``; a
   document path (as citations show it, ``docs/guide/install.md``) is split on ``/``.
2. The last part loses its extension (``install.html``, ``install.md`` -> ``install``), and a
   last part named ``index``, ``readme`` or ``_index`` is dropped (``/guide/`` is
   ``guide/index.md`` or ``guide/README.md``).
3. Parts are compared case-folded, with ``_`` and spaces read as ``-``.
4. A document matches when the page's parts are a trailing run of the document's
   (``/install/`` and ``/docs/install.html`` both end ``docs/install.md``), or the document's
   parts after the first (the ingested folder's name) are a trailing run of the page's
   (``/en/latest/install/`` ends with ``install``); the site root ``/`` matches only a root
   ``index``/``README`` of the folder (``docs/index.md``).
5. The document sharing the most trailing parts with the page wins, a shorter document path
   breaking a tie; when two documents still tie, the page maps to none.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

from citewise.types import Document

#: Last path parts that name a folder's own page.
INDEX_NAMES = frozenset({"index", "readme", "_index", "default"})
#: How much the page's document is preferred, as a factor on its relevance (retrieval:
#: :func:`~citewise.retrieve.retriever.prefer_document_hits`) and on its sentences' scores
#: (the answer: :func:`~citewise.answer.selection.rank_candidates`), all higher = better: it
#: comes first when its best is at least 1 / 1.25 = 80 % of the best of all, so a near tie goes
#: to the page's document and clearly better evidence elsewhere keeps its place.
PAGE_PRIOR = 1.25
#: Longest page path read, in characters; a longer one maps to no document.
MAX_PAGE_CHARS = 500
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,8}$")
_SEPARATORS = re.compile(r"[_\s]+")


def _parts(segments: Iterable[str]) -> tuple[str, ...]:
    parts = [s for s in segments if s and s != "."]
    if parts:
        parts[-1] = _EXTENSION.sub("", parts[-1])
    parts = [_SEPARATORS.sub("-", p.casefold()) for p in parts]
    if parts and parts[-1] in INDEX_NAMES:
        parts.pop()
    return tuple(parts)


def page_key(page: str) -> tuple[str, ...] | None:
    """The parts of a page path (``"/docs/Install_Guide.html?x=1#top"`` -> ``("docs",
    "install-guide")``; ``"/"`` -> ``()``), or None for what is not a URL path (empty, longer
    than :data:`MAX_PAGE_CHARS`, or holding ``..``). A full URL is read as its path."""
    page = page.strip()
    if not page or len(page) > MAX_PAGE_CHARS:
        return None
    path = unquote(urlsplit(page).path)
    segments = path.split("/")
    if ".." in segments:
        return None
    return _parts(segments)


def document_key(path: str) -> tuple[str, ...]:
    """The parts of a document's displayed path (``"docs/guide/index.md"`` -> ``("docs",
    "guide")``)."""
    return _parts(path.replace("\\", "/").split("/"))


def _common_tail(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def page_match(page: tuple[str, ...], document: tuple[str, ...],
               index_page: bool = False) -> int | None:
    """How well a page key matches a document key: the number of trailing parts they share,
    or None when they do not match (rule 4 of the module docstring). ``index_page``: the
    document's file is named ``index``, ``README``... (the only kind the site root matches)."""
    if not page:  # the site root: the folder's own index page
        return 0 if index_page and len(document) <= 1 else None
    shared = _common_tail(page, document)
    inner = document[1:]
    if shared == len(page) or (inner and shared >= len(inner)):
        return shared
    return None


def document_for_page(page: str, documents: Iterable[Document]) -> Document | None:
    """The document the page ``page`` (a URL path) was built from, among ``documents`` (only
    indexed ones are considered), by the module docstring's rule; None when no document
    matches, two match equally well, or ``page`` is not a URL path."""
    key = page_key(page)
    if key is None:
        return None
    best: list[tuple[int, int, Document]] = []
    for doc in documents:
        if doc.status != "indexed":
            continue
        doc_key = document_key(doc.path)
        name = doc.path.replace("\\", "/").rsplit("/", 1)[-1]
        score = page_match(key, doc_key, _parts([name]) == ())
        if score is not None:
            best.append((score, -len(doc_key), doc))
    if not best:
        return None
    best.sort(key=lambda t: (t[0], t[1]), reverse=True)
    if len(best) > 1 and best[0][:2] == best[1][:2]:
        return None  # ambiguous: preferring either could be wrong
    return best[0][2]
