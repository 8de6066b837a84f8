"""The stages of discovery: open coding, consolidation into candidates, the agreement gate, stability.

Each stage is a function of plain data, so the orchestrator (:mod:`mast.discovery.run`) reads as the
pipeline and a test can drive one stage alone.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mast.diagnosis import Diagnosis
from mast.discovery._llm import (
    CANDIDATE_SPEC,
    OPEN_CODES_SPEC,
    REVISION_SPEC,
    Caller,
    CandidateAnswer,
    DiscoverPrompts,
    OpenCodesAnswer,
    RevisionAnswer,
)
from mast.discovery.models import Candidate, Example, GateFigures, OpenCode
from mast.errors import JudgeError, JudgeSetupError, one_line
from mast.judge.chunking import WindowTooSmall, plan_windows
from mast.judge.config import JudgeConfig
from mast.judge.material import Material, prepare
from mast.judge.prompt import choose_fence
from mast.taxonomy import FailureModeDef, ModeExample, Taxonomy, normalize_code
from mast.trace import Trace

NEW_CATEGORY_NAME = "Domain-Specific Failures"
MAX_EXAMPLES = 5
MAX_NOTES_PER_GROUP = 12


# --- 1. open coding -------------------------------------------------------------------------------


def needs_open_coding(diagnosis: Diagnosis | None) -> bool:
    """A trace is open-coded when MAST-14 judged it and it failed (a mode found, or the task not done)."""
    if diagnosis is None or diagnosis.status != "judged":
        return False
    return bool(diagnosis.present_codes) or diagnosis.task_completed is not True


def material_of(trace: Trace, config: JudgeConfig) -> Material:
    """What the open coder reads of a trace: rendered, capped visibly and redacted like the judge's."""
    return prepare(trace, redact=config.redact, redact_ips=config.redact_ips,
                   redact_patterns=tuple(config.redact_patterns))


def windows_of(material: Material, count: Any, window_tokens: int) -> list[Any]:
    """Windows of whole steps of at most ``window_tokens`` (a step larger than that gets a window of its own)."""
    if not material.blocks:
        return []
    budget = window_tokens
    while True:
        try:
            return plan_windows(material.blocks, count, budget=budget, overlap_tokens=budget // 8)
        except WindowTooSmall:
            # One step is larger than a window: never cut it, give that window room for it.
            budget = max(count(text) + 2 for _, text in material.blocks)


@dataclass
class OpenCoding:
    """The open codes of one trace, and what was thrown away."""

    codes: list[OpenCode]
    covered: int = 0
    """Codes the coder said a MAST mode explains."""
    unverified: int = 0
    """Codes whose quote is not in the trace (dropped)."""
    no_quote: int = 0
    """Codes without a quote (dropped: nothing to check them against)."""
    repeated: int = 0
    """Codes repeating a label already kept for this trace (dropped)."""
    windows: int = 0
    failed: list[str] | None = None
    """Why windows got no valid answer (the rest of the trace is still coded; a rerun asks again)."""


async def open_code(
    caller: Caller, prompts: DiscoverPrompts, trace: Trace, diagnosis: Diagnosis, config: JudgeConfig,
    base: Taxonomy, *, window_tokens: int, stage: str,
) -> OpenCoding:
    """Read the whole trace, window by window, and name what the modes already found do not explain."""
    material = material_of(trace, config)
    windows = windows_of(material, caller.backend.count_tokens, window_tokens)
    fence = choose_fence(*material.all_text())
    found = ", ".join(f"{c} {base.mode(c).name}" for c in diagnosis.present_codes if c in base.codes) or "none"

    async def one(number: int, window: Any) -> tuple[int, Any, OpenCodesAnswer]:
        user = prompts.open_code_input.substitute(
            trace_id=trace.trace_id, window=number, n_windows=len(windows), first=window.first, last=window.last,
            n_steps=material.n_steps, found=found, fence=fence, task=material.task, transcript=window.text,
            schema_name=OPEN_CODES_SPEC.name,
        )
        messages = [{"role": "system", "content": prompts.open_code}, {"role": "user", "content": user}]
        try:
            answer = await caller.call(stage, messages, OPEN_CODES_SPEC)
        except JudgeSetupError:
            raise  # every call would fail the same way: stop the run with its one-line reason
        except JudgeError as exc:
            failures.append(f"{trace.trace_id} window {number}: {one_line(exc)}")
            return number, window, OpenCodesAnswer()
        assert isinstance(answer, OpenCodesAnswer)
        return number, window, answer

    failures: list[str] = []
    answers = await asyncio.gather(*(one(i + 1, w) for i, w in enumerate(windows)))
    result = OpenCoding(codes=[], windows=len(windows), failed=failures)
    seen: set[str] = set()
    for number, window, answer in answers:
        for item in answer.codes:
            if _covered(item.covered_by, base):
                result.covered += 1
                continue
            if not item.quote.strip():
                result.no_quote += 1
                continue
            step = item.step if material.verify(item.step, item.quote) else None
            if step is None:
                # Evidence is checked like the judge's: a quote found in another step of this window
                # is kept at that step; a quote found nowhere is dropped.
                other = material.find_quote(item.quote)
                step = other if other is not None and window.first <= other <= window.last else None
            if step is None:
                result.unverified += 1
                continue
            key = " ".join(item.label.lower().split())
            if key in seen:
                result.repeated += 1
                continue
            seen.add(key)
            result.codes.append(OpenCode(trace_id=trace.trace_id, step=step, quote=item.quote.strip(),
                                         label=item.label.strip(), description=item.description.strip(), window=number))
    return result


# What was thrown away, by reason: the counts the CLI line, the manifest and the report show, so a run
# that accepts nothing says why (a coder whose quotes never match the trace, codes MAST explains...).
CODE_DROPS = {
    "covered_by_mast": "explained by a MAST mode",
    "unverified_dropped": "quote not found in the trace",
    "no_quote_dropped": "no quote",
    "repeated_dropped": "label repeated within a trace",
    "windows_failed": "windows without a valid answer",
}
CANDIDATE_DROPS = {
    "prevalence": "in too few traces",
    "catch-all": "catch-all",
    "unnamed": "could not be named",
}


def drop_counts(open_coding: dict[str, Any], candidates: Iterable[Candidate]) -> dict[str, dict[str, int]]:
    """Open codes and candidates dropped, by reason (the ``open_coding`` stage's counts and the refusals)."""
    coded = open_coding.get("open_coding", {})
    refused = Counter(str(c.refused_for) for c in candidates if c.status == "refused" and c.refused_for)
    return {
        "codes": {key: int(coded.get(key, 0)) for key in CODE_DROPS},
        "candidates": {key: refused.get(key, 0) for key in CANDIDATE_DROPS},
    }


def describe_drops(drops: dict[str, dict[str, int]], kept_codes: int | None = None) -> str:
    """One line: every reason a code or a candidate was dropped, with its count (zeros included)."""
    codes = ", ".join(f"{drops['codes'].get(key, 0)} {text}" for key, text in CODE_DROPS.items())
    candidates = ", ".join(f"{drops['candidates'].get(key, 0)} {text}" for key, text in CANDIDATE_DROPS.items())
    kept = "" if kept_codes is None else f"{kept_codes} open codes kept; "
    return f"{kept}dropped codes: {codes}; refused candidates: {candidates}"


def _covered(value: str | None, base: Taxonomy) -> bool:
    if not value or str(value).strip().lower() in ("null", "none", ""):
        return False
    try:
        return normalize_code(str(value).split()[0]) in base.codes
    except ValueError:
        return False


# --- 2. consolidation -----------------------------------------------------------------------------


@dataclass
class Groups:
    """Open codes grouped by the similarity of their texts."""

    codes: list[OpenCode]
    members: list[list[int]]
    """Indices into ``codes``, one list per group, largest (by traces) first."""
    vectors: Any
    """TF-IDF rows of the codes (l2-normalised)."""
    vectorizer: Any = None

    def centroid(self, group: int) -> Any:
        """Mean vector of a group, l2-normalised."""
        rows = self.vectors[self.members[group]].mean(axis=0)
        norm = float(np.linalg.norm(rows))
        return rows / norm if norm else rows

    def cohesion(self, group: int) -> float:
        """Mean cosine similarity of the group's codes to its centroid."""
        centre = self.centroid(group)
        return float(np.mean(self.vectors[self.members[group]] @ centre)) if self.members[group] else 0.0

    def nearest(self, group: int) -> int | None:
        """The other group whose centroid is closest."""
        if len(self.members) < 2:
            return None
        centre = self.centroid(group)
        scores = [(-1.0 if g == group else float(self.centroid(g) @ centre), g) for g in range(len(self.members))]
        return max(scores)[1]

    def traces(self, group: int) -> list[str]:
        """Distinct traces of a group, in order of first appearance."""
        return list(dict.fromkeys(self.codes[i].trace_id for i in self.members[group]))


def code_text(code: OpenCode) -> str:
    """The text a code is clustered by: its label and description (not the quote, which is instance detail)."""
    return f"{code.label}. {code.description}"


def group_codes(codes: Sequence[OpenCode], *, threshold: float) -> Groups:
    """TF-IDF of the codes' texts, then agglomerative clustering (average linkage, cosine distance).

    scikit-learn does both; ``threshold`` is the cosine distance above which groups are not merged.
    """
    from sklearn.cluster import AgglomerativeClustering
    from sklearn.feature_extraction.text import TfidfVectorizer

    codes = list(codes)
    if not codes:
        return Groups(codes=[], members=[], vectors=np.zeros((0, 0)))
    vectorizer = TfidfVectorizer(stop_words="english", sublinear_tf=True, ngram_range=(1, 2))
    try:
        vectors = vectorizer.fit_transform([code_text(c) for c in codes]).toarray()
    except ValueError:  # only stop words: nothing to tell the codes apart by
        vectors = np.ones((len(codes), 1))
    if len(codes) == 1:
        labels = np.zeros(1, dtype=int)
    else:
        distance = np.clip(1.0 - vectors @ vectors.T, 0.0, 2.0)
        np.fill_diagonal(distance, 0.0)
        model = AgglomerativeClustering(n_clusters=None, metric="precomputed", linkage="average",
                                        distance_threshold=threshold)
        labels = model.fit_predict(distance)
    members: dict[int, list[int]] = {}
    for index, label in enumerate(labels):
        members.setdefault(int(label), []).append(index)
    groups = Groups(codes=codes, members=list(members.values()), vectors=vectors, vectorizer=vectorizer)
    order = sorted(range(len(groups.members)),
                   key=lambda g: (-len(groups.traces(g)), min(groups.members[g])))
    groups.members = [groups.members[g] for g in order]
    return groups


@dataclass(frozen=True)
class ConsolidateOptions:
    """Thresholds of the consolidation."""

    min_traces: int
    """A candidate needs codes in at least this many traces."""
    catch_all_share: float = 0.5
    """A group holding more than this share of all codes ..."""
    catch_all_cohesion: float = 0.3
    """... with a mean similarity to its centroid below this is a catch-all."""


async def consolidate(
    caller: Caller, prompts: DiscoverPrompts, groups: Groups, base: Taxonomy, n_traces: int,
    options: ConsolidateOptions, *, stage: str,
) -> list[Candidate]:
    """Name and define each group (one call per group that passes the size rules); refuse the rest, with the reason."""
    total = len(groups.codes)
    fence = choose_fence(*(code_text(c) + c.quote for c in groups.codes))

    async def one(g: int) -> Candidate:
        traces = groups.traces(g)
        members = [groups.codes[i] for i in groups.members[g]]
        labels = [c.label for c in members]
        common = Counter(labels).most_common(1)[0][0]
        cohesion = groups.cohesion(g)
        nearest = groups.nearest(g)
        share = len(members) / total if total else 0.0
        candidate = Candidate(
            group=g, name=common, definition=members[0].description, n_codes=len(members), n_traces=len(traces),
            prevalence=len(traces) / n_traces if n_traces else 0.0, cohesion=round(cohesion, 3),
            labels=list(dict.fromkeys(labels))[:10], nearest_candidate=nearest, examples=_examples(members),
        )
        if len(traces) < options.min_traces:
            candidate.status, candidate.refused_for = "refused", "prevalence"
            candidate.reason = (f"prevalence {len(traces)}/{n_traces} traces, below the minimum of "
                                f"{options.min_traces} traces")
            return candidate
        if share > options.catch_all_share and cohesion < options.catch_all_cohesion and len(set(labels)) > 2:
            candidate.status, candidate.refused_for = "refused", "catch-all"
            candidate.reason = (f"catch-all: holds {len(members)} of {total} codes ({share:.0%}) with a mean "
                                f"similarity of {cohesion:.2f} to its centre (< {options.catch_all_cohesion})")
            return candidate
        notes = "\n".join(f'- run {c.trace_id}, S{c.step}: {c.label}: {c.description} | "{c.quote}"'
                          for c in members[:MAX_NOTES_PER_GROUP])
        neighbour = "(no other group)"
        if nearest is not None:
            near = [groups.codes[i] for i in groups.members[nearest]][:5]
            neighbour = "\n".join(f"- {c.label}: {c.description}" for c in near)
        user = prompts.name_group_input.substitute(n_codes=len(members), n_traces=len(traces), fence=fence,
                                                   notes=notes, neighbour=neighbour, schema_name=CANDIDATE_SPEC.name)
        messages = [{"role": "system", "content": prompts.name_group}, {"role": "user", "content": user}]
        try:
            answer = await caller.call(stage, messages, CANDIDATE_SPEC)
        except JudgeSetupError:
            raise
        except JudgeError as exc:
            candidate.status, candidate.refused_for = "refused", "unnamed"
            candidate.reason = f"could not be named (a rerun asks again): {one_line(exc)}"
            return candidate
        assert isinstance(answer, CandidateAnswer)
        candidate.name = answer.name.strip() or common
        candidate.definition = answer.definition.strip() or candidate.definition
        candidate.when_to_use = answer.when_to_use.strip()
        candidate.when_not_to_use = answer.when_not_to_use.strip()
        candidate.nearest_mast = _code_or_none(answer.nearest_mast, base)
        candidate.relation, candidate.category = _relation(answer, base)
        if not answer.coherent:
            candidate.status, candidate.refused_for = "refused", "catch-all"
            candidate.reason = (f"catch-all: its {len(members)} codes describe several different failures "
                                f"(judged incoherent when naming it; similarity {cohesion:.2f})")
        return candidate

    return list(await asyncio.gather(*(one(g) for g in range(len(groups.members)))))


def _examples(members: Sequence[OpenCode]) -> list[Example]:
    """Up to five verified quotes, one per trace."""
    out: list[Example] = []
    seen: set[str] = set()
    for code in members:
        if code.trace_id in seen:
            continue
        seen.add(code.trace_id)
        out.append(Example(trace_id=code.trace_id, step=code.step, quote=code.quote))
        if len(out) == MAX_EXAMPLES:
            break
    return out


def _code_or_none(value: str | None, base: Taxonomy) -> str | None:
    if not value:
        return None
    try:
        code = normalize_code(str(value).split()[0])
    except ValueError:
        return None
    return code if code in base.codes else None


def new_category(base: Taxonomy) -> str:
    """The id of the category for modes related to no MAST category (``FC4`` after ``FC1``-``FC3``)."""
    numbers = [int(m.group(1)) for c in base.categories if (m := re.search(r"(\d+)$", c))]
    return f"FC{max(numbers, default=len(base.categories)) + 1}"


def _relation(answer: CandidateAnswer, base: Taxonomy) -> tuple[str, str]:
    """``refines <code>`` / ``extends <category>`` / ``new``, checked against the taxonomy, and the category."""
    target = (answer.relation_target or "").strip()
    code = _code_or_none(target, base)
    category = target.upper() if target.upper() in base.categories else None
    if answer.relation == "refines" and code is not None:
        return f"refines {code}", base.mode(code).category
    if answer.relation in ("refines", "extends") and category is not None:
        return f"extends {category}", category
    if answer.relation == "extends" and code is not None:
        category = base.mode(code).category
        return f"extends {category}", category
    return "new", new_category(base)


def assign_codes(candidates: Iterable[Candidate], base: Taxonomy) -> None:
    """Give each candidate left after the refusals a code in its category (``1.6``, ``4.1``...)."""
    used = set(base.codes)
    for candidate in candidates:
        if candidate.status == "refused" or candidate.category is None:
            continue
        match = re.search(r"(\d+)$", candidate.category)
        major = int(match.group(1)) if match else 9
        minors = [int(c.split(".")[1]) for c in used if c.split(".")[0] == str(major)]
        candidate.code = f"{major}.{max(minors, default=0) + 1}"
        used.add(candidate.code)


def mode_def(candidate: Candidate) -> FailureModeDef:
    """A candidate as a taxonomy mode, with its rules and verified examples."""
    assert candidate.code is not None and candidate.category is not None
    return FailureModeDef(
        code=candidate.code, name=candidate.name, category=candidate.category, definition=candidate.definition,
        evidence=candidate.when_to_use, when_to_use=candidate.when_to_use, when_not_to_use=candidate.when_not_to_use,
        examples=tuple(ModeExample(trace_id=e.trace_id, step=e.step, quote=e.quote) for e in candidate.examples),
        relation=candidate.relation,
    )


def extended_taxonomy(base: Taxonomy, candidates: Iterable[Candidate], version: str) -> Taxonomy:
    """The base taxonomy plus these candidates (the gate's taxonomy, or the accepted one)."""
    chosen = [c for c in candidates if c.code is not None]
    categories = dict(base.categories)
    for candidate in chosen:
        if candidate.category not in categories:
            categories[str(candidate.category)] = NEW_CATEGORY_NAME
    modes = [*base.modes, *(mode_def(c) for c in chosen)]
    return Taxonomy(version=version, categories=categories, modes=tuple(modes))


# --- 3. the gate ----------------------------------------------------------------------------------

Labels = Mapping[str, set[str]]
"""Trace id -> the codes an annotator found present."""


def labels_of(diagnoses: Iterable[Diagnosis]) -> dict[str, set[str]]:
    """The codes each judged diagnosis found present."""
    return {d.trace_id: set(d.present_codes) for d in diagnoses if d.status == "judged"}


def figures(a: Labels, b: Labels, codes: Sequence[str], taxonomy: Taxonomy, *, round: int, seed: int,
            n_boot: int = 1000) -> GateFigures:
    """Cohen's kappa of two annotators on "any of ``codes`` present", with its bootstrap CI over traces.

    The agreement is computed by :func:`mast.evaluation.evaluate` (judge vs judge), the same code and
    resampling as every other kappa mast reports.
    """
    from mast.evaluation import evaluate

    traces = sorted(set(a) & set(b))
    code = codes[0]
    va = [bool(a[t] & set(codes)) for t in traces]
    vb = [bool(b[t] & set(codes)) for t in traces]
    disagreements = sum(x != y for x, y in zip(va, vb, strict=True))
    kappa = low = high = None
    if traces:
        pred = pd.DataFrame({"trace_id": traces, "code": code, "present": va})
        gold = pd.DataFrame({"trace_id": traces, "code": code, "present": vb})
        report = evaluate(pred, gold, taxonomy=taxonomy, n_boot=n_boot, seed=seed, kind="judge-vs-judge")
        entry = report.per_mode[0]
        kappa = entry.kappa
        ci = entry.ci.get("kappa")
        low, high = (ci.low, ci.high) if ci is not None else (None, None)
    confused, count = most_confused(a, b, codes, taxonomy)
    return GateFigures(round=round, n_traces=len(traces), kappa=_round(kappa), ci_low=_round(low),
                       ci_high=_round(high), positives_a=sum(va), positives_b=sum(vb), disagreements=disagreements,
                       confused_with=confused, confused_count=count)


def _round(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else round(float(value), 4)


def most_confused(a: Labels, b: Labels, codes: Sequence[str], taxonomy: Taxonomy) -> tuple[str | None, int]:
    """The mode one annotator gave where the other gave ``codes`` (and not the other way), most often."""
    wanted = set(codes)
    swaps: Counter[str] = Counter()
    for trace in set(a) & set(b):
        in_a, in_b = bool(a[trace] & wanted), bool(b[trace] & wanted)
        if in_a == in_b:
            continue
        mine, other = (a[trace], b[trace]) if in_a else (b[trace], a[trace])
        for code in other - mine - wanted:
            swaps[code] += 1
    if not swaps:
        return None, 0
    code, count = max(swaps.items(), key=lambda kv: (kv[1], -taxonomy.codes.index(kv[0])
                                                     if kv[0] in taxonomy.codes else 0))
    return code, count


def passes(fig: GateFigures, *, min_kappa: float, min_positives: int) -> bool:
    """Accepted: the lower bound of the kappa CI reaches ``min_kappa`` with enough positives on both sides."""
    return (fig.ci_low is not None and fig.ci_low >= min_kappa
            and min(fig.positives_a, fig.positives_b) >= min_positives)


def describe(fig: GateFigures) -> str:
    """The figures in one line."""
    def num(value: float | None) -> str:
        return f"{value or 0.0:.2f}".replace("-0.00", "0.00")

    kappa = "undefined" if fig.kappa is None else num(fig.kappa)
    ci = "no CI" if fig.ci_low is None else f"CI [{num(fig.ci_low)}, {num(fig.ci_high)}]"
    return (f"kappa {kappa} ({ci}) over {fig.n_traces} gate traces, positives {fig.positives_a}/{fig.positives_b}, "
            f"{fig.disagreements} disagreements")


async def revise(
    caller: Caller, prompts: DiscoverPrompts, candidate: Candidate, a: Mapping[str, Diagnosis],
    b: Mapping[str, Diagnosis] | None, b_labels: Labels, *, stage: str,
) -> RevisionAnswer:
    """One call that rewrites a candidate's definition from the traces the annotators disagreed on."""
    code = str(candidate.code)
    lines: list[str] = []
    for trace in sorted(set(a) & set(b_labels)):
        in_a = code in set(a[trace].present_codes)
        in_b = code in b_labels[trace]
        if in_a == in_b:
            continue
        ev_a = _evidence(a[trace], code)
        ev_b = _evidence(b[trace], code) if b is not None and trace in b else ""
        lines.append(f"- run {trace}: annotator A says {'present' if in_a else 'absent'}{ev_a}; "
                     f"annotator B says {'present' if in_b else 'absent'}{ev_b}")
    text = "\n".join(lines[:20]) or "(none recorded)"
    fence = choose_fence(text, candidate.definition)
    user = prompts.revise_input.substitute(
        code=code, name=candidate.name, definition=candidate.definition, when_to_use=candidate.when_to_use,
        when_not_to_use=candidate.when_not_to_use, fence=fence, disagreements=text, schema_name=REVISION_SPEC.name,
    )
    messages = [{"role": "system", "content": prompts.revise}, {"role": "user", "content": user}]
    answer = await caller.call(stage, messages, REVISION_SPEC)
    assert isinstance(answer, RevisionAnswer)
    return answer


def _evidence(diagnosis: Diagnosis, code: str) -> str:
    for verdict in diagnosis.failure_modes:
        if verdict.code == code and verdict.evidence:
            quote = verdict.evidence[0]
            return f' (S{quote.step}: "{quote.quote}")'
    return ""


# --- 4. stability and saturation ------------------------------------------------------------------


def mode_text(candidate: Candidate) -> str:
    """Name, definition, rules and example quotes: what two modes are matched by."""
    quotes = " ".join(e.quote for e in candidate.examples)
    return f"{candidate.name}. {candidate.definition} {candidate.when_to_use} {' '.join(candidate.labels)} {quotes}"


def match_modes(left: Sequence[Candidate], right: Sequence[Candidate], *, threshold: float = 0.25
                ) -> list[tuple[Candidate, Candidate | None, float]]:
    """Each mode of ``left`` with its most similar mode of ``right`` (TF-IDF cosine), ``None`` below ``threshold``."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    if not left:
        return []
    if not right:
        return [(c, None, 0.0) for c in left]
    texts = [mode_text(c) for c in [*left, *right]]
    try:
        vectors = TfidfVectorizer(stop_words="english", sublinear_tf=True).fit_transform(texts).toarray()
    except ValueError:
        return [(c, None, 0.0) for c in left]
    sims = vectors[: len(left)] @ vectors[len(left):].T
    out: list[tuple[Candidate, Candidate | None, float]] = []
    for i, candidate in enumerate(left):
        j = int(np.argmax(sims[i]))
        score = float(sims[i, j])
        out.append((candidate, right[j] if score >= threshold else None, round(score, 3)))
    return out


def saturation(groups: Groups, candidates: Sequence[Candidate], order: Sequence[str], *, min_traces: int,
               step: int = 10) -> list[dict[str, int]]:
    """Candidate modes (groups that reach ``min_traces``) found within the first 10, 20, ... traces of ``order``."""
    kept = [c.group for c in candidates if not (c.status == "refused" and "catch-all" in c.reason)]
    points: list[dict[str, int]] = []
    sizes = list(range(step, len(order), step)) + [len(order)]
    previous = 0
    for size in sizes:
        window = set(order[:size])
        found = sum(1 for g in kept if len([t for t in groups.traces(g) if t in window]) >= min_traces)
        points.append({"traces": size, "modes": found, "new": found - previous})
        previous = found
    return points
