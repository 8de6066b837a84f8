"""Per-mode findings and the plain-words verdict of a validation run.

Thresholds (Landis and Koch's reading of kappa, made stricter by the CI): a mode is *trusted* when
its kappa is at least 0.6 and the CI's lower end at least 0.4; *usable* when kappa is at least 0.4;
*weak* below 0.2 (do not trust the judge for it) or between 0.2 and 0.4. A mode with no positive in
the gold is *not measurable here*, never perfect; one with fewer than :data:`FEW_POSITIVES` positives
is flagged, since its CI is wide whatever the point estimate says.
"""

from __future__ import annotations

from mast.evaluation.metrics import kappa_not_estimable
from mast.evaluation.report import EvaluationReport, ModeAgreement
from mast.validation.models import ModeFinding, ModeStatus, ValidationReport

FEW_POSITIVES = 5
TRUSTED, USABLE, WEAK = 0.6, 0.4, 0.2


def _status(entry: ModeAgreement, positives: int) -> tuple[ModeStatus, str]:
    if entry.n == 0:
        return "not assessed", "the judge gave no verdict on this mode for the labelled traces"
    if positives == 0:
        return "not measurable", "no trace in the gold has this mode: agreement says nothing about finding it"
    kappa = entry.kappa
    ci = entry.ci.get("kappa")
    reason = kappa_not_estimable(entry.tp, entry.fp, entry.fn, entry.tn)
    if reason is not None and reason.startswith("judge"):
        # The humans found it but the judge never varies: nothing to estimate, and nothing to trust.
        return "weak", f"kappa not estimable: {reason}; do not trust this judge for this mode"
    if reason is not None:
        return "not measurable", f"kappa not estimable: {reason}"
    if kappa is None:
        return "not measurable", "kappa undefined on these cells"
    if positives < FEW_POSITIVES:
        return "few positives", f"only {positives} positive cell(s) in the gold: the CI is wide"
    if kappa >= TRUSTED and (ci is None or ci.low >= USABLE):
        return "trusted", ""
    if kappa >= USABLE:
        return "usable", ""
    if kappa < WEAK:
        return "weak", "do not trust this judge for this mode"
    return "weak", "agreement is fair at best"


def mode_findings(pooled: EvaluationReport, human: dict[str, float | None]) -> list[ModeFinding]:
    """One finding per mode of the pooled evaluation."""
    findings = []
    for entry in pooled.per_mode:
        positives = entry.tp + entry.fn
        status, note = _status(entry, positives)
        reason = kappa_not_estimable(entry.tp, entry.fp, entry.fn, entry.tn) if entry.n else None
        ci = None if reason is not None else entry.ci.get("kappa")
        findings.append(ModeFinding(
            code=entry.code, name=entry.name, n=entry.n, positives=positives, base_rate=entry.gold_rate,
            precision=entry.precision, recall=entry.recall, f1=entry.f1, kappa=entry.kappa,
            kappa_low=ci.low if ci else None, kappa_high=ci.high if ci else None,
            kappa_reason=reason, human_kappa=human.get(entry.code), status=status, note=note,
        ))
    return findings


def _k(value: float | None) -> str:
    return "undefined" if value is None else f"{value:z.2f}"


def verdict_text(report: ValidationReport) -> str:
    """One paragraph a person can act on."""
    judge = report.judge.get("model") or report.judge.get("kind", "judge")
    if report.pooled is None:
        return f"{judge}: no trace with per-mode gold was judged, so nothing can be said about its verdicts."
    p = report.pooled.pooled
    ci = p.ci.get("kappa")
    parts = [
        f"{judge}: pooled kappa {_k(p.kappa)}"
        + (f" [{ci.low:z.2f}, {ci.high:z.2f}]" if ci else "")
        + f" over {report.pooled.n_traces} human-labelled traces ({report.pooled.n_cells} cells)"
        + (f", precision {_k(p.precision)}, recall {_k(p.recall)}." if p.kappa is not None else ".")
    ]
    by = {s: [f.code for f in report.modes if f.status == s] for s in ("trusted", "usable", "weak", "few positives", "not measurable", "not assessed")}
    if by["trusted"]:
        parts.append(f"Trust it for {', '.join(by['trusted'])}.")
    if by["usable"]:
        parts.append(f"Usable with spot checks for {', '.join(by['usable'])}.")
    weak = [f for f in report.modes if f.status == "weak"]
    if weak:
        shown = (
            f"{f.code} ({_k(f.kappa) if f.kappa_reason is None else 'kappa not estimable: ' + f.kappa_reason})"
            for f in weak
        )
        parts.append("Below 0.4 or not estimable: " + ", ".join(shown) + ": do not trust this judge for them.")
    if by["few positives"]:
        parts.append(f"Too few positives to tell for {', '.join(by['few positives'])} (wide CIs).")
    if by["not measurable"]:
        parts.append(f"Not measurable here (no positive in the gold): {', '.join(by['not measurable'])}.")
    if by["not assessed"]:
        parts.append(f"Not assessed by this judge: {', '.join(by['not assessed'])}.")
    for result in report.sets:
        if result.attribution is not None:
            a = result.attribution
            parts.append(
                f"Localisation on {result.name} ({a.n_evaluated} runs): agent {_k(a.agent_accuracy)}, exact step "
                f"{_k(a.step_accuracy)}, within ±{a.k} steps {_k(a.step_within_k_accuracy)}."
            )
    return " ".join(parts)
