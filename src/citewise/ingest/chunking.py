"""Structure-aware chunking: blocks in, chunks of at most ``max_tokens`` model tokens out.

Rules, in order of precedence:

* A chunk never exceeds ``max_tokens`` tokens of the embedding model's tokenizer (counted with
  the caller's ``count_tokens``); the caller reserves room for the title/section prefix that
  :func:`embedding_text` adds.
* A heading starts a new chunk and stays with the content under it.
* A table chunk always starts with the table's header row, and a row is never split (unless a
  single row alone exceeds the limit, which is then split like prose).
* A code block with a symbol (function, class) is its own chunk; a long one is split by lines.
* A long paragraph is split at sentence ends, then at spaces, then, as a last resort for text
  with neither (a 60,000-character number), at a character boundary. Split pieces of one block
  overlap by up to ``overlap`` tokens of whole sentences.
* Consecutive small blocks of the same section are packed together up to the limit.

``source_text`` is the whole original paragraph(s) a chunk came from, for the source viewer
(a window of +-``SOURCE_WINDOW`` characters around the chunk for paragraphs longer than that).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import regex

from citewise.types import Block, BlockKind, Chunk, ParsedDocument

TokenCounter = Callable[[str], int]

SOURCE_WINDOW = 3000
#: A sentence ends after ``.``, ``!``, ``?`` or ``…`` and white space, but not after a
#: common abbreviation ("e.g. the flag", "i.e.", "etc.", "vs.", "cf.") and, after an
#: ellipsis, only before a word not in lower case ("citewise ingest PATH... adds files" goes
#: on); CJK full stops end one at once.
_SENTENCE_END = regex.compile(
    r"(?<=[.!?…])(?<!(?i:\b(?:e\.g|i\.e|etc|vs|cf|viz|incl|approx)\.))(?<!\.\.\.|…)\s+"
    r"|(?<=\.\.\.|…)\s+(?!\p{Ll})|(?<=[。！？])|\n\s*\n\s*")
#: A single line break ends a sentence only after a short line (a heading, a list item, a
#: note) or a line ending in punctuation, and before a line not starting in lower case; a
#: long line wrapped mid-sentence ("... buyers living in\nGermany") is kept together.
_SHORT_LINE = 50


def _wrapped_lines(text: str) -> list[str]:
    lines = text.split("\n")
    out = [lines[0]]
    for line in lines[1:]:
        prev = out[-1].rstrip()
        first = line.lstrip()[:1]
        ends = prev.endswith((".", "!", "?", ":", ";", "…", "。", "！", "？"))
        if first and not first.islower() and (ends or len(prev) < _SHORT_LINE):
            out.append(line)
        else:
            out[-1] = out[-1] + "\n" + line
    return out


@dataclass(frozen=True)
class _Unit:
    """A piece of one block that fits the limit; ``start``/``end`` index the document text."""

    block: Block
    text: str
    start: int
    end: int
    tokens: int
    #: the piece's own first and last source line (1-based), where it is known to be narrower
    #: than its block's (a window of a long table's rows); None: the block's
    lines: tuple[int, int] | None = None


def sentences(text: str) -> list[str]:
    """Split prose into sentences (ends kept, wrapped lines inside a sentence kept as they
    are); joining them with one space restores the words."""
    parts = (line for p in _SENTENCE_END.split(text) for line in _wrapped_lines(p))
    return [s for s in (p.strip() for p in parts) if s]


def _hard_split(text: str, max_tokens: int, count: TokenCounter) -> Iterator[str]:
    """Split text with no usable separator into pieces of at most ``max_tokens`` tokens,
    cutting only between grapheme clusters (an emoji family or a flag is never cut)."""
    graphemes = regex.findall(r"\X", text)
    pos = 0
    while pos < len(graphemes):
        size = max(1, min(len(graphemes) - pos, max_tokens * 4))
        while size > 1 and count("".join(graphemes[pos : pos + size])) > max_tokens:
            size = max(1, int(size * 0.7))
        yield "".join(graphemes[pos : pos + size])
        pos += size


def _call_overhead(count: TokenCounter) -> int:
    """Tokens a counter adds once per call whatever the text (special tokens such as BOS/EOS):
    ``2 * count("a") - count("a a")``, 0 for a counter that adds none."""
    return max(0, 2 * count("a") - count("a a"))


def _pack_words(words: list[str], counts: list[int], max_tokens: int, count: TokenCounter,
                overhead: int) -> Iterator[tuple[str, int]]:
    """Greedy pieces of consecutive ``words`` (each fits alone; ``counts`` are their own
    counts), joined by one space, with their counts: every piece is the longest run from its
    first word whose count fits ``max_tokens``.

    The greedy rule adds words one at a time until the next one would not fit; counting each
    growing run costs O(words^2) tokenizer work per long sentence. Instead the end of a piece
    is guessed from the words' own counts (summed, less the per-call ``overhead``), then moved
    by doubling steps and bisection to the boundary where the run fits and one more word does
    not: O(log) counts of piece-sized text. The pieces are the same as the one-word-at-a-time
    rule's for any counter whose count does not shrink when a word is appended."""
    sizes = [max(0, n - overhead) for n in counts]
    start = 0
    while start < len(words):
        end, tokens = _piece_end(words, sizes, start, max_tokens, count, overhead)
        yield " ".join(words[start:end]), tokens
        start = end


def _piece_end(words: list[str], sizes: list[int], start: int, max_tokens: int,
               count: TokenCounter, overhead: int) -> tuple[int, int]:
    """``(end, count)`` of the piece ``words[start:end]`` of :func:`_pack_words`."""
    known: dict[int, int] = {}

    def fits(end: int) -> bool:  # does words[start:end] fit? (end > start)
        if end not in known:
            known[end] = count(" ".join(words[start:end]))
        return known[end] <= max_tokens

    guess, total = start + 1, overhead + sizes[start]
    while guess < len(words) and total + sizes[guess] <= max_tokens:
        total += sizes[guess]
        guess += 1
    # lo fits (a single word always does); hi is the first end known not to fit
    if fits(guess):
        lo, hi, step = guess, len(words) + 1, 1
        while lo + step <= len(words):
            if not fits(lo + step):
                hi = lo + step
                break
            lo += step
            step *= 2
    else:
        lo, hi, step = start + 1, guess, 1
        while hi - step > start + 1:
            if fits(hi - step):
                lo = hi - step
                break
            hi -= step
            step *= 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    fits(lo)  # a run of one word was never counted joined
    return lo, known[lo]


def _pieces(text: str, max_tokens: int, count: TokenCounter) -> Iterator[tuple[str, int]]:
    """Sentence- then word-level pieces of ``text``, each with its token count."""
    overhead: int | None = None
    for sentence in sentences(text):
        n = count(sentence)
        if n <= max_tokens:
            yield sentence, n
            continue
        if overhead is None:
            overhead = _call_overhead(count)
        run: list[str] = []  # words that fit alone, packed together
        run_counts: list[int] = []
        for word in sentence.split(" "):
            n = count(word)
            if n > max_tokens:
                yield from _pack_words(run, run_counts, max_tokens, count, overhead)
                run, run_counts = [], []
                for part in _hard_split(word, max_tokens, count):
                    yield part, count(part)
            else:
                run.append(word)
                run_counts.append(n)
        yield from _pack_words(run, run_counts, max_tokens, count, overhead)


def _locate(doc_text: str, piece: str, block: Block, cursor: int) -> tuple[int, int]:
    """Offsets of ``piece`` in the document, searching forward from ``cursor`` in its block."""
    head = piece[:40]
    found = doc_text.find(head, cursor, block.end)
    start = found if found >= 0 else cursor
    return start, min(block.end, start + len(piece))


def _split_prose(block: Block, doc_text: str, max_tokens: int, overlap: int,
                 count: TokenCounter) -> Iterator[_Unit]:
    pieces = list(_pieces(block.text, max_tokens, count))
    cursor = block.start
    located = []
    for piece, n in pieces:
        start, end = _locate(doc_text, piece, block, cursor)
        located.append((piece, n, start, end))
        cursor = max(cursor, end)
    i = 0
    while i < len(located):
        # greedy: as many sentences as fit, starting with the overlap from the previous unit
        buf = [located[i]]
        tokens = located[i][1]
        j = i + 1
        while j < len(located) and tokens + located[j][1] + 1 <= max_tokens:
            buf.append(located[j])
            tokens += located[j][1] + 1
            j += 1
        text = " ".join(p[0] for p in buf)
        yield _Unit(block, text, buf[0][2], buf[-1][3], tokens)
        if j >= len(located):
            break
        # step back over up to `overlap` tokens of whole sentences (always progress by >= 1)
        back, k = 0, j
        while k - 1 > i + 0 and back + located[k - 1][1] <= overlap:
            k -= 1
            back += located[k][1]
        i = max(k, i + 1)


def _split_table(block: Block, max_tokens: int, count: TokenCounter) -> Iterator[_Unit]:
    """A table in windows of whole rows up to the limit, each led by the header row. A window
    after the first carries its rows' own source lines when the block's text maps line for
    line onto the file (:func:`_row_lines`)."""
    header = block.header or ""
    header_tokens = count(header) if header else 0
    rows = block.text.split("\n")
    led = bool(header and rows and rows[0].strip() == header.strip())
    if led:
        rows = rows[1:]
    line_of = _row_lines(block, len(rows)) if header else None
    offset = block.start
    buf: list[str] = []
    buf_start, first_row, tokens = offset, 0, header_tokens

    def unit(text: str, end: int, last_row: int) -> _Unit:
        lines = None
        # a window starting with the table keeps the header row's line when the header is
        # part of the block's text (the window then starts there)
        if line_of is not None and (first_row > 0 or not led):
            lines = (line_of(first_row), line_of(last_row))
        return _Unit(block, text, buf_start, end, tokens, lines)

    for i, row in enumerate(rows):
        n = count(row) + 1
        if buf and tokens + n > max_tokens:
            text = "\n".join([header, *buf]) if header else "\n".join(buf)
            yield unit(text, offset - 1, i - 1)
            buf, buf_start, first_row, tokens = [], offset, i, header_tokens
        buf.append(row)
        tokens += n
        offset += len(row) + 1
    if buf:
        text = "\n".join([header, *buf]) if header else "\n".join(buf)
        yield unit(text, min(block.end, offset - 1), len(rows) - 1)


def _row_lines(block: Block, rows: int) -> Callable[[int], int] | None:
    """The source line of a table's row ``i`` (0-based, after the header row), when the
    block's lines are its header row, at most one dropped line (a Markdown table's ``|---|``
    separator) and then one line a row; None when they are not (no lines, wrapped rows)."""
    if block.line_start is None or block.line_end is None:
        return None
    dropped = (block.line_end - block.line_start + 1) - (rows + 1)
    if dropped not in (0, 1):
        return None
    first_row = block.line_start + 1 + dropped
    return lambda i: first_row + i


def _split_lines(block: Block, max_tokens: int, count: TokenCounter) -> Iterator[_Unit]:
    """Code: consecutive lines up to the limit (a single over-long line is hard-split)."""
    offset = block.start
    buf: list[str] = []
    buf_start, tokens = offset, 0
    for line in block.text.split("\n"):
        n = count(line) + 1
        if n > max_tokens:
            for part in _hard_split(line, max_tokens, count):
                yield _Unit(block, part, offset, offset + len(part), count(part))
                offset += len(part)
            offset += 1
            continue
        if buf and tokens + n > max_tokens:
            yield _Unit(block, "\n".join(buf), buf_start, offset - 1, tokens)
            buf, buf_start, tokens = [], offset, 0
        buf.append(line)
        tokens += n
        offset += len(line) + 1
    if buf:
        yield _Unit(block, "\n".join(buf), buf_start, min(block.end, offset - 1), tokens)


def _split_list(block: Block, doc_text: str, max_tokens: int, overlap: int,
                count: TokenCounter) -> Iterator[_Unit]:
    """A long list: whole items (lines, each starting with its marker or number: "4.2 The
    Supplier ...") packed up to the limit, so every item keeps its own line and number; an
    item longer than the limit is split like prose."""
    offset = block.start
    buf: list[str] = []
    buf_start, tokens = offset, 0
    for line in block.text.split("\n"):
        n = count(line) + 1
        if n > max_tokens:
            if buf:
                yield _Unit(block, "\n".join(buf), buf_start, offset - 1, tokens)
                buf, tokens = [], 0
            item = replace(block, text=line, start=offset, end=offset + len(line))
            for unit in _split_prose(item, doc_text, max_tokens, overlap, count):
                yield replace(unit, block=block)
            offset += len(line) + 1
            buf_start = offset
            continue
        if buf and tokens + n > max_tokens:
            yield _Unit(block, "\n".join(buf), buf_start, offset - 1, tokens)
            buf, buf_start, tokens = [], offset, 0
        buf.append(line)
        tokens += n
        offset += len(line) + 1
    if buf:
        yield _Unit(block, "\n".join(buf), buf_start, min(block.end, offset - 1), tokens)


def _units(parsed: ParsedDocument, max_tokens: int, overlap: int,
           count: TokenCounter) -> Iterator[_Unit]:
    for block in parsed.blocks:
        tokens = count(block.text)
        if block.kind is BlockKind.TABLE and block.header:
            # a table that fits is one unit, still led by its header row (a small Markdown
            # table's rows were chunked without it, and each row lost its column names)
            yield from _split_table(block, max_tokens, count)
        elif tokens <= max_tokens:
            yield _Unit(block, block.text, block.start, block.end, tokens)
        elif block.kind is BlockKind.CODE or block.kind is BlockKind.TABLE:
            yield from _split_lines(block, max_tokens, count)
        elif block.kind is BlockKind.LIST:
            yield from _split_list(block, parsed.text, max_tokens, overlap, count)
        else:
            yield from _split_prose(block, parsed.text, max_tokens, overlap, count)


def _starts_new_chunk(current: list[_Unit], unit: _Unit) -> bool:
    if not current:
        return False
    last = current[-1].block
    block = unit.block
    if block.kind is BlockKind.HEADING:
        return True
    if block is last:  # a later piece of a split block
        return True
    if block.symbol or last.symbol:
        return True
    if block.kind is BlockKind.TABLE and block.header:
        return last.kind is not BlockKind.HEADING
    return block.section != last.section and last.kind is not BlockKind.HEADING


def _page_starts(units: list[_Unit]) -> list[tuple[int, int]]:
    """``(offset, page)`` where each page of the units begins (a block that itself spans
    pages, such as a table row rejoined across a page break, has its own ``page_starts``)."""
    out: list[tuple[int, int]] = []
    for u in units:
        block = u.block
        if block.page is None:
            continue
        page = block.page
        inner = []
        for start, number in block.page_starts:
            if start <= u.start:
                page = number
            elif start < u.end:
                inner.append((start, number))
        for entry in [(u.start, page), *inner]:
            if not out or out[-1][1] != entry[1]:
                out.append(entry)
    return out


def _source_text(doc_text: str, units: list[_Unit]) -> str:
    start, end = units[0].block.start, units[-1].block.end
    if end - start > 2 * SOURCE_WINDOW + (units[-1].end - units[0].start):
        start = max(start, units[0].start - SOURCE_WINDOW)
        end = min(end, units[-1].end + SOURCE_WINDOW)
    return doc_text[start:end]


def chunk_document(
    document_id: str,
    parsed: ParsedDocument,
    count_tokens: TokenCounter,
    max_tokens: int = 480,
    overlap: int = 48,
) -> list[Chunk]:
    """Chunks of ``parsed`` in document order (ordinal 0..n-1).

    ``count_tokens`` returns the model-token count of a string; every returned chunk's
    ``token_count`` (which includes newline separators as one token each) is <= ``max_tokens``.
    Raises ValueError if ``max_tokens`` < 8.
    """
    if max_tokens < 8:
        raise ValueError(f"max_tokens must be >= 8, got {max_tokens}")
    overlap = min(overlap, max_tokens // 4)
    groups: list[list[_Unit]] = []
    current: list[_Unit] = []
    tokens = 0
    for unit in _units(parsed, max_tokens, overlap, count_tokens):
        if current and (_starts_new_chunk(current, unit) or tokens + unit.tokens + 1 > max_tokens):
            groups.append(current)
            current, tokens = [], 0
        current.append(unit)
        tokens += unit.tokens + (1 if len(current) > 1 else 0)
    if current:
        groups.append(current)
    # a group of headings alone (a heading whose section starts with a block too long to
    # share its chunk, or a title over a subheading) holds no text of its own: each heading
    # is already in the section path of the chunks below it, which is embedded and indexed
    # with them, so such a group is dropped rather than retrieved as an empty passage
    content_groups = [g for g in groups if any(u.block.kind is not BlockKind.HEADING for u in g)]
    groups = content_groups or groups

    chunks = []
    for ordinal, units in enumerate(groups):
        text = "\n".join(u.text for u in units)
        content = next((u for u in units if u.block.kind is not BlockKind.HEADING), units[0])
        heading = units[0].block if units[0].block.kind is BlockKind.HEADING else None
        section = content.block.section or (heading.section if heading else ())
        page_starts = _page_starts(units)
        lines = [u.lines or (u.block.line_start, u.block.line_end or u.block.line_start)
                 for u in units if u.lines or u.block.line_start is not None]
        symbols = {u.block.symbol for u in units if u.block.symbol}
        digest = hashlib.sha256(f"{document_id}\x00{ordinal}\x00{text}".encode()).hexdigest()
        chunks.append(
            Chunk(
                id=digest[:24],
                document_id=document_id,
                ordinal=ordinal,
                text=text,
                source_text=_source_text(parsed.text, units),
                char_start=units[0].start,
                char_end=units[-1].end,
                section=tuple(section),
                page=page_starts[0][1] if page_starts else None,
                page_end=max(n for _, n in page_starts) if page_starts else None,
                line_start=min(a for a, _ in lines) if lines else None,  # type: ignore[type-var]
                line_end=max(b for _, b in lines) if lines else None,  # type: ignore[type-var]
                symbol=symbols.pop() if len(symbols) == 1 else None,
                token_count=sum(u.tokens for u in units) + len(units) - 1,
                page_starts=tuple(page_starts) if len(page_starts) > 1 else (),
            )
        )
    return chunks


def embedding_text(title: str, chunk: Chunk, max_prefix_chars: int = 160) -> str:
    """What is embedded (and BM25-indexed) for a chunk: its title, section path and code
    symbol (``Class.method``, so a method is found by its class's name), clipped to
    ``max_prefix_chars``, then its text."""
    context = " > ".join(p for p in (title, *chunk.section, chunk.symbol) if p)
    if len(context) > max_prefix_chars:
        context = context[: max_prefix_chars - 1] + "…"
    return f"{context}\n{chunk.text}" if context and not chunk.text.startswith(context) else chunk.text


def content_hash(text: str) -> str:
    """sha256 hex of the text that is embedded; the key of the embedding cache."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
