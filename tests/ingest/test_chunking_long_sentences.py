"""Over-long sentences (Kazakh and Russian law) are packed into word pieces by bisection: the
same pieces and chunk boundaries as adding one word at a time, on real documents and the two
real tokenizers whose counts differ in kind (`use` adds BOS/EOS to every count, `minilm` not)."""

from __future__ import annotations

import pytest

from citewise.embed import USEEmbedder
from citewise.eval.legal import load_kazakh_legal, load_ru_legal
from citewise.eval.run import _parsed
from citewise.ingest.chunking import _call_overhead, _pack_words, chunk_document, sentences
from tests.conftest import DATASETS

#: Chunks (char_start, char_end, token_count) of the first 5,000 characters of the first
#: kazakh_legal_qa document, `use` tokenizer, max_tokens 100, overlap 20, as chunked before
#: the bisection (commit 2f9b549, one word at a time).
KAZAKH_BOUNDARIES = [
    (2, 165, 100), (166, 313, 75), (317, 399, 32), (403, 566, 97), (567, 588, 9),
    (592, 781, 100), (785, 891, 67), (895, 1048, 100), (1049, 1208, 98), (1209, 1370, 98),
    (1371, 1536, 97), (1540, 1564, 23), (1568, 1726, 100), (1727, 1729, 3), (1730, 1886, 98),
    (1887, 2009, 76), (2010, 2150, 84), (2148, 2305, 97), (2306, 2469, 95), (2470, 2497, 20),
    (2495, 2497, 3), (2498, 2662, 99), (2663, 2854, 100), (2858, 2883, 22), (2884, 3055, 98),
    (3056, 3168, 65), (3169, 3310, 90), (3308, 3310, 3), (3311, 3483, 100), (3484, 3603, 79),
    (3604, 3755, 98), (3756, 3906, 96), (3907, 4082, 98), (4083, 4173, 58), (4177, 4347, 100),
    (4348, 4504, 99), (4505, 4604, 65), (4608, 4798, 99), (4799, 4984, 99), (4985, 5000, 14),
]


@pytest.fixture(scope="module")
def use():
    return USEEmbedder(threads=1)  # only its tokenizer is used here (no weights loaded)


@pytest.fixture(scope="module")
def kazakh_doc():
    return next(iter(load_kazakh_legal(DATASETS / "kazakh_legal_qa").corpus.values()))


@pytest.fixture(scope="module")
def long_sentences(kazakh_doc):
    """Real sentences of 40+ words: Kazakh (first 12,000 characters of a ratification law)
    and Russian (three articles of LegalBench-RU's codes that hold such sentences)."""
    ru = list(load_ru_legal(DATASETS / "ru_legal_qa").corpus.values())
    texts = [kazakh_doc.text[:12000], *(ru[i].text for i in (0, 133, 171))]
    found = [s for t in texts for s in sentences(t) if len(s.split(" ")) >= 40]
    assert len(found) >= 8
    return found


def one_word_at_a_time(words, max_tokens, count):
    """The rule as written before the bisection: add the next word while the run fits."""
    buf: list[str] = []
    for word in words:
        if buf and count(" ".join([*buf, word])) > max_tokens:
            yield " ".join(buf), count(" ".join(buf))
            buf = [word]
        else:
            buf.append(word)
    if buf:
        yield " ".join(buf), count(" ".join(buf))


def test_kazakh_document_chunk_boundaries_are_unchanged(use, kazakh_doc):
    parsed = _parsed(kazakh_doc.title, kazakh_doc.text[:5000])
    chunks = chunk_document(kazakh_doc.id, parsed, use.count_tokens, max_tokens=100, overlap=20)
    assert [(c.char_start, c.char_end, c.token_count) for c in chunks] == KAZAKH_BOUNDARIES


def test_call_overhead_is_the_special_tokens_of_each_count(use, embedder):
    assert _call_overhead(use.count_tokens) == 2  # <s> and </s>
    assert _call_overhead(embedder.count_tokens) == 0  # minilm counts without [CLS]/[SEP]


@pytest.mark.parametrize("model", ["use", "minilm"])
@pytest.mark.parametrize("max_tokens", [24, 100, 300])
def test_word_pieces_are_the_longest_runs_that_fit(model, max_tokens, use, embedder,
                                                   long_sentences):
    count = use.count_tokens if model == "use" else embedder.count_tokens
    overhead = _call_overhead(count)
    for sentence in long_sentences:
        words = [w for w in sentence.split(" ") if count(w) <= max_tokens]
        pieces = list(_pack_words(words, [count(w) for w in words], max_tokens, count, overhead))
        assert pieces == list(one_word_at_a_time(words, max_tokens, count))
        assert " ".join(p for p, _ in pieces) == " ".join(words)
        used = 0
        for piece, n in pieces:
            assert n == count(piece) <= max_tokens
            used += len(piece.split(" "))
            if used < len(words):  # one word more would not fit
                assert count(f"{piece} {words[used]}") > max_tokens
