"""The clause-type label set: the 41 CUAD v1 categories, each with a short description.

The names are CUAD's category names (the ``category`` field of its annotations); the
descriptions are citewise's own one-line summaries, written to be embedded as a prototype of
the clause type (see :mod:`citewise.scan.classify`). A playbook rule's ``clause_type`` must be
one of these names (compared case-insensitively).
"""

from __future__ import annotations

CLAUSE_TYPES: dict[str, str] = {
    "Document Name": "The title of the agreement, such as Distribution Agreement.",
    "Parties": "The companies or people who enter into the agreement.",
    "Agreement Date": "The date on which the agreement is made or signed.",
    "Effective Date": "The date from which the agreement takes effect.",
    "Expiration Date": "When the initial term of the agreement ends.",
    "Renewal Term": "The agreement renews or is extended automatically for further periods "
    "after the initial term unless a party gives notice.",
    "Notice Period To Terminate Renewal": "How much notice a party must give before the end "
    "of the term to stop the agreement from renewing.",
    "Governing Law": "The agreement is governed by and construed under the laws of a state "
    "or country.",
    "Most Favored Nation": "If better prices or terms are given to a third party, the buyer "
    "gets those better terms too.",
    "Non-Compete": "A party may not compete with the other party, or may not operate in a "
    "territory, business or product line.",
    "Exclusivity": "Exclusive dealing: one party appoints the other as its exclusive supplier, "
    "distributor or licensee, or may not deal with third parties.",
    "No-Solicit Of Customers": "A party may not solicit or contract with the other party's "
    "customers or partners.",
    "Competitive Restriction Exception": "Exceptions and carve-outs to a non-compete, "
    "exclusivity or no-solicit restriction.",
    "No-Solicit Of Employees": "A party may not solicit or hire the other party's employees "
    "or contractors.",
    "Non-Disparagement": "A party may not make disparaging or negative statements about the "
    "other party.",
    "Termination For Convenience": "A party may terminate the agreement at any time without "
    "cause, for convenience, by giving written notice.",
    "Rofr/Rofo/Rofn": "A right of first refusal, first offer or first negotiation before "
    "selling or licensing to others.",
    "Change Of Control": "Rights triggered by a merger, acquisition or change of control of a "
    "party, such as termination or consent.",
    "Anti-Assignment": "A party may not assign or transfer the agreement without the other "
    "party's prior written consent.",
    "Revenue/Profit Sharing": "A party pays the other a share of revenue or profits, royalties "
    "or commissions.",
    "Price Restrictions": "Limits on raising or lowering prices.",
    "Minimum Commitment": "A minimum quantity, volume or amount that must be bought, sold or "
    "paid.",
    "Volume Restriction": "A cap or threshold on the volume of use, units or sales, with fees "
    "when it is exceeded.",
    "Ip Ownership Assignment": "Intellectual property created under the agreement is owned by "
    "or assigned to a party.",
    "Joint Ip Ownership": "Intellectual property that the parties own jointly.",
    "License Grant": "A party grants the other a license to use its intellectual property, "
    "software or trademarks.",
    "Non-Transferable License": "The license may not be transferred, assigned or sublicensed.",
    "Affiliate License-Licensor": "The license covers intellectual property of the licensor's "
    "affiliates.",
    "Affiliate License-Licensee": "The licensee's affiliates are also licensed.",
    "Unlimited/All-You-Can-Eat-License": "An unlimited license for any number of uses, users "
    "or copies.",
    "Irrevocable Or Perpetual License": "The license is irrevocable or perpetual.",
    "Source Code Escrow": "Source code is deposited with an escrow agent and released on "
    "certain events.",
    "Post-Termination Services": "Obligations that continue after the agreement ends, such as "
    "transition services, sell-off periods or returning materials.",
    "Audit Rights": "A party may inspect or audit the other party's books, records and "
    "compliance.",
    "Uncapped Liability": "Liability that is not limited, for example for breach of "
    "confidentiality, indemnity, gross negligence or wilful misconduct.",
    "Cap On Liability": "The total liability of a party is limited to an amount, such as the "
    "fees paid in the preceding twelve months.",
    "Liquidated Damages": "A fixed amount of damages or a termination fee payable on breach "
    "or termination.",
    "Warranty Duration": "How long a warranty lasts.",
    "Insurance": "A party must maintain insurance coverage of certain types and amounts.",
    "Covenant Not To Sue": "A party may not sue or challenge the other party's rights, such "
    "as the validity of its intellectual property.",
    "Third Party Beneficiary": "A person who is not a party may enforce rights under the "
    "agreement.",
}


def canonical(name: str) -> str | None:
    """The CUAD category spelled as in :data:`CLAUSE_TYPES`, or None if ``name`` is not one."""
    folded = " ".join(name.split()).casefold()
    return next((t for t in CLAUSE_TYPES if t.casefold() == folded), None)
