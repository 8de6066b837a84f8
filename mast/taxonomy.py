"""The MAST failure taxonomy as data, defined once in ``prompts/taxonomy/<version>.yaml``.

Prompts, the judge's output schema, detectors and CLI tables are all generated from a
:class:`Taxonomy`. Users can load their own file of the same shape with :func:`load_taxonomy`.

Example:
    >>> tax = load_taxonomy()
    >>> tax.version, tax.mode("3.2").name
    ('mast-v3', 'No or Incomplete Verification')
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import orjson
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from mast._json import canonical
from mast.errors import TaxonomyError
from mast.resources import prompts_dir

DEFAULT_TAXONOMY = "mast-v3"


class ModeExample(BaseModel):
    """A verified quote showing a mode (discovered modes carry a few; see :mod:`mast.discovery`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    trace_id: str = ""
    """The trace the quote comes from."""
    step: int | None = None
    """The step it was checked against."""
    quote: str
    """Text copied from that step."""


# Optional fields a discovered mode fills; left out of the fingerprint while empty, so the built-in
# taxonomy (which has none) keeps its prompt and cache keys.
_OPTIONAL_FIELDS = ("when_to_use", "when_not_to_use", "examples", "relation")


class FailureModeDef(BaseModel):
    """One failure mode of the taxonomy."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    code: str
    """Code such as ``1.3``."""
    name: str
    """Short name such as ``Step Repetition``."""
    category: str
    """Category id such as ``FC1``."""
    definition: str
    """What the failure is."""
    evidence: str = ""
    """What to look for in a trace to support it."""
    when_to_use: str = ""
    """When to label a run with this mode (discovered modes)."""
    when_not_to_use: str = ""
    """When not to, against the nearest other mode (discovered modes)."""
    examples: tuple[ModeExample, ...] = ()
    """Verified quotes showing the mode (discovered modes)."""
    relation: str = ""
    """How a discovered mode relates to MAST: ``refines <code>``, ``extends <category>`` or ``new``."""


class Taxonomy(BaseModel):
    """A versioned set of failure modes grouped in categories."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    version: str
    """Version tag recorded in every result (``mast-v3``)."""
    categories: dict[str, str]
    """Category id -> name."""
    modes: tuple[FailureModeDef, ...]
    """The modes, in taxonomy order."""

    @model_validator(mode="after")
    def _check(self) -> Taxonomy:
        codes = [m.code for m in self.modes]
        if len(set(codes)) != len(codes):
            raise ValueError(f"duplicate mode codes in {codes}")
        for mode in self.modes:
            if mode.category not in self.categories:
                raise ValueError(f"mode {mode.code} names unknown category {mode.category!r}")
        return self

    @property
    def codes(self) -> list[str]:
        """Mode codes in taxonomy order."""
        return [m.code for m in self.modes]

    def mode(self, code: str) -> FailureModeDef:
        """The mode with this code (any spelling :func:`normalize_code` accepts)."""
        wanted = normalize_code(code)
        for m in self.modes:
            if m.code == wanted:
                return m
        raise KeyError(code)

    def category_name(self, code: str) -> str:
        """Name of the category a mode code belongs to."""
        return self.categories[self.mode(code).category]

    def fingerprint(self) -> str:
        """Canonical JSON of the taxonomy, for hashing into prompts and cache keys."""
        data = self.model_dump(mode="json")
        for mode in data["modes"]:
            for name in _OPTIONAL_FIELDS:
                if not mode.get(name):
                    mode.pop(name, None)
        return canonical(data)


_CODE = re.compile(r"^(?:FM|F|MAST)?[\s\-_.]*(\d+)\s*[._\-\s]\s*(\d+)$", re.IGNORECASE)


def normalize_code(code: object) -> str:
    """Spell a mode code the one way mast uses: ``FM-1.3``, ``1_3``, ``fm 1.3`` -> ``1.3``.

    Raises:
        ValueError: when the text holds no ``<n>.<m>`` code.
    """
    text = str(code).strip()
    match = _CODE.match(text)
    if not match:
        raise ValueError(f"not a failure-mode code: {code!r}")
    return f"{int(match.group(1))}.{int(match.group(2))}"


@lru_cache(maxsize=8)
def _load_builtin(name: str) -> Taxonomy:
    path = prompts_dir() / "taxonomy" / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in (prompts_dir() / "taxonomy").glob("*.yaml"))
        raise TaxonomyError(f"unknown taxonomy {name!r}; built in: {', '.join(known)}")
    return _parse(path)


def _parse(path: Path) -> Taxonomy:
    try:
        text = path.read_text(encoding="utf-8")
        data = orjson.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        return Taxonomy.model_validate(data)
    except ValidationError as exc:
        raise TaxonomyError(f"taxonomy {path}: {_first_problem(exc)}") from exc
    except (OSError, yaml.YAMLError, orjson.JSONDecodeError, UnicodeDecodeError) as exc:
        reason = " ".join(str(exc).split())
        raise TaxonomyError(f"cannot read taxonomy {path}: {reason}") from exc


def _first_problem(exc: ValidationError) -> str:
    """``modes.3.code: not a failure-mode code: 'x'`` (+ how many more), without pydantic's URLs."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    field = ".".join(str(part) for part in first.get("loc", ())) or "top level"
    message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return f"{field}: {message}{more}"


def load_taxonomy(name_or_path: str | Path | None = None) -> Taxonomy:
    """Load a built-in taxonomy by version (default ``mast-v3``) or a YAML/JSON file of the same shape."""
    if name_or_path is None:
        return _load_builtin(DEFAULT_TAXONOMY)
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml", ".json") or path.exists():
        return _parse(path)
    return _load_builtin(str(name_or_path))
