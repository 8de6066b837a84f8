"""Juries and repeated judging: several judgements per trace, reduced to one verdict with its votes.

A :class:`Jury` asks several :class:`~mast.judge.classify.Judge` s the same question about a trace:
different models (``jury="openai/gpt-4.1-mini,anthropic/claude-3-5-haiku-latest"``, or a YAML file
of jurors with their own options), ``samples=K`` independent samples of each (temperature above 0),
or both. Their verdicts are reduced by :mod:`mast.judge.reduce`; every juror's own diagnosis is kept
in ``diagnosis.jury.verdicts``. A Jury has the same interface as a Judge (``classify``, ``info``,
``estimate``, ``start``, ``aclose``), so batches and the CLI use it unchanged.

Sample ``k`` of a juror is an ordinary judgement whose configuration carries ``sample=k`` and, for
``k >= 1``, the seed ``seed + k`` (providers that take no seed ignore it): each sample has its own
cache entry, and sample 0 is the plain judgement, so raising ``samples`` from K to K+2 makes only
two new calls per trace.

A jury file::

    reducer: majority          # optional: majority | any | all | at_least:N
    quorum: 2                  # optional: jurors that must answer (default: more than half)
    samples: 1                 # optional
    jurors:
      - model: openai/gpt-4.1-mini
      - name: careful-4.1
        model: openai/gpt-4.1
        temperature: 0.7
      - judge: detectors       # the offline detectors as one juror

Options given explicitly (command line, ``MAST_*``, keyword arguments) win over the file's.

Example:
    >>> import mast
    >>> d = mast.classify("run.json", jury="openai/gpt-4.1-mini,openai/gpt-4.1", samples=3,
    ...                   temperature=0.7)                                   # doctest: +SKIP
    >>> d.verdict("1.3").votes, d.jury.agreement.fleiss_kappa               # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mast.__about__ import __version__
from mast.diagnosis import Diagnosis, JudgeInfo, JurorVerdict
from mast.errors import JudgeError, UsageError
from mast.judge.classify import CostEstimate, Judge, _load, _merged_config
from mast.judge.config import JudgeConfig
from mast.judge.reduce import default_quorum, parse_reducer, reduce_verdicts
from mast.taxonomy import Taxonomy
from mast.trace import Trace

DETECTORS = "detectors"
"""The juror name that stands for the offline detectors."""
_JURY_OPTIONS = ("samples", "jury", "reducer", "quorum", "sample")
"""Options of the jury itself, never passed on to a juror."""


@dataclass(frozen=True)
class JurorSpec:
    """One juror: a name and the judge options it overrides."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JurySpec:
    """Jurors plus the settings a jury file may give."""

    jurors: list[JurorSpec]
    settings: dict[str, Any] = field(default_factory=dict)


def parse_jury(spec: str | None) -> JurySpec:
    """Jurors from ``MODEL,MODEL,...`` or a YAML/JSON jury file (see the module docs).

    Raises:
        UsageError: an empty list, or a file that is not a jury.
    """
    if spec is None or not spec.strip():
        return JurySpec(jurors=[])
    if os.path.isfile(spec):
        return _jury_file(Path(spec))
    names = [part.strip() for part in spec.split(",") if part.strip()]
    if not names:
        raise UsageError(f"--jury {spec!r} names no model")
    jurors = [
        JurorSpec(name, {"judge": "detectors", "model": None} if name == DETECTORS else {"model": name})
        for name in names
    ]
    return JurySpec(jurors=_unique(jurors))


def _jury_file(path: Path) -> JurySpec:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise UsageError(f"{path}: not a readable jury file ({' '.join(str(exc).split())})") from exc
    if isinstance(data, list):
        data = {"jurors": data}
    if not isinstance(data, dict) or not isinstance(data.get("jurors"), list) or not data["jurors"]:
        raise UsageError(f"{path}: a jury file needs a non-empty `jurors:` list")
    unknown = set(data) - {"jurors", "reducer", "quorum", "samples"}
    if unknown:
        raise UsageError(f"{path}: unknown jury setting(s) {', '.join(sorted(unknown))}")
    jurors = []
    for number, entry in enumerate(data["jurors"], 1):
        if isinstance(entry, str):
            entry = {"judge": "detectors"} if entry == DETECTORS else {"model": entry}
        if not isinstance(entry, dict):
            raise UsageError(f"{path}: juror {number} must be a model name or a mapping of options")
        options = {k: v for k, v in entry.items() if k != "name"}
        bad = (set(options) - set(JudgeConfig.model_fields)) | (set(options) & set(_JURY_OPTIONS))
        if bad:
            raise UsageError(f"{path}: juror {number}: unknown option(s) {', '.join(sorted(bad))}")
        if options.get("judge") == "detectors":
            options["model"] = None
        name = str(entry.get("name") or options.get("model") or DETECTORS)
        jurors.append(JurorSpec(name, options))
    settings = {k: data[k] for k in ("reducer", "quorum", "samples") if k in data}
    return JurySpec(jurors=_unique(jurors), settings=settings)


def _unique(jurors: list[JurorSpec]) -> list[JurorSpec]:
    """The same name twice becomes ``name``, ``name#2``."""
    seen: dict[str, int] = {}
    out = []
    for juror in jurors:
        seen[juror.name] = seen.get(juror.name, 0) + 1
        out.append(juror if seen[juror.name] == 1 else JurorSpec(f"{juror.name}#{seen[juror.name]}", juror.options))
    return out


@dataclass
class _Member:
    name: str
    sample: int | None
    judge: Judge


class Jury:
    """Several judges (models and/or samples) whose verdicts are reduced to one; used like a :class:`Judge`.

    Args:
        config: the base options; its ``jury``, ``samples``, ``reducer`` and ``quorum`` shape the jury,
            the rest is what every juror starts from.
        **options: :class:`JudgeConfig` fields overriding ``config``.

    Raises:
        UsageError: ``samples > 1`` at temperature 0, an unknown reducer, a quorum larger than the
            jury, a bad jury file.
    """

    def __init__(self, config: JudgeConfig | None = None, **options: Any) -> None:
        base = _merged_config(config, options)
        spec = parse_jury(base.jury)
        explicit = {k for k in base.model_fields_set if k in ("reducer", "quorum", "samples")}
        settings = {k: v for k, v in spec.settings.items() if k not in explicit}
        self.config = base.model_copy(update=settings) if settings else base
        self.samples = int(self.config.samples)
        self.reducer = self.config.reducer
        parse_reducer(self.reducer)
        jurors = spec.jurors or [JurorSpec(self.config.model or DETECTORS, {})]
        self.members = self._members(jurors)
        self.quorum = self.config.quorum or default_quorum(len(self.members))
        if self.quorum > len(self.members):
            raise UsageError(f"--quorum {self.quorum} is more than the {len(self.members)} jurors of the jury")
        self.taxonomy: Taxonomy = self.members[0].judge.taxonomy

    def _members(self, jurors: list[JurorSpec]) -> list[_Member]:
        inherited = {k: v for k, v in dict(self.config).items() if k not in _JURY_OPTIONS}
        members: list[_Member] = []
        for juror in jurors:
            own = JudgeConfig.model_validate({**inherited, **juror.options})
            if own.kind == "detectors":
                if self.samples > 1 and len(jurors) == 1:
                    raise UsageError("--samples needs an LLM judge: the offline detectors give the same answer every time")
                # Deterministic: one vote, however many samples the LLM jurors give.
                members.append(_Member(juror.name, None, Judge(own)))
                continue
            if self.samples > 1 and own.temperature <= 0:
                raise UsageError(
                    f"--samples {self.samples} needs --temperature above 0 (juror {juror.name} has "
                    f"{own.temperature}): at temperature 0 every sample gives the same answer"
                )
            for k in range(self.samples):
                if self.samples == 1:
                    members.append(_Member(juror.name, None, Judge(own)))
                    continue
                seed = None if k == 0 else (own.seed or 0) + k
                config = own.model_copy(update={"sample": k, "seed": own.seed if k == 0 else seed})
                members.append(_Member(f"{juror.name}@{k}", k, Judge(config)))
        if len({m.judge.taxonomy.fingerprint() for m in members}) > 1:
            raise UsageError("every juror of a jury must use the same taxonomy")
        return members

    # -- lifecycle --

    async def __aenter__(self) -> Jury:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Start every juror's backend."""
        for member in self.members:
            await member.judge.start()

    async def aclose(self) -> None:
        """Release what the jurors hold."""
        for member in self.members:
            await member.judge.aclose()

    # -- judging --

    @property
    def info(self) -> JudgeInfo:
        """The jury's identity: its jurors (with what changes each one's answer), reducer and quorum."""
        first = next((m.judge.info for m in self.members if m.judge.config.kind != "detectors"), self.members[0].judge.info)
        models = list(dict.fromkeys(m.judge.config.model or DETECTORS for m in self.members))
        return JudgeInfo(
            kind="jury",
            model=",".join(models),
            prompt_version=first.prompt_version,
            prompt_hash=first.prompt_hash,
            taxonomy_version=self.taxonomy.version,
            mast_version=__version__,
            strategy="samples" if len(models) == 1 and self.samples > 1 else "jury",
            params={
                "jurors": [{"name": m.name, **m.judge.config.answer_params()} for m in self.members],
                "reducer": self.reducer,
                "quorum": self.quorum,
                "samples": self.samples,
            },
        )

    async def classify(
        self,
        trace_or_path: Trace | str | os.PathLike[str] | Any,
        *,
        raise_on_error: bool = True,
        gate: contextlib.AbstractAsyncContextManager[Any] | None = None,
    ) -> Diagnosis:
        """Judge one trace with every juror (concurrently) and reduce their verdicts.

        ``gate`` is passed to each juror, so it bounds model calls, not traces.

        Raises:
            TraceFormatError: the input cannot be read as one trace.
            JudgeError: fewer than ``quorum`` jurors answered (only with ``raise_on_error=True``).
        """
        trace = _load(trace_or_path)
        started = time.perf_counter()
        results = await asyncio.gather(
            *(m.judge.classify(trace, raise_on_error=False, gate=gate) for m in self.members)
        )
        verdicts = [
            JurorVerdict(name=m.name, model=m.judge.config.model if m.judge.config.kind != "detectors" else None,
                         sample=m.sample, diagnosis=d)
            for m, d in zip(self.members, results, strict=True)
        ]
        first = results[0]
        diagnosis = reduce_verdicts(
            verdicts, taxonomy=self.taxonomy, reducer=self.reducer, quorum=self.quorum, info=self.info,
            trace_id=trace.trace_id, source=first.source, trace_hash=trace.content_hash(),
            latency_s=time.perf_counter() - started,
        )
        if raise_on_error and diagnosis.status == "error" and diagnosis.error is not None:
            raise JudgeError(diagnosis.error.message)
        return diagnosis

    def estimate(self, trace: Trace) -> CostEstimate:
        """Expected tokens and dollars over every juror (``None`` dollars when any price is unknown)."""
        parts = [m.judge.estimate(trace) for m in self.members]
        costs = [p.cost_usd for p in parts]
        return CostEstimate(
            input_tokens=sum(p.input_tokens for p in parts),
            output_tokens=sum(p.output_tokens for p in parts),
            cost_usd=None if any(c is None for c in costs) else sum(c or 0.0 for c in costs),
        )


def is_jury(config: JudgeConfig) -> bool:
    """True when ``config`` asks for several judgements per trace (a jury or ``samples > 1``)."""
    return bool(config.jury) or config.samples > 1


def open_judge(config: JudgeConfig | None = None, **options: Any) -> Judge | Jury:
    """The judge ``config`` describes: a :class:`Jury` for ``jury=`` / ``samples > 1``, else a :class:`Judge`."""
    merged = _merged_config(config, options)
    return Jury(merged) if is_jury(merged) else Judge(merged)
