"""Labels from the MAST data set (MAD) and from mast-lint's evaluation files.

MAD's human-labelled records come from three annotation rounds that used three versions of the
taxonomy: an 18-mode draft (IAA round 1), a 17-mode draft (rounds 2 and 3) and the final 14 modes.
Each record lists ``annotations``: ``{"failure mode": "<code> <title>", then the definition on the
next lines, "annotator_1": bool, "annotator_2": bool, "annotator_3": bool}``. The same code means different
things in different drafts (``1.3`` is "undetected ambiguities" in the 18-mode draft and "unaware of
stopping conditions" in the 17-mode one), so the round is recognised from the set of codes and each
title is checked against :data:`CROSSWALK` before it is mapped. Draft modes with no counterpart in
the 14 (``Unbatched repetitive execution``...) give no rows: not assessed, never "absent".

**Verification modes.** The drafts' "lack of result verification" is defined word for word as the
paper's (v3) 3.2 *No or Incomplete Verification* ("omission of proper checking or confirmation of
task outcomes...") and "lack of critical verification" as its 3.3 *Incorrect Verification*
("failure to adequately validate or cross-check crucial information..."); mast's taxonomy follows
those definitions, so by default the drafts map that way (``verification="paper"``, which also
agrees with mast-lint's remapping of the same records). MAD's final human round, however, prints
the *critical* body under the 3.2 title and the *result* body under 3.3, and
the crosswalk below (checked by the tests against a reference table kept beside the repository) maps the drafts by that layout;
``verification="mad-layout"`` does the same. Final-round codes are taken as given either way.

The LLM-labelled full set carries ``mast_annotation: {"1.1": 0, "1.2": 1, ...}`` in final codes.

Example:
    >>> CROSSWALK["v1"]["2.2"]
    ('step repetition', '1.3')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import pandas as pd

from mast.diagnosis import Diagnosis, Evidence, JudgeInfo, ModeVerdict
from mast.errors import EvaluationError
from mast.evaluation.labels import label_table, normalize_label_code
from mast.taxonomy import Taxonomy, load_taxonomy

Round = Literal["v1", "v2", "final"]
Verification = Literal["paper", "mad-layout"]

CROSSWALK: dict[str, dict[str, tuple[str, str | None]]] = {
    # 18-mode draft (IAA round 1): four categories, verification in 4.x.
    "v1": {
        "1.1": ("poor task constraint compliance", "1.1"),
        "1.2": ("inconsistency between reasoning and action", "2.6"),
        "1.3": ("undetected conversation ambiguities", None),
        "1.4": ("fail to elicit clarification", "2.2"),
        "1.5": ("unaware of stopping conditions", "1.5"),
        "2.1": ("unbatched repetitive execution", None),
        "2.2": ("step repetition", "1.3"),
        "2.3": ("backtracking interruption", "1.4"),
        "2.4": ("conversation reset", "2.1"),
        "2.5": ("derailment from task", "2.3"),
        "2.6": ("disobey role specification", "1.2"),
        "3.1": ("disagreement induced inaction", None),
        "3.2": ("withholding relevant information", "2.4"),
        "3.3": ("ignoring suggestions from agents", "2.5"),
        "3.4": ("waiting for known information", None),
        "4.1": ("ill specified termination condition", "3.1"),
        # Mapped by definition text to the paper's 3.2 (omission) and 3.3 (weak cross-check);
        # see "Verification modes" above for MAD's final round, which prints them the other way.
        "4.2": ("lack of result verification", "3.2"),
        "4.3": ("lack of critical verification", "3.3"),
    },
    # 17-mode draft (IAA rounds 2 and 3): "waiting for known information" dropped, codes reshuffled.
    "v2": {
        "1.1": ("poor task constraint compliance", "1.1"),
        "1.2": ("inconsistency between reasoning and action", "2.6"),
        "1.3": ("unaware of stopping conditions", "1.5"),
        "1.4": ("unbatched repetitive execution", None),
        "1.5": ("step repetition", "1.3"),
        "1.6": ("backtracking interruption", "1.4"),
        "1.7": ("disobey role specification", "1.2"),
        "2.1": ("conversation reset", "2.1"),
        "2.2": ("fail to elicit clarification", "2.2"),
        "2.3": ("derailment from task", "2.3"),
        "2.4": ("undetected conversation ambiguities", None),
        "2.5": ("disagreement induced inaction", None),
        "2.6": ("withholding relevant information", "2.4"),
        "2.7": ("ignoring suggestions from agents", "2.5"),
        "3.1": ("ill specified termination condition", "3.1"),
        "3.2": ("lack of critical verification", "3.3"),
        "3.3": ("lack of result verification", "3.2"),
    },
}
"""Draft round -> draft code -> (start of the draft title, lower case; final code or None)."""

_TITLE = re.compile(r"^\s*(\d+)\.(\d+)\s*(.*)$", re.DOTALL)


def _split_title(text: str) -> tuple[str, str]:
    match = _TITLE.match(text or "")
    if not match:
        raise ValueError(f"failure-mode title {text[:60]!r} does not start with a code")
    title = " ".join(match.group(3).split()).lower()
    return f"{int(match.group(1))}.{int(match.group(2))}", title


def detect_round(codes: Iterable[str]) -> Round:
    """Which taxonomy version a human-labelled record used, from its set of codes."""
    found = set(codes)
    if len(found) == 18 or any(code.startswith("4.") for code in found):
        return "v1"
    if len(found) == 17 or found & {"1.6", "1.7", "2.7"}:
        return "v2"
    if len(found) == 14:
        return "final"
    raise ValueError(f"{len(found)} modes ({', '.join(sorted(found))}) match no MAD taxonomy round (18, 17 or 14)")


def map_human_annotation(title: str, round_: Round, *, verification: Verification = "paper") -> str | None:
    """The final code for one annotation title of a round, or None when the mode was dropped.

    Raises:
        ValueError: when the title does not belong to that round.
    """
    code, text = _split_title(title)
    if round_ == "final":
        return code
    expected = CROSSWALK[round_].get(code)
    if expected is None:
        raise ValueError(f"mode {code} is not in the {round_} round")
    start, final = expected
    if not text.startswith(start):
        raise ValueError(f"mode {code} {text[:40]!r} is not the {round_} round's {code} {start!r}")
    if verification == "mad-layout" and final in ("3.2", "3.3"):
        return "3.3" if final == "3.2" else "3.2"
    return final


def _mad_id(record: Mapping[str, Any], prefix: str, where: str) -> str:
    if "trace_id" not in record:
        raise EvaluationError(f"{where}: MAD record without trace_id")
    value = record["trace_id"]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{prefix}{value}"


def labels_from_mad(
    records: Iterable[Mapping[str, Any]],
    *,
    taxonomy: Taxonomy | None = None,
    source: str = "MAD",
    trace_id_prefix: str = "",
    verification: Verification = "paper",
) -> pd.DataFrame:
    """Label table of MAD records: ``mast_annotation`` (one LLM annotator) or human ``annotations``.

    Human records give one row per annotator (``annotator_1``...), so several rows per cell; LLM
    records give one row per cell with no annotator. Trace ids are ``trace_id_prefix + trace_id``.
    ``verification`` picks how the drafts' two verification modes map (module docstring).
    """
    tax = taxonomy or load_taxonomy()
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    unmapped = 0
    for n, record in enumerate(records, start=1):
        where = f"{source} record {n}"
        if not isinstance(record, Mapping):
            raise EvaluationError(f"{where}: not a MAD record (a JSON object)")
        trace_id = _mad_id(record, trace_id_prefix, where)
        if trace_id in seen:
            raise EvaluationError(f"{where}: trace id {trace_id} repeats; pass a trace_id_prefix or de-duplicate")
        seen.add(trace_id)
        if isinstance(record.get("mast_annotation"), Mapping):
            for code, value in record["mast_annotation"].items():
                rows.append({"trace_id": trace_id, "code": normalize_label_code(code, tax, where=where),
                             "present": value})
        elif isinstance(record.get("annotations"), list):
            added, dropped = _human_rows(record["annotations"], trace_id, tax, where, verification)
            rows.extend(added)
            unmapped += dropped
        else:
            raise EvaluationError(f"{where}: neither mast_annotation nor annotations; not a labelled MAD record")
    table = label_table(rows, taxonomy=tax, source=source)
    table.attrs["unmapped_cells"] = unmapped
    return table


def _human_rows(
    annotations: list[Any], trace_id: str, taxonomy: Taxonomy, where: str, verification: Verification
) -> tuple[list[dict[str, Any]], int]:
    try:
        titles = [str(item["failure mode"]) for item in annotations]
        round_ = detect_round(_split_title(title)[0] for title in titles)
        finals = [map_human_annotation(title, round_, verification=verification) for title in titles]
    except (KeyError, TypeError) as exc:
        raise EvaluationError(f"{where}: annotation without a 'failure mode' title") from exc
    except ValueError as exc:
        raise EvaluationError(f"{where}: {exc}") from exc
    rows: list[dict[str, Any]] = []
    dropped = 0
    for item, final in zip(annotations, finals, strict=True):
        voters = sorted(key for key in item if key.startswith("annotator"))
        if final is None:
            dropped += len(voters)
            continue
        code = normalize_label_code(final, taxonomy, where=where)
        for voter in voters:
            rows.append({"trace_id": trace_id, "code": code, "present": item[voter], "annotator": voter})
    return rows, dropped


def mad_metadata(records: Iterable[Mapping[str, Any]], *, trace_id_prefix: str = "") -> pd.DataFrame:
    """One row per MAD record: trace_id, mas_name, llm_name, benchmark_name, round (what exists)."""
    rows = []
    for n, record in enumerate(records, start=1):
        rows.append(
            {
                "trace_id": _mad_id(record, trace_id_prefix, f"record {n}"),
                "mas_name": record.get("mas_name"),
                "llm_name": record.get("llm_name"),
                "benchmark_name": record.get("benchmark_name"),
                "round": record.get("round"),
            }
        )
    return pd.DataFrame.from_records(rows, columns=["trace_id", "mas_name", "llm_name", "benchmark_name", "round"])


# --- mast-lint evaluation files ------------------------------------------------------------------


def labels_from_mastlint(
    records: Iterable[Mapping[str, Any]],
    *,
    role: Literal["pred", "gold"],
    taxonomy: Taxonomy | None = None,
    source: str = "mast-lint",
    annotators: bool = False,
) -> pd.DataFrame:
    """Label table of one side of mast-lint ``[{report, gold}]`` records.

    ``role="pred"``: the judge assessed every mode of the taxonomy; a mode is present exactly when
    a finding names it (confidence and rationale kept). ``role="gold"``: the modes listed in
    ``gold.present`` (its majority label), or each annotator's vote from ``gold.votes`` with
    ``annotators=True``; modes the gold does not list are not assessed.
    """
    tax = taxonomy or load_taxonomy()
    rows: list[dict[str, Any]] = []
    for n, record in enumerate(records, start=1):
        where = f"{source} record {n}"
        try:
            report, gold = record["report"], record["gold"]
        except (KeyError, TypeError) as exc:
            raise EvaluationError(f"{where}: not a mast-lint record (needs report and gold)") from exc
        if role == "pred":
            rows.extend(_finding_rows(report, tax, where))
        elif annotators:
            for code, votes in (gold.get("votes") or {}).items():
                for k, vote in enumerate(votes, start=1):
                    rows.append({"trace_id": gold["trace_id"], "code": code, "present": vote,
                                 "annotator": f"annotator_{k}"})
        else:
            for code, value in (gold.get("present") or {}).items():
                rows.append({"trace_id": gold["trace_id"], "code": code, "present": value})
    return label_table(rows, taxonomy=tax, source=source)


def _finding_rows(report: Mapping[str, Any], taxonomy: Taxonomy, where: str) -> list[dict[str, Any]]:
    found: dict[str, Mapping[str, Any]] = {}
    for finding in report.get("findings") or []:
        code = normalize_label_code(finding.get("failure_mode_id"), taxonomy, where=where)
        found[code] = finding
    for code in report.get("modes_fired") or []:
        found.setdefault(normalize_label_code(code, taxonomy, where=where), {})
    rows = []
    for code in taxonomy.codes:
        finding = found.get(code)
        evidence = ""
        if finding:
            spans = ", ".join(finding.get("span_ids") or [])
            evidence = f"{finding.get('rationale', '')} [{spans}]" if spans else str(finding.get("rationale", ""))
        rows.append(
            {
                "trace_id": report["trace_id"],
                "code": code,
                "present": finding is not None,
                "confidence": finding.get("confidence") if finding else None,
                "evidence": evidence,
            }
        )
    return rows


def mastlint_metadata(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per mast-lint record: trace_id, mas_name, benchmark, round, taxonomy_version, n_annotators."""
    columns = ["trace_id", "mas_name", "benchmark", "round", "taxonomy_version", "n_annotators"]
    return pd.DataFrame.from_records(
        [{key: record["gold"].get(key) for key in columns} for record in records], columns=columns
    )


def labels_from_present_list(
    data: Any, *, taxonomy: Taxonomy | None = None, source: str = "labels"
) -> pd.DataFrame:
    """Label table of ``{"modes": [...], "labels": {trace_id: {"present": [codes]}}}``: every listed mode assessed."""
    tax = taxonomy or load_taxonomy()
    if not isinstance(data, Mapping) or not isinstance(data.get("labels"), Mapping):
        raise EvaluationError(f"{source}: expected {{'modes': [...], 'labels': {{trace_id: {{'present': [...]}}}}}}")
    modes = [normalize_label_code(code, tax, where=source) for code in data.get("modes") or tax.codes]
    rows: list[dict[str, Any]] = []
    for trace_id, entry in data["labels"].items():
        present = {normalize_label_code(code, tax, where=f"{source} {trace_id}") for code in entry.get("present", [])}
        unknown = present - set(modes)
        if unknown:
            raise EvaluationError(f"{source} {trace_id}: present modes {sorted(unknown)} are not among 'modes'")
        rows.extend({"trace_id": trace_id, "code": code, "present": code in present} for code in modes)
    return label_table(rows, taxonomy=tax, source=source)


def mastlint_diagnoses(
    records: Iterable[Mapping[str, Any]], *, taxonomy: Taxonomy | None = None, model: str | None = None
) -> list[Diagnosis]:
    """The judge side of mast-lint records as mast :class:`~mast.diagnosis.Diagnosis` results.

    Every mode is assessed (present exactly when a finding names it); a finding's rationale becomes
    the explanation and its ``s<N>`` span ids the evidence steps (no quotes: mast-lint keeps none).
    Lets existing judge outputs flow into :func:`mast.evaluation.evaluate` and ``mast report``.
    """
    tax = taxonomy or load_taxonomy()
    out = []
    for n, record in enumerate(records, start=1):
        where = f"mast-lint record {n}"
        report = record.get("report") if isinstance(record, Mapping) else None
        if not isinstance(report, Mapping) or "trace_id" not in report:
            raise EvaluationError(f"{where}: not a mast-lint record (needs report.trace_id)")
        findings = {normalize_label_code(f.get("failure_mode_id"), tax, where=where): f
                    for f in report.get("findings") or []}
        verdicts = []
        for mode in tax.modes:
            finding = findings.get(mode.code)
            steps = [int(s[1:]) for s in (finding or {}).get("span_ids") or [] if re.fullmatch(r"s\d+", str(s))]
            verdicts.append(ModeVerdict(
                code=mode.code, name=mode.name, category=mode.category, present=finding is not None,
                confidence=finding.get("confidence") if finding else None,
                evidence=[Evidence(step=step) for step in steps],
                explanation=str(finding.get("rationale", "")) if finding else "",
            ))
        out.append(Diagnosis(
            trace_id=str(report["trace_id"]),
            judge=JudgeInfo(kind="llm", model=model, taxonomy_version=tax.version, strategy="mast-lint"),
            failure_modes=verdicts,
        ))
    return out
