"""``discover()``: the whole discovery, from traces to a gated taxonomy in a folder.

::

    traces -> MAST-14 judgement (or --results)                       stage "mast14"
           -> seeded split: discover part | gate part
           -> open coding of each failed trace, window by window      stage "open_coding"
           -> groups (TF-IDF + agglomerative) -> named candidates     stage "naming"
           -> gate part labelled by two annotators with MAST-14 + candidates     stage "gate"
           -> per mode: accepted / merged / revised once and re-gated / candidate  stage "revision"
           -> the other half open-coded and consolidated: stability   stage "stability"
           -> taxonomy.yaml, candidates.yaml, report.html, manifest.json

Every call is cached (judgements like ``mast label``, the discovery's own calls by their exact
messages), so a rerun of the same command makes no call; the labelled results files are kept in
``DIR/work/`` and resumed.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mast.diagnosis import Diagnosis
from mast.discovery import stages
from mast.discovery._llm import BudgetStop, Caller, Spend, load_discover_prompts
from mast.discovery.models import Candidate, OpenCode
from mast.errors import JudgeError, JudgeSetupError, UsageError, one_line
from mast.judge.budget import price
from mast.judge.config import JudgeConfig
from mast.taxonomy import Taxonomy, load_taxonomy
from mast.trace import Trace

WORK = "work"
CONFUSED_SHARE = 0.75
"""A mode is merged with another when this share of its disagreements are swaps with that one mode."""


@dataclass(frozen=True)
class DiscoverOptions:
    """The knobs of a discovery run (the CLI's options)."""

    annotators: tuple[str, ...] = ()
    """Two models for the gate; empty: the judge's model with two seeds at a temperature above 0."""
    min_kappa: float = 0.4
    min_positives: int = 3
    """Gate traces each annotator must label with a mode for its kappa to count."""
    min_prevalence: float = 0.05
    """A candidate needs codes in this share of the discover part's traces (and at least 2 traces)."""
    split_seed: int = 0
    """Seed of the split (and of the bootstrap)."""
    discover_share: float = 0.5
    window_tokens: int = 6000
    """Most tokens of steps shown to the open coder at once (windows of whole steps)."""
    cluster_threshold: float = 0.8
    """Cosine distance above which two groups of open codes are not merged."""
    gate_temperature: float = 0.7
    """Temperature of the two same-model annotators (when no --annotators are given)."""
    stability: bool = True
    concurrency: int = 8
    budget_usd: float | None = None
    gold: str | None = None
    """A sheet people labelled (``--sheet`` writes it): the gate is against them."""
    sheet: bool = False
    """Stop after the candidates and write ``sheet.csv`` for people to label."""
    n_boot: int = 1000


@dataclass
class DiscoveryResult:
    """What a discovery run produced and where it wrote it."""

    output: Path
    candidates: list[Candidate]
    """Every candidate of the discover part, with its status and the reason."""
    taxonomy: Taxonomy | None
    """MAST-14 plus the accepted modes (``None`` when the run stopped early)."""
    manifest: dict[str, Any]
    stopped: str | None = None
    """Why the run stopped before the end (the budget), or ``None``."""
    stability: list[dict[str, Any]] = field(default_factory=list)
    saturation: list[dict[str, int]] = field(default_factory=list)

    @property
    def accepted(self) -> list[Candidate]:
        """The modes that passed the gate."""
        return [c for c in self.candidates if c.status == "accepted"]


def discover(paths: Sequence[str | os.PathLike[str] | Trace], output: str | os.PathLike[str], *,
             config: JudgeConfig | None = None, results: str | os.PathLike[str] | None = None,
             options: DiscoverOptions | None = None, **judge_options: Any) -> DiscoveryResult:
    """Find the failure modes of your own traces that MAST-14 does not name, and gate each on agreement.

    Args:
        paths: trace files, folders, or :class:`~mast.trace.Trace` objects.
        output: the folder to write ``taxonomy.yaml``, ``candidates.yaml``, ``report.html`` and
            ``manifest.json`` to (and ``work/``, what a rerun resumes from).
        config: the judge's configuration (or judge options as keywords: ``model=``...).
        results: a MAST-14 results file of these traces to reuse instead of judging them.
        options: :class:`DiscoverOptions` (its fields may also be given as keywords).
        **judge_options: judge options (``model=``, ``api_base=``...) and :class:`DiscoverOptions` fields.

    Raises:
        UsageError: bad options, fewer than 4 traces.

    Example:
        >>> r = mast.discover(["runs/"], "discovered", model="openai/gpt-4.1-mini")   # doctest: +SKIP
        >>> [(c.code, c.name, c.relation) for c in r.accepted]                        # doctest: +SKIP
    """
    from dataclasses import fields, replace

    from mast._sync import run_sync

    # Discovery options may come as keywords too (``min_kappa=0.5``); the rest are judge options.
    names = {f.name for f in fields(DiscoverOptions)}
    chosen = {k: judge_options.pop(k) for k in list(judge_options) if k in names}
    if chosen:
        options = replace(options or DiscoverOptions(), **chosen)
    if "annotators" in chosen and isinstance(chosen["annotators"], str):
        raise UsageError("annotators= takes two model names, e.g. ('openai/gpt-4.1', 'openai/gpt-4.1-mini')")
    if config is not None and judge_options:
        raise UsageError("pass judge options either in config= or as keywords, not both")
    config = config or JudgeConfig.from_options(**judge_options)
    return run_sync(adiscover(paths, output, config=config, results=results, options=options or DiscoverOptions()))


def load_corpus(paths: Sequence[str | os.PathLike[str] | Trace]) -> tuple[list[Trace], list[str]]:
    """Every readable trace under ``paths`` (first of each id), and one line per input that was not."""
    from mast.batch import scan
    from mast.batch.report import file_error_line

    traces: list[Trace] = []
    problems: list[str] = []
    seen: set[str] = set()
    for item in scan(list(paths), keep_bytes=None):
        if item.error is not None or item.trace is None:
            problems.append(file_error_line(item))
            continue
        if item.trace_id in seen:
            continue
        seen.add(item.trace_id)
        traces.append(item.trace)
    return traces, problems


def split(ids: Sequence[str], *, seed: int, share: float) -> tuple[list[str], list[str]]:
    """Seeded split of trace ids: the part to discover on and the part to gate on."""
    order = sorted(ids)
    random.Random(seed).shuffle(order)
    n = max(2, min(len(order) - 2, math.ceil(len(order) * share)))
    return order[:n], order[n:]


class _Run:
    """One discovery run: its folder, spend, judge and callers."""

    def __init__(self, output: Path, config: JudgeConfig, options: DiscoverOptions) -> None:
        self.output = output
        self.work = output / WORK
        self.config = config
        self.options = options
        self.base = load_taxonomy(config.taxonomy)
        self.prompts = load_discover_prompts(self.base)
        self.spend = Spend(budget_usd=options.budget_usd)
        self.notes: list[str] = []

    async def label(self, stage: str, traces: Sequence[Trace], config: JudgeConfig, name: str) -> list[Diagnosis]:
        """Label ``traces`` into ``work/<name>.jsonl`` (resumable, cached like ``mast label``)."""
        from mast.batch import aclassify_many

        spent = self.spend.stage(stage)

        def booked(item: Any, diagnosis: Diagnosis | None, outcome: str) -> None:
            if diagnosis is None or outcome == "resumed" or diagnosis.usage.cached:
                spent.cached += 1
                return
            usage = diagnosis.usage
            spent.add(usage.llm_calls, usage.input_tokens, usage.output_tokens, usage.cost_usd)

        left = self.spend.left()
        diagnoses = await aclassify_many(list(traces), config=config, output=self.work / f"{name}.jsonl",
                                         concurrency=self.options.concurrency, budget_usd=left, on_result=booked)
        not_started = [d.error for d in diagnoses if d.error is not None and d.error.type == "NotStarted"]
        if not_started:
            # The batch stops early for the budget, or after a few traces failed the same way (an
            # unreachable server, a rejected key): only the first is a budget stop.
            setup = next((d.error for d in diagnoses if d.error is not None and d.error.type == "JudgeSetupError"),
                         None)
            if setup is not None:
                raise JudgeError(setup.message)
            if self.options.budget_usd is None or not not_started[0].message.startswith("budget"):
                raise JudgeError(f"labelling for the {stage} stage stopped: {not_started[0].message}")
            raise BudgetStop(f"the budget (${self.options.budget_usd:.2f}) ran out while labelling for the {stage} "
                             f"stage (${self.spend.cost_usd:.4f} spent)")
        return diagnoses

    def annotators(self) -> list[tuple[str, JudgeConfig]]:
        """The two annotators of the gate: two models, or one model with two seeds at a temperature above 0."""
        base = self.config
        if self.options.annotators:
            if len(self.options.annotators) != 2:
                raise UsageError("--annotators takes two models: A,B")
            return [(f"annotator {n}: {m}", base.model_copy(update={"model": m})) for n, m in
                    zip("AB", self.options.annotators, strict=True)]
        temperature = base.temperature if base.temperature > 0 else self.options.gate_temperature
        seed = base.seed or 0
        return [(f"annotator {n}: {base.model} seed {seed + i}", base.model_copy(update={"seed": seed + i,
                                                                                        "temperature": temperature}))
                for i, n in ((1, "A"), (2, "B"))]


async def adiscover(paths: Sequence[str | os.PathLike[str] | Trace], output: str | os.PathLike[str], *,
                    config: JudgeConfig, results: str | os.PathLike[str] | None = None,
                    options: DiscoverOptions | None = None) -> DiscoveryResult:
    """The async :func:`discover` (the real code)."""
    from mast.discovery import write
    from mast.judge import Judge

    options = options or DiscoverOptions()
    if config.kind not in ("llm", "both"):
        raise UsageError("discovery needs an LLM judge: set --model or MAST_MODEL")
    if not 0 <= options.min_kappa <= 1:
        raise UsageError("--min-kappa must be between 0 and 1")
    out = Path(output)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a folder")
    traces, problems = load_corpus(paths)
    if len(traces) < 4:
        raise UsageError(f"discovery needs at least 4 readable traces, found {len(traces)}"
                         + (f" ({problems[0]})" if problems else ""))
    run = _Run(out, config, options)
    run.work.mkdir(parents=True, exist_ok=True)
    run.notes.extend(problems)
    by_id = {t.trace_id: t for t in traces}
    discover_ids, gate_ids = split(list(by_id), seed=options.split_seed, share=options.discover_share)
    min_traces = max(2, math.ceil(options.min_prevalence * len(discover_ids)))
    state: dict[str, Any] = {"split": {"seed": options.split_seed, "discover": discover_ids, "gate": gate_ids},
                             "min_traces": min_traces, "open_coding": {}}
    candidates: list[Candidate] = []
    taxonomy: Taxonomy | None = None
    stopped: str | None = None
    stability: list[dict[str, Any]] = []
    curve: list[dict[str, int]] = []
    judge = Judge(config)
    await judge.start()  # sets up the backend: the discovery's own calls share it
    if options.budget_usd is not None and price(judge.backend, 1000, 1000) is None:
        raise UsageError(f"--budget-usd needs the price of {config.model}: give --price-input and --price-output "
                         "(dollars per million tokens)")
    caller = Caller(config, judge.backend, run.base, run.spend, concurrency=options.concurrency,
                    answers=run.work / "answers.jsonl")
    try:
        # 1. MAST-14 (reused from --results where it holds the trace).
        mast14 = await _mast14(run, traces, results)
        # 1b. open coding of the discover part.
        codes = await _open_code_part(run, caller, discover_ids, by_id, mast14, state, "open_coding")
        # 2. consolidation.
        groups = stages.group_codes(codes, threshold=options.cluster_threshold)
        consolidate = stages.ConsolidateOptions(min_traces=min_traces)
        candidates = await stages.consolidate(caller, run.prompts, groups, run.base, len(discover_ids), consolidate,
                                              stage="naming")
        stages.assign_codes(candidates, run.base)
        curve = stages.saturation(groups, candidates, discover_ids, min_traces=min_traces)
        gate_traces = [by_id[t] for t in gate_ids]
        if options.sheet:
            state["sheet"] = str(write.sheet(out, candidates, gate_traces, run.base))
            stopped = "sheet written for people to label; rerun with --gold"
        else:
            # 3. the gate.
            await _gate(run, caller, candidates, gate_traces, state)
            taxonomy = stages.extended_taxonomy(run.base, [c for c in candidates if c.status == "accepted"],
                                                version=_version(run, candidates))
            # 4. stability: the same discovery on the other half.
            if options.stability and any(c.status == "accepted" for c in candidates):
                stability = await _stability(run, caller, gate_ids, by_id, mast14, candidates, state)
    except BudgetStop as exc:
        stopped = f"budget: {exc}"
    manifest = write.manifest(run, state, candidates, stopped=stopped, n_traces=len(traces),
                              stability=stability, saturation=curve, annotators=_annotator_info(run))
    result = DiscoveryResult(output=out, candidates=candidates, taxonomy=taxonomy, manifest=manifest, stopped=stopped,
                             stability=stability, saturation=curve)
    write.outputs(result, run)
    return result


def _version(run: _Run, candidates: Sequence[Candidate]) -> str:
    from mast._json import canonical_hash

    accepted = [c.model_dump(mode="json", include={"code", "name", "definition"}) for c in candidates
                if c.status == "accepted"]
    return f"{run.base.version}+discovered-{canonical_hash(accepted)[:8]}"


def _annotator_info(run: _Run) -> list[dict[str, Any]]:
    if run.options.gold:
        model = run.annotators()[0][1]
        return [{"name": "A", "model": model.model, "seed": model.seed, "temperature": model.temperature},
                {"name": "people", "gold": run.options.gold}]
    return [{"name": name.split(":")[0], "model": c.model, "seed": c.seed, "temperature": c.temperature}
            for name, c in run.annotators()]


async def _mast14(run: _Run, traces: Sequence[Trace], results: str | os.PathLike[str] | None) -> dict[str, Diagnosis]:
    """MAST-14 diagnoses by trace id: from ``results`` where they are there, the rest judged."""
    found: dict[str, Diagnosis] = {}
    if results is not None:
        from mast.results import iter_results

        if not Path(results).is_file():
            raise UsageError(f"--results {results}: no such file")
        wanted = {t.trace_id for t in traces}
        for diagnosis in iter_results(results):
            if diagnosis.judge.taxonomy_version != run.base.version:
                raise UsageError(f"--results {results}: judged with taxonomy {diagnosis.judge.taxonomy_version}, "
                                 f"not {run.base.version} (give the MAST-14 results of a plain `mast label`)")
            if diagnosis.trace_id in wanted and diagnosis.status == "judged":
                found.setdefault(diagnosis.trace_id, diagnosis)
    missing = [t for t in traces if t.trace_id not in found]
    if missing:
        for diagnosis in await run.label("mast14", missing, run.config, "mast14"):
            found.setdefault(diagnosis.trace_id, diagnosis)
    failed = [d for d in found.values() if d.status != "judged"]
    if failed and len(failed) == len(found):
        reason = failed[0].error.message if failed[0].error else failed[0].status
        raise JudgeError(f"no trace could be judged with MAST-14, so there is nothing to discover from "
                         f"(first: {failed[0].trace_id}: {reason})")
    if failed:
        # Not open-coded (nothing to build on): said, never silent. A rerun judges them again.
        first = failed[0].error.message if failed[0].error else failed[0].status
        run.notes.append(f"{len(failed)} of {len(traces)} traces were not judged with MAST-14 and are left out "
                         f"of open coding (first: {failed[0].trace_id}: {first})")
    return found


async def _open_code_part(run: _Run, caller: Caller, ids: Sequence[str], by_id: dict[str, Trace],
                          mast14: dict[str, Diagnosis], state: dict[str, Any], stage: str) -> list[OpenCode]:
    """Open codes of the failed traces among ``ids``, in the order of ``ids``."""
    chosen = [t for t in ids if stages.needs_open_coding(mast14.get(t))]
    codings = await asyncio.gather(*(
        stages.open_code(caller, run.prompts, by_id[t], mast14[t], run.config, run.base,
                         window_tokens=run.options.window_tokens, stage=stage)
        for t in chosen
    ))
    state["open_coding"][stage] = {
        "traces": len(ids), "open_coded": len(chosen), "windows": sum(c.windows for c in codings),
        "codes": sum(len(c.codes) for c in codings), "covered_by_mast": sum(c.covered for c in codings),
        "unverified_dropped": sum(c.unverified for c in codings),
        "no_quote_dropped": sum(c.no_quote for c in codings),
        "repeated_dropped": sum(c.repeated for c in codings),
        "windows_failed": sum(len(c.failed or []) for c in codings),
    }
    failed = [line for c in codings for line in (c.failed or [])]
    if failed:
        run.notes.append(f"{stage}: {len(failed)} windows got no valid answer and were skipped (first: {failed[0]})")
    return [code for coding in codings for code in coding.codes]


async def _gate(run: _Run, caller: Caller, candidates: list[Candidate], gate_traces: list[Trace],
                state: dict[str, Any]) -> None:
    """Label the gate part with MAST-14 + the candidates by two annotators; decide each candidate."""
    options = run.options
    gated = [c for c in candidates if c.code is not None]
    for candidate in candidates:
        if candidate.status != "refused":
            candidate.status = "not gated"
    if not gated:
        return
    annotators = run.annotators()
    people = None
    if options.gold:
        people = _gold_labels(options.gold, run, gated)
    rounds: dict[int, tuple[dict[str, Diagnosis], dict[str, Diagnosis] | None, dict[str, set[str]], Taxonomy]] = {}

    async def label_round(number: int) -> None:
        tax = stages.extended_taxonomy(run.base, gated, version=f"{run.base.version}+gate-r{number}")
        path = run.work / f"gate-taxonomy-r{number}.yaml"
        _write_taxonomy(tax, path)
        configs = [(name, cfg.model_copy(update={"taxonomy": str(path)})) for name, cfg in annotators]
        a = await run.label("gate" if number == 0 else "revision", gate_traces, configs[0][1], f"gate-a-r{number}")
        a_map = {d.trace_id: d for d in a if d.status == "judged"}
        if people is not None:
            rounds[number] = (a_map, None, people, tax)
            return
        b = await run.label("gate" if number == 0 else "revision", gate_traces, configs[1][1], f"gate-b-r{number}")
        b_map = {d.trace_id: d for d in b if d.status == "judged"}
        rounds[number] = (a_map, b_map, stages.labels_of(b_map.values()), tax)

    def gate_figures(number: int, codes: Sequence[str]) -> Any:
        a_map, _, b_labels, tax = rounds[number]
        return stages.figures(stages.labels_of(a_map.values()), b_labels, codes, tax, round=number,
                              seed=options.split_seed, n_boot=options.n_boot)

    await label_round(0)
    by_code = {str(c.code): c for c in gated}
    to_revise: list[Candidate] = []
    for candidate in gated:
        if candidate.status == "merged":
            continue
        fig = gate_figures(0, [str(candidate.code)])
        candidate.gate.append(fig)
        if stages.passes(fig, min_kappa=options.min_kappa, min_positives=options.min_positives):
            candidate.status = "accepted"
            candidate.reason = f"accepted: {stages.describe(fig)}; CI lower bound >= {options.min_kappa}"
            continue
        other = by_code.get(fig.confused_with or "")
        # Confused: most disagreements are one annotator giving this mode where the other gave one other
        # mode (a coincidence of two noisy labels rarely reaches three quarters of them).
        strongly = fig.confused_with is not None and fig.confused_count >= max(
            2, math.ceil(CONFUSED_SHARE * fig.disagreements))
        if strongly and other is not None and other.status not in ("merged", "accepted"):
            merged = gate_figures(0, [str(candidate.code), str(other.code)])
            keeper, gone = (candidate, other) if candidate.n_traces >= other.n_traces else (other, candidate)
            gone.status = "merged"
            gone.merged_into = keeper.code
            gone.reason = (f"merged into {keeper.code} {keeper.name}: the annotators gave one where the other gave "
                           f"the other in {fig.confused_count} of {fig.disagreements} disagreements")
            keeper.examples = _merge_examples(keeper, gone)
            keeper.gate.append(merged)
            to_revise[:] = [c for c in to_revise if c is not keeper and c is not gone]  # decided here
            if stages.passes(merged, min_kappa=options.min_kappa, min_positives=options.min_positives):
                keeper.status = "accepted"
                keeper.reason = f"accepted after merging {gone.code}: {stages.describe(merged)}"
            else:
                keeper.status = "candidate"
                keeper.reason = (f"kept as candidate: merged with {gone.code} and still below the gate "
                                 f"({stages.describe(merged)})")
            continue
        if strongly and fig.confused_with in run.base.codes:
            candidate.status = "merged"
            candidate.merged_into = fig.confused_with
            candidate.relation = f"refines {fig.confused_with}"
            candidate.reason = (f"merged into MAST {fig.confused_with} {run.base.mode(str(fig.confused_with)).name}: "
                                f"given instead of it in {fig.confused_count} of {fig.disagreements} disagreements "
                                f"({stages.describe(fig)})")
            continue
        if min(fig.positives_a, fig.positives_b) < options.min_positives:
            candidate.status = "candidate"
            candidate.reason = (f"kept as candidate: too few positives in the gate part to measure agreement "
                                f"({stages.describe(fig)}; need {options.min_positives} on each side)")
            continue
        to_revise.append(candidate)
    if not to_revise:
        return
    a_map, b_map, b_labels, _ = rounds[0]
    for candidate in list(to_revise):
        try:
            revision = await stages.revise(caller, run.prompts, candidate, a_map, b_map, b_labels, stage="revision")
        except JudgeSetupError:
            raise
        except JudgeError as exc:
            to_revise.remove(candidate)
            candidate.status = "candidate"
            candidate.reason = (f"kept as candidate: below the gate ({stages.describe(candidate.gate[0])}) and the "
                                f"revision call failed (a rerun asks again): {one_line(exc)}")
            continue
        candidate.definition = revision.definition.strip() or candidate.definition
        candidate.when_to_use = revision.when_to_use.strip() or candidate.when_to_use
        candidate.when_not_to_use = revision.when_not_to_use.strip() or candidate.when_not_to_use
        candidate.revised = True
    if not to_revise:
        return
    await label_round(1)
    for candidate in to_revise:
        first = candidate.gate[0]
        fig = gate_figures(1, [str(candidate.code)])
        candidate.gate.append(fig)
        if stages.passes(fig, min_kappa=options.min_kappa, min_positives=options.min_positives):
            candidate.status = "accepted"
            candidate.reason = f"accepted after one revision: {stages.describe(fig)} (first gate: {stages.describe(first)})"
        else:
            candidate.status = "candidate"
            candidate.reason = (f"kept as candidate: below the gate after one revision ({stages.describe(fig)}; "
                                f"first gate: {stages.describe(first)}; need CI lower bound >= {options.min_kappa})")


def _merge_examples(keeper: Candidate, gone: Candidate) -> list[Any]:
    """Examples of both, taken in turn (so the merged mode shows both kinds), one per trace."""
    out: list[Any] = []
    seen: set[str] = set()
    for pair in itertools.zip_longest(keeper.examples, gone.examples):
        for example in pair:
            if example is not None and example.trace_id not in seen and len(out) < stages.MAX_EXAMPLES:
                seen.add(example.trace_id)
                out.append(example)
    return out


def _gold_labels(path: str, run: _Run, gated: Sequence[Candidate]) -> dict[str, set[str]]:
    """People's labels from a sheet (``--sheet`` wrote it): trace id -> codes present."""
    from mast.evaluation import read_labels

    tax = stages.extended_taxonomy(run.base, gated, version="gold")
    table = read_labels(path, taxonomy=tax)
    labels: dict[str, set[str]] = {}
    for row in table.itertuples(index=False):
        labels.setdefault(str(row.trace_id), set())
        if bool(row.present):
            labels[str(row.trace_id)].add(str(row.code))
    return labels


def _write_taxonomy(taxonomy: Taxonomy, path: Path) -> None:
    from mast.discovery.write import taxonomy_yaml

    path.write_text(taxonomy_yaml(taxonomy), encoding="utf-8")


async def _stability(run: _Run, caller: Caller, other_ids: Sequence[str], by_id: dict[str, Trace],
                     mast14: dict[str, Diagnosis], candidates: Sequence[Candidate], state: dict[str, Any]
                     ) -> list[dict[str, Any]]:
    """Open-code and consolidate the other half; match each accepted mode with a mode found there."""
    codes = await _open_code_part(run, caller, other_ids, by_id, mast14, state, "stability")
    groups = stages.group_codes(codes, threshold=run.options.cluster_threshold)
    min_traces = max(2, math.ceil(run.options.min_prevalence * len(other_ids)))
    found = await stages.consolidate(caller, run.prompts, groups, run.base, len(other_ids),
                                     stages.ConsolidateOptions(min_traces=min_traces), stage="stability")
    kept = [c for c in found if c.status != "refused"]
    state["stability_half"] = [{"name": c.name, "n_traces": c.n_traces, "definition": c.definition} for c in kept]
    accepted = [c for c in candidates if c.status == "accepted"]
    return [{"code": left.code, "name": left.name, "matched": right is not None,
             "match": right.name if right is not None else None, "similarity": score}
            for left, right, score in stages.match_modes(accepted, kept)]


def now() -> str:
    """The time, for the manifest."""
    return datetime.now(UTC).isoformat(timespec="seconds")

