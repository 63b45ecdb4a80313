"""Plain text: byte decoding shared by every text-like parser, and the ``text`` parser itself.

Decoding (:func:`decode_text`) tries, in order: a byte order mark (UTF-8/16/32, stripped),
BOM-less UTF-16/32 (NUL bytes at alternating positions), strict UTF-8, UTF-8 carrying encoded
surrogates (CESU-8 pairs are joined, lone ones become U+FFFD), then charset-normalizer with a
plausibility check between its candidates (see :func:`_plausibility`), so cp1251, KOI8-R and
cp1252 come out right. Text that would only decode as mojibake raises
:class:`~citewise.errors.EncodingError`; it is never stored.

Cleaning (:func:`clean_text`) drops what must never reach the index: U+0000 and other C0
controls except tab and newline, U+FEFF, lone surrogates (made U+FFFD), and normalises newlines
to ``\\n`` and the text to NFC. :func:`collapse_blobs` replaces base64 ``data:`` URIs and runs
of 2,000+ base64/hex-like characters with ``[data omitted]``: they carry no searchable meaning
and would crowd real text out of chunks.

The ``text`` parser makes one paragraph block per run of non-blank lines, with 1-based
``line_start``/``line_end``; the document text is the cleaned file text itself, so block offsets
point into the file as the user sees it. A paragraph with no newline at all (one 300 kB line)
stays one block: the chunker splits it.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from pathlib import Path

from citewise.errors import EmptyDocumentError, EncodingError, UnsupportedFormatError
from citewise.ingest.parsers.base import register
from citewise.types import Block, BlockKind, ParsedDocument

__all__ = [
    "clean_text",
    "collapse_blobs",
    "decode_text",
    "is_blank",
    "line_starts",
    "looks_binary",
    "paragraph_spans",
    "parse",
    "parse_mislabelled",
]

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: it starts with the same two bytes
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# Magic numbers of common binary formats that no text parser should try to read.
_BINARY_MAGIC = (
    b"\x89PNG", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"PK\x03\x04", b"\xd0\xcf\x11\xe0",
    b"\x7fELF", b"\x1f\x8b", b"\xfd7zXZ", b"7z\xbc\xaf", b"Rar!\x1a", b"OggS\x00",
    b"\x00\x00\x01\x00", b"wOFF", b"SQLite format 3\x00",
)
_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 12, 13, 27))
_SAMPLE = 65536

# Preference among detected encodings whose results are equally plausible (most used first).
_PRIORITY = (
    "utf_8", "cp1252", "cp1251", "koi8_r", "gb18030", "big5", "shift_jis", "euc_jp", "euc_kr",
    "cp1250", "iso8859_15", "latin_1", "cp1253", "cp1254", "cp1255", "cp1256", "cp1257",
)
_FALLBACKS = ("cp1252", "cp1251", "koi8_r")

_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f\ufeff]")
_BLOB_RE = re.compile(
    r"data:[\w.+-]+/[\w.+-]+(?:;[\w.+-]+=[\w.+-]+)*;base64,[A-Za-z0-9+/=]{64,}"
    r"(?:\n[A-Za-z0-9+/=]{20,})*"
    r"|[A-Za-z0-9+/=_-]{2000,}"
)
BLOB_PLACEHOLDER = "[data omitted]"
_BLANK_RE = re.compile(r"[\s\u200b\u200c\u200d\u2060\ufeff]*")
_WORD_RE = re.compile(r"[^\W\d_]+")
# a symbol or quote squeezed between two letters ("‚Н–ѕ“ъ"), typical of a wrong code page;
# apostrophes, hyphens and middle dots are normal there
_SQUEEZED_SYMBOL_RE = re.compile(r"(?<=[^\W\d_])[^\w\s'’\-‐·.,:;!?/()\[\]&@#%*+=\"](?=[^\W\d_])")


def looks_binary(data: bytes) -> bool:
    """True for content no text parser should read: known binary magic numbers, or more
    than 5 % control bytes in the first 64 kB (UTF-16/32 text is recognised first)."""
    if data.startswith(_BINARY_MAGIC):
        return True
    sample = data[:_SAMPLE]
    if not sample or _bom_encoding(sample) or _nobom_wide_encoding(sample):
        return False
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    return controls > 0.05 * len(sample)


def decode_text(path: str | Path, data: bytes) -> str:
    """Decode ``data`` to clean text (see the module docstring for the order of attempts).

    Raises :class:`UnsupportedFormatError` for binary content and :class:`EncodingError` when
    no encoding gives plausible text. The result has passed :func:`clean_text`.
    """
    if looks_binary(data):
        raise UnsupportedFormatError(path)
    return clean_text(_decode(path, data))


def clean_text(text: str) -> str:
    """Remove NULs, C0 controls (tab and newline kept), U+FEFF and lone surrogates (to U+FFFD);
    newlines become ``\\n`` and form feeds a newline; the result is NFC-normalised."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n")
    text = _CONTROL_RE.sub("", text)
    if _has_surrogates(text):
        text = _fix_surrogates(text)
    return unicodedata.normalize("NFC", text)


def collapse_blobs(text: str) -> str:
    """Replace base64 ``data:`` URIs and 2,000+ character base64/hex/digit runs with
    :data:`BLOB_PLACEHOLDER` (no newline is removed, so line numbers stay right)."""
    if len(text) < 64:
        return text

    def repl(m: re.Match[str]) -> str:
        return BLOB_PLACEHOLDER + "\n" * m.group(0).count("\n")

    return _BLOB_RE.sub(repl, text)


def is_blank(text: str) -> bool:
    """True when ``text`` holds only whitespace (NBSP and zero-width characters included)."""
    return _BLANK_RE.fullmatch(text) is not None


def paragraph_spans(text: str) -> list[tuple[int, int, int, int]]:
    """``(start, end, line_start, line_end)`` of every run of non-blank lines, with leading
    and trailing whitespace trimmed from the span; lines are 1-based."""
    spans = []
    pos = 0
    first = -1  # line number where the current paragraph began
    para_start = para_end = last = 0
    for number, line in enumerate(text.split("\n"), start=1):
        if is_blank(line):
            if first > 0:
                spans.append((para_start, para_end, first, last))
                first = -1
        else:
            stripped = len(line) - len(line.lstrip())
            if first < 0:
                first, para_start = number, pos + stripped
            last, para_end = number, pos + len(line.rstrip())
        pos += len(line) + 1
    if first > 0:
        spans.append((para_start, para_end, first, last))
    return spans


def line_starts(text: str) -> list[int]:
    """Offsets of the first character of every line: ``line_starts(t)[n - 1]`` is line n."""
    starts = [0]
    find = text.find
    i = find("\n")
    while i >= 0:
        starts.append(i + 1)
        i = find("\n", i + 1)
    return starts


@register("text", suffixes=(".txt", ".text", ".log", ".csv", ".tsv", ".nfo"))
def parse(path: Path, data: bytes) -> ParsedDocument:
    """Parse plain text into one paragraph block per run of non-blank lines; a ``.csv`` or
    ``.tsv`` file with two or more rows and columns is one TABLE block (``header`` = first row).

    Raises EmptyDocumentError (zero bytes, whitespace only), UnsupportedFormatError (binary)
    and EncodingError (undetectable encoding).
    """
    if not data:
        raise EmptyDocumentError(path, "empty file (0 bytes)")
    text = collapse_blobs(decode_text(path, data))
    if is_blank(text):
        raise EmptyDocumentError(path, "empty file: only whitespace, no text to index")
    if Path(path).suffix.lower() in (".csv", ".tsv"):
        table = _parse_delimited(path, text)
        if table is not None:
            return table
    blocks = [
        Block(kind=BlockKind.PARAGRAPH, text=text[s:e], start=s, end=e, line_start=a, line_end=b)
        for s, e, a, b in paragraph_spans(text)
    ]
    if not blocks:
        raise EmptyDocumentError(path, "empty file: only whitespace, no text to index")
    return ParsedDocument(text=text, blocks=tuple(blocks), format="text", title=Path(path).stem)


def parse_mislabelled(path: Path, data: bytes, expected: str) -> ParsedDocument:
    """Parse content that does not match its suffix's format (a text file named ``.pdf``).

    The parser registered for the file's suffix or name other than ``expected`` handles it,
    else the text parser; a file named after ``expected`` gets a warning saying what it really
    is. Content that is not text either raises CorruptDocumentError ("not a valid PDF").
    """
    from dataclasses import replace

    from citewise.errors import CorruptDocumentError, DocumentError
    from citewise.ingest.parsers.base import registered

    path = Path(path)
    entries = registered()
    suffix, name = path.suffix.lower(), path.name.lower()
    own = next((e for e in entries.values() if e.format.lower() == expected.lower()), None)
    entry = next((e for e in entries.values()
                  if e is not own and (suffix in e.suffixes or name in e.suffixes)),
                 entries["text"])
    try:
        doc = entry.parse(path, data)
    except EmptyDocumentError:
        raise
    except DocumentError as exc:
        raise CorruptDocumentError(
            path, f"not a valid {expected} file: corrupt or unsupported content; re-export or "
            "re-download it") from exc
    if own is None or suffix not in own.suffixes:
        return doc
    warning = (f"the file is named {suffix} but holds {doc.format}, not {expected}; "
               f"it was indexed as {doc.format}")
    return replace(doc, warnings=(*doc.warnings, warning))


def _parse_delimited(path: str | Path, text: str) -> ParsedDocument | None:
    import csv
    import io

    from citewise.ingest.parsers.base import TextBuilder

    tsv = Path(path).suffix.lower() == ".tsv"
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(
            text[:20_000], delimiters="\t" if tsv else ",;\t|")
    except csv.Error:
        dialect = csv.excel_tab if tsv else csv.excel
    try:
        rows = [[" ".join(cell.split()) for cell in row]
                for row in csv.reader(io.StringIO(text), dialect)]
    except csv.Error:
        return None
    rows = [row for row in rows if any(row)]
    if len(rows) < 2 or max(map(len, rows)) < 2:
        return None
    builder = TextBuilder()
    builder.add(BlockKind.TABLE, "\n".join(" | ".join(row) for row in rows[1:]),
                header=" | ".join(rows[0]), line_start=2, line_end=text.rstrip().count("\n") + 1)
    return builder.build("text", title=Path(path).stem, metadata={"table": True})


# --- decoding ---------------------------------------------------------------------------------


def _decode(path: str | Path, data: bytes) -> str:
    enc = _bom_encoding(data)
    if enc:
        bom = next(b for b, e in _BOMS if e == enc)
        return data[len(bom):].decode(enc, errors="replace")
    enc = _nobom_wide_encoding(data[:_SAMPLE])
    if enc:
        return data.decode(enc, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:  # CESU-8 / WTF-8: UTF-8 with encoded surrogates (ED A0..BF xx)
        return _fix_surrogates(data.decode("utf-8", errors="surrogatepass"))
    except UnicodeDecodeError:
        pass
    lenient = data.decode("utf-8", errors="replace")
    bad = lenient.count("\ufffd")
    if bad and sum(1 for ch in lenient if ord(ch) > 127) >= 20 * bad:
        return lenient  # valid UTF-8 with a few corrupt bytes: keep it, mark them U+FFFD
    return _detect(path, data)


def _bom_encoding(data: bytes) -> str | None:
    for bom, enc in _BOMS:
        if data.startswith(bom):
            return enc
    return None


def _nobom_wide_encoding(sample: bytes) -> str | None:
    """utf-16/32 without a BOM, recognised by NUL bytes at fixed positions (mostly-ASCII text)."""
    n = len(sample) - len(sample) % 4
    if n < 8 or sample.count(0) < n // 4:
        return None
    sample = sample[:n]
    cols = [sample[i::4].count(0) / (n // 4) for i in range(4)]
    if cols[1] > 0.9 and cols[2] > 0.9 and cols[3] > 0.9 and cols[0] < 0.1:
        return "utf-32-le"
    if cols[0] > 0.9 and cols[1] > 0.9 and cols[2] > 0.9 and cols[3] < 0.1:
        return "utf-32-be"
    even = (cols[0] + cols[2]) / 2
    odd = (cols[1] + cols[3]) / 2
    if odd > 0.3 and even < 0.05:
        return "utf-16-le"
    if even > 0.3 and odd < 0.05:
        return "utf-16-be"
    return None


def _detect(path: str | Path, data: bytes) -> str:
    """charset-normalizer, then the most plausible of its near-best candidates."""
    from charset_normalizer import from_bytes

    matches = from_bytes(data[: 4 * _SAMPLE])
    best = matches.best()
    candidates: dict[str, tuple[str, float]] = {}
    if best is not None:
        for m in list(matches)[:10]:
            if m.chaos <= best.chaos + 0.02:
                try:
                    candidates[m.encoding] = (data.decode(m.encoding), m.coherence)
                except (UnicodeDecodeError, LookupError):
                    continue
    for enc in _FALLBACKS:
        if enc not in candidates:
            try:
                candidates[enc] = (data.decode(enc), 0.0)
            except UnicodeDecodeError:
                continue
    if not candidates:
        raise EncodingError(path)
    scored = {enc: _plausibility(text) for enc, (text, _) in candidates.items()}
    top = max(scored.values())
    if top < 0.6:
        raise EncodingError(path)
    tied = [enc for enc, s in scored.items() if s >= top - 0.02]

    def rank(enc: str) -> tuple[float, int]:
        prio = _PRIORITY.index(enc) if enc in _PRIORITY else len(_PRIORITY)
        return (-round(candidates[enc][1], 2), prio)

    return candidates[min(tied, key=rank)][0]


def _plausibility(text: str) -> float:
    """Share of letters in well-cased words (lower, UPPER or Title), minus penalties for
    characters mojibake produces (C1 controls, box drawing, half-width kana, U+FFFD).

    Decoding KOI8-R as cp1251 (or the reverse) swaps letter case at random, and Latin code
    pages applied to Cyrillic or Greek give words like "ÇÁÑÁÊÔÇ"; both score low here.
    """
    good = bad = 0
    for word in _WORD_RE.findall(text):
        if word.islower() or word.isupper() or word.istitle() or word.lower() == word:
            good += len(word)  # (uncased scripts such as CJK or Arabic count as well-cased)
        else:
            bad += len(word)
    odd = sum(1 for ch in text if _is_mojibake_char(ch))
    odd += len(_SQUEEZED_SYMBOL_RE.findall(text))
    letters = good + bad
    if letters == 0:
        return 1.0 - min(1.0, odd / max(1, len(text)) * 10)
    return (good - bad - 3 * odd) / letters


def _is_mojibake_char(ch: str) -> bool:
    return (
        "\x80" <= ch <= "\x9f"  # C1 controls
        or "\u2500" <= ch <= "\u259f"  # box drawing, blocks
        or "\uff61" <= ch <= "\uff9f"  # half-width katakana
        or "\ue000" <= ch <= "\uf8ff"  # private use
        or ch == "\ufffd"
    )


def _has_surrogates(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def _fix_surrogates(text: str) -> str:
    """Join surrogate pairs into their code point; a lone surrogate becomes U+FFFD."""
    return text.encode("utf-16-le", errors="surrogatepass").decode("utf-16-le", errors="replace")

