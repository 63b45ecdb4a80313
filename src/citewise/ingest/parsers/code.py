"""Source code and build/config files, split at symbol boundaries (case C41).

The document text is the decoded file itself and every block is a CODE block with
``line_start``/``line_end`` and, where known, ``symbol``, so a citation reads
"geometry.cc:4-8, ring_area". Nothing is dropped; blocks cover the file's non-blank lines
(comments directly above a definition belong to it).

- Python, JavaScript, TypeScript/TSX, Java, C#, Go, C and C++: the tree-sitter grammar of the
  language (see :mod:`._code_tree`): one block per class, function and method (symbol
  ``Class.method``), with the comments above it, its decorators/annotations, signature and
  docstring; class headers and fields are blocks named after the class; a block longer than
  :data:`MAX_BLOCK_LINES` is cut between statements; module-level code between definitions
  forms unnamed blocks (grouped by blank lines; in C and C++ a lone prototype keeps its
  function's name). A file whose tree has a syntax error where definitions are read falls
  back to the splitters below (for Python the ``ast`` one).
- Python without tree-sitter (the fallback): the ``ast`` module; one block per top-level
  function and class (a class longer than :data:`MAX_BLOCK_LINES` is split into its header and
  one block per method); a file ``ast`` cannot parse falls back to the generic split.
- Other brace languages (Rust, Kotlin, Swift, Scala, PHP, shell ...), and the fallback for the
  languages above: a scanner that skips strings and comments finds the top-level ``{...}``
  bodies; each is a block named from its header (``class X``, ``fn f``,
  ``double ring_area(...)``); a large class/namespace/impl body is split one level down.
  Top-level statements between bodies are grouped by blank lines, a lone prototype keeps its
  function's name.
- Makefiles: one block per rule, named after its targets.
- Anything else (XML build files, YAML, SQL, Dockerfiles ...): groups of lines separated by
  blank lines.

Files are recognised by suffix, by known names without a suffix (Makefile, Dockerfile ...) and
by a ``#!`` first line; a file with any other name that decodes as text goes to the text
parser, so nothing is ever refused for its extension.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from pathlib import Path

from citewise.errors import EmptyDocumentError
from citewise.ingest.parsers import _code_tree
from citewise.ingest.parsers.base import register
from citewise.ingest.parsers.text import decode_text, is_blank, line_starts
from citewise.types import Block, BlockKind, ParsedDocument

__all__ = ["BRACE_SUFFIXES", "MAX_BLOCK_LINES", "NAMES", "SUFFIXES", "parse", "split"]

MAX_BLOCK_LINES = 80

BRACE_SUFFIXES = (
    ".c", ".h", ".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".ino", ".m", ".mm",
    ".cs", ".java", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".mts", ".cts", ".go", ".rs",
    ".kt", ".kts", ".swift", ".scala", ".sc", ".groovy", ".gradle", ".php", ".dart", ".sh",
    ".bash", ".zsh", ".ksh", ".ps1", ".psm1", ".zig", ".v", ".sol", ".proto", ".css", ".scss",
    ".less", ".vue", ".svelte", ".d", ".fs", ".hx", ".jsonc",
)
OTHER_SUFFIXES = (
    ".py", ".pyi", ".pyw", ".rb", ".rake", ".lua", ".pl", ".pm", ".r", ".jl", ".ex", ".exs",
    ".erl", ".hrl", ".hs", ".ml", ".mli", ".clj", ".cljs", ".lisp", ".el", ".scm", ".nim",
    ".cr", ".vb", ".bas", ".pas", ".f", ".f90", ".f95", ".asm", ".s", ".sql", ".tf", ".hcl",
    ".nix", ".cmake", ".mk", ".mak", ".make", ".bat", ".cmd", ".fish", ".vim", ".awk", ".sed",
    ".xml", ".xsd", ".xsl", ".xslt", ".proj", ".csproj", ".vbproj", ".fsproj", ".vcxproj",
    ".props", ".targets", ".sln", ".pom", ".plist", ".json", ".yaml", ".yml", ".toml", ".ini",
    ".cfg", ".conf", ".properties", ".env", ".editorconfig", ".gitignore", ".dockerignore",
    ".graphql", ".gql", ".tex", ".bib", ".cabal", ".ipynb",
)
SUFFIXES = BRACE_SUFFIXES + OTHER_SUFFIXES
# file names without a suffix, matched case-insensitively on the whole name
NAMES = (
    "makefile", "gnumakefile", "dockerfile", "containerfile", "jenkinsfile", "vagrantfile",
    "rakefile", "gemfile", "procfile", "brewfile", "podfile", "justfile",
    "build", "workspace", "meson.build", "sconstruct", "pkgbuild",
)

_HEADER_NAME_RES = (
    re.compile(r"\bimpl(?:<[^>]*>)?\s+(?:[^{]*?\bfor\s+)?([A-Za-z_][\w:]*)"),
    re.compile(r"\b(?:class|struct|interface|enum|trait|impl|union|record|protocol|extension|"
               r"object|namespace|module|package|mod|type)\b\s*(?:[\w<>,: ]*?\bfor\s+)?"
               r"([A-Za-z_$][\w$:.]*)"),
    re.compile(r"\b(?:fn|func|function|def|fun|sub|proc|method)\b\s*\*?\s*(?:\([^)]*\)\s*)?"
               r"([A-Za-z_$][\w$.]*)"),
    re.compile(r"\b(?:const|let|var|val)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*(?:async\s*)?"
               r"(?:function\b|\([^)]*\)\s*(?::[^=]+)?=>|[A-Za-z_$][\w$]*\s*=>)"),
    re.compile(r"([A-Za-z_~$][\w$:~]*)\s*\([^;{}]*\)\s*(?:const|override|final|noexcept|"
               r"throws\s+[\w., ]+|->\s*[^{]+|:\s*[^{]+)*\s*$", re.DOTALL),
)
_CONTAINER_RE = re.compile(r"\b(?:class|struct|interface|enum|trait|impl|namespace|module|"
                           r"object|extension|protocol|record)\b")
_KEYWORDS = frozenset("if for while switch catch return sizeof elif else do try with".split())
_RUST_CHAR_RE = re.compile(r"'(?:\\[^']{1,10}|[^\\'])'")
_MAKE_RULE_RE = re.compile(r"^([^\s:=#][^:=#]*?)\s*::?(?![=])(?:\s|$)")


def _sniff(data: bytes) -> bool:
    return data.startswith((b"#!/", b"#! /"))


@register("code", suffixes=SUFFIXES + NAMES, sniff=_sniff)
def parse(path: Path, data: bytes, *, tree_sitter: bool = True) -> ParsedDocument:
    """Parse a source or build file into CODE blocks (see the module docstring).

    ``tree_sitter=False`` uses only the line-based splitters (the fallback), for comparison.
    ``metadata`` holds ``language`` (the suffix or file name) and ``splitter`` (``tree-sitter``
    or ``lines``). Raises EmptyDocumentError, EncodingError, UnsupportedFormatError (binary
    content).
    """
    if not data:
        raise EmptyDocumentError(path, "empty file (0 bytes)")
    text = decode_text(path, data)
    if is_blank(text):
        raise EmptyDocumentError(path, "empty file: only whitespace, no text to index")
    path = Path(path)
    starts = line_starts(text)
    blocks = []
    spans, splitter = _split(path, text, tree_sitter)
    for first, last, symbol in spans:
        start = starts[first - 1]
        end = starts[last] - 1 if last < len(starts) else len(text)
        while end > start and text[end - 1].isspace():
            end -= 1
        while start < end and text[start] in " \t\n":
            start += 1
        if start < end:
            blocks.append(Block(kind=BlockKind.CODE, text=text[start:end], start=start, end=end,
                                line_start=bisect_right(starts, start),
                                line_end=bisect_right(starts, end - 1), symbol=symbol))
    if not blocks:
        raise EmptyDocumentError(path, "no text to index")
    language = path.suffix.lower().lstrip(".") or path.name.lower()
    return ParsedDocument(text=text, blocks=tuple(blocks), format="code", title=path.name,
                          metadata={"language": language, "splitter": splitter})


def split(path: Path, text: str, *, tree_sitter: bool = True) -> list[tuple[int, int, str | None]]:
    """``(first_line, last_line, symbol)`` spans (1-based, inclusive) covering every non-blank
    line of ``text`` in order; ``tree_sitter=False`` skips the tree-sitter splitter."""
    return _split(Path(path), text, tree_sitter)[0]


def _split(path: Path, text: str,
           tree_sitter: bool) -> tuple[list[tuple[int, int, str | None]], str]:
    lines = text.split("\n")
    suffix, name = path.suffix.lower(), path.name.lower()
    spans: list[tuple[int, int, str | None]] | None = None
    language = _code_tree.language_for(path, lines[0]) if tree_sitter else None
    if language is not None:
        statements = _code_tree.gap_style(language) == "statements"

        def gaps(lo: int, hi: int) -> list[tuple[int, int, str | None]]:
            return _statement_spans(lines, lo, hi) if statements else _paragraph_spans(lines, lo, hi)

        spans = _code_tree.symbol_spans(language, text, gaps, MAX_BLOCK_LINES)
        if spans:
            return spans, "tree-sitter"
    if suffix in (".py", ".pyi", ".pyw") or (not suffix and lines[0].startswith("#!")
                                             and "python" in lines[0]):
        spans = _python_spans(text, lines)
    elif suffix in (".mk", ".mak", ".make") or name in ("makefile", "gnumakefile"):
        spans = _make_spans(lines)
    elif suffix in BRACE_SUFFIXES or name in ("jenkinsfile",):
        spans = _brace_spans(lines, 1, len(lines), suffix, depth_budget=1)
    if not spans:
        spans = _paragraph_spans(lines, 1, len(lines))
    return spans, "lines"


# --- Python --------------------------------------------------------------------------------------


def _python_spans(text: str, lines: list[str]) -> list[tuple[int, int, str | None]] | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    spans: list[tuple[int, int, str | None]] = []
    cursor = 1
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        first = _with_leading_comments(lines, _first_line(node), cursor)
        last = node.end_lineno or node.lineno
        spans.extend(_paragraph_spans(lines, cursor, first - 1))
        if isinstance(node, ast.ClassDef) and last - first + 1 > MAX_BLOCK_LINES:
            spans.extend(_python_class_spans(node, lines, first, last))
        else:
            spans.append((first, last, node.name))
        cursor = last + 1
    spans.extend(_paragraph_spans(lines, cursor, len(lines)))
    return spans


def _python_class_spans(node: ast.ClassDef, lines: list[str], first: int,
                        last: int) -> list[tuple[int, int, str | None]]:
    spans: list[tuple[int, int, str | None]] = []
    cursor = first
    for child in node.body:
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        start = _with_leading_comments(lines, _first_line(child), cursor)
        if start > cursor:
            spans.append((cursor, start - 1, node.name))
        end = child.end_lineno or child.lineno
        spans.append((start, end, f"{node.name}.{child.name}"))
        cursor = end + 1
    if cursor <= last:
        spans.append((cursor, last, node.name))
    return spans


def _first_line(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", [])
    return int(min([node.lineno] + [d.lineno for d in decorators]))  # type: ignore[attr-defined]


def _with_leading_comments(lines: list[str], first: int, floor: int) -> int:
    """Move ``first`` up over comment lines directly above it (not past ``floor``)."""
    while first - 1 >= floor and lines[first - 2].lstrip().startswith(("#", "//", "/*", "*")):
        first -= 1
    return first


# --- brace languages -----------------------------------------------------------------------------


def _brace_spans(lines: list[str], lo: int, hi: int, suffix: str,
                 depth_budget: int) -> list[tuple[int, int, str | None]] | None:
    """Spans of the top-level bodies between lines lo..hi (inclusive)."""
    bodies = _top_level_bodies(lines, lo, hi, suffix)
    if bodies is None:
        return None
    spans: list[tuple[int, int, str | None]] = []
    cursor = lo
    for open_line, close_line, prefix in bodies:
        first = _header_start(lines, open_line, cursor)
        header = "\n".join(lines[first - 1:open_line - 1] + [prefix])
        first = _with_leading_comments(lines, first, cursor)
        spans.extend(_statement_spans(lines, cursor, first - 1))
        symbol = _symbol(header)
        if (depth_budget > 0 and close_line - first + 1 > MAX_BLOCK_LINES
                and _CONTAINER_RE.search(header) and close_line - open_line > 2):
            inner = _brace_spans(lines, open_line + 1, close_line - 1, suffix, depth_budget - 1)
            if inner:
                spans.append((first, open_line, symbol))
                spans.extend((a, b, f"{symbol}.{s}" if symbol and s else (s or symbol))
                             for a, b, s in inner)
                spans.append((close_line, close_line, symbol))
                cursor = close_line + 1
                continue
        spans.append((first, close_line, symbol))
        cursor = close_line + 1
    spans.extend(_statement_spans(lines, cursor, hi))
    return spans


def _top_level_bodies(lines: list[str], lo: int, hi: int,
                      suffix: str) -> list[tuple[int, int, str]] | None:
    """``(open_line, close_line, text before the brace)`` of each ``{...}`` at depth 0 within
    lines lo..hi.

    Strings, character literals and comments are skipped (``#`` lines too, except in CSS);
    returns None when braces do not balance (the caller then falls back to blank-line groups).
    """
    hash_comments = suffix not in (".css", ".scss", ".less")
    rust = suffix == ".rs"
    bodies: list[tuple[int, int, str]] = []
    depth = open_line = 0
    prefix = ""
    quote = ""
    in_block_comment = False
    for number in range(lo, hi + 1):
        line = lines[number - 1]
        if hash_comments and not quote and not in_block_comment and line.lstrip().startswith("#"):
            continue
        i, n = 0, len(line)
        while i < n:
            ch = line[i]
            if in_block_comment:
                if line.startswith("*/", i):
                    in_block_comment = False
                    i += 1
            elif quote:
                if ch == "\\":
                    i += 1
                elif ch == quote:
                    quote = ""
            elif line.startswith("/*", i):
                in_block_comment = True
                i += 1
            elif line.startswith("//", i):
                break
            elif ch == "'" and rust:
                m = _RUST_CHAR_RE.match(line, i)
                if m:
                    i = m.end() - 1  # a char literal; otherwise a lifetime such as 'a
            elif ch in "\"'`":
                quote = ch
            elif ch == "{":
                if depth == 0:
                    open_line, prefix = number, line[:i]
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth < 0:
                    return None
                if depth == 0:
                    bodies.append((open_line, number, prefix))
            i += 1
        if quote in ("'", '"'):
            quote = ""  # only template literals (`...`) span lines
    return bodies if depth == 0 and not quote else None


def _header_start(lines: list[str], open_line: int, floor: int) -> int:
    """First line of the declaration whose body opens on ``open_line``."""
    first = open_line
    while first - 1 >= floor:
        prev = lines[first - 2].strip()
        if not prev or prev.endswith((";", "}", "*/")) or prev.startswith(("#", "//", "/*")):
            break
        first -= 1
    return first


def _symbol(header: str) -> str | None:
    """The name a declaration header introduces; the earliest match of the patterns wins, so
    ``double dist(struct point p)`` is ``dist`` and ``class A : B`` is ``A``."""
    header = re.sub(r"//[^\n]*|/\*.*?\*/", " ", header, flags=re.DOTALL).strip()
    header = header.rsplit(";", 1)[-1].strip()
    found = []
    for rank, pattern in enumerate(_HEADER_NAME_RES):
        for m in pattern.finditer(header):
            if m.group(1) not in _KEYWORDS:
                found.append((m.start(), rank, m.group(1)))
                break
    return min(found)[2] if found else None


def _statement_spans(lines: list[str], lo: int, hi: int) -> list[tuple[int, int, str | None]]:
    """Blank-line groups of top-level statements; a lone prototype keeps its name."""
    spans = []
    for first, last, _ in _paragraph_spans(lines, lo, hi):
        chunk = "\n".join(lines[first - 1:last])
        protos = [
            m.group(1) for m in re.finditer(r"([A-Za-z_~][\w:~]*)\s*\([^;{}()]*\)\s*[\w\s]*;",
                                            chunk)
            if m.group(1) not in _KEYWORDS
        ]
        spans.append((first, last, protos[0] if len(protos) == 1 else None))
    return spans


# --- Makefiles and the generic split ----------------------------------------------------------


def _make_spans(lines: list[str]) -> list[tuple[int, int, str | None]]:
    spans: list[tuple[int, int, str | None]] = []
    cursor = 1
    number = 1
    while number <= len(lines):
        m = _MAKE_RULE_RE.match(lines[number - 1])
        if not m:
            number += 1
            continue
        first = _with_leading_comments(lines, number, cursor)
        spans.extend(_paragraph_spans(lines, cursor, first - 1))
        last = number
        while last < len(lines) and (lines[last].startswith("\t") or (
                lines[last - 1].endswith("\\") and lines[last].strip())):
            last += 1
        spans.append((first, last, m.group(1).strip()))
        cursor = number = last + 1
    spans.extend(_paragraph_spans(lines, cursor, len(lines)))
    return spans


def _paragraph_spans(lines: list[str], lo: int, hi: int) -> list[tuple[int, int, str | None]]:
    """Groups of non-blank lines within lo..hi, each at most MAX_BLOCK_LINES long."""
    spans: list[tuple[int, int, str | None]] = []
    first = 0
    for number in range(lo, hi + 1):
        blank = not lines[number - 1].strip()
        if first and (blank or number - first >= MAX_BLOCK_LINES):
            spans.append((first, number - 1, None))
            first = 0
        if not blank and not first:
            first = number
    if first:
        spans.append((first, hi, None))
    return spans
