"""Symbol spans of a source file from its tree-sitter syntax tree (used by :mod:`.code`).

:func:`symbol_spans` returns ``(first_line, last_line, symbol)`` triples (1-based, inclusive)
that together cover every non-blank line of the file, in order:

- one span per class, function or method, from the first comment line directly above it
  (no blank line between; decorators, annotations and attributes are part of the node) to its
  last line; a comment that shares its line with code above stays with that code;
- classes (and structs and records) are split into one span per member
  function or nested class, symbol ``Class.method`` (nested: ``Outer.Inner.method``); the class
  header with its docstring and fields, and code between members, are spans named ``Class``;
  interfaces, enums and type aliases stay whole unless longer than ``max_lines``;
- namespaces, ``extern "C"`` blocks and TypeScript ``namespace`` are transparent: their members
  are named as if at the top level; a C++ out-of-class definition keeps its written name
  (``Circle::area``), a Go method is ``Receiver.Method``;
- a span longer than ``max_lines`` is cut before a statement (or member) that starts on a line
  of its own, each piece keeping the symbol; a run with no such line is cut every
  ``max_lines`` lines;
- module-level code between definitions is handed to the caller's ``gaps`` function;
- a line holding only closing brackets (``}``, ``};``, ``})`` with an optional ``//`` comment)
  joins the span above it, so a class's closing brace never forms a chunk of its own.

A language is supported when its grammar package is installed (they are core dependencies);
:func:`language_for` says which grammar a file gets. :func:`symbol_spans` returns None when the
file has no grammar or its tree has a syntax error at the level where definitions are read
(top level and class bodies), so the caller can fall back to its line-based splitter.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["LANGUAGES", "Span", "gap_style", "language_for", "symbol_spans"]

Span = tuple[int, int, "str | None"]
GapFn = Callable[[int, int], list[Span]]

_CLASS, _TYPE, _FUNCTION, _NAMESPACE = "class", "type", "function", "namespace"
_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})
_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function",
                              "generator_function", "class", "class_expression"})
_VALUE_DEFINITIONS = frozenset({"lexical_declaration", "variable_declaration",
                                "field_definition", "public_field_definition"})
_CLOSER = re.compile(r"\s*[)\]}]+\s*[;,]?\s*(?://.*)?")


@dataclass(frozen=True)
class _Grammar:
    """What the splitter needs to know about one tree-sitter grammar."""

    module: str  # the PyPI package's import name
    function: str  # the function in it that returns the language pointer
    kinds: dict[str, str]  # node type -> _CLASS, _TYPE, _FUNCTION or _NAMESPACE
    wrappers: frozenset[str] = frozenset()  # nodes whose inner node is the definition
    gap_style: str = "paragraphs"  # how code.py splits module-level code


_JS_KINDS = {
    "class_declaration": _CLASS, "abstract_class_declaration": _CLASS,
    "function_declaration": _FUNCTION, "generator_function_declaration": _FUNCTION,
    "method_definition": _FUNCTION, "lexical_declaration": _FUNCTION,
    "variable_declaration": _FUNCTION, "field_definition": _FUNCTION,
    "public_field_definition": _FUNCTION,
    "interface_declaration": _TYPE, "enum_declaration": _TYPE, "type_alias_declaration": _TYPE,
    "internal_module": _NAMESPACE, "module": _NAMESPACE,
}
_JS_WRAPPERS = frozenset({"export_statement", "expression_statement", "ambient_declaration"})
_C_KINDS = {
    "function_definition": _FUNCTION, "struct_specifier": _CLASS, "union_specifier": _TYPE,
    "enum_specifier": _TYPE, "type_definition": _TYPE, "linkage_specification": _NAMESPACE,
}
_CPP_KINDS = {**_C_KINDS, "class_specifier": _CLASS, "namespace_definition": _NAMESPACE}

#: Grammar per language name; :data:`_SUFFIXES` maps file suffixes to these names.
LANGUAGES: dict[str, _Grammar] = {
    "python": _Grammar(
        "tree_sitter_python", "language",
        {"class_definition": _CLASS, "function_definition": _FUNCTION},
        frozenset({"decorated_definition"})),
    "javascript": _Grammar("tree_sitter_javascript", "language", _JS_KINDS, _JS_WRAPPERS),
    "typescript": _Grammar("tree_sitter_typescript", "language_typescript", _JS_KINDS,
                           _JS_WRAPPERS),
    "tsx": _Grammar("tree_sitter_typescript", "language_tsx", _JS_KINDS, _JS_WRAPPERS),
    "java": _Grammar("tree_sitter_java", "language", {
        "class_declaration": _CLASS, "record_declaration": _CLASS, "enum_declaration": _TYPE,
        "interface_declaration": _TYPE, "annotation_type_declaration": _TYPE,
        "method_declaration": _FUNCTION, "constructor_declaration": _FUNCTION,
        "compact_constructor_declaration": _FUNCTION}),
    "c_sharp": _Grammar("tree_sitter_c_sharp", "language", {
        "class_declaration": _CLASS, "struct_declaration": _CLASS, "record_declaration": _CLASS,
        "interface_declaration": _TYPE, "enum_declaration": _TYPE,
        "delegate_declaration": _TYPE, "method_declaration": _FUNCTION,
        "constructor_declaration": _FUNCTION, "destructor_declaration": _FUNCTION,
        "operator_declaration": _FUNCTION, "conversion_operator_declaration": _FUNCTION,
        "indexer_declaration": _FUNCTION, "local_function_statement": _FUNCTION,
        "namespace_declaration": _NAMESPACE}),
    "go": _Grammar("tree_sitter_go", "language", {
        "function_declaration": _FUNCTION, "method_declaration": _FUNCTION,
        "type_declaration": _TYPE}),
    "c": _Grammar("tree_sitter_c", "language", _C_KINDS, gap_style="statements"),
    "cpp": _Grammar("tree_sitter_cpp", "language", _CPP_KINDS,
                    frozenset({"template_declaration"}), gap_style="statements"),
}
_SUFFIXES = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".java": "java", ".cs": "c_sharp", ".go": "go", ".c": "c",
    # headers are parsed as C++, which reads nearly all C headers as well
    ".h": "cpp", ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp", ".cc": "cpp", ".cpp": "cpp",
    ".cxx": "cpp", ".c++": "cpp", ".ino": "cpp",
}


class _SyntaxError(Exception):
    """The tree has an error where definitions are read; the caller falls back."""


def language_for(path: Path, first_line: str = "") -> str | None:
    """The grammar name for a file (a key of :data:`LANGUAGES`), from its suffix or, for a file
    without one, a ``#!`` line naming python or node; None when no grammar applies."""
    suffix = path.suffix.lower()
    if suffix in _SUFFIXES:
        return _SUFFIXES[suffix]
    if not suffix and first_line.startswith("#!"):
        if "python" in first_line:
            return "python"
        if "node" in first_line:
            return "javascript"
    return None


def gap_style(language: str) -> str:
    """``"statements"`` (C, C++: a lone prototype names its group) or ``"paragraphs"``."""
    return LANGUAGES[language].gap_style


@cache
def _language(language: str):  # type: ignore[no-untyped-def]
    from tree_sitter import Language

    grammar = LANGUAGES[language]
    module = importlib.import_module(grammar.module)
    return Language(getattr(module, grammar.function)())


def _parser(language: str):  # type: ignore[no-untyped-def]
    """A new parser per file: tree-sitter parsers are not safe to share between threads."""
    from tree_sitter import Parser

    return Parser(_language(language))


def symbol_spans(language: str, text: str, gaps: GapFn, max_lines: int) -> list[Span] | None:
    """Spans of ``text`` in ``language`` (see the module docstring), or None on a syntax error
    at definition level. ``gaps(lo, hi)`` splits module-level lines lo..hi (1-based, inclusive)
    into spans; ``max_lines`` (>= 2) caps the length of one span."""
    tree = _parser(language).parse(text.encode("utf-8", "surrogatepass"))
    lines = text.split("\n")
    splitter = _Splitter(LANGUAGES[language], lines, gaps, max_lines)
    try:
        spans = splitter.region(tree.root_node.children, 1, len(lines), None)
    except _SyntaxError:
        return None
    return _join_closers(spans, lines)


def _first(node) -> int:  # type: ignore[no-untyped-def]
    return int(node.start_point[0]) + 1


def _last(node) -> int:  # type: ignore[no-untyped-def]
    """Last line holding part of ``node`` (a node ending at column 0 ends on the line before)."""
    row, col = node.end_point
    return max(_first(node), int(row) + (1 if col > 0 else 0))


def _text(node) -> str:  # type: ignore[no-untyped-def]
    return node.text.decode("utf-8", "replace") if node is not None else ""


class _Splitter:
    def __init__(self, grammar: _Grammar, lines: list[str], gaps: GapFn, max_lines: int) -> None:
        self.grammar = grammar
        self.lines = lines
        self.gaps = gaps
        self.max_lines = max(2, max_lines)

    # --- definitions -----------------------------------------------------------------------
    def definition(self, node: Any) -> tuple[Any, str, str | None] | None:
        """``(inner node, kind, name)`` when ``node`` is (or wraps) a definition, else None."""
        inner = node
        while inner.type in self.grammar.wrappers:
            nxt = (inner.child_by_field_name("declaration")
                   or inner.child_by_field_name("definition")
                   or (inner.named_children[-1] if inner.named_children else None))
            if nxt is None or nxt.type in _COMMENTS:
                return None
            inner = nxt
        kind = self.grammar.kinds.get(inner.type)
        if kind is None:
            return None
        name = self.name(inner)
        if name is None and kind is not _NAMESPACE:
            return None
        if kind in (_NAMESPACE, _FUNCTION) and inner.type not in _VALUE_DEFINITIONS \
                and inner.child_by_field_name("body") is None:
            return None  # a declaration without a body (abstract, = default) stays in its class
        return inner, kind, name

    def name(self, node) -> str | None:  # type: ignore[no-untyped-def]
        kind = node.type
        if kind in ("lexical_declaration", "variable_declaration"):
            # const f = () => ...; a plain constant is module-level code, not a symbol
            declarators = [c for c in node.named_children if c.type == "variable_declarator"]
            if len(declarators) != 1:
                return None
            value = declarators[0].child_by_field_name("value")
            if value is None or value.type not in _FUNCTION_VALUES:
                return None
            return _text(declarators[0].child_by_field_name("name")) or None
        if kind in ("field_definition", "public_field_definition"):
            value = node.child_by_field_name("value")
            if value is None or value.type not in _FUNCTION_VALUES:
                return None
            return _text(node.child_by_field_name("property")
                         or node.child_by_field_name("name")) or None
        if kind == "type_declaration":  # Go: type X struct {...}, or a group type (...)
            specs = [c for c in node.named_children if c.type in ("type_spec", "type_alias")]
            return _text(specs[0].child_by_field_name("name")) if len(specs) == 1 else None
        if kind == "method_declaration" and self.grammar.module == "tree_sitter_go":
            receiver = node.child_by_field_name("receiver")
            owner = _first_of_type(receiver, "type_identifier")
            name = _text(node.child_by_field_name("name"))
            return f"{_text(owner)}.{name}" if owner is not None else name
        if kind == "function_definition" and node.child_by_field_name("declarator") is not None:
            return _declarator_name(node.child_by_field_name("declarator"))
        if kind == "type_definition":  # typedef struct {...} name;
            return _declarator_name(node.child_by_field_name("declarator"))
        if kind == "linkage_specification":
            return None
        name = node.child_by_field_name("name")
        if name is None and kind in ("struct_specifier", "class_specifier", "union_specifier",
                                     "enum_specifier"):
            return None
        if kind in ("struct_specifier", "class_specifier") and \
                node.child_by_field_name("body") is None:
            return None  # a use of the type (struct point p;), not its definition
        return _text(name) or None

    def members(self, node) -> list:  # type: ignore[type-arg,no-untyped-def]
        body = node.child_by_field_name("body")
        return list(body.children) if body is not None else []

    # --- regions ---------------------------------------------------------------------------
    def region(self, children: Iterable, lo: int, hi: int,  # type: ignore[type-arg]
               owner: str | None, container: bool = False) -> list[Span]:
        """Spans of lines lo..hi whose definitions are among ``children``; ``owner`` prefixes
        member names, and inside a class (``container``) the code between members is named
        after the class instead of going to the caller's gap splitter."""
        spans: list[Span] = []
        cursor = lo
        for node in children:
            if node.type == "ERROR" or node.is_missing:
                raise _SyntaxError
            found = self.definition(node)
            if found is None:
                continue
            first, last = _first(node), _last(node)
            if first < cursor or last > hi:
                continue  # shares a line with the definition before it: stays there
            first = self.with_comments(node, first, cursor)
            spans.extend(self.between(cursor, first - 1, owner, container))
            spans.extend(self.emit(found, first, last, owner))
            cursor = last + 1
        spans.extend(self.between(cursor, hi, owner, container))
        return spans

    def between(self, lo: int, hi: int, owner: str | None, container: bool) -> list[Span]:
        if lo > hi:
            return []
        if container:
            return [s for s in self.cap(lo, hi, owner, None) if self.has_text(s)]
        return self.gaps(lo, hi)

    def emit(self, found, first: int, last: int, owner: str | None) -> list[Span]:  # type: ignore[no-untyped-def]
        inner, kind, name = found
        if kind is _NAMESPACE:
            return self.region(self.members(inner), first, last, owner)
        symbol = f"{owner}.{name}" if owner else name
        if kind in (_CLASS, _TYPE):
            members = [m for m in self.members(inner) if self.definition(m) is not None]
            if members and _first(members[0]) > _first(inner) and (
                    kind is _CLASS or last - first + 1 > self.max_lines):
                return self.region(self.members(inner), first, last, symbol, container=True)
        return self.cap(first, last, symbol, inner)

    def with_comments(self, node, first: int, floor: int) -> int:  # type: ignore[no-untyped-def]
        """Move ``first`` up over comments directly above ``node`` (each alone on its line,
        no blank line between, not above ``floor``)."""
        sibling = node.prev_sibling
        while sibling is not None and sibling.type in _COMMENTS:
            start, end = _first(sibling), _last(sibling)
            column = int(sibling.start_point[1])
            if start < floor or end < first - 1 or self.lines[start - 1][:column].strip():
                break
            first = start
            sibling = sibling.prev_sibling
        return first

    def cap(self, first: int, last: int, symbol: str | None, node) -> list[Span]:  # type: ignore[no-untyped-def]
        """``first..last`` as one span, or cut into pieces of at most ``max_lines`` lines
        before statements (or members) of ``node``'s body that start a line."""
        if last - first + 1 <= self.max_lines:
            return [(first, last, symbol)]
        cuts = sorted({line for line, column in _statement_starts(node) if first < line <= last
                       and not self.lines[line - 1][:column].strip()})
        spans: list[Span] = []
        start = first
        while last - start + 1 > self.max_lines:
            fitting = [c for c in cuts if start < c <= start + self.max_lines]
            end = (fitting[-1] if fitting else start + self.max_lines) - 1
            spans.append((start, end, symbol))
            start = end + 1
        spans.append((start, last, symbol))
        return spans

    def has_text(self, span: Span) -> bool:
        return any(self.lines[i - 1].strip() for i in range(span[0], span[1] + 1))


def _statement_starts(node) -> list[tuple[int, int]]:  # type: ignore[no-untyped-def]
    """``(line, column)`` where each statement (or member) of ``node``'s body starts."""
    if node is None:
        return []
    body = node.child_by_field_name("body") or node
    children = list(body.named_children)
    if len(children) == 1 and children[0].type in ("statement_list", "block"):
        children = list(children[0].named_children)  # Go wraps statements once more
    return [(_first(c), int(c.start_point[1])) for c in children]


def _first_of_type(node, kind: str):  # type: ignore[no-untyped-def]
    if node is None:
        return None
    if node.type == kind:
        return node
    for child in node.named_children:
        found = _first_of_type(child, kind)
        if found is not None:
            return found
    return None


def _declarator_name(node) -> str | None:  # type: ignore[no-untyped-def]
    """The declared name inside a C/C++ declarator chain (``*f(int)`` -> ``f``,
    ``A::operator==(...)`` -> ``A::operator==``)."""
    while node is not None and node.type not in (
            "identifier", "field_identifier", "qualified_identifier", "destructor_name",
            "operator_name", "type_identifier", "template_function"):
        node = node.child_by_field_name("declarator")
    return _text(node) or None if node is not None else None


def _join_closers(spans: list[Span], lines: list[str]) -> list[Span]:
    """Merge a span of closing brackets only into the span above it."""
    out: list[Span] = []
    for first, last, symbol in spans:
        body = [lines[i - 1] for i in range(first, last + 1) if lines[i - 1].strip()]
        if out and body and all(_CLOSER.fullmatch(line) for line in body):
            prev = out[-1]
            out[-1] = (prev[0], last, prev[2])
        else:
            out.append((first, last, symbol))
    return out
