"""The contract-likeness test that decides whether the chat page offers a playbook check."""

from __future__ import annotations

from citewise.scan.detect import MIN_CUES, contract_cues, looks_like_contract

AGREEMENT = """SERVICES AGREEMENT. This Agreement is made by and between Acme Ltd and Beta LLC
(each a party, together the parties) as of the Effective Date. Either party may terminate it
on thirty days' notice. The Supplier shall indemnify the Customer against third-party claims.
This Agreement is governed by the laws of the State of New York."""

NOTE = """Welcome aboard! On your first day you receive a laptop. The team parties on Fridays
are optional. Your manager shall introduce you to everyone. The agreement on holidays is in
the handbook."""


def test_an_agreement_shows_many_cue_groups():
    cues = contract_cues([AGREEMENT])
    assert cues == ["agreement", "parties", "obligation", "law", "term", "liability",
                    "effective"]
    assert looks_like_contract([AGREEMENT])


def test_a_note_with_a_few_contract_words_is_not_a_contract():
    assert len(contract_cues([NOTE])) < MIN_CUES
    assert not looks_like_contract([NOTE])
    assert not looks_like_contract([])


def test_cues_count_across_chunks():
    parts = AGREEMENT.split(". ")
    assert looks_like_contract(parts)
    assert contract_cues(parts) == contract_cues([AGREEMENT])
