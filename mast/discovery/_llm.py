"""The discovery's own model calls: open coding, naming a group, revising a mode.

Each call goes through the judge's structured-output loop (:func:`mast.judge.structured.ask`: schema,
re-asks) on the judge's backend, is cached on disk like a judgement (the key hashes only what
changes the answer: the answer parameters and the exact messages and schema), counted per stage
(calls, tokens, cost) and refused before it is sent when it would pass the budget.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any, ClassVar, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from mast.errors import UsageError
from mast.judge.budget import price
from mast.judge.cache import JudgeCache, cache_key
from mast.judge.config import JudgeConfig
from mast.judge.prompt import render_taxonomy
from mast.judge.protocol import Backend, UsageMeter
from mast.judge.schema import OutputSpec, strict_schema
from mast.judge.structured import ask
from mast.resources import prompts_dir
from mast.taxonomy import Taxonomy

PROMPT_VERSION = "discover-v1"
OPEN_CODES_SCHEMA = "mast_open_codes"
CANDIDATE_SCHEMA = "mast_candidate_mode"
REVISION_SCHEMA = "mast_candidate_revision"
ANSWER_TOKENS_GUESS = 600
"""Output tokens assumed per discovery call when estimating its cost before sending it."""


# Terminal escape sequences (CSI such as ESC[2J, OSC such as ESC]0;title BEL, and their one-byte C1
# forms), removed whole so no "]0;title" is left behind; then every other control character.
# Written here rather than taken from a package: two regular expressions, and the model's text must
# lose them (a name is a label people read), not show them escaped as terminal_safe does.
_ESCAPE_SEQUENCE = re.compile(
    "\x1b\\][^\x07\x1b\x9c]*(?:\x07|\x1b\\\\|\x9c)?"   # OSC ... BEL or ST
    "|\x1b\\[[0-?]*[ -/]*[@-~]"                            # CSI
    "|\x1b[@-Z\\\\-_]"                                    # other two-byte escapes
    "|\x9b[0-?]*[ -/]*[@-~]|\x9d[^\x07\x9c]*[\x07\x9c]?"   # C1 CSI, C1 OSC
)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
_CONTROL_BUT_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
_log = logging.getLogger("mast")


def clean_label(text: str) -> str:
    """A model-given name as one line of printable text: escape sequences and control characters removed."""
    return " ".join(_CONTROL.sub(" ", _ESCAPE_SEQUENCE.sub("", text)).split())


def clean_prose(text: str) -> str:
    """Model-given prose (a definition) without escape sequences or control characters; lines and tabs kept."""
    return _CONTROL_BUT_LINES.sub("", _ESCAPE_SEQUENCE.sub("", text)).strip()


class _Answer(BaseModel):
    """A model's answer, cleaned as it is read: what it names may end up in a terminal, a file or a prompt.

    Names lose escape sequences and control characters (they are labels), prose keeps its lines;
    a text longer than its schema's ``maxLength`` (or a list longer than ``maxItems``) is cut to it,
    with a warning, so the cache and DIR/work/ never keep more than the schema allows.
    """

    model_config = ConfigDict(extra="ignore")
    _labels: ClassVar[frozenset[str]] = frozenset({"name", "label", "covered_by", "nearest_mast", "relation_target"})

    @field_validator("*", mode="after")
    @classmethod
    def _clean(cls, value: Any, info: ValidationInfo) -> Any:
        name = info.field_name or ""
        extra = cls.model_fields[name].json_schema_extra if name in cls.model_fields else None
        limits = extra if isinstance(extra, dict) else {}
        if isinstance(value, str) and name != "quote":  # a quote is checked against the step it cites
            value = clean_label(value) if name in cls._labels else clean_prose(value)
        most = limits.get("maxLength" if isinstance(value, str) else "maxItems")
        if isinstance(most, int) and isinstance(value, str | list) and len(value) > most:
            _log.warning("mast: the model's %s in its %s has %d %s, more than the %d its schema allows: cut to "
                         "%d", name, cls.__name__, len(value), "characters" if isinstance(value, str) else "items",
                         most, most)
            value = value[:most]
        return value


class OpenCodeAnswer(_Answer):
    """One failure the open coder names."""

    step: int | None = Field(description="Step number n of the [S<n>] line the quote comes from.")
    quote: str = Field(description="Text copied exactly from that step.", json_schema_extra={"maxLength": 300})
    label: str = Field(description="Three to eight words naming the failure.", json_schema_extra={"maxLength": 120})
    description: str = Field(description="One sentence on what went wrong.", json_schema_extra={"maxLength": 400})
    covered_by: str | None = Field(default=None, description="A MAST code that already explains it, or null.")


class OpenCodesAnswer(_Answer):
    """The open codes of one window."""

    codes: list[OpenCodeAnswer] = Field(default_factory=list, json_schema_extra={"maxItems": 10})
    summary: str = Field(default="", json_schema_extra={"maxLength": 400})


class CandidateAnswer(_Answer):
    """A group of open codes named and defined as a candidate mode."""

    name: str = Field(json_schema_extra={"maxLength": 80})
    definition: str = Field(json_schema_extra={"maxLength": 500})
    when_to_use: str = Field(default="", json_schema_extra={"maxLength": 400})
    when_not_to_use: str = Field(default="", json_schema_extra={"maxLength": 400})
    nearest_mast: str | None = None
    relation: Literal["new", "refines", "extends"] = "new"
    relation_target: str | None = None
    coherent: bool = True


class RevisionAnswer(_Answer):
    """A sharper definition written from the annotators' disagreements."""

    definition: str = Field(json_schema_extra={"maxLength": 500})
    when_to_use: str = Field(default="", json_schema_extra={"maxLength": 400})
    when_not_to_use: str = Field(default="", json_schema_extra={"maxLength": 400})


def _spec(name: str, model: type[BaseModel], description: str) -> OutputSpec:
    return OutputSpec(name=name, model=model, schema=strict_schema(model.model_json_schema()), description=description)


OPEN_CODES_SPEC = _spec(OPEN_CODES_SCHEMA, OpenCodesAnswer, "Failures in one window that MAST modes do not explain.")
CANDIDATE_SPEC = _spec(CANDIDATE_SCHEMA, CandidateAnswer, "A candidate failure mode named from a group of notes.")
REVISION_SPEC = _spec(REVISION_SCHEMA, RevisionAnswer, "A revised definition of a candidate failure mode.")


@dataclass(frozen=True)
class DiscoverPrompts:
    """The static system messages of the three discovery calls and their trace-part templates."""

    open_code: str
    name_group: str
    revise: str
    open_code_input: Template
    name_group_input: Template
    revise_input: Template

    @property
    def hash(self) -> str:
        """sha256 of the static parts."""
        digest = hashlib.sha256()
        for part in (self.open_code, self.name_group, self.revise):
            digest.update(part.encode())
            digest.update(b"\x00")
        return digest.hexdigest()


def _read(name: str) -> str:
    path = prompts_dir() / "discover" / PROMPT_VERSION / name
    try:
        return path.read_text(encoding="utf-8").rstrip("\n")
    except OSError as exc:
        raise UsageError(f"prompt template {path} cannot be read: {exc}") from exc


def load_discover_prompts(taxonomy: Taxonomy) -> DiscoverPrompts:
    """Render the static parts against the base taxonomy."""
    common = {"taxonomy": render_taxonomy(taxonomy), "taxonomy_version": taxonomy.version}
    return DiscoverPrompts(
        open_code=Template(_read("open-code.md")).substitute(common, schema_name=OPEN_CODES_SCHEMA),
        name_group=Template(_read("name-group.md")).substitute(common, schema_name=CANDIDATE_SCHEMA),
        revise=Template(_read("revise.md")).substitute(common, schema_name=REVISION_SCHEMA),
        open_code_input=Template(_read("open-code-input.md")),
        name_group_input=Template(_read("name-group-input.md")),
        revise_input=Template(_read("revise-input.md")),
    )


class BudgetStop(Exception):
    """The next call would pass ``--budget-usd``: discovery stops, what is done stays cached."""


@dataclass
class StageSpend:
    """What one stage of the discovery spent in this run."""

    calls: int = 0
    """Answered model calls (re-asks included)."""
    cached: int = 0
    """Answers read from the cache (no call)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    """Dollars; ``None`` once a call's price was unknown."""

    def add(self, calls: int, input_tokens: int, output_tokens: int, cost: float | None) -> None:
        """Book one answered call (or a labelled trace)."""
        self.calls += calls
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.cost_usd = None if self.cost_usd is None or cost is None else self.cost_usd + cost


@dataclass
class Spend:
    """Calls, tokens and cost of this run, per stage, against an optional budget."""

    budget_usd: float | None = None
    stages: dict[str, StageSpend] = field(default_factory=dict)

    def stage(self, name: str) -> StageSpend:
        """The spend of stage ``name`` (created on first use)."""
        return self.stages.setdefault(name, StageSpend())

    @property
    def cost_usd(self) -> float:
        """Dollars known to be spent so far (calls of unknown price count 0)."""
        return sum(s.cost_usd or 0.0 for s in self.stages.values())

    def left(self) -> float | None:
        """Dollars left of the budget (``None``: no budget)."""
        return None if self.budget_usd is None else max(0.0, self.budget_usd - self.cost_usd)

    def totals(self) -> dict[str, Any]:
        """Sums over the stages, for the manifest."""
        unknown = any(s.cost_usd is None for s in self.stages.values())
        return {
            "calls": sum(s.calls for s in self.stages.values()),
            "cached": sum(s.cached for s in self.stages.values()),
            "input_tokens": sum(s.input_tokens for s in self.stages.values()),
            "output_tokens": sum(s.output_tokens for s in self.stages.values()),
            "cost_usd": None if unknown else round(self.cost_usd, 6),
        }


class Caller:
    """Sends the discovery's calls: cached, counted, within budget, at most ``concurrency`` at once."""

    def __init__(
        self, config: JudgeConfig, backend: Backend, taxonomy: Taxonomy, spend: Spend, *, concurrency: int = 8,
        answers: Path | None = None,
    ) -> None:
        self.config = config
        self.backend = backend
        self.taxonomy = taxonomy
        self.spend = spend
        self.cache = JudgeCache(config.cache_dir) if config.cache else None
        self.answers_file = answers
        """``DIR/work/answers.jsonl``: every answer of this folder's runs, so a resume with another
        --cache-dir or --no-cache asks nothing again (the cache is shared and may be cleared)."""
        self.answers = _read_answers(answers) if answers is not None else {}
        self._gate = asyncio.Semaphore(concurrency)
        self._lock = asyncio.Lock()
        self._in_flight = 0.0

    def key(self, messages: list[dict[str, Any]], spec: OutputSpec) -> str:
        """Cache key: the answer parameters, the exact messages and the answer schema."""
        return cache_key({"discover": PROMPT_VERSION, "answer": self.config.answer_params(), "messages": messages,
                          "schema": spec.schema, "name": spec.name})

    def estimate(self, messages: list[dict[str, Any]]) -> tuple[int, int, float | None]:
        """Input tokens, output tokens and dollars a call is expected to take."""
        text = "\n".join(str(m.get("content", "")) for m in messages)
        tokens = self.backend.count_tokens(text) + 8 * len(messages)
        out = min(ANSWER_TOKENS_GUESS, self.config.max_output_tokens)
        return tokens, out, price(self.backend, tokens, out)

    async def call(self, stage: str, messages: list[dict[str, Any]], spec: OutputSpec) -> BaseModel:
        """One validated answer of shape ``spec`` (from the cache when it holds one).

        Raises:
            BudgetStop: the call would pass the budget (nothing is sent).
            JudgeError: no valid answer, or the provider failed.
        """
        spent = self.spend.stage(stage)
        key = self.key(messages, spec)
        if key in self.answers:
            try:
                value = spec.model.model_validate(self.answers[key])
            except ValueError:
                pass   # an answer this version no longer reads: asked again
            else:
                spent.cached += 1
                return value
        if self.cache is not None:
            hit = await asyncio.to_thread(self.cache.get, key)
            if hit is not None and "answer" in hit:
                spent.cached += 1
                value = spec.model.model_validate(hit["answer"])
                await self._keep(key, value)
                return value
        _, _, estimate = self.estimate(messages)
        async with self._gate:
            async with self._lock:
                left = self.spend.left()
                if left is not None and estimate is not None and self._in_flight + estimate > left:
                    raise BudgetStop(f"the next {stage} call (~${estimate:.4f}) would pass the budget "
                                     f"(${self.spend.budget_usd:.2f}, ${self.spend.cost_usd:.4f} spent)")
                self._in_flight += estimate or 0.0
            meter = UsageMeter()
            try:
                answer = await ask(
                    self.backend, messages, output=spec, taxonomy=self.taxonomy,
                    structured_output=self.config.structured_output, max_reasks=self.config.max_reasks,
                    max_tokens=self.config.max_output_tokens, meter=meter,
                )
            finally:
                async with self._lock:
                    self._in_flight -= estimate or 0.0
                    spent.add(meter.calls, meter.input_tokens, meter.output_tokens,
                              None if meter.price_unknown else (meter.cost_usd or 0.0))
        if self.cache is not None:
            await asyncio.to_thread(self.cache.put, key, {"answer": answer.value.model_dump(mode="json")})
        await self._keep(key, answer.value)
        return answer.value

    async def _keep(self, key: str, value: BaseModel) -> None:
        """Append an answer to ``DIR/work/answers.jsonl`` (one line per answer, flushed as it comes)."""
        if self.answers_file is None or key in self.answers:
            return
        dumped = value.model_dump(mode="json")
        self.answers[key] = dumped
        line = orjson.dumps({"key": key, "answer": dumped}) + b"\n"
        async with self._lock:
            with self.answers_file.open("ab") as handle:
                handle.write(line)


def _read_answers(path: Path) -> dict[str, Any]:
    """The answers kept in ``path`` by key; a torn or foreign line (an interrupted write) is skipped."""
    kept: dict[str, Any] = {}
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        return kept
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read: {exc}") from exc
    for line in lines:
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict) and isinstance(record.get("key"), str) and isinstance(record.get("answer"), dict):
            kept[record["key"]] = record["answer"]
    return kept
