"""The jurisdictions a playbook's ``jurisdiction`` check may name and the deterministic
checker recognises in text (:func:`citewise.scan.checks.find_jurisdictions`).

Data only: both :mod:`citewise.scan.playbook` (validating ``allowed``) and
:mod:`citewise.scan.checks` (finding names in clauses) read it, so neither imports the other
for it.
"""

from __future__ import annotations

_US_STATES = (
    "Alabama Alaska Arizona Arkansas California Colorado Connecticut Delaware Florida Georgia "
    "Hawaii Idaho Illinois Indiana Iowa Kansas Kentucky Louisiana Maine Maryland Massachusetts "
    "Michigan Minnesota Mississippi Missouri Montana Nebraska Nevada Ohio Oklahoma Oregon "
    "Pennsylvania Tennessee Texas Utah Vermont Virginia Washington Wisconsin Wyoming").split() + [
    "New Hampshire", "New Jersey", "New Mexico", "New York", "North Carolina", "North Dakota",
    "Rhode Island", "South Carolina", "South Dakota", "West Virginia", "District of Columbia",
    "Puerto Rico"]
_OTHER = [
    "England and Wales", "England", "Scotland", "Ireland", "United Kingdom", "Ontario",
    "British Columbia", "Quebec", "Alberta", "Canada", "Hong Kong", "Singapore",
    "People's Republic of China", "China", "Taiwan", "Japan", "Korea", "India", "Israel",
    "Germany", "France", "Switzerland", "Netherlands", "Sweden", "Italy", "Spain", "Australia",
    "Brazil", "Mexico", "Luxembourg", "Cayman Islands", "Bermuda", "British Virgin Islands",
]
#: Jurisdiction names the ``jurisdiction`` check recognises (US states, DC, common others).
JURISDICTIONS: tuple[str, ...] = tuple(_US_STATES + _OTHER)


__all__ = ["JURISDICTIONS"]
