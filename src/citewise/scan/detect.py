"""Whether a document looks like a contract, so a playbook check is worth offering.

A cheap lexical test on the document's indexed text, no model: a contract names its parties
and its binding terms. :func:`contract_cues` finds which of :data:`CUES` (groups of phrases
typical of agreements: the parties, "shall", "hereby", "governed by the laws", termination,
liability, indemnification, the effective date, signatures...) occur; :func:`looks_like_contract`
asks for at least :data:`MIN_CUES` different groups, so an onboarding note that says "the
parties on Friday" or "you shall receive a laptop" is not taken for one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: Cue groups: name -> pattern (case-insensitive, whole words).
CUES: dict[str, re.Pattern[str]] = {name: re.compile(pattern, re.IGNORECASE) for name, pattern in {
    "agreement": r"\b(this|the) (agreement|contract)\b|\bagreement\b.{0,40}\b(between|by and)\b",
    "parties": r"\b(the parties|each party|either party|both parties|party hereto)\b",
    "binding": r"\b(hereby|hereto|hereunder|herein|whereas)\b",
    "obligation": r"\b(shall|shall not)\b.{0,60}\b(pay|provide|deliver|indemnify|terminate|"
                  r"maintain|comply|notify)\b",
    "law": r"\bgoverned by (the )?laws?\b|\bgoverning law\b|\bjurisdiction\b",
    "term": r"\b(termination|terminate|renew(al|s)?|term of this)\b",
    "liability": r"\b(liabilit(y|ies)|indemnif(y|ication)|warrant(y|ies) disclaimer)\b",
    "effective": r"\beffective date\b|\bcommencement date\b",
    "confidential": r"\bconfidential information\b|\bnon-disclosure\b",
    "signature": r"\bin witness whereof\b|\bsignature\b.{0,30}\b(date|title)\b|\bauthori[sz]ed "
                 r"(representative|signatory)\b",
}.items()}

#: Different cue groups a contract shows at least.
MIN_CUES = 4


def contract_cues(texts: Iterable[str]) -> list[str]:
    """The names of the :data:`CUES` groups found in ``texts``, in :data:`CUES` order."""
    text = "\n".join(texts)
    return [name for name, pattern in CUES.items() if pattern.search(text)]


def looks_like_contract(texts: Iterable[str]) -> bool:
    """Whether ``texts`` (a document's chunks) show at least :data:`MIN_CUES` cue groups."""
    return len(contract_cues(texts)) >= MIN_CUES


__all__ = ["CUES", "MIN_CUES", "contract_cues", "looks_like_contract"]
