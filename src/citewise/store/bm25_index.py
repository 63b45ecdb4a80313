"""An in-memory BM25 index derived from a store's analysed terms: the SQLite store's BM25 stage.

The index is a term-major (CSC-like) postings matrix over one committed state of the store:
for every term, the positions of the chunks holding it (ascending, so ascending row key) and
its count in each, plus every chunk's length. A query reads only its own terms' postings,
never the whole collection's: the cost is the query terms' postings plus one pass over a
float64 score array per query, not FTS5's candidate search and the SQL round trip of the
re-scoring that grew with every chunk holding any query term.

Scores are the Lucene BM25 of :mod:`citewise.store.bm25`, bit for bit what the SQLite store's
FTS5 path computes: the term weights are evaluated per query with
:func:`~citewise.store.bm25.bm25_scores`'s float64 operations in its order on the same inputs
(``N`` chunks, ``avgdl`` the sum of ``n_terms`` over ``N``, ``df`` the term's posting count;
each chunk's length part ``k1 * (1 - b + b * dl / avgdl)`` computed once per index,
:meth:`BM25Index.length_norms`) and summed term by term in the query's order. Unlike that path, every chunk holding a query term is scored,
so the top ``k`` is exact (FTS5 kept only its best ``max(5k, 300)`` candidates). Keeping
counts rather than precomputed weights means the IDFs may move with ``N`` without a rebuild.

The index knows the store generation it was built from (:attr:`BM25Index.generation`); when
the generation the store reads in the query's snapshot differs, the store catches it up
(:meth:`BM25Index.caught_up`: the chunks its change log names taken out, those of them still
stored read back and added) or, when the log cannot be trusted, rebuilds it (see
:meth:`citewise.store.sqlite.SQLiteStore.sparse_search`). Its arrays can be saved
(:meth:`BM25Index.arrays`) and opened memory-mapped by the next process that reads the same
state (:meth:`BM25Index.from_arrays`, :mod:`citewise.store.derived_files`).

What a search returns of each chunk besides its score, its id, document, ordinal and
language (:class:`ChunkKeys`), is kept by position beside the postings, for the same state:
the store answers the hits and the candidates' chunks without reading their rows.
"""

from __future__ import annotations

import itertools
import threading
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from citewise.store.bm25 import BM25_B, BM25_K1, BM25Stats, idf
from citewise.store.derived_files import terms_array, terms_of

#: chunks whose tokens are counted at a time while building (see :meth:`BM25Index.build`)
BUILD_BLOCK = 65_536
#: Postings renumbered per ``np.take`` call in :meth:`BM25Index.caught_up`.
REMAP_BLOCK = 1 << 20
#: score arrays (float64, one per chunk) an index keeps for reuse by the searches that run at
#: the same time (8 MB each at 1M chunks); more searches at once allocate their own
SCRATCH_ARRAYS = 2
#: chunk ids an index remembers the positions of (:meth:`BM25Index.chunk_ids_at`)
KNOWN_IDS = 100_000


@dataclass(frozen=True)
class Strings:
    """n strings as UTF-8 bytes end to end: string ``i`` is ``data[offsets[i]:offsets[i +
    1]]`` (``data``: uint8, ``offsets``: int64 (n + 1,) ascending from 0). Memory-mappable;
    :meth:`take` decodes only the positions asked for."""

    data: np.ndarray
    offsets: np.ndarray

    @classmethod
    def of(cls, strings: Iterable[str]) -> Strings:
        """The strings, in order."""
        encoded = [i.encode("utf-8") for i in strings]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        return cls(np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), offsets)

    @classmethod
    def joined(cls, parts: Sequence[Strings]) -> Strings:
        """One after the other."""
        data = np.concatenate([np.asarray(p.data) for p in parts]) if parts else np.zeros(
            0, dtype=np.uint8)
        lengths = [np.diff(np.asarray(p.offsets)) for p in parts]
        offsets = np.zeros(sum(len(x) for x in lengths) + 1, dtype=np.int64)
        if lengths:
            np.cumsum(np.concatenate(lengths), out=offsets[1:])
        return cls(data, offsets)

    def __len__(self) -> int:
        return int(self.offsets.shape[0]) - 1

    def take(self, positions: Iterable[int]) -> list[str]:
        """The strings at ``positions`` (ints in ``0 .. len - 1``), in that order."""
        at = np.asarray(positions, dtype=np.int64)
        bounds = np.asarray(self.offsets)
        starts, ends = bounds[at].tolist(), bounds[at + 1].tolist()
        raw = np.asarray(self.data).data  # a memoryview: slices copy nothing until decoded
        return [str(raw[lo:hi], "utf-8") for lo, hi in zip(starts, ends, strict=True)]

    def subset(self, positions: np.ndarray) -> Strings:
        """The strings at int ``positions`` (any order, repeats allowed), as a new table."""
        positions = np.asarray(positions, dtype=np.int64)
        bounds = np.asarray(self.offsets)
        starts = bounds[:-1][positions]
        lengths = bounds[1:][positions] - starts
        offsets = np.zeros(positions.shape[0] + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        at = np.arange(int(offsets[-1]), dtype=np.int64) - np.repeat(offsets[:-1] - starts,
                                                                      lengths)
        return Strings(np.asarray(self.data)[at], offsets)

    def check(self, n: int) -> None:
        """Raise ValueError unless this is a well-formed table of ``n`` strings."""
        offsets = np.asarray(self.offsets)
        if (self.data.ndim != 1 or offsets.shape != (n + 1,) or int(offsets[0]) != 0
                or int(offsets[-1]) != self.data.shape[0]
                or bool(np.any(offsets[1:] < offsets[:-1]))):
            raise ValueError("saved strings that do not fit the index")


@dataclass(frozen=True)
class ChunkKeys:
    """What a search reads of each chunk of a derived index besides its postings, by
    position: its ``ids``, ``documents`` (its document's id), ``ordinals`` (int64 (n,)) and
    ``languages`` (:attr:`citewise.types.Chunk.language`), as stored in the state the index
    reflects."""

    ids: Strings
    documents: Strings
    ordinals: np.ndarray
    languages: Strings

    #: the columns of a ``chunks`` row these are read from, in the order :meth:`of` takes
    COLUMNS = "id, document_id, ordinal, language"

    @classmethod
    def of(cls, rows: Sequence[Sequence[Any]]) -> ChunkKeys:
        """From ``(chunk id, document id, ordinal, language)`` rows, in position order."""
        return cls(Strings.of([r[0] for r in rows]), Strings.of([r[1] for r in rows]),
                   np.array([r[2] for r in rows], dtype=np.int64).reshape(len(rows)),
                   Strings.of([r[3] for r in rows]))

    @classmethod
    def joined(cls, parts: Sequence[ChunkKeys]) -> ChunkKeys:
        """One after the other."""
        return cls(Strings.joined([p.ids for p in parts]),
                   Strings.joined([p.documents for p in parts]),
                   np.concatenate([np.asarray(p.ordinals) for p in parts]).astype(np.int64),
                   Strings.joined([p.languages for p in parts]))

    def subset(self, positions: np.ndarray) -> ChunkKeys:
        """The chunks at int ``positions`` (any order), as a new table."""
        return ChunkKeys(self.ids.subset(positions), self.documents.subset(positions),
                         np.asarray(self.ordinals)[positions], self.languages.subset(positions))

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays to save (``ids``, ``id_offsets``, ``documents``, ``document_offsets``,
        ``ordinals``, ``languages``, ``language_offsets``)."""
        return {"ids": self.ids.data, "id_offsets": self.ids.offsets,
                "documents": self.documents.data, "document_offsets": self.documents.offsets,
                "ordinals": self.ordinals, "languages": self.languages.data,
                "language_offsets": self.languages.offsets}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], n: int) -> ChunkKeys | None:
        """The table of saved :meth:`arrays` of ``n`` chunks; None when they are not saved;
        raises ValueError when they do not fit."""
        names = ("ids", "id_offsets", "documents", "document_offsets", "ordinals", "languages",
                 "language_offsets")
        if not all(name in arrays for name in names):
            return None
        keys = cls(Strings(arrays["ids"], arrays["id_offsets"]),
                   Strings(arrays["documents"], arrays["document_offsets"]),
                   arrays["ordinals"], Strings(arrays["languages"], arrays["language_offsets"]))
        for strings in (keys.ids, keys.documents, keys.languages):
            strings.check(n)
        if keys.ordinals.shape != (n,):
            raise ValueError("saved ordinals that do not fit the index")
        return keys


@dataclass
class BM25Index:
    """Postings of one committed store state; built by :meth:`build`.

    ``generation``: the store generation it reflects; ``rowids``: int64 (n,) ascending row
    keys, position i is chunk ``rowids[i]``; ``lengths``: float64 (n,) chunk lengths in
    analysed tokens (``n_terms``); ``vocabulary``: term -> column; ``indptr``: int64
    (n_terms + 1,) column starts into ``positions`` (int32, chunk positions ascending within a
    column) and ``counts`` (uint16 or uint32, the term's count in that chunk).
    """

    generation: int
    rowids: np.ndarray
    lengths: np.ndarray
    vocabulary: dict[str, int]
    indptr: np.ndarray
    positions: np.ndarray
    counts: np.ndarray
    avgdl: float = 0.0
    #: each position's chunk id, document, ordinal and language (:class:`ChunkKeys`), or
    #: None when the rows it was built from did not carry them (the store then reads SQL)
    keys: ChunkKeys | None = None
    _masks: dict[object, np.ndarray] = field(default_factory=dict, repr=False)
    # plain ndarray views of the arrays (slicing an np.memmap costs more than the work on the
    # slice) and each chunk's length normalisation, per avgdl (see :meth:`scores`)
    _plain: tuple[np.ndarray, ...] = field(default=(), init=False, repr=False, compare=False)
    _norms: dict[float, np.ndarray] = field(default_factory=dict, init=False, repr=False,
                                            compare=False)
    _scratch: list[np.ndarray] = field(default_factory=list, init=False, repr=False,
                                       compare=False)
    # chunk id -> position of the chunks searches returned (see :meth:`chunk_ids_at`)
    _known: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._plain = tuple(np.asarray(a) for a in (
            self.rowids, self.lengths, self.indptr, self.positions, self.counts))

    @classmethod
    def build(cls, generation: int, rows: Iterable[Sequence[Any]],
              block: int = BUILD_BLOCK, *, ids: bool = False) -> BM25Index:
        """The index of ``rows``: ``(row key, analysed terms, n_terms)`` in ascending row-key
        order, the terms space-separated as the store keeps them; with ``ids``, each row
        goes on with the :attr:`ChunkKeys.COLUMNS` (chunk id, document id, ordinal,
        language), kept as :attr:`keys`.

        Built ``block`` chunks at a time: each block's (term, chunk) pairs are counted and
        sorted on their own (:func:`_block_postings`), then every block's postings are placed
        at their term's next free slots, blocks in chunk order, so a term's chunks stay
        ascending. The peak is the postings (about 10 bytes each) plus one block's tokens, not
        four int64 arrays of every token (about 4 GB at 1M chunks)."""
        numbering: defaultdict[str, int] = defaultdict(itertools.count().__next__)
        number = numbering.__getitem__  # a new term gets the next number, in C
        rowids = array("q")
        lengths = array("q")
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        token_ids = array("q")  # 8 bytes a token, not a Python list's pointer and int
        offsets = array("q", [0])
        chunk_keys: list[Sequence[Any]] = []
        if ids:
            rows = _peeled(rows, chunk_keys)
        for rowid, terms, n_terms in rows:
            rowids.append(rowid)
            lengths.append(n_terms)
            token_ids.extend(map(number, terms.split()))
            offsets.append(len(token_ids))
            if len(offsets) > block:
                parts.append(_block_postings(token_ids, offsets, len(rowids) - block))
                token_ids, offsets = array("q"), array("q", [0])
        if len(offsets) > 1:
            parts.append(_block_postings(token_ids, offsets, len(rowids) - len(offsets) + 1))
        del token_ids, offsets
        vocabulary = dict(numbering)
        n, n_vocab = len(rowids), len(vocabulary)
        indptr = np.zeros(n_vocab + 1, dtype=np.int64)
        per_block = [np.bincount(term_of, minlength=n_vocab) for term_of, _, _ in parts]
        if per_block:
            np.cumsum(np.sum(per_block, axis=0), out=indptr[1:])
        wide = any(c.dtype == np.uint32 for _, _, c in parts)
        positions = np.empty(int(indptr[-1]), dtype=np.int32)
        counts = np.empty(int(indptr[-1]), dtype=np.uint32 if wide else np.uint16)
        free = indptr[:-1].copy()  # each term's next free slot
        for (term_of, at, count), in_block in zip(parts, per_block, strict=True):
            block_start = np.cumsum(in_block) - in_block  # a term's first posting in the block
            slot = free[term_of] + (np.arange(term_of.shape[0]) - block_start[term_of])
            positions[slot] = at
            counts[slot] = count
            free += in_block
        del parts
        length_array = np.frombuffer(lengths, dtype=np.int64).astype(np.float64)
        return cls(
            generation=generation,
            rowids=np.frombuffer(rowids, dtype=np.int64).copy(),
            lengths=length_array,
            vocabulary=vocabulary,
            indptr=indptr,
            positions=positions,
            counts=counts,
            # the SQL path's total(n_terms) / count(*): an integer sum, exact in float64
            avgdl=float(length_array.sum()) / n if n else 0.0,
            keys=ChunkKeys.of(chunk_keys) if ids else None,
        )

    def caught_up(self, generation: int, removed: np.ndarray,
                  added: Iterable[Sequence[Any]]) -> BM25Index:
        """The index of a later state of the same store, made from this one's arrays (which
        are not changed; they may be memory-mapped) instead of from every chunk row.

        ``removed``: int64 row keys (any order, repeats allowed) of every chunk deleted or
        replaced since this index's state; keys this index does not hold are ignored.
        ``added``: ``(row key, analysed terms, n_terms)`` of every chunk of the later state
        that this index does not hold after ``removed`` is taken out, in strictly ascending
        row-key order, the terms space-separated as the store keeps them; when this index has
        :attr:`keys`, each row goes on with the :attr:`ChunkKeys.COLUMNS` (the result then
        has them too, in its positions' order). Only these rows'
        terms are read: the cost is one pass over the postings (dropping the removed chunks'
        and renumbering positions, when any was removed) plus the added chunks' tokens.

        The result's postings are those :meth:`build` makes from the later state's rows, term
        by term (chunk positions ascending, the same counts and lengths, so :meth:`scores`
        and :meth:`top` give the same floats, bit for bit); the vocabulary keeps every term
        of this index in its column, a term no chunk holds any more keeps an empty column,
        and new terms are appended. Raises ValueError when ``added`` is not strictly
        ascending or holds a row key the index still holds (the caller then rebuilds)."""
        n = self.size
        removed = np.unique(np.asarray(removed, dtype=np.int64))
        drop = self.positions_of(removed)
        keep: np.ndarray | None = None
        if drop.size:
            keep = np.ones(n, dtype=bool)
            keep[drop] = False
        kept_rowids = self.rowids if keep is None else self.rowids[keep]
        kept_lengths = self.lengths if keep is None else self.lengths[keep]
        n_kept = int(kept_rowids.shape[0])

        vocabulary = dict(self.vocabulary)  # a thread may still search with this index
        numbering = itertools.count(len(vocabulary)).__next__

        def number(term: str) -> int:
            col = vocabulary.get(term)
            if col is None:
                col = vocabulary[term] = numbering()
            return col

        add_rowids, add_lengths = array("q"), array("q")
        token_ids, offsets = array("q"), array("q", [0])
        add_keys: list[Sequence[Any]] = []
        if self.keys is not None:
            added = _peeled(added, add_keys)
        for rowid, terms, n_terms in added:
            add_rowids.append(rowid)
            add_lengths.append(n_terms)
            token_ids.extend(map(number, terms.split()))
            offsets.append(len(token_ids))
        new_rows = np.frombuffer(add_rowids, dtype=np.int64).copy()
        m = int(new_rows.shape[0])
        if m > 1 and not bool(np.all(new_rows[1:] > new_rows[:-1])):
            raise ValueError("the added chunks are not in strictly ascending row-key order")
        if m and n_kept:
            at = np.searchsorted(kept_rowids, new_rows)
            inside = at < n_kept
            if bool(np.any(kept_rowids[at[inside]] == new_rows[inside])):
                raise ValueError("an added chunk is still held by the index")

        # new positions: the kept chunks keep their order, the added ones go where their row
        # keys sort (after every kept one, unless a row key was reused)
        appended = m == 0 or n_kept == 0 or int(new_rows[0]) > int(kept_rowids[-1])
        new_lengths = np.frombuffer(add_lengths, dtype=np.int64).astype(np.float64)
        keys = None
        if self.keys is not None:  # the kept ones' then the added ones', in that order
            kept_keys = self.keys if keep is None else self.keys.subset(np.flatnonzero(keep))
            keys = ChunkKeys.joined([kept_keys, ChunkKeys.of(add_keys)])
        if appended:
            rowids = np.concatenate([kept_rowids, new_rows])
            lengths = np.concatenate([kept_lengths, new_lengths])
            kept_to: np.ndarray | None = None
            add_to = np.arange(n_kept, n_kept + m, dtype=np.int64)
        else:
            merged = np.concatenate([kept_rowids, new_rows])
            order = np.argsort(merged, kind="stable")
            rank = np.empty(n_kept + m, dtype=np.int64)
            rank[order] = np.arange(n_kept + m)
            rowids, lengths = merged[order], np.concatenate([kept_lengths, new_lengths])[order]
            kept_to, add_to = rank[:n_kept], rank[n_kept:]
            if keys is not None:
                keys = keys.subset(order)

        # the kept postings, positions renumbered: old position -> new position (int32)
        # plain views: indexing an np.memmap goes through its Python __getitem__ and wraps
        # every result in a memmap again
        _, _, indptr_kept, positions, counts = self._plain
        if keep is not None or kept_to is not None:
            remap = np.full(n, -1, dtype=np.int32)
            kept_at = np.arange(n) if keep is None else np.flatnonzero(keep)
            remap[kept_at] = np.arange(n_kept) if kept_to is None else kept_to
            if keep is not None:
                keep_post = keep[positions]
                gone = np.flatnonzero(~keep_post)  # few: the removed chunks' postings
                gone_per_col = np.bincount(
                    np.searchsorted(indptr_kept, gone, side="right") - 1,
                    minlength=int(indptr_kept.shape[0]) - 1)
                indptr_kept = np.asarray(indptr_kept, dtype=np.int64).copy()
                indptr_kept[1:] -= np.cumsum(gone_per_col)
                positions, counts = positions[keep_post], counts[keep_post]
                del keep_post, gone
            else:
                positions = np.array(positions, dtype=np.int32)
            # in blocks of 2**20 postings: numpy turns the int32 indices into intp first,
            # and one block's copy stays in cache where all of them (0.9 GB at 1M chunks)
            # did not (8x faster measured on 110M postings); mode='clip' (every position
            # is in range) keeps numpy from buffering the output a second time
            for lo in range(0, positions.shape[0], REMAP_BLOCK):
                block = positions[lo:lo + REMAP_BLOCK]
                np.take(remap, block, out=block, mode="clip")
            del remap

        # the added postings, by term then chunk, inserted at the end of their term's kept
        # postings (or, for a reused row key, where their position sorts among them)
        n_vocab = len(vocabulary)
        if m:
            term_of, block_at, add_counts = _block_postings(token_ids, offsets, 0)
            add_pos = add_to[block_at].astype(np.int32)
        else:
            term_of = np.zeros(0, dtype=np.int32)
            add_pos = np.zeros(0, dtype=np.int32)
            add_counts = np.zeros(0, dtype=np.uint16)
        del token_ids, offsets
        old_vocab = int(indptr_kept.shape[0]) - 1
        ends = np.concatenate([indptr_kept[1:], np.full(n_vocab - old_vocab, indptr_kept[-1])])
        if appended:
            insert_at = ends[term_of]
        else:
            insert_at = np.empty(term_of.shape[0], dtype=np.int64)
            starts = np.concatenate([indptr_kept[:-1],
                                     np.full(n_vocab - old_vocab, indptr_kept[-1])])
            bounds = np.flatnonzero(np.diff(term_of, prepend=-1, append=-1) != 0)
            for lo, hi in itertools.pairwise(bounds.tolist()):
                col = int(term_of[lo])
                start, end = int(starts[col]), int(ends[col])
                insert_at[lo:hi] = start + np.searchsorted(positions[start:end], add_pos[lo:hi])
        per_col = np.diff(indptr_kept)
        per_col = np.concatenate([per_col, np.zeros(n_vocab - old_vocab, dtype=per_col.dtype)])
        per_col += np.bincount(term_of, minlength=n_vocab)
        indptr = np.zeros(n_vocab + 1, dtype=np.int64)
        np.cumsum(per_col, out=indptr[1:])
        count_type = np.promote_types(counts.dtype, add_counts.dtype)
        if m:
            positions = np.insert(np.asarray(positions), insert_at, add_pos)
            counts = np.insert(np.asarray(counts, dtype=count_type), insert_at, add_counts)
        elif positions is self._plain[3]:  # nothing removed, reordered or added: a copy
            positions, counts = positions.copy(), np.array(counts, dtype=count_type)
        else:  # only removals: the arrays made above are this index's own (np.insert of
            # nothing would copy every posting once more: 1.5 s at 1M chunks)
            counts = np.asarray(counts, dtype=count_type)
        n_new = int(rowids.shape[0])
        return type(self)(
            generation=generation, rowids=np.ascontiguousarray(rowids, dtype=np.int64),
            lengths=np.ascontiguousarray(lengths, dtype=np.float64), vocabulary=vocabulary,
            indptr=indptr, positions=positions.astype(np.int32, copy=False), counts=counts,
            avgdl=float(lengths.sum()) / n_new if n_new else 0.0, keys=keys)

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays to save (:mod:`citewise.store.derived_files`); ``terms``: the
        vocabulary in column order (:func:`~citewise.store.derived_files.terms_array`)."""
        saved = {"rowids": self.rowids, "lengths": self.lengths, "indptr": self.indptr,
                 "positions": self.positions, "counts": self.counts,
                 "terms": terms_array(list(self.vocabulary))}
        if self.keys is not None:  # :meth:`ChunkKeys.arrays`
            saved |= self.keys.arrays()
        return saved

    @classmethod
    def from_arrays(cls, generation: int, arrays: Mapping[str, np.ndarray],
                    vocabulary: dict[str, int] | None = None, *,
                    require_ids: bool = False) -> BM25Index:
        """The index of saved :meth:`arrays` (memory-mapped or not), its vocabulary read from
        ``arrays["terms"]`` unless given (the one the arrays were built with); raises
        ValueError when they do not fit together, or when ``require_ids`` and they hold no
        chunk ids (saved by an older version)."""
        rowids, lengths, indptr = arrays["rowids"], arrays["lengths"], arrays["indptr"]
        positions, counts = arrays["positions"], arrays["counts"]
        n = int(rowids.shape[0])
        if (lengths.shape != (n,) or positions.shape != counts.shape or indptr.ndim != 1
                or indptr.shape[0] < 1 or int(indptr[-1]) != positions.shape[0]):
            raise ValueError("the saved BM25 arrays do not fit together")
        if vocabulary is None:
            vocabulary = terms_of(arrays["terms"], int(indptr.shape[0]) - 1)
        elif len(vocabulary) != int(indptr.shape[0]) - 1:
            raise ValueError("the vocabulary does not fit the saved BM25 arrays")
        keys = ChunkKeys.from_arrays(arrays, n)  # None: saved by an older version
        if keys is None and require_ids:
            raise ValueError("the saved BM25 arrays hold no chunk keys")
        return cls(generation=generation, rowids=rowids, lengths=lengths,
                   vocabulary=vocabulary, indptr=indptr, positions=positions, counts=counts,
                   avgdl=float(lengths.sum()) / n if n else 0.0, keys=keys)

    def chunk_ids_at(self, positions: np.ndarray) -> list[str]:
        """The ids of the chunks at ``positions`` (from :attr:`keys`, which must be set),
        remembered with their positions for :meth:`known_positions` (at most
        :data:`KNOWN_IDS` at a time: the hits of recent searches)."""
        assert self.keys is not None
        ids = self.keys.ids.take(positions)
        if len(self._known) + len(ids) > KNOWN_IDS:
            self._known.clear()
        self._known.update(zip(ids, np.asarray(positions).tolist(), strict=True))
        return ids

    def known_positions(self, chunk_ids: Sequence[str]) -> dict[str, int]:
        """Position of each of ``chunk_ids`` this index returned from :meth:`chunk_ids_at`
        (recently); the others are left out (the caller looks them up)."""
        found = {c: self._known.get(c, -1) for c in chunk_ids}  # get: another thread may clear
        return {c: at for c, at in found.items() if at >= 0}

    @property
    def size(self) -> int:
        """Chunks indexed (``N``)."""
        return len(self.rowids)

    def document_frequency(self, term: str) -> int:
        """Chunks holding ``term`` (0 for a term the index has never seen)."""
        col = self.vocabulary.get(term)
        return 0 if col is None else int(self.indptr[col + 1] - self.indptr[col])

    def positions_of(self, rowids: np.ndarray) -> np.ndarray:
        """Positions (int64) of the given row keys; keys the index does not hold are dropped."""
        rowids = np.asarray(rowids, dtype=np.int64)
        at = np.searchsorted(self.rowids, rowids)
        inside = at < self.size
        at = at[inside]
        return np.asarray(at[self.rowids[at] == rowids[inside]], dtype=np.int64)

    def incidence(self, positions: np.ndarray, terms: Sequence[str]) -> np.ndarray:
        """bool (len(positions), len(terms)): whether the chunk at ``positions[i]`` (chunk
        positions, as :meth:`positions_of` gives them) holds ``terms[j]``, read from the
        term's postings (a binary search of each position in the term's column, so the cost
        is the positions times the log of the column's length, never a pass over every
        chunk). A term the index has never seen is held by no chunk."""
        # plain views: slicing a memory-mapped array through np.memmap costs more than the
        # binary search itself
        indptr, postings = self.indptr.view(np.ndarray), self.positions.view(np.ndarray)
        at = np.asarray(positions, dtype=postings.dtype)  # no cast of the columns
        out = np.zeros((at.shape[0], len(terms)), dtype=bool)
        if at.shape[0] == 0:
            return out
        for j, term in enumerate(terms):
            col = self.vocabulary.get(term)
            if col is None:
                continue
            start, end = int(indptr[col]), int(indptr[col + 1])
            if start == end:
                continue
            column = postings[start:end]
            found = np.minimum(np.searchsorted(column, at), end - start - 1)
            out[:, j] = column[found] == at
        return out

    def cached_mask(self, key: object, allowed_rowids: np.ndarray | None = None) -> np.ndarray | None:
        """The bool (n,) mask of the chunks a filter lets through, cached under ``key`` for
        this index's lifetime (one generation; at most 16 kept; an unhashable ``key`` is never
        cached). With ``allowed_rowids`` the
        mask is computed and stored; without, the cached one or None is returned."""
        cacheable = hashable(key)
        if allowed_rowids is None:
            return self._masks.get(key) if cacheable else None
        mask = np.zeros(self.size, dtype=bool)
        mask[self.positions_of(allowed_rowids)] = True
        if not cacheable:  # e.g. a ``where`` condition holding a list
            return mask
        if len(self._masks) >= 16:
            self._masks.pop(next(iter(self._masks)))
        self._masks[key] = mask
        return mask

    def length_norms(self, avgdl: float) -> np.ndarray:
        """float64 (n,): every chunk's ``k1 * (1 - b + b * dl / avgdl)``, the length part of
        :func:`~citewise.store.bm25.bm25_scores`'s denominator, by the same expression element
        by element (so the same bits as that function gives for the chunk), computed once per
        ``avgdl`` for this index's lifetime (a few kept)."""
        norm = self._norms.get(avgdl)
        if norm is None:
            lengths = self._plain[1]
            norm = BM25_K1 * (1.0 - BM25_B + BM25_B * lengths / max(avgdl, 1e-9))
            if len(self._norms) >= 4:
                self._norms.pop(next(iter(self._norms)), None)
            self._norms[avgdl] = norm
        return norm

    def scores(self, query_tf: Mapping[str, int], stats: BM25Stats | None = None) -> np.ndarray:
        """float64 (n,) BM25 score of every chunk for a query given as term -> count in the
        query; >= 0, higher is better, 0 for chunks holding no query term. Terms are added
        in the mapping's order (the FTS5 path's order, so the sums are bit-identical).
        ``stats``: the collection statistics to score with (a sharded collection's global
        ones), None: this index's own (N, avgdl and each term's posting count).

        Each term's contribution is :func:`~citewise.store.bm25.bm25_scores`'s
        ``idf * tf * (k1 + 1) / (tf + norm)``, operation by operation in that order (in place,
        with the chunks' ``norm`` from :meth:`length_norms`), so the floats are the same."""
        return self._add_scores(np.zeros(self.size, dtype=np.float64), query_tf, stats)

    def _add_scores(self, total: np.ndarray, query_tf: Mapping[str, int],
                    stats: BM25Stats | None) -> np.ndarray:
        """:meth:`scores` added into ``total`` (float64 (n,) zeros), which is returned."""
        _, _, indptr, positions, counts = self._plain
        n_docs, avgdl = (self.size, self.avgdl) if stats is None else (stats.chunks, stats.avgdl)
        norm = self.length_norms(avgdl)
        for term, qtf in query_tf.items():
            col = self.vocabulary.get(term)
            if col is None:
                continue
            start, end = int(indptr[col]), int(indptr[col + 1])
            if start == end:
                continue
            at = positions[start:end]
            df = end - start if stats is None else stats.df.get(term, 0)
            tf = counts[start:end].astype(np.float64)
            weight = idf(n_docs, df) * tf
            weight *= BM25_K1 + 1.0
            tf += norm[at]  # now tf + norm
            weight /= tf
            if qtf != 1:  # qtf * weight; 1 * weight is weight, bit for bit
                weight *= qtf
            total[at] += weight
        return total

    def top(self, query_tf: Mapping[str, int], k: int, mask: np.ndarray | None = None,
            stats: BM25Stats | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The best ``k`` chunks for ``query_tf`` among those ``mask`` (bool (n,), None: all)
        lets through, as ``(row keys int64 (m,), scores float64 (m,))`` with m <= k, by
        descending score, ties by ascending row key; chunks scoring 0 are left out.
        ``stats``: as for :meth:`scores`."""
        best, scores = self.top_positions(query_tf, k, mask, stats)
        return self._plain[0][best], scores

    def top_positions(self, query_tf: Mapping[str, int], k: int, mask: np.ndarray | None = None,
                      stats: BM25Stats | None = None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`top` as chunk positions (int64 (m,)) instead of row keys."""
        if k <= 0 or self.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        # a score array of the index's pool, all zeros between queries (a fresh one per query
        # cost a page fault per 512 chunks): every chunk scored is set back to 0 before it is
        # returned to the pool, and one of a query that fails half way is dropped
        try:
            scores = self._scratch.pop()
        except IndexError:  # none free: every other one is in use by another thread
            scores = np.zeros(self.size, dtype=np.float64)
        self._add_scores(scores, query_tf, stats)
        scored = np.flatnonzero(scores > 0)  # the chunks holding a query term
        hit = scored if mask is None else scored[mask[scored]]
        if hit.size > k:
            hit_scores = scores[hit]
            kth = np.partition(hit_scores, hit.size - k)[hit.size - k]
            hit = hit[hit_scores >= kth]  # every chunk tied with the k-th stays a candidate
        found = scores[hit]
        order = np.lexsort((hit, -found))[:k]
        if scored.shape[0] > scores.shape[0] // 8:
            scores.fill(0.0)  # one sequential pass costs less than so many scattered writes
        else:
            scores[scored] = 0.0
        if len(self._scratch) < SCRATCH_ARRAYS:
            self._scratch.append(scores)
        return hit[order], found[order]


def _peeled(rows: Iterable[Sequence[Any]],
            keys: list[Sequence[Any]]) -> Iterator[tuple[int, str, int]]:
    """``(row key, terms, n_terms)`` of each row of those and the :attr:`ChunkKeys.COLUMNS`,
    which are appended to ``keys`` on the way."""
    for row in rows:
        keys.append(row[3:])
        yield row[0], row[1], row[2]


def _block_postings(token_ids: array[int], offsets: array[int],
                    first: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The postings of one block of chunks: ``token_ids`` (term numbers, chunk after chunk)
    split at ``offsets`` (the block's chunk j holds ``token_ids[offsets[j]:offsets[j + 1]]``
    and is chunk ``first + j``), as ``(term int32, chunk position int32, count uint16 or
    uint32)`` arrays, one entry per (term, chunk), sorted by term, then chunk."""
    ends = np.frombuffer(offsets, dtype=np.int64)
    width = ends.shape[0] - 1
    chunk_of = np.repeat(np.arange(width, dtype=np.int64), ends[1:] - ends[:-1])
    # one key per (term, chunk): sorting groups the postings by term, chunks ascending
    keys = np.frombuffer(token_ids, dtype=np.int64) * max(width, 1) + chunk_of
    del chunk_of
    keys, counts = np.unique(keys, return_counts=True)
    count_type = np.uint16 if counts.size == 0 or counts.max() < 2**16 else np.uint32
    return ((keys // max(width, 1)).astype(np.int32),
            (keys % max(width, 1) + first).astype(np.int32), counts.astype(count_type))


class KeptIndex:
    """The one :class:`BM25Index` a store keeps, and the lock its builds take.

    :meth:`get` returns the kept index when it reflects ``generation``, else builds one under
    the lock (a second thread asking for the same generation meanwhile waits and gets that
    one: double-checked) and keeps it only when it is newer than the kept one, so a thread
    reading an older snapshot never replaces a newer index. ``index`` is None until a build.
    """

    def __init__(self) -> None:
        self.index: BM25Index | None = None
        self._lock = threading.Lock()

    def current(self, generation: int) -> BM25Index | None:
        """The kept index when it reflects ``generation``, else None (no build)."""
        index = self.index
        return index if index is not None and index.generation == generation else None

    def get(self, generation: int, build: Callable[[], BM25Index]) -> BM25Index:
        """The index of ``generation``: the kept one, or ``build()`` (called under the lock;
        its result must reflect ``generation``)."""
        index = self.current(generation)
        if index is not None:
            return index
        with self._lock:
            index = self.current(generation)
            if index is not None:
                return index
            built = build()
            if self.index is None or self.index.generation < generation:
                self.index = built
            return built


def hashable(key: object) -> bool:
    """True when ``key`` can key a dict (a filter whose ``where`` holds a list cannot)."""
    try:
        hash(key)
    except TypeError:
        return False
    return True


def query_counts(terms: Sequence[str]) -> dict[str, int]:
    """Term -> count of analysed query terms, in first-occurrence order (empty terms out)."""
    counts: dict[str, int] = {}
    for t in terms:
        if t:
            counts[t] = counts.get(t, 0) + 1
    return counts
