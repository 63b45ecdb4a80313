"""Playbooks: YAML files of rules a contract is checked against, validated with pydantic.

A playbook is a mapping with ``name``, an optional ``description`` and a list of ``rules``::

    name: default
    rules:
      - id: governing-law                 # unique in the playbook
        title: Governing law
        clause_type: Governing Law        # one of the CUAD categories (clause_types.py)
        severity: high                    # high | medium | low
        expect: present                   # present (absence is flagged) | absent
        accepts: Governing law must be Delaware or New York.
        keywords: [governed by, laws of]  # optional, favour clauses using these words
        examples: ["This Agreement is governed by the laws of New York."]  # optional
        check: {kind: jurisdiction, allowed: [Delaware, New York]}

``check`` is the deterministic, machine-checkable part of ``accepts`` (see
:mod:`citewise.scan.checks`), one of:

* ``{kind: jurisdiction, allowed: [...]}``: the governing jurisdiction is one of these;
* ``{kind: duration, min_months | max_months | min_days | max_days: N, near: [...]}``: the
  durations stated in the clause (only those within 80 characters of a ``near`` regex, when
  given) reach the minimum (the longest one counts) or stay within the maximum (all count);
* ``{kind: patterns, require_any: [...], forbid_any: [...]}``: regexes (case-insensitive)
  of which one must occur, or none may occur;
* ``{kind: presence}`` (the default): the clause being there is enough.

With ``expect: absent`` a found clause deviates unless its ``check`` (when given) passes, and
no clause found is compliant. Any error raises :class:`~citewise.errors.ConfigError` naming
the file, the rule id and the field.
"""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from citewise.errors import ConfigError
from citewise.scan.clause_types import CLAUSE_TYPES, canonical
from citewise.scan.jurisdictions import JURISDICTIONS

PLAYBOOK_DIR = Path(__file__).parent / "playbooks"


class Severity(str, Enum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def rank(self) -> int:
        """0 for high, 1 for medium, 2 for low (sort key: most severe first)."""
        return ("high", "medium", "low").index(self.value)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _compile_all(patterns: list[str]) -> list[str]:
    for p in patterns:
        try:
            re.compile(p, re.IGNORECASE)
        except re.error as err:
            raise ValueError(f"invalid regular expression {p!r}: {err}") from None
    return patterns


class PresenceCheck(_Strict):
    kind: Literal["presence"] = "presence"


class JurisdictionCheck(_Strict):
    kind: Literal["jurisdiction"]
    allowed: list[str] = Field(min_length=1)

    @field_validator("allowed")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        unknown = [v for v in value if v.casefold() not in {j.casefold() for j in JURISDICTIONS}]
        if unknown:
            raise ValueError(f"unknown jurisdiction(s) {unknown}; use names such as "
                             "'Delaware', 'New York', 'England and Wales', 'Ontario'")
        return value


class DurationCheck(_Strict):
    kind: Literal["duration"]
    min_months: float | None = Field(None, gt=0)
    max_months: float | None = Field(None, gt=0)
    min_days: float | None = Field(None, gt=0)
    max_days: float | None = Field(None, gt=0)
    near: list[str] = []

    _validate_near = field_validator("near")(_compile_all)

    @model_validator(mode="after")
    def _one_bound(self) -> DurationCheck:
        if self.min_months is not None and self.min_days is not None or \
                self.max_months is not None and self.max_days is not None:
            raise ValueError("give a minimum in months or in days, not both (same for maximum)")
        if self.minimum_days is None and self.maximum_days is None:
            raise ValueError("give at least one of min_months, max_months, min_days, max_days")
        return self

    @property
    def minimum_days(self) -> float | None:
        """The minimum in days (a month is 365/12 days), or None."""
        return self.min_days if self.min_months is None else self.min_months * 365 / 12

    @property
    def maximum_days(self) -> float | None:
        return self.max_days if self.max_months is None else self.max_months * 365 / 12


class PatternCheck(_Strict):
    kind: Literal["patterns"]
    require_any: list[str] = []
    forbid_any: list[str] = []

    _validate = field_validator("require_any", "forbid_any")(_compile_all)

    @model_validator(mode="after")
    def _some(self) -> PatternCheck:
        if not self.require_any and not self.forbid_any:
            raise ValueError("give require_any or forbid_any (or both)")
        return self


CheckSpec = Annotated[PresenceCheck | JurisdictionCheck | DurationCheck | PatternCheck,
                      Field(discriminator="kind")]


class Rule(_Strict):
    """One playbook rule; see the module docstring for the meaning of each field."""

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    title: str = Field(min_length=1)
    clause_type: str
    severity: Severity
    accepts: str = Field(min_length=1)
    expect: Literal["present", "absent"] = "present"
    keywords: list[str] = []
    examples: list[str] = []
    check: CheckSpec = PresenceCheck()

    @field_validator("clause_type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        found = canonical(value)
        if found is None:
            raise ValueError(f"unknown clause type {value!r}; use one of the CUAD categories: "
                             + ", ".join(CLAUSE_TYPES))
        return found


class Playbook(_Strict):
    name: str = Field(min_length=1)
    description: str = ""
    rules: list[Rule] = Field(min_length=1)
    #: Where the playbook was read from ("" when built in code).
    source: str = ""

    @model_validator(mode="after")
    def _unique_ids(self) -> Playbook:
        seen: set[str] = set()
        for rule in self.rules:
            if rule.id in seen:
                raise ValueError(f"rule id {rule.id!r} is used twice")
            seen.add(rule.id)
        return self


def bundled() -> list[str]:
    """Names of the playbooks shipped with citewise (``--playbook NAME``)."""
    return sorted(p.stem for p in PLAYBOOK_DIR.glob("*.yaml"))


def _where(data: Any, loc: tuple[Any, ...]) -> str:
    """'rule <id>, field <a.b>' (or 'field <a.b>') for a pydantic error location."""
    if len(loc) >= 2 and loc[0] == "rules" and isinstance(loc[1], int):
        rules = data.get("rules") if isinstance(data, dict) else None
        raw = rules[loc[1]] if isinstance(rules, list) and loc[1] < len(rules) else None
        rid = raw.get("id") if isinstance(raw, dict) else None
        name = repr(rid) if rid else f"#{loc[1] + 1}"
        # the check's discriminator tag appears in the location; it is not a field name
        rest = [str(p) for p in loc[2:] if p not in ("presence", "jurisdiction", "duration",
                                                      "patterns")]
        return f"rule {name}, field {'.'.join(rest) or '(rule)'}"
    return f"field {'.'.join(str(p) for p in loc) or '(playbook)'}"


def parse_playbook(data: Any, source: str = "<playbook>") -> Playbook:
    """Validate a decoded YAML document. Raises ConfigError naming ``source``, rule and field."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a playbook must be a mapping with 'name' and 'rules'")
    try:
        return Playbook.model_validate({**data, "source": source})
    except ValidationError as err:
        lines = [f"{_where(data, tuple(e['loc']))}: {e['msg']}" for e in err.errors()]
        raise ConfigError(f"{source}: invalid playbook: " + "; ".join(lines)) from None


def load_playbook(name_or_path: str | Path = "default") -> Playbook:
    """A bundled playbook by name, or a YAML file by path.

    Raises ConfigError when the file is missing, not YAML, or not a valid playbook (the message
    names the file, the rule id and the field).
    """
    path = Path(name_or_path).expanduser()
    if not path.is_file():
        if path.suffix in (".yaml", ".yml") or len(path.parts) > 1:
            raise ConfigError(f"playbook {path}: no such file")
        path = PLAYBOOK_DIR / f"{name_or_path}.yaml"
        if not path.is_file():
            raise ConfigError(f"unknown playbook {str(name_or_path)!r}: give a YAML file path "
                              f"or one of {', '.join(bundled())}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: not a valid YAML file ({err})") from None
    return parse_playbook(data, str(path))
