"""A light rule-based suffix stemmer for Kazakh (Cyrillic script), for BM25.

No maintained Kazakh stemmer was usable here: Snowball (PyStemmer) has none, ``qaznltk`` has
no stemmer, ``kazstem`` is a GPL-3.0 morphological analyser (citewise is Apache-2.0) and
``pg_kazsearch`` is a PostgreSQL/Rust extension. So this module strips inflectional suffixes
by rule, the way Snowball's light stemmers do for other agglutinative languages.

Grammar reference: the noun template stem + plural + possessive + case and the suffix
allomorphs below follow K. A. Krippes, *Kazakh (Qazaq-) Grammatical Sketch with Affix List*
(1993, ERIC ED358706), and the morphotactics of the Apertium Kazakh transducer
(``apertium-kaz``; Washington, Salimzyanov and Tyers, "Finite-state morphological transducers
for three Kypchak languages", LREC 2014). The rules are ours.

Algorithm (:func:`stem`), on a casefolded word:

1. Words shorter than 4 letters, or with any non-Cyrillic letter, are returned as they are.
2. Layer by layer from the end (case, possessive, plural, verbal: each may be followed only by
   a layer further in, so at most one suffix of each comes off), the *longest* suffix in
   :data:`SUFFIXES` that the word ends with is removed when (a) at least :data:`MIN_STEM` letters stay, (b) the letter before it is one
   the suffix can follow (Kazakh suffixes have allomorphs chosen by the stem's last sound:
   plural ``-лар`` after vowels and р й у, ``-дар`` after л м н ң з ж, ``-тар`` after voiceless
   consonants), and (c) vowel harmony holds: a back-vowel suffix (а ы ұ) does not follow a
   stem whose last vowel is front (ә е ө ү і), nor the reverse (и у ю я э ё are neutral).
   So ``кітаптарымыздың`` -> ``кітаптарымыз`` -> ``кітаптар`` -> ``кітап``.
3. A final ``б``, ``г`` or ``ғ`` becomes ``п``, ``к`` or ``қ``: these stem-final consonants
   voice before a vowel (``кітап`` / ``кітабы``), and mapping every stem the same way makes the
   two meet whatever was stripped.

Covered: plural; possessive (1st/2nd/3rd person, polite 2nd); the seven cases (genitive,
accusative, dative, locative, ablative, instrumental) with their post-possessive forms
(``-на``, ``-нда``, ``-нан``...); the attributive ``-дағы``/``-ғы``; verbal nouns and
infinitives (``-у``, ``-уы``, ``-уға``), participles (``-ған``, ``-атын``), present and past
3rd person (``-ады``, ``-ды``), converbs (``-ып``), conditional (``-са``), 3rd-person
imperative (``-сын``), the agent noun (``-ушы``) and passive combinations (``-ылған``,
``-ілсін``). Derivational suffixes (``-лық``, ``-шы``, ``-сыз``) are kept: they change the
meaning ("ақысыз", free of charge, is not "ақы", fee).
"""

from __future__ import annotations

from functools import lru_cache

import regex

#: Letters that must stay after stripping.
MIN_STEM = 3

_VOWELS = frozenset("аәеёиоөуұүыіэюя")
_BACK = frozenset("аоұы")
_FRONT = frozenset("әеөүі")
_VOICED = frozenset("лрйузжмнң")  # sonorants and voiced fricatives
_VOICELESS = frozenset("кқпстшфхцчщбвгдғ")  # voiceless consonants, and voiced stops loans end in
_NASAL = frozenset("мнң")
_CONSONANTS = _VOICED | _VOICELESS
_ANY = _VOWELS | _CONSONANTS
_POSS3 = frozenset("ыі")  # a 3rd-person possessive ending

_V = _VOWELS
_VV = _VOWELS | _VOICED


CASE, POSSESSIVE, PLURAL, VERBAL = "case", "possessive", "plural", "verbal"
#: What may be stripped after a suffix of each layer (the next layer inwards).
_INNER = {
    None: frozenset({CASE, POSSESSIVE, PLURAL, VERBAL}),
    CASE: frozenset({POSSESSIVE, PLURAL, VERBAL}),
    POSSESSIVE: frozenset({PLURAL, VERBAL}),
    PLURAL: frozenset({VERBAL}),
    VERBAL: frozenset(),
}
#: Suffixes outside vowel harmony (the instrumental has one form for both classes).
_NO_HARMONY = frozenset("мен бен пен менен бенен пенен".split())


def _rules() -> dict[str, tuple[str, frozenset[str]]]:
    """Suffix -> (its layer, the letters the stem may end with before it)."""
    r: dict[str, tuple[str, frozenset[str]]] = {}
    layer = CASE

    def add(suffixes: str, after: frozenset[str]) -> None:
        for s in suffixes.split():
            r[s] = (layer, (r[s][1] if s in r else frozenset()) | after)

    layer = PLURAL
    add("лар лер", _V | frozenset("рйу"))
    add("дар дер", frozenset("лмнңзж"))
    add("тар тер", _VOICELESS)
    layer = POSSESSIVE  # 1st person singular -ым/-ім is left out: it ends many nouns (шешім)
    add("сы сі", _V - _POSS3)  # a stem rarely ends in ы/і: жұмыс-ы, not жұмы-сы
    add("ы і", _CONSONANTS)
    add("ың ің ымыз іміз ыңыз іңіз", _CONSONANTS)
    add("мыз міз ңыз ңіз", _V)
    layer = CASE
    add("ның нің", _V | _NASAL)
    add("дың дің", frozenset("лруйзж"))
    add("тың тің", _VOICELESS)
    # accusative (and the past tense 3rd person, same forms)
    add("ны ні", _V)
    add("ды ді", _VOICED)
    add("ты ті", _VOICELESS)
    add("н", _POSS3)
    # dative
    add("ға ге", _VV)
    add("қа ке", _VOICELESS)
    add("на не", _POSS3)
    # locative
    add("да де", _VV)
    add("та те", _VOICELESS)
    add("нда нде", _POSS3)
    # ablative
    add("дан ден", _V | frozenset("лруйзж"))
    add("тан тен", _VOICELESS)
    add("нан нен", _NASAL | _POSS3)
    # instrumental
    add("мен менен", _VV)
    add("бен бенен", frozenset("зж"))
    add("пен пенен", _VOICELESS)
    # attributive ("of/in ...")
    add("дағы дегі ғы гі", _VV)
    add("тағы тегі қы кі", _VOICELESS)
    add("ндағы ндегі", _POSS3)
    layer = VERBAL  # verbal nouns, participles, finite forms
    add("у уы уі уға уге уда уде удан уден уын уін ушы уші", _ANY)
    add("ған ген", _VV)
    add("қан кен", _VOICELESS)
    add("атын етін ады еді ып іп", _CONSONANTS)
    add("йтын йтін йды йді", _V)
    add("са се сын сін", _ANY)
    add("ылған ілген ылу ілу ылды ілді ылады іледі ылсын ілсін ылса ілсе", _CONSONANTS)
    add("лған лген лды лді лады леді лсын лсін", _V)
    return r


SUFFIXES: dict[str, tuple[str, frozenset[str]]] = _rules()
_BY_LENGTH = sorted(SUFFIXES, key=lambda s: (-len(s), s))
_FINAL = str.maketrans({"б": "п", "г": "к", "ғ": "қ"})
_CYRILLIC_WORD = regex.compile(r"^\p{Cyrillic}+$")


def _last_vowel(stem: str) -> str:
    for ch in reversed(stem):
        if ch in _VOWELS:
            return ch
    return ""


def _harmony_ok(stem: str, suffix: str) -> bool:
    vowel = _last_vowel(stem)
    suffix_vowels = [ch for ch in suffix if ch in _BACK or ch in _FRONT]
    if not suffix_vowels or not vowel:
        return True
    if suffix_vowels[0] in _BACK:
        return vowel not in _FRONT
    return vowel not in _BACK


def _strip_once(word: str, allowed: frozenset[str]) -> tuple[str, str] | None:
    """``(stem, layer)`` after removing the longest suffix of an ``allowed`` layer, or None."""
    for suffix in _BY_LENGTH:
        if not word.endswith(suffix):
            continue
        layer, after = SUFFIXES[suffix]
        stem = word[: -len(suffix)]
        if layer not in allowed or len(stem) < MIN_STEM or stem[-1] not in after:
            continue
        if suffix in ("тан", "тен") and stem.endswith("с"):
            continue  # -стан in country names (Қазақстан), not an ablative
        if suffix in _NO_HARMONY or _harmony_ok(stem, suffix):
            return stem, layer
    return None


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """The stem of one casefolded Kazakh word (see the module docstring); the word itself when
    nothing applies. Deterministic; never raises for a ``str``."""
    if len(word) < MIN_STEM + 1 or not _CYRILLIC_WORD.match(word):
        return word
    layer: str | None = None
    while _INNER[layer]:
        stripped = _strip_once(word, _INNER[layer])
        if stripped is None:
            break
        word, layer = stripped
    return word[:-1] + word[-1].translate(_FINAL)
