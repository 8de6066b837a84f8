"""``calibrate()``: sharpen the modes the judge gets wrong on your reviewed traces, kept only when test agrees.

::

    gold (mast review) + results it was made over + traces
      -> seeded dev/test split, stratified by trace (the split of ``mast validate --gold --split``)
      -> per mode with dev disagreements: one proposal call                      stage "propose"
         (definition, when to use / not, one or two examples verified in dev traces)
      -> test traces judged with the current taxonomy                            stage "test-current"
      -> test traces judged with each candidate (only that mode changed)         stage "test-candidates"
      -> dev traces judged with the current taxonomy and each candidate, shown beside (never deciding)
      -> per mode: accepted when test kappa improves and the paired bootstrap CI of the
         difference is above 0; else kept as before, with its figures
      -> taxonomy.yaml, report.json, report.html

Every answer is cached (proposals by their exact messages, judgements like ``mast label``) and the
labelled test runs are kept in ``DIR/work/`` and resumed, so a rerun of the same command sends nothing.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mast._json import canonical_hash
from mast.calibration._llm import (
    MAX_EXAMPLES,
    PROPOSAL_SPEC,
    CalibratePrompts,
    Caller,
    ProposalAnswer,
    load_calibrate_prompts,
)
from mast.calibration.models import CalibrationPlan, CalibrationResult, ModeDecision, Proposal, SplitFigures
from mast.diagnosis import Diagnosis
from mast.discovery._llm import ANSWER_TOKENS_GUESS, BudgetStop, Spend
from mast.errors import EvaluationError, JudgeError, UsageError
from mast.judge.budget import price
from mast.judge.config import JudgeConfig
from mast.judge.prompt import choose_fence
from mast.taxonomy import FailureModeDef, ModeExample, Taxonomy, load_taxonomy
from mast.trace import Trace

WORK = "work"


@dataclass(frozen=True)
class CalibrateOptions:
    """The knobs of a calibration run (the CLI's options)."""

    split_seed: int = 0
    """Seed of the dev/test split (the one ``mast validate --gold --split`` uses)."""
    boot_seed: int = 0
    """Seed of the paired bootstrap."""
    n_boot: int = 1000
    min_positives: int = 3
    """Test traces the reviewers found a mode in (and not in) below which no decision is made."""
    modes: tuple[str, ...] = ()
    """Calibrate only these codes (default: every mode with a dev disagreement)."""
    max_traces_shown: int = 6
    """Disagreeing dev traces whose transcript a proposal call shows."""
    trace_chars: int = 6000
    """Characters of one transcript a proposal call shows (cut visibly)."""
    concurrency: int = 8
    budget_usd: float | None = None


@dataclass(frozen=True)
class Disagreement:
    """One dev trace where the judge and the reviewers differ on a mode."""

    trace_id: str
    gold: bool
    judge: bool
    evidence: str = ""


@dataclass
class Inputs:
    """The gold, the judge's values, the traces and the split, read once."""

    taxonomy: Taxonomy
    gold: dict[tuple[str, str], bool]
    judge: dict[tuple[str, str], bool]
    evidence: dict[tuple[str, str], str]
    dev: list[str]
    test: list[str]
    traces: dict[str, Trace]
    notes: list[str] = field(default_factory=list)

    def disagreements(self, code: str) -> list[Disagreement]:
        """The dev traces where the judge and the gold differ on ``code``."""
        out = []
        for trace_id in self.dev:
            g, j = self.gold.get((trace_id, code)), self.judge.get((trace_id, code))
            if g is not None and j is not None and g != j:
                out.append(Disagreement(trace_id, g, j, self.evidence.get((trace_id, code), "")))
        return out

    def dev_cells(self, code: str) -> int:
        """Dev traces with both a gold and a judge value for ``code``."""
        return sum(1 for t in self.dev if (t, code) in self.gold and (t, code) in self.judge)

    def test_counts(self, code: str) -> tuple[int, int]:
        """Gold positives and negatives of ``code`` among the test traces that can be re-judged."""
        values = [self.gold[(t, code)] for t in self.test if (t, code) in self.gold and t in self.traces]
        return sum(values), len(values) - sum(values)


def read_inputs(
    gold: str | os.PathLike[str],
    paths: Sequence[str | os.PathLike[str] | Trace],
    results: str | os.PathLike[str] | None,
    taxonomy: Taxonomy,
    options: CalibrateOptions,
) -> Inputs:
    """Read the gold (majority of the reviewers), the judge's values, the traces; split dev/test."""
    from mast.discovery.run import load_corpus
    from mast.evaluation import majority_vote
    from mast.evaluation.labels import label_table
    from mast.gold import iter_events, label_rows
    from mast.validation.gold import judge_labels, split_traces

    path = Path(gold)
    if not path.is_file():
        raise UsageError(f"{path}: no such gold file")
    events = list(iter_events(path))
    table = label_table(label_rows(events), taxonomy=taxonomy, source=str(path))
    if table.empty:
        raise EvaluationError(f"{path}: no reviewed random-queue cell (present/absent) to calibrate on")
    voted = majority_vote(table).dropna(subset=["present"])
    gold_cells = {
        (str(t), str(c)): bool(p)
        for t, c, p in zip(voted["trace_id"], voted["code"], voted["present"], strict=True)
    }
    chosen = split_traces(table, seed=options.split_seed)
    dev = sorted(t for t, s in chosen.items() if s == "dev")
    test = sorted(t for t, s in chosen.items() if s == "test")
    judge: dict[tuple[str, str], bool] = {}
    evidence: dict[tuple[str, str], str] = {}
    notes: list[str] = []
    if results is not None:
        from mast.results import iter_results

        if not Path(results).is_file():
            raise UsageError(f"--results {results}: no such file")
        for diagnosis in iter_results(results):
            if diagnosis.status != "judged":
                continue
            if diagnosis.judge.taxonomy_version != taxonomy.version:
                notes.append(
                    f"{results}: judged with taxonomy {diagnosis.judge.taxonomy_version}, calibrating "
                    f"{taxonomy.version}"
                )
            for verdict in diagnosis.failure_modes:
                if verdict.present is None or (diagnosis.trace_id, verdict.code) in judge:
                    continue
                judge[(diagnosis.trace_id, verdict.code)] = bool(verdict.present)
                if verdict.evidence:
                    quote = verdict.evidence[0]
                    evidence[(diagnosis.trace_id, verdict.code)] = f'S{quote.step}: "{quote.quote}"'
    else:
        frame = judge_labels(events)
        judge = {
            (str(t), str(c)): bool(p)
            for t, c, p in zip(frame["trace_id"], frame["code"], frame["present"], strict=True)
        }
    traces, problems = load_corpus(paths)
    notes.extend(problems)
    wanted = set(chosen)
    by_id = {t.trace_id: t for t in traces if t.trace_id in wanted}
    missing = sorted(wanted - set(by_id))
    if missing:
        notes.append(
            f"{len(missing)} of {len(wanted)} reviewed traces are not among the traces given "
            f"(first: {missing[0]}): they are neither shown nor re-judged"
        )
    return Inputs(
        taxonomy=taxonomy,
        gold=gold_cells,
        judge=judge,
        evidence=evidence,
        dev=dev,
        test=test,
        traces=by_id,
        notes=notes,
    )


# --- the proposal ---------------------------------------------------------------------------------


def _transcript(trace: Trace, config: JudgeConfig, limit: int) -> tuple[str, Any]:
    from mast.discovery.stages import material_of

    material = material_of(trace, config)
    text = "\n".join(block for _, block in material.blocks)
    if len(text) > limit:
        text = text[:limit] + f"\n[... {len(text) - limit} more characters not shown]"
    return text, material


def proposal_messages(
    prompts: CalibratePrompts,
    mode: FailureModeDef,
    found: Sequence[Disagreement],
    inputs: Inputs,
    config: JudgeConfig,
    options: CalibrateOptions,
) -> list[dict[str, Any]]:
    """The messages of one mode's proposal call: the mode, the dev disagreements, their transcripts."""
    lines = []
    for d in found[:40]:
        said = "present" if d.judge else "absent"
        lines.append(
            f"- run {d.trace_id}: the reviewers say {'present' if d.gold else 'absent'}; the judge said "
            f"{said}" + (f" ({d.evidence})" if d.evidence else "")
        )
    if len(found) > 40:
        lines.append(f"- ... and {len(found) - 40} more")
    # The runs the reviewers found the mode in come first: the examples are quoted from them.
    shown = sorted((d for d in found if d.trace_id in inputs.traces), key=lambda d: (not d.gold, d.trace_id))
    parts = []
    for d in shown[: options.max_traces_shown]:
        text, _ = _transcript(inputs.traces[d.trace_id], config, options.trace_chars)
        parts.append(f"--- run {d.trace_id} (reviewers: {'present' if d.gold else 'absent'}) ---\n{text}")
    disagreements = "\n".join(lines)
    transcripts = "\n\n".join(parts) or "(no transcript available)"
    fence = choose_fence(disagreements, transcripts, mode.definition)
    user = prompts.propose_input.substitute(
        code=mode.code,
        name=mode.name,
        definition=mode.definition,
        when_to_use=mode.when_to_use or "(not given)",
        when_not_to_use=mode.when_not_to_use or "(not given)",
        fence=fence,
        disagreements=disagreements,
        transcripts=transcripts,
        schema_name=PROPOSAL_SPEC.name,
    )
    return [{"role": "system", "content": prompts.propose}, {"role": "user", "content": user}]


def verify_examples(
    answer: ProposalAnswer, inputs: Inputs, config: JudgeConfig
) -> tuple[list[ModeExample], int]:
    """The answer's examples found in the step they cite (or another step of the same dev trace); the rest dropped."""
    from mast.discovery.stages import material_of

    kept: list[ModeExample] = []
    dropped = 0
    dev = set(inputs.dev)
    for example in answer.examples[:MAX_EXAMPLES]:
        trace = inputs.traces.get(example.trace_id.strip())
        quote = example.quote.strip()
        if trace is None or trace.trace_id not in dev or not quote:
            dropped += 1
            continue
        material = material_of(trace, config)
        step = example.step if material.verify(example.step, quote) else material.find_quote(quote)
        if step is None or any(k.quote == quote for k in kept):
            dropped += 1
            continue
        kept.append(ModeExample(trace_id=trace.trace_id, step=step, quote=quote))
    return kept, dropped


def changed(base: Taxonomy, code: str, proposal: Proposal, version: str) -> Taxonomy:
    """``base`` with mode ``code`` replaced by the proposal (every other mode as it was)."""

    def one(mode: FailureModeDef) -> FailureModeDef:
        if mode.code != code:
            return mode
        return mode.model_copy(
            update={
                "definition": proposal.definition or mode.definition,
                "when_to_use": proposal.when_to_use or mode.when_to_use,
                "when_not_to_use": proposal.when_not_to_use or mode.when_not_to_use,
                "examples": tuple(proposal.examples) or mode.examples,
            }
        )

    return Taxonomy(
        version=version, categories=dict(base.categories), modes=tuple(one(m) for m in base.modes)
    )


def _proposal_hash(proposals: Mapping[str, Proposal]) -> str:
    return canonical_hash(
        {
            code: p.model_dump(mode="json", exclude={"examples_dropped"})
            for code, p in sorted(proposals.items())
        }
    )[:8]


# --- the test figures -----------------------------------------------------------------------------


def _onehot(pred: npt.NDArray[np.bool_], gold: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
    """One row per trace: 1 in its confusion cell (tp, fp, fn, tn)."""
    cell = np.select([pred & gold, pred & ~gold, ~pred & gold], [0, 1, 2], 3)
    out: npt.NDArray[np.float64] = np.eye(4)[cell]
    return out


def _num(value: Any) -> float | None:
    number = float(value)
    return None if np.isnan(number) else round(number, 4)


def _interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float] | None:
    from mast.evaluation.metrics import percentile_interval

    found = percentile_interval(values, level)
    return None if found is None else (round(found[0], 4), round(found[1], 4))


def paired_figures(
    code: str,
    gold: Mapping[tuple[str, str], bool],
    before: Mapping[str, Diagnosis],
    after: Mapping[str, Diagnosis],
    test: Sequence[str],
    *,
    n_boot: int,
    seed: int,
    family: int = 1,
) -> SplitFigures:
    """Kappa of the current and the candidate run against the gold on ``code``, and the paired bootstrap difference.

    The bootstrap resamples *traces* once for both runs (:func:`mast.evaluation.metrics.bootstrap_weights`),
    so the difference is the definition's, not the sample's; kappa is :func:`metrics_from_counts`'s
    with ``estimable_only=False``: a run that never flags the mode counts as kappa 0, the baseline to beat. ``family``: how many modes are tested on the same
    traces; the difference's CI is also given at level ``1 - 0.05 / family`` (Bonferroni).
    """
    from mast.evaluation.metrics import bootstrap_weights, metrics_from_counts

    def value(diagnosis: Diagnosis) -> bool | None:
        verdict = next((v for v in diagnosis.failure_modes if v.code == code), None)
        return None if verdict is None or verdict.present is None else bool(verdict.present)

    rows = []
    for trace_id in test:
        if (trace_id, code) not in gold or trace_id not in before or trace_id not in after:
            continue
        a, b = value(before[trace_id]), value(after[trace_id])
        if a is not None and b is not None:
            rows.append((gold[(trace_id, code)], a, b))
    g = np.array([r[0] for r in rows], dtype=bool)
    figures = SplitFigures(n_traces=len(rows), positives=int(g.sum()), negatives=int((~g).sum()))
    if not rows:
        return figures
    cells_a = _onehot(np.array([r[1] for r in rows], dtype=bool), g)
    cells_b = _onehot(np.array([r[2] for r in rows], dtype=bool), g)
    kappa_a = metrics_from_counts(cells_a.sum(axis=0), estimable_only=False)["kappa"]
    kappa_b = metrics_from_counts(cells_b.sum(axis=0), estimable_only=False)["kappa"]
    figures.kappa_before, figures.kappa_after = _num(kappa_a), _num(kappa_b)
    figures.diff = _num(kappa_b - kappa_a)
    if n_boot:
        weights = bootstrap_weights(len(rows), n_boot, seed)
        boot_a = metrics_from_counts(weights @ cells_a, estimable_only=False)["kappa"]
        boot_b = metrics_from_counts(weights @ cells_b, estimable_only=False)["kappa"]
        figures.ci_before, figures.ci_after = _interval(boot_a), _interval(boot_b)
        figures.ci_diff = _interval(boot_b - boot_a)
        if family > 1:
            figures.ci_diff_adjusted = _interval(boot_b - boot_a, 1 - 0.05 / family)
    return figures


def decide(decision: ModeDecision, figures: SplitFigures) -> None:
    """Accepted when the test kappa improves and the paired CI of the difference is above 0."""
    decision.test = figures

    def f(value: float | None) -> str:
        return "undefined" if value is None else f"{value:.2f}"

    ci = figures.ci_diff
    shown = (
        f"test kappa {f(figures.kappa_before)} -> {f(figures.kappa_after)}, difference "
        f"{'undefined' if figures.diff is None else f'{figures.diff:+.2f}'}"
        f"{'' if ci is None else f' (95% paired CI [{ci[0]:.2f}, {ci[1]:.2f}])'} over {figures.n_traces} "
        f"test traces, {figures.positives} positive"
    )
    if figures.diff is None or ci is None:
        decision.decision = "not decided"
        decision.reason = f"not decided: no CI of the difference ({shown}); kept as before"
    elif figures.diff > 0 and ci[0] > 0:
        decision.decision = "accepted"
        decision.reason = f"accepted: {shown}"
    else:
        decision.decision = "refused"
        decision.reason = f"refused, kept as before: {shown}; the CI does not lie above 0"


# --- the run --------------------------------------------------------------------------------------


def calibrate(
    gold: str | os.PathLike[str],
    traces: Sequence[str | os.PathLike[str] | Trace],
    output: str | os.PathLike[str] = "calibration",
    *,
    results: str | os.PathLike[str] | None = None,
    config: JudgeConfig | None = None,
    options: CalibrateOptions | None = None,
    dry_run: bool = False,
    **judge_options: Any,
) -> CalibrationResult | CalibrationPlan:
    """Sharpen the definitions of the modes the judge gets wrong on your reviewed traces, tested on held-out ones.

    The dev split's disagreements (judge against the gold of ``mast review``) give one proposal per
    mode; each candidate (only that mode changed) re-judges the test split beside the current
    taxonomy, and a change is accepted only when the test kappa improves with a paired bootstrap CI
    of the difference above zero. ``DIR/taxonomy.yaml`` is usable as ``mast label --taxonomy``.

    Args:
        gold: the gold JSONL ``mast review`` writes.
        traces: the trace files or folders the gold was reviewed on (or :class:`~mast.trace.Trace` objects).
        output: the folder for ``taxonomy.yaml``, ``report.json``, ``report.html`` (and ``work/``, to resume).
        results: the results file the gold was made over (default: the judge's values the gold recorded).
        config: the judge's configuration (or judge options as keywords: ``model=``...).
        options: :class:`CalibrateOptions` (its fields may also be given as keywords).
        dry_run: count the calls and estimate their cost; send nothing.
        **judge_options: judge options and :class:`CalibrateOptions` fields.

    Raises:
        UsageError: bad options, no LLM configured, an unreadable gold.

    Example:
        >>> r = mast.calibrate("gold.jsonl", ["runs/"], "calibrated", results="results.jsonl",
        ...                    model="openai/gpt-4.1-mini")                        # doctest: +SKIP
        >>> [(m.code, m.decision) for m in r.modes]                                 # doctest: +SKIP
    """
    from mast._sync import run_sync

    names = {f.name for f in fields(CalibrateOptions)}
    chosen = {k: judge_options.pop(k) for k in list(judge_options) if k in names}
    if chosen:
        options = replace(options or CalibrateOptions(), **chosen)
    if config is not None and judge_options:
        raise UsageError("pass judge options either in config= or as keywords, not both")
    config = config or JudgeConfig.from_options(**judge_options)
    if dry_run:
        return plan_calibration(gold, traces, results=results, config=config, options=options)
    return run_sync(acalibrate(gold, traces, output, results=results, config=config, options=options))


def _check(config: JudgeConfig) -> None:
    if config.kind not in ("llm", "both"):
        raise UsageError("calibration needs an LLM judge: set --model or MAST_MODEL")


def _modes(inputs: Inputs, options: CalibrateOptions) -> list[str]:
    codes = inputs.taxonomy.codes
    if options.modes:
        from mast.taxonomy import normalize_code

        wanted = []
        for given in options.modes:
            try:
                code = normalize_code(given)
            except ValueError as exc:
                raise UsageError(f"--mode {given!r}: {exc}") from exc
            if code not in codes:
                raise UsageError(f"--mode {given!r}: not a mode of {inputs.taxonomy.version}")
            wanted.append(code)
        codes = [c for c in codes if c in wanted]
    return codes


def plan_calibration(
    gold: str | os.PathLike[str],
    traces: Sequence[str | os.PathLike[str] | Trace],
    *,
    results: str | os.PathLike[str] | None = None,
    config: JudgeConfig,
    options: CalibrateOptions | None = None,
) -> CalibrationPlan:
    """Count the calls a calibration would send and estimate their cost, sending nothing (upper bounds)."""
    from mast._sync import run_sync
    from mast.judge import Judge

    options = options or CalibrateOptions()
    _check(config)
    base = load_taxonomy(config.taxonomy)
    inputs = read_inputs(gold, traces, results, base, options)
    judge = Judge(config)
    run_sync(judge.start())  # sets up the backend, which counts tokens; nothing is sent
    backend = judge.backend
    prompts = load_calibrate_prompts(base)
    modes = [c for c in _modes(inputs, options) if inputs.disagreements(c)]
    judged = [c for c in modes if min(inputs.test_counts(c)) >= options.min_positives]
    tokens_in = tokens_out = 0
    for code in modes:
        messages = proposal_messages(
            prompts, base.mode(code), inputs.disagreements(code), inputs, config, options
        )
        text = "\n".join(str(m["content"]) for m in messages)
        tokens_in += backend.count_tokens(text) + 8 * len(messages)
        tokens_out += min(ANSWER_TOKENS_GUESS, config.max_output_tokens)
    test_traces = [inputs.traces[t] for t in inputs.test if t in inputs.traces]
    dev_traces = [inputs.traces[t] for t in inputs.dev if t in inputs.traces]
    runs = (1 + len(judged)) if judged else 0
    for trace in [*test_traces, *dev_traces]:
        estimate = judge.estimate(trace)
        tokens_in += runs * estimate.input_tokens
        tokens_out += runs * estimate.output_tokens
    cost = price(backend, tokens_in, tokens_out)
    notes = list(inputs.notes)
    for code in modes:
        if code not in judged:
            pos, neg = inputs.test_counts(code)
            notes.append(
                f"{code}: {pos} positive and {neg} negative test traces (need {options.min_positives} "
                "each): proposed, not re-judged"
            )
    return CalibrationPlan(
        dev_traces=len(inputs.dev),
        test_traces=len(inputs.test),
        modes=modes,
        judged=judged,
        proposal_calls=len(modes),
        judge_calls=runs * (len(test_traces) + len(dev_traces)),
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cost_usd=None if cost is None else round(cost, 6),
        notes=notes,
    )


class _Run:
    """One calibration run: its folder, spend and labelling."""

    def __init__(self, output: Path, config: JudgeConfig, options: CalibrateOptions) -> None:
        self.output = output
        self.work = output / WORK
        self.config = config
        self.options = options
        self.spend = Spend(budget_usd=options.budget_usd)

    async def label(
        self, stage: str, traces: Sequence[Trace], config: JudgeConfig, name: str
    ) -> dict[str, Diagnosis]:
        """Label ``traces`` into ``work/<name>.jsonl`` (resumable, cached like ``mast label``): judged ones by id."""
        from mast.batch import aclassify_many

        spent = self.spend.stage(stage)

        def booked(item: Any, diagnosis: Diagnosis | None, outcome: str) -> None:
            if diagnosis is None or outcome == "resumed" or diagnosis.usage.cached:
                spent.cached += 1
                return
            usage = diagnosis.usage
            spent.add(usage.llm_calls, usage.input_tokens, usage.output_tokens, usage.cost_usd)

        diagnoses = await aclassify_many(
            list(traces),
            config=config,
            output=self.work / f"{name}.jsonl",
            concurrency=self.options.concurrency,
            budget_usd=self.spend.left(),
            on_result=booked,
        )
        not_started = [d.error for d in diagnoses if d.error is not None and d.error.type == "NotStarted"]
        if not_started:
            setup = next(
                (d.error for d in diagnoses if d.error is not None and d.error.type == "JudgeSetupError"),
                None,
            )
            if setup is not None:
                raise JudgeError(setup.message)
            if self.options.budget_usd is None or not not_started[0].message.startswith("budget"):
                raise JudgeError(f"labelling for the {stage} stage stopped: {not_started[0].message}")
            raise BudgetStop(
                f"the budget (${self.options.budget_usd:.2f}) ran out while labelling for the {stage} "
                f"stage (${self.spend.cost_usd:.4f} spent)"
            )
        return {d.trace_id: d for d in diagnoses if d.status == "judged"}


async def acalibrate(
    gold: str | os.PathLike[str],
    traces: Sequence[str | os.PathLike[str] | Trace],
    output: str | os.PathLike[str] = "calibration",
    *,
    results: str | os.PathLike[str] | None = None,
    config: JudgeConfig,
    options: CalibrateOptions | None = None,
) -> CalibrationResult:
    """The async :func:`calibrate` (the real code)."""
    from mast.calibration import write
    from mast.judge import Judge

    options = options or CalibrateOptions()
    _check(config)
    if options.min_positives < 1:
        raise UsageError("--min-positives must be at least 1")
    out = Path(output)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a folder")
    base = load_taxonomy(config.taxonomy)
    inputs = read_inputs(gold, traces, results, base, options)
    run = _Run(out, config, options)
    run.work.mkdir(parents=True, exist_ok=True)
    judge = Judge(config)
    await judge.start()  # sets up the backend: the proposal calls share it
    if options.budget_usd is not None and price(judge.backend, 1000, 1000) is None:
        raise UsageError(
            f"--budget-usd needs the price of {config.model}: give --price-input and --price-output "
            "(dollars per million tokens)"
        )
    caller = Caller(
        config,
        judge.backend,
        base,
        run.spend,
        concurrency=options.concurrency,
        answers=run.work / "answers.jsonl",
    )
    prompts = load_calibrate_prompts(base)
    decisions: dict[str, ModeDecision] = {}
    for code in _modes(inputs, options):
        found = inputs.disagreements(code)
        decisions[code] = ModeDecision(
            code=code,
            name=base.mode(code).name,
            dev_traces=inputs.dev_cells(code),
            dev_disagreements=len(found),
            dev_false_positives=sum(1 for d in found if d.judge),
            dev_false_negatives=sum(1 for d in found if d.gold),
            decision="unchanged" if not found else "not run",
            reason="unchanged: no disagreement with the reviewers on the dev split"
            if not found
            else "not run: the run stopped before this mode (rerun the same command to go on)",
        )
    notes = list(inputs.notes)
    stopped: str | None = None
    proposals: dict[str, Proposal] = {}
    try:
        await _propose(caller, prompts, inputs, config, options, decisions, proposals, notes)
        await _test(run, inputs, decisions, proposals)
    except BudgetStop as exc:
        stopped = f"budget: {exc}"
    accepted = {c: proposals[c] for c, d in decisions.items() if d.decision == "accepted"}
    final = base
    for code, proposal in accepted.items():
        final = changed(final, code, proposal, final.version)
    version = f"{base.version}+calibrated-{_proposal_hash(accepted)}" if accepted else base.version
    final = Taxonomy(version=version, categories=dict(final.categories), modes=final.modes)
    result = CalibrationResult(
        output=str(out),
        base_version=base.version,
        taxonomy_version=version,
        split={"seed": options.split_seed, "dev": inputs.dev, "test": inputs.test},
        min_positives=options.min_positives,
        n_boot=options.n_boot,
        modes=list(decisions.values()),
        totals=run.spend.totals(),
        notes=notes,
        stopped=stopped,
    )
    write.outputs(result, final, out)
    return result


async def _propose(
    caller: Caller,
    prompts: CalibratePrompts,
    inputs: Inputs,
    config: JudgeConfig,
    options: CalibrateOptions,
    decisions: dict[str, ModeDecision],
    proposals: dict[str, Proposal],
    notes: list[str],
) -> None:
    from mast.errors import JudgeSetupError, one_line

    base = inputs.taxonomy

    async def one(code: str) -> None:
        messages = proposal_messages(
            prompts, base.mode(code), inputs.disagreements(code), inputs, config, options
        )
        try:
            answer = await caller.call("propose", messages, PROPOSAL_SPEC)
        except (BudgetStop, JudgeSetupError):
            raise
        except JudgeError as exc:
            decisions[code].decision = "not run"
            decisions[
                code
            ].reason = f"not run: the proposal call failed (a rerun asks again): {one_line(exc)}"
            return
        assert isinstance(answer, ProposalAnswer)
        examples, dropped = verify_examples(answer, inputs, config)
        proposal = Proposal(
            definition=answer.definition.strip(),
            when_to_use=answer.when_to_use.strip(),
            when_not_to_use=answer.when_not_to_use.strip(),
            examples=examples,
            examples_dropped=dropped,
        )
        decisions[code].proposal = proposal
        mode = base.mode(code)
        if not proposal.definition or (
            proposal.definition,
            proposal.when_to_use,
            proposal.when_not_to_use,
        ) == (mode.definition, mode.when_to_use, mode.when_not_to_use):
            decisions[code].decision = "unchanged"
            decisions[code].reason = "unchanged: the proposal repeats the current definition"
            return
        proposals[code] = proposal
        if dropped:
            notes.append(
                f"{code}: {dropped} proposed example(s) not found in the dev trace and step they cite: dropped"
            )

    results = await asyncio.gather(
        *(one(c) for c, d in decisions.items() if d.dev_disagreements), return_exceptions=True
    )
    for outcome in results:
        if isinstance(outcome, BaseException):
            raise outcome


async def _test(
    run: _Run, inputs: Inputs, decisions: dict[str, ModeDecision], proposals: dict[str, Proposal]
) -> None:
    from mast.calibration.write import taxonomy_file

    options = run.options
    ready = []
    for code in proposals:
        positives, negatives = inputs.test_counts(code)
        if min(positives, negatives) < options.min_positives:
            decisions[code].decision = "not decided"
            decisions[code].test = SplitFigures(
                n_traces=positives + negatives, positives=positives, negatives=negatives
            )
            decisions[code].reason = (
                f"not decided: too few positives in the test split ({positives} traces with the mode and "
                f"{negatives} without, of {positives + negatives}; need {options.min_positives} of each): kept as before"
            )
            continue
        ready.append(code)
    if not ready:
        return
    test_traces = [inputs.traces[t] for t in inputs.test if t in inputs.traces]
    dev_traces = [inputs.traces[t] for t in inputs.dev if t in inputs.traces]
    before = await run.label("test-current", test_traces, run.config, "test-current")
    dev_before = await run.label("dev-current", dev_traces, run.config, "dev-current")
    base = inputs.taxonomy
    for code in ready:
        candidate = changed(
            base,
            code,
            proposals[code],
            f"{base.version}+calibrate-{code}-{_proposal_hash({code: proposals[code]})}",
        )
        path = taxonomy_file(candidate, run.work / f"candidate-{code}.yaml")
        after = await run.label(
            "test-candidates",
            test_traces,
            run.config.model_copy(update={"taxonomy": str(path)}),
            f"test-{code}",
        )
        decide(
            decisions[code],
            paired_figures(
                code,
                inputs.gold,
                before,
                after,
                inputs.test,
                n_boot=options.n_boot,
                seed=options.boot_seed,
                family=len(ready),
            ),
        )
        dev_after = await run.label(
            "dev-candidates",
            dev_traces,
            run.config.model_copy(update={"taxonomy": str(path)}),
            f"dev-{code}",
        )
        decisions[code].dev = paired_figures(
            code,
            inputs.gold,
            dev_before,
            dev_after,
            inputs.dev,
            n_boot=options.n_boot,
            seed=options.boot_seed,
        )
