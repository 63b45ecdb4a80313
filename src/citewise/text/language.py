"""The language of a chunk or a question, from its letters and a few function words.

One detector serves the BM25 analyzer (which stemmer a chunk or a query gets, see
:mod:`citewise.text.analysis`), language routing (which chunks a question prefers, see
:mod:`citewise.retrieve.retriever`) and the answer prompt ("Answer in Russian", see
:mod:`citewise.answer.prompts`), so the three never disagree.

Method, for a text of any length:

1. Letters are counted per script. A Han character counts as 3 letters (a Chinese word is one
   or two characters where a Latin word is five or six letters), so a Chinese page with code
   samples is still Chinese.
2. The non-Latin script with the most weighted letters decides when it has at least a fifth
   of them (Latin letters are also those of code, URLs and loanwords, so a Russian page with a
   code sample stays Russian), else Latin: Han is ``zh`` (``ja`` when any kana is present),
   Hangul ``ko``, Arabic ``ar``, Greek ``el``, Hebrew ``he``.
3. Cyrillic is ``kk`` or ``ru``. Kazakh writes nine letters Russian does not (ә ғ қ ң ө ұ ү һ
   і; they are about 10% of the letters of Kazakh prose); their share of the Cyrillic letters
   and two short lists of function words decide (:func:`_cyrillic_language`).
4. Latin is ``en`` when English function words make up at least 5% of the words (or any is
   present in a text of under 20 words); other Latin-script languages are not told apart and
   are ``und``.
5. Text with no letters (numbers, punctuation, emoji) is ``und``, "undetermined" (ISO 639-2).

The codes are ISO 639-1. Detection is deterministic, needs no model and takes microseconds per
chunk. It never raises for any ``str``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import regex

#: Languages the detector can return, with the name used in the answer prompt.
LANGUAGE_NAMES = {
    "en": "English", "ru": "Russian", "kk": "Kazakh", "zh": "Chinese", "ja": "Japanese",
    "ko": "Korean", "ar": "Arabic", "el": "Greek", "he": "Hebrew",
}
UNDETERMINED = "und"

KAZAKH_LETTERS = frozenset("әғқңөұүһі")

# Function words of one language that are not words of the other (Kazakh ones without any
# Kazakh-only letter, so they help exactly when the letters say little).
_KAZAKH_WORDS = frozenset(
    "мен бен пен туралы бойынша осы сол болып болса тиіс керек емес деп кейін дейін олар онда "
    "сондай сияқты бар жоқ және үшін бұл қандай қалай неше қашан бірақ немесе".split()
)
_RUSSIAN_WORDS = frozenset(
    "и в во на что как это по для с со из от к о об при или но же ли бы то так его ее их "
    "был была были быть который которая которые если когда где чем также только может".split()
)
_ENGLISH_WORDS = frozenset(
    "the is are what how which of and to with does do can when where why who this that from "
    "for be were it not should i my you your have has an or".split()
)

_SCRIPT = regex.compile(
    r"(?P<han>\p{Han})|(?P<kana>[\p{Hiragana}\p{Katakana}])|(?P<hangul>\p{Hangul})"
    r"|(?P<cyrillic>\p{Cyrillic})|(?P<latin>\p{Latin})|(?P<arabic>\p{Arabic})"
    r"|(?P<greek>\p{Greek})|(?P<hebrew>\p{Hebrew})"
)
_WEIGHT = {"han": 3, "kana": 3, "hangul": 2}
_WORDS = regex.compile(r"[\p{L}\p{M}]+")
_SCRIPT_LANGUAGE = {"hangul": "ko", "arabic": "ar", "greek": "el", "hebrew": "he"}


def _cyrillic_language(letters: str, words: list[str]) -> str:
    """``kk`` or ``ru`` for Cyrillic text (``letters``: its Cyrillic letters, casefolded).

    Russian when at least two Russian function words are found and they outnumber the Kazakh
    ones more than twice (a Russian sentence naming "Нұр-Сұлтан"); otherwise Kazakh when
    Kazakh-only letters are at least 2% of the Cyrillic letters, or when Kazakh function words
    outnumber Russian ones (a short Kazakh question without any Kazakh-only letter, such as
    "Кеден туралы заң бар ма"); otherwise Russian.
    """
    kazakh_share = sum(ch in KAZAKH_LETTERS for ch in letters) / max(len(letters), 1)
    kk_words = sum(w in _KAZAKH_WORDS for w in words)
    ru_words = sum(w in _RUSSIAN_WORDS for w in words)
    if ru_words >= 2 and ru_words > 2 * kk_words:
        return "ru"
    return "kk" if kazakh_share >= 0.02 or kk_words > ru_words else "ru"


def detect_language(text: str) -> str:
    """ISO 639-1 code of the language of ``text`` (see the module docstring for the method):
    one of ``en ru kk zh ja ko ar el he``, or ``und`` when the letters do not tell."""
    folded = text.casefold()
    counts: Counter[str] = Counter()
    cyrillic: list[str] = []
    for match in _SCRIPT.finditer(folded):
        script = match.lastgroup or ""
        counts[script] += _WEIGHT.get(script, 1)
        if script == "cyrillic":
            cyrillic.append(match.group())
    if not counts:
        return UNDETERMINED
    # Latin letters are also those of code, URLs and loanwords: another script present in at
    # least a fifth of the (weighted) letters names the language
    total = sum(counts.values())
    others = [s for s in counts if s != "latin"]
    script = max(others or counts, key=lambda s: (counts[s], s))
    if script != "latin" and counts[script] < 0.2 * total:
        script = "latin"
    if script in ("han", "kana"):
        return "ja" if counts["kana"] else "zh"
    if script in _SCRIPT_LANGUAGE:
        return _SCRIPT_LANGUAGE[script]
    words = _WORDS.findall(folded)
    if script == "cyrillic":
        return _cyrillic_language("".join(cyrillic), words)
    english = sum(w in _ENGLISH_WORDS for w in words)
    if english and (len(words) < 20 or english >= 0.05 * len(words)):
        return "en"
    return UNDETERMINED


def among(language: str, wanted: Sequence[str]) -> bool:
    """Whether a question detected as ``language`` is one a model limited to ``wanted``
    languages reads: ``wanted`` is empty (every language), holds it, or the language is
    undetermined (a bare identifier)."""
    return not wanted or language in wanted or language == UNDETERMINED


def language_name(code: str) -> str | None:
    """The English name of a detected language code (``"ru"`` -> ``"Russian"``); None for
    ``und`` or an unknown code."""
    return LANGUAGE_NAMES.get(code)
