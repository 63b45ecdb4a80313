"""Sphinx's reStructuredText markup, read by plain docutils (Sphinx itself is not needed).

Most ``.rst`` documentation is written for Sphinx, whose roles and directives docutils does
not know: an unknown role becomes a "problematic" node whose text is the raw markup
(``:class:`~requests.Response```), and an unknown directive becomes an error message whose
content is lost (a ``.. code-block::`` example, a section holding only ``.. autofunction::``
entries). :func:`register` teaches docutils what a reader of the built page would see:

* roles (``:class:``, ``:ref:``, ``:py:meth:``, ... in every standard domain) give their
  displayed text: ``Title <target>`` shows ``Title``, ``~a.b.C`` shows ``C``, ``!name`` shows
  ``name``; code-like roles keep it as inline literal text;
* ``code-block``/``sourcecode`` are literal blocks; ``versionadded``, ``versionchanged`` and
  ``deprecated`` say so before their text; object descriptions and autodoc entries
  (``.. function:: get(url)``, ``.. autoclass:: requests.Session``) give their signature or
  name and their content; ``seealso``, ``only``, ``hlist``, ``glossary``, ``centered`` and
  other wrappers give their content;
* directives that only steer the build (``toctree``, ``index``, ``highlight``,
  ``currentmodule``, ...) give nothing, and ``literalinclude`` gives nothing either: an
  indexed file never pulls in another file from disk.

Registration is global to docutils and idempotent.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

__all__ = ["display_text", "register"]

_DOMAINS = ("py", "c", "cpp", "js", "rst", "std", "math")
#: Roles whose text is code-like (shown as inline literals by Sphinx).
_CODE_ROLES = ("class", "meth", "func", "attr", "exc", "mod", "data", "const", "obj", "any",
               "member", "var", "type", "macro", "struct", "union", "enum", "enumerator",
               "expr", "texpr", "concept", "function", "option", "envvar", "command",
               "program", "file", "samp", "kbd", "makevar", "regexp", "mimetype", "token",
               "keyword", "dir", "directive", "role", "confval", "setting")
#: Roles whose text is prose.
_TEXT_ROLES = ("ref", "doc", "term", "numref", "download", "guilabel", "menuselection", "abbr",
               "dfn", "manpage", "newsfeed", "eq", "cite", "issue", "pr", "user", "gh",
               "commit", "bug")
_TARGET = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]*)>$", re.DOTALL)


def display_text(text: str) -> str:
    """What Sphinx shows for a role's text: the title of ``Title <target>``, the last part
    of ``~a.b.C``, ``name`` for ``!name`` (no link), else the text itself."""
    text = text.strip()
    m = _TARGET.match(text)
    if m and m.group("title"):
        return m.group("title")
    if m:  # "<target>" alone
        text = m.group("target")
    text = text.removeprefix("!")
    if text.startswith("~"):
        text = text[1:].rsplit(".", 1)[-1]
    return text


def _role(literal: bool) -> Any:
    from docutils import nodes, utils

    def role(name: str, rawtext: str, text: str, lineno: int, inliner: Any,
             options: dict[str, Any] | None = None, content: list[str] | None = None
             ) -> tuple[list[Any], list[Any]]:
        shown = display_text(utils.unescape(text))
        node = nodes.literal(rawtext, shown) if literal else nodes.inline(rawtext, shown)
        return [node], []

    return role


class _AnyOptions(dict[str, Any]):
    """An option spec that accepts every option (``:members:``, ``:noindex:``, ...)."""

    def __bool__(self) -> bool:  # docutils reads a directive's options only when truthy
        return True

    def __missing__(self, key: str) -> Any:
        from docutils.parsers.rst import directives

        return directives.unchanged


def _directives() -> dict[str, Any]:
    from docutils import nodes
    from docutils.parsers.rst import Directive

    class Nothing(Directive):  # type: ignore[misc]  # docutils has no type hints
        """A directive that steers the build (toctree, index, ...): no text."""

        optional_arguments = 1  # the whole argument text, line breaks kept
        final_argument_whitespace = True
        has_content = True
        option_spec: ClassVar[dict[str, Any]] = _AnyOptions()

        def run(self) -> list[Any]:
            return []

    class Content(Nothing):
        """A wrapper (seealso, only, hlist, glossary, ...): its content, parsed."""

        def run(self) -> list[Any]:
            node = nodes.container()
            if self.content:
                self.state.nested_parse(self.content, self.content_offset, node)
            return [node]

    class Code(Nothing):
        """``code-block``/``sourcecode``: a literal block."""

        def run(self) -> list[Any]:
            text = "\n".join(self.content)
            return ([_at(nodes.literal_block(text, text), self.content_offset + 1)]
                    if text.strip() else [])

    class Version(Nothing):
        """``versionadded`` and its kin: "New in version 2.1: <text>"."""

        words: ClassVar[dict[str, str]] = {
            "versionadded": "New in version", "versionchanged": "Changed in version",
            "deprecated": "Deprecated since version", "versionremoved": "Removed in version"}

        def run(self) -> list[Any]:
            version, _, rest = (self.arguments[0] if self.arguments else "").partition("\n")
            if " " in version.strip() and not rest:
                version, _, rest = version.strip().partition(" ")
            lead = f"{self.words.get(self.name, 'Version')} {version.strip()}".strip()
            node = nodes.container()
            para = _at(nodes.paragraph(), self.lineno)
            para += nodes.Text(lead + (": " if rest.strip() or self.content else "."))
            if rest.strip():
                inline, _ = self.state.inline_text(" ".join(rest.split()), self.lineno)
                para.extend(inline)
            node += para
            if self.content:
                self.state.nested_parse(self.content, self.content_offset, node)
            return [node]

    class Describe(Nothing):
        """An object description or autodoc entry: its signature(s), then its content."""

        def run(self) -> list[Any]:
            node = nodes.container()
            for sig in self.arguments[0].split("\n") if self.arguments else ():
                if sig.strip():
                    node += _at(nodes.literal_block(sig.strip(), sig.strip()), self.lineno)
            if self.content:
                self.state.nested_parse(self.content, self.content_offset, node)
            return [node]

    table: dict[str, Any] = {}
    for name in ("toctree", "index", "highlight", "currentmodule", "module", "automodsumm",
                 "tabularcolumns", "literalinclude", "include-tree", "sectionauthor",
                 "codeauthor", "default-domain", "default-role", "py:currentmodule",
                 "py:module", "autosummary", "graphviz", "digraph", "mermaid", "plot",
                 "bibliography", "todolist", "ifconfig", "jinja"):
        table[name] = Nothing
    for name in ("seealso", "only", "hlist", "glossary", "centered", "tab", "tabs",
                 "group-tab", "code-tab", "card", "grid", "grid-item", "grid-item-card",
                 "tab-set", "tab-item", "dropdown", "todo", "productionlist", "deprecated-removed"):
        table[name] = Content
    for name in ("code-block", "sourcecode", "code-cell", "ipython", "jupyter-execute",
                 "testcode", "testoutput", "doctest", "prompt"):
        table[name] = Code
    for name in Version.words:
        table[name] = Version
    objects = ("function", "class", "method", "attribute", "data", "exception",
               "decorator", "decoratormethod", "classmethod", "staticmethod", "property",
               "type", "member", "macro", "struct", "enum", "var", "option", "envvar",
               "describe", "object", "program", "confval", "setting")
    for name in objects:
        table[name] = Describe
        for domain in _DOMAINS:
            table[f"{domain}:{name}"] = Describe
    for name in ("module", "class", "function", "method", "attribute", "data", "exception",
                 "decorator", "property", "typeddict", "namedtuple", "pydantic_model",
                 "pydantic_settings", "autosummary"):
        table[f"auto{name}"] = Describe
    table["autosummary"] = Content
    return table


def _at(node: Any, line: int) -> Any:
    """``node`` with its source line set (1-based)."""
    node.line = line
    return node


_done = False


def register() -> None:
    """Register the Sphinx roles and directives with docutils (once per process)."""
    global _done
    if _done:
        return
    from docutils.parsers.rst import directives, roles

    for literal, names in ((True, _CODE_ROLES), (False, _TEXT_ROLES)):
        fn = _role(literal)
        for name in names:
            roles.register_local_role(name, fn)
            for domain in _DOMAINS:
                roles.register_local_role(f"{domain}:{name}", fn)
    for name, cls in _directives().items():
        directives.register_directive(name, cls)
    _done = True
