"""A Scout scan of the mast scanner read back as mast results: one Diagnosis per transcript.

``scout scan mast_judge/mast_scanner ...`` writes a scan folder (``scans/scan_id=.../``, a
``_scan.json`` and one Parquet file per scanner). Each transcript the scanner judged holds a
``diagnosis`` result whose ``metadata["mast"]`` is the whole :class:`~mast.diagnosis.Diagnosis`
(see :mod:`mast.integrations.scout`); this module reads it back with Scout's own reader
(:func:`inspect_scout.scan_results_batches`, a batch of rows at a time), so every command that
takes a results file takes a scan folder too (:func:`mast.results.iter_results` asks
:func:`is_scan`)::

    mast report scans/scan_id=abc -o report.html
    mast diff scans/scan_id=abc scans/scan_id=def
    mast evaluate --pred scans/scan_id=abc --gold gold.csv

A transcript Scout recorded as an error (the judge could not judge it: ``scan_error``) comes back
as a Diagnosis with status ``error`` and Scout's message, after the judged ones, never as "no
failure". Reading needs the ``scout`` extra (``pip install 'mast-judge[scout]'``); telling a scan
folder from another folder does not.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from mast.diagnosis import Diagnosis, ErrorInfo, JudgeInfo, SourceRef
from mast.errors import ResultsFileError, UsageError
from mast.taxonomy import DEFAULT_TAXONOMY

__all__ = ["DIAGNOSIS_LABEL", "SCANNER_NAME", "is_scan", "iter_scan"]

SCANNER_NAME = "mast_judge/mast_scanner"
"""The name ``scout scan`` knows the scanner by (and the name a scan's spec records for it)."""
DIAGNOSIS_LABEL = "diagnosis"
"""Label of the result that carries the whole Diagnosis."""
SCAN_SPEC = "_scan.json"
"""The file every Scout scan folder holds (its spec)."""
INSTALL_HINT = "reading a Scout scan needs Inspect Scout: pip install 'mast-judge[scout]'"


def is_scan(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a Scout scan folder (it holds ``_scan.json``); Scout is not imported."""
    folder = Path(path)
    return folder.is_dir() and (folder / SCAN_SPEC).is_file()


def incomplete_scan(path: str | os.PathLike[str]) -> str | None:
    """Why a folder that looks like a Scout scan is not one (no ``_scan.json``), else ``None``.

    Scout names a scan's folder ``scan_id=...`` and writes ``_summary.json`` and a Parquet file per
    scanner beside its spec; a folder with those but no spec was copied or cleaned up in part.
    Said, so that its ``_errors.jsonl`` is not taken for a results file.
    """
    folder = Path(path)
    if not folder.is_dir() or (folder / SCAN_SPEC).is_file():
        return None
    signs = [name for name in ("_summary.json", "_errors.jsonl") if (folder / name).is_file()]
    signs += sorted(p.name for p in folder.glob("*.parquet"))[:1]
    if folder.name.startswith("scan_id=") or signs:
        held = f" (it holds {', '.join(signs)})" if signs else ""
        return f"{path} looks like an Inspect Scout scan{held} but has no {SCAN_SPEC}: copy the whole scan folder"
    return None


def iter_scan(path: str | os.PathLike[str]) -> Iterator[Diagnosis]:
    """Every transcript of a Scout scan of the mast scanner as a Diagnosis, judged ones first.

    Raises:
        UsageError: Inspect Scout is not installed.
        ResultsFileError: Scout cannot read the scan, it holds no mast scanner, or a row's
            ``diagnosis`` result holds no valid Diagnosis.
    """
    try:
        from inspect_scout import scan_results_batches, scan_status
    except ImportError as exc:
        raise UsageError(INSTALL_HINT) from exc
    location = str(path)
    try:
        spec = scan_status(location).spec
    except Exception as exc:  # Scout's reader raises what its storage layer raises: one boundary here
        raise ResultsFileError(f"{location}: Scout cannot read this scan ({exc})", path=location) from exc
    keys = [key for key, scanner in spec.scanners.items() if scanner.name == SCANNER_NAME]
    if not keys:
        names = ", ".join(s.name for s in spec.scanners.values()) or "none"
        raise ResultsFileError(
            f"{location}: this Scout scan has no {SCANNER_NAME} results (its scanners: {names})",
            path=location,
        )
    for key in keys:
        params = dict(spec.scanners[key].params or {})
        failed: list[dict[str, Any]] = []
        judge: JudgeInfo | None = None
        try:
            batches = scan_results_batches(location, key, rows="transcripts")
            for frame in batches:
                for record in frame.to_dict(orient="records"):
                    row = {str(name): value for name, value in record.items()}
                    diagnosis = _judged(location, row)
                    if diagnosis is not None:
                        judge = judge or diagnosis.judge
                        yield diagnosis
                    elif _text(row.get("scan_error")):
                        failed.append(row)
        except (OSError, ValueError) as exc:  # includes pyarrow's errors (ArrowException is not one)
            raise ResultsFileError(f"{location}: Scout cannot read this scan ({exc})", path=location) from exc
        for row in failed:
            yield _error(row, judge or _judge_of(params))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _judged(location: str, row: dict[str, Any]) -> Diagnosis | None:
    raw = _text(row.get("value"))
    if raw is None or row.get("value_type") != "resultset":
        return None
    transcript = row.get("transcript_id")
    try:
        items = orjson.loads(raw)
        found = next((i for i in items if isinstance(i, dict) and i.get("label") == DIAGNOSIS_LABEL), None)
        record = (found or {}).get("metadata", {}).get("mast")
        if record is None:
            raise ResultsFileError(
                f"{location}: transcript {transcript} has no {DIAGNOSIS_LABEL!r} result with the mast Diagnosis",
                path=location,
            )
        return Diagnosis.model_validate(record)
    except (orjson.JSONDecodeError, AttributeError) as exc:
        raise ResultsFileError(
            f"{location}: transcript {transcript}: not a mast resultset", path=location
        ) from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise ResultsFileError(
            f"{location}: transcript {transcript}: not a mast diagnosis ({where}: {first.get('msg')})",
            path=location,
        ) from exc


def _judge_of(params: dict[str, Any]) -> JudgeInfo:
    model = params.get("model")
    taxonomy = params.get("taxonomy")
    return JudgeInfo(
        kind="llm" if model else "detectors",
        model=str(model) if model else None,
        taxonomy_version=str(taxonomy) if taxonomy else DEFAULT_TAXONOMY,
    )


def _error(row: dict[str, Any], judge: JudgeInfo) -> Diagnosis:
    return Diagnosis(
        trace_id=str(row["transcript_id"]),
        source=SourceRef(
            path=_text(row.get("transcript_source_uri")),
            format="inspect_log" if row.get("transcript_source_type") == "eval_log" else None,
        ),
        status="error",
        error=ErrorInfo(
            type=_text(row.get("scan_error_type")) or "scan_error", message=str(row["scan_error"])
        ),
        judge=judge,
    )
