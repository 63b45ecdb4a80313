"""The page -> document rule of :mod:`citewise.retrieve.page` on the kinds of URLs static site
generators make from source files (MkDocs, Sphinx, Hugo, Docusaurus, a site under a prefix)."""

from __future__ import annotations

import pytest

from citewise.retrieve.page import document_for_page, document_key, page_key
from citewise.types import Document


def doc(path: str, status: str = "indexed") -> Document:
    return Document(id=path, path=path, source_path=f"/site/{path}", title="", format="md",
                    content_hash="", status=status)


DOCS = [doc(p) for p in ("docs/index.md", "docs/install.md", "docs/guide/install.md",
                         "docs/guide/README.md", "docs/api_reference.rst", "docs/faq.md",
                         "notes.md")]


@pytest.mark.parametrize(("page", "expected"), [
    ("/install/", "docs/install.md"),  # MkDocs: docs/install.md -> /install/
    ("/install", "docs/install.md"),
    ("/docs/install.html", "docs/install.md"),  # Sphinx-style, the folder in the URL
    ("/en/latest/install/", "docs/install.md"),  # a versioned site under a prefix
    ("/guide/install/", "docs/guide/install.md"),  # more shared parts win
    ("/guide/", "docs/guide/README.md"),  # a folder's own page
    ("/guide/index.html", "docs/guide/README.md"),
    ("/", "docs/index.md"),  # the site root: only the folder's index
    ("/API-Reference.html", "docs/api_reference.rst"),  # case, "_" and "-" alike
    ("/faq/?q=1#top", "docs/faq.md"),  # query and fragment ignored
    ("/FAQ%2F", "docs/faq.md"),  # percent-decoded
    ("https://docs.example.org/install/", "docs/install.md"),  # a full URL: its path
    ("/blog/2026/news/", None),
    ("/docs/../etc/passwd", None),
    ("", None),
    ("/" + "a/" * 300, None),  # longer than MAX_PAGE_CHARS
])
def test_pages_map_to_the_documents_they_were_built_from(page, expected):
    found = document_for_page(page, DOCS)
    assert (found.path if found else None) == expected


def test_a_tie_maps_to_no_document_and_failed_files_are_never_chosen():
    twins = [doc("a/setup.md"), doc("b/setup.md")]
    assert document_for_page("/setup/", twins) is None
    assert document_for_page("/a/setup/", twins).path == "a/setup.md"
    assert document_for_page("/setup/", [doc("a/setup.md", status="failed")]) is None


def test_keys():
    assert page_key("/docs/Install_Guide.html?x=1") == ("docs", "install-guide")
    assert page_key("/") == ()
    assert document_key("docs/guide/index.md") == ("docs", "guide")
