"""Reranker training data from contracts and code (:mod:`citewise.train.domains`): the splits
keep evaluation data out, positives are the labelled passages, and the mix is capped per
source."""

from __future__ import annotations

import pytest

from citewise.config import Settings
from citewise.errors import ConfigError
from citewise.eval.cuad import load_contracts, split_of
from citewise.train.data import Example
from citewise.train.domains import (
    code_examples,
    cuad_examples,
    docstring_questions,
    legalbench_contracts,
    sample_per_source,
)
from citewise.train.prepare import TrainingRequest, check_request
from tests.conftest import DATASETS

SOURCE = '''
def plain():
    return 1


class Version:
    """A parsed version number, compared by its release segments."""

    def bump(self, part):
        """Return a copy with the given release segment raised by one."""

    def short(self):
        """Too short."""


async def fetch(url):
    """:param url: a directive, not a sentence of prose to ask about."""
'''


def test_docstring_questions_are_first_sentences_of_long_enough_docstrings():
    assert docstring_questions(SOURCE) == [
        ("Version", 6, "A parsed version number, compared by its release segments."),
        ("Version.bump", 9, "Return a copy with the given release segment raised by one."),
    ]


def test_a_file_that_does_not_parse_gives_no_questions():
    assert docstring_questions("def broken(:\n") == []


def _ex(source: str, i: int) -> Example:
    return Example(f"q{i}", ("p",), ("n",), source)


def test_sampling_caps_every_source_and_counts_code_packages_as_one_source():
    examples = ([_ex("scifact", i) for i in range(10)] + [_ex("cuad", i) for i in range(3)]
                + [_ex("code:httpx", i) for i in range(4)] + [_ex("code:jinja2", i) for i in range(4)])
    mixed = sample_per_source(examples, 5, seed=0)
    counts = {s: sum(e.source.split(":")[0] == s for e in mixed) for s in ("scifact", "cuad", "code")}
    assert counts == {"scifact": 5, "cuad": 3, "code": 5}
    assert mixed == sample_per_source(examples, 5, seed=0)  # the seed fixes the draw
    assert sample_per_source(examples, 0) == examples


def test_cuad_needs_the_legalbench_folder_whose_contracts_it_leaves_out(tmp_path):
    with pytest.raises(ConfigError, match="--legalbench"):
        check_request(TrainingRequest(cuad=DATASETS / "cuad"), tmp_path / "r.onnx", None)
    with pytest.raises(ConfigError, match="cuad_spans.mini.dev.json"):
        legalbench_contracts(tmp_path)


def test_legalbench_contracts_are_the_22_of_its_cuad_questions_12_in_the_train_split():
    names = legalbench_contracts(DATASETS / "legalbench_rag_sample")
    assert len(names) == 22
    assert sum(split_of(n) == "train" for n in names) == 12


def test_code_benchmark_package_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="click"):
        code_examples(["click"], Settings(home=tmp_path))


@pytest.mark.slow  # ingests one contract and one small package
def test_cuad_and_code_examples_hold_the_labelled_passage(tmp_path):
    settings = Settings(home=tmp_path)
    examples = cuad_examples(DATASETS / "cuad", DATASETS / "legalbench_rag_sample", settings,
                             max_contracts=1, seed=0)
    assert examples
    excluded = legalbench_contracts(DATASETS / "legalbench_rag_sample")
    drawn = [c for c in load_contracts(DATASETS / "cuad", "train") if c.file not in excluded]
    texts = {c.file: c.text() for c in drawn}
    spans = [" ".join(texts[c.file][a:b].split()) for c in drawn for v in c.spans.values()
             for a, b in v]
    for e in examples:
        assert e.query.startswith("Consider the ") and e.source == "cuad"
        assert e.positives and e.negatives and not set(e.positives) & set(e.negatives)
        # a positive overlaps a labelled span: some 3 words of one are in it
        body = " ".join(e.positives[0].split())
        assert any(" ".join(sp.split()[:3]) in body or " ".join(sp.split()[-3:]) in body
                   for sp in spans if len(sp.split()) >= 3)
    code = code_examples(["packaging"], settings, max_queries=30, seed=0)
    assert 20 < len(code) <= 30
    for e in code:
        assert e.source == "code:packaging"
        assert e.query not in e.positives[0]  # the question is taken out of its answer
        assert e.positives[0] not in e.negatives
