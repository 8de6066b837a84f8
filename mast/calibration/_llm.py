"""The calibration's own model call: one proposal per mode, from the dev split's disagreements.

The call goes through the discovery's caller (:class:`mast.discovery._llm.Caller`): the judge's
structured-output loop (schema, re-asks) on the judge's backend, cached on disk like a judgement and
kept in ``DIR/work/answers.jsonl``, counted and refused before it is sent when it would pass the
budget. Only the cache key's namespace differs, so a calibration answer is never served to discovery.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from string import Template
from typing import Any

from pydantic import Field

from mast.discovery._llm import Caller as _DiscoveryCaller
from mast.discovery._llm import _Answer, _spec
from mast.errors import UsageError
from mast.judge.cache import cache_key
from mast.judge.prompt import render_taxonomy
from mast.judge.schema import OutputSpec
from mast.resources import prompts_dir
from mast.taxonomy import Taxonomy

PROMPT_VERSION = "calibrate-v1"
PROPOSAL_SCHEMA = "mast_mode_calibration"
MAX_EXAMPLES = 2


class ExampleAnswer(_Answer):
    """A quote the model says shows the mode (checked against the step it names)."""

    trace_id: str = Field(
        description="Id of the run the quote comes from.", json_schema_extra={"maxLength": 200}
    )
    step: int | None = Field(description="Step number n of the [S<n>] line the quote comes from.")
    quote: str = Field(
        description="Text copied exactly from that step.", json_schema_extra={"maxLength": 300}
    )


class ProposalAnswer(_Answer):
    """A sharper definition of one mode, with its rules and one or two examples."""

    definition: str = Field(json_schema_extra={"maxLength": 600})
    when_to_use: str = Field(default="", json_schema_extra={"maxLength": 400})
    when_not_to_use: str = Field(default="", json_schema_extra={"maxLength": 400})
    examples: list[ExampleAnswer] = Field(default_factory=list, json_schema_extra={"maxItems": MAX_EXAMPLES})


PROPOSAL_SPEC: OutputSpec = _spec(
    PROPOSAL_SCHEMA,
    ProposalAnswer,
    "A sharper definition of one failure mode, written from a judge's disagreements.",
)


@dataclass(frozen=True)
class CalibratePrompts:
    """The static system message of the proposal call and the template of its per-mode part."""

    propose: str
    propose_input: Template

    @property
    def hash(self) -> str:
        """sha256 of the static part."""
        return hashlib.sha256(self.propose.encode()).hexdigest()


def _read(name: str) -> str:
    path = prompts_dir() / "calibrate" / PROMPT_VERSION / name
    try:
        return path.read_text(encoding="utf-8").rstrip("\n")
    except OSError as exc:
        raise UsageError(f"prompt template {path} cannot be read: {exc}") from exc


def load_calibrate_prompts(taxonomy: Taxonomy) -> CalibratePrompts:
    """Render the static part against the current taxonomy."""
    return CalibratePrompts(
        propose=Template(_read("propose.md")).substitute(
            taxonomy=render_taxonomy(taxonomy), taxonomy_version=taxonomy.version, schema_name=PROPOSAL_SCHEMA
        ),
        propose_input=Template(_read("propose-input.md")),
    )


class Caller(_DiscoveryCaller):
    """The discovery's caller with the calibration's own cache-key namespace."""

    def key(self, messages: list[dict[str, Any]], spec: OutputSpec) -> str:
        """Cache key: the answer parameters, the exact messages and the answer schema."""
        return cache_key(
            {
                "calibrate": PROMPT_VERSION,
                "answer": self.config.answer_params(),
                "messages": messages,
                "schema": spec.schema,
                "name": spec.name,
            }
        )
