"""Language detection, the Kazakh stemmer, and routing on real FastAPI docs pages (en/ru/zh)."""

from __future__ import annotations

import pytest

from citewise.text.kazakh import stem
from citewise.text.language import detect_language
from tests.conftest import DATASETS


@pytest.mark.parametrize(("text", "code"), [
    ("Кітапхананың жұмыс уақыты қандай?", "kk"),
    ("Кеден туралы заң бар ма", "kk"),  # no Kazakh-only letter: the function words decide
    ("Какой срок гарантии по договору?", "ru"),
    ("Где находится Нұр-Сұлтан и как туда добраться?", "ru"),  # a Kazakh name in Russian
    ("退货期限是多久？", "zh"),
    ("エラーの原因は何ですか", "ja"),
    ("What is the refund period?", "en"),
    ("Quelle est la durée de la garantie ?", "und"),  # Latin script, not English
    ("12 345 !!! 🙂", "und"),
    ("", "und"),
])
def test_detect_language(text, code):
    assert detect_language(text) == code


def test_chinese_page_with_code_samples_is_chinese():
    page = "如何声明可选的查询参数？\n```python\nasync def read_item(item_id: str, q: str | None = None):\n```"
    assert detect_language(page) == "zh"


@pytest.mark.parametrize(("word", "expected"), [
    ("кітаптарымыздың", "кітап"),  # plural + 1pl possessive + genitive
    ("республикасына", "республика"),  # 3rd possessive + dative
    ("сәуірдегі", "сәуір"),  # locative attributive
    ("бекітілген", "бекіт"), ("бекітуі", "бекіт"),  # passive participle, verbal noun
    ("жұмысы", "жұмыс"),  # -ы after a consonant, not -сы
    ("шешім", "шешім"),  # a noun ending in -ім keeps it
    ("қазақстанның", "қазақстан"),  # -стан is not an ablative
    ("ақысыз", "ақысыз"),  # derivational -сыз kept (free of charge is not fee)
    ("үйде", "үйде"),  # too short to strip
])
def test_kazakh_stemmer(word, expected):
    assert stem(word) == expected


# --- routing on a small real multilingual collection -----------------------------------------
PAGES = ["tutorial/query-params.md", "tutorial/path-params.md", "tutorial/body.md",
         "tutorial/cookie-params.md"]


@pytest.fixture(scope="module")
def fastapi_engine(tmp_path_factory, embedder):
    from citewise.config import Settings
    from citewise.engine import Engine

    root = DATASETS / "fastapi_docs" / "docs"
    engine = Engine(Settings(home=tmp_path_factory.mktemp("home"), llm_provider="none"),
                    embedder=embedder)
    report = engine.ingest([root / lang / "docs" / page for lang in ("en", "ru", "zh")
                            for page in PAGES])
    assert report.count("added") == 12
    return engine


def _language_folder(hit) -> str:
    return hit.document.source_path.split("/fastapi_docs/docs/")[1].split("/")[0]


@pytest.mark.parametrize(("question", "language"), [
    ("Как сделать query-параметр необязательным?", "ru"),
    ("如何声明可选的查询参数？", "zh"),
    ("How do I declare an optional query parameter?", "en"),
])
def test_question_language_pages_come_first(fastapi_engine, question, language):
    languages = fastapi_engine.store.languages()
    assert {"en", "ru", "zh"} <= set(languages)
    result = fastapi_engine.search(question, top_k=3)
    assert result.hits
    top = result.hits[0]
    assert top.chunk.language == language
    assert _language_folder(top) == language
    assert top.document.source_path.endswith("query-params.md")
    # every in-language hit precedes every other one
    flags = [h.chunk.language == language for h in result.hits]
    assert flags == sorted(flags, reverse=True)


def test_a_language_absent_from_the_index_is_not_routed(fastapi_engine):
    # no Kazakh page: routing is off and the best pages of any language answer
    assert fastapi_engine.retriever.routing_language("kk") is None
    assert fastapi_engine.retriever.routing_language("ru") == "ru"
    result = fastapi_engine.search("query параметр қалай жариялаймын?", top_k=3)
    assert result.hits


def test_routing_can_be_switched_off(fastapi_engine):
    from citewise.retrieve.retriever import Retriever

    retriever = fastapi_engine.retriever
    settings = retriever.settings.model_copy(update={"language_routing": False})
    assert Retriever(settings, retriever.store, retriever.embedder).routing_language("ru") is None


# --- cases C12 and C14 end to end: the BM25 leg finds the right file -------------------------
@pytest.mark.parametrize(("folder", "question", "expected"), [
    ("c14_kazakh", "Кітапхананың жұмыс уақыты қандай?", "kitaphana"),
    ("c14_kazakh", "Сенбі күні кітапхана ашық па?", "kitaphana"),
    ("c12_chinese", "退货期限是多久？", "退货政策.md"),
    ("c12_chinese", "仓库负责什么？", "lines.txt"),
])
def test_bm25_finds_kazakh_and_chinese_answers(engine, folder, question, expected):
    from tests.conftest import CASES

    engine.ingest([CASES / folder])
    hits = engine.search(question, mode="sparse", top_k=3, min_score=0.0).hits
    assert hits and hits[0].sparse > 0
    assert hits[0].document.path.split("/")[-1].startswith(expected)
    assert all("distractor" not in h.document.path for h in hits[:1])


def test_undetermined_chunks_do_not_make_an_index_multilingual(make_engine, tmp_path):
    """Regression: an English index with one chunk of no detectable language (a table of
    numbers) counted as two languages, so every English question searched both legs twice."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "guide.md").write_text(
        "# Refunds\n\nCustomers may ask for a refund within thirty days of purchase. The "
        "refund is paid to the original card.\n\n# Shipping\n\nParcels leave the warehouse "
        "on the next working day and arrive within a week.\n")
    (folder / "table.txt").write_text("1234 5678 9012\n3456 7890 1234\n")
    engine = make_engine()
    engine.ingest([folder])
    counts = engine.store.languages()
    assert counts.get("en", 0) >= 1 and set(counts) - {"en"} == {"und"}, counts
    assert engine.retriever.routing_language("en") is None
