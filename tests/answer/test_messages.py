"""citewise's own replies in the question's language: the gettext catalogs and the replies
a Russian or Kazakh question gets (a newcomer's Russian question got an English "not
found")."""

from __future__ import annotations

import gettext
import string

import pytest
from babel.messages.pofile import read_po

from citewise.text.messages import (
    DOMAIN,
    LOCALE_DIR,
    MESSAGES,
    NO_DOCUMENTS,
    NOT_FOUND,
    translate,
)

LANGUAGES = sorted(p.name for p in LOCALE_DIR.iterdir() if p.is_dir())


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_russian_and_kazakh_have_catalogs() -> None:
    assert {"ru", "kk"} <= set(LANGUAGES)


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_catalog_translates_every_message_and_its_mo_is_compiled_from_its_po(
        language: str) -> None:
    folder = LOCALE_DIR / language / "LC_MESSAGES"
    with (folder / f"{DOMAIN}.po").open("rb") as f:
        catalog = {m.id: m.string for m in read_po(f) if m.id}
    compiled = gettext.translation(DOMAIN, LOCALE_DIR, languages=[language])
    for message in MESSAGES:
        assert catalog.get(message), f"{language}: no translation of {message!r}"
        # a translation may leave a field out (the language is known), never add one
        assert _fields(catalog[message]) <= _fields(message), (language, message)
        # the .mo is the .po's: run `msgfmt -o citewise.mo citewise.po` after editing it
        assert compiled.gettext(message) == catalog[message], (language, message)
    assert set(catalog) <= set(MESSAGES), f"{language}: messages no code uses"


def test_a_language_without_a_catalog_gets_english() -> None:
    assert translate(NOT_FOUND, "zh") == NOT_FOUND
    assert translate(NOT_FOUND, "") == NOT_FOUND
    assert translate(NOT_FOUND, "ru") == "В документах нет ответа на этот вопрос."


def test_an_empty_index_answers_a_russian_question_in_russian(make_engine) -> None:
    engine = make_engine()
    answer = engine.ask("Сколько дней отпуска положено сотруднику?", extractive=True)
    assert not answer.found
    assert answer.text == translate(NO_DOCUMENTS, "ru")
    assert answer.text.startswith("Документы ещё не проиндексированы")
    english = engine.ask("How many days of leave does an employee get?", extractive=True)
    assert english.text == NO_DOCUMENTS


def test_a_declined_kazakh_question_is_answered_in_kazakh(make_engine, tmp_path) -> None:
    (tmp_path / "zan.txt").write_text(
        "Еңбек шарты жазбаша нысанда жасалады. Жұмыс беруші қызметкерге жыл сайын "
        "ақылы еңбек демалысын береді. Демалыстың ұзақтығы күнтізбелік жиырма төрт күн.\n",
        encoding="utf-8")
    engine = make_engine()
    engine.ingest([tmp_path / "zan.txt"])
    answer = engine.ask("Toyota көлігінің бағасы қанша?", extractive=True)
    assert not answer.found
    assert answer.text.startswith("Құжаттарда бұл сұраққа жауап жоқ"), answer.text
