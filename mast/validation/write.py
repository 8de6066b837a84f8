"""The files a validation run leaves: summary.json, per_mode.csv, disagreements.csv, verdict.txt, report.html.

A ``--gold`` run adds reviewer_disagreements.csv: the cells reviewers disagree on, left out of the gold.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mast._outputs import csv_text
from mast.validation.models import ValidationReport
from mast.validation.page import render_validation_page

SUMMARY = "summary.json"


def write_outputs(report: ValidationReport, out: Path, *, sources: dict[str, str] | None = None) -> None:
    """Write every file of a validation run into ``out`` (each written whole, then renamed into place).

    ``sources``: each trace id's source file, written as disagreements.csv's ``source`` column (a
    plain-text trace's id is only its ``sha256:`` hash).
    """
    _atomic(out / SUMMARY, report.model_dump_json(indent=2))
    _atomic(out / "per_mode.csv", csv_text(pd.DataFrame([m.model_dump() for m in report.modes])))
    rows = [
        {"set": s.name, **d.model_dump(), **({"source": sources.get(d.trace_id, "")} if sources is not None else {})}
        for s in report.sets
        if s.evaluation
        for d in s.evaluation.disagreements
    ]
    _atomic(out / "disagreements.csv", csv_text(pd.DataFrame(rows)))
    if report.reviewer_disagreements or report.judge.get("kind") == "gold":
        columns = ["trace_id", "key", "code", "values"]
        frame = pd.DataFrame(report.reviewer_disagreements, columns=columns)
        _atomic(out / "reviewer_disagreements.csv", csv_text(frame))
    _atomic(out / "verdict.txt", report.verdict + "\n")
    _atomic(out / "report.html", render_validation_page(report))


def read_summary(folder: str | Path) -> ValidationReport:
    """The report a validation run wrote into ``folder``."""
    return ValidationReport.model_validate_json((Path(folder) / SUMMARY).read_text(encoding="utf-8"))


def _atomic(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)
