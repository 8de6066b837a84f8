"""Label tables: every source of labels (ours, users', MAD's) read into one shape.

A **label table** is a pandas DataFrame with one row per (trace, mode[, annotator]) that was assessed:

=============  ==========================================================================
column         meaning
=============  ==========================================================================
``trace_id``   id of the trace (string)
``code``       failure-mode code, normalised (``FM-1.3``, ``1_3`` -> ``1.3``)
``present``    bool: the mode occurs (True) or not (False)
``annotator``  who labelled it (string), or missing when the source has one labeller
``confidence`` 0..1 when the labeller said, else NaN
``evidence``   text backing the label (quotes, rationale), else ""
=============  ==========================================================================

Cells that were *not assessed* (``present: null`` in a result, an empty cell in a CSV, a mode an old
taxonomy round had no counterpart for) have no row at all; comparisons count them separately.

File shapes :func:`read_labels` understands (``format="auto"`` picks by content):

* ``diagnoses``: mast's own ``results.jsonl`` (one :class:`~mast.diagnosis.Diagnosis` per line).
  ``present: null`` verdicts and traces whose status is not ``judged`` give no rows.
* ``long``: CSV or JSONL with columns ``trace_id, code, present`` and optional ``annotator``,
  ``confidence``, ``evidence``; e.g. ``t1,FM-1.3,1,alice``. ``present`` accepts 1/0, true/false,
  yes/no; an empty value means not assessed.
* ``wide``: CSV with ``trace_id``, optional ``annotator``, and one column per mode code
  (``1.1`` or ``FM-1.1`` ...) holding 1/0 (empty = not assessed); other columns are ignored.
* ``mad``: MAST-Data records, LLM-labelled (``mast_annotation``) or human-labelled
  (``annotations`` with ``annotator_1..3``, older 18/17-mode rounds mapped by
  :mod:`mast.evaluation.mad`); JSON list or JSONL, streamed.
* ``mastlint``: mast-lint evaluation files (``[{report: {findings}, gold: {present, votes}}]``):
  ``role="pred"`` reads the judge's findings (a finding listed = present, every other mode absent),
  ``role="gold"`` the human labels (only the modes the gold lists are assessed).
* ``present-list``: ``{"modes": [...], "labels": {trace_id: {"present": [codes]}}}`` gold files.
* ``review``: the gold JSONL ``mast review`` writes (:mod:`mast.gold`): the last value of each
  reviewer's cells from the random queue (``unsure`` and improve-queue cells are left out).

Example:
    >>> table = label_table([{"trace_id": "t1", "code": "FM-1.3", "present": 1}])
    >>> table[["trace_id", "code", "present"]].to_dict("records")
    [{'trace_id': 't1', 'code': '1.3', 'present': True}]
"""

from __future__ import annotations

import csv
import math
import os
from array import array
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, TypeAlias

import numpy as np
import orjson
import pandas as pd

from mast._outputs import read_csv
from mast.diagnosis import Diagnosis, ModeVerdict
from mast.errors import EvaluationError
from mast.results import is_results_path, is_scout_scan, iter_results, read_results
from mast.results import to_dataframe as to_dataframe  # one implementation; this name stays for older imports
from mast.taxonomy import Taxonomy, load_taxonomy, normalize_code

LABEL_COLUMNS = ("trace_id", "code", "present", "annotator", "confidence", "evidence")
"""Columns of a label table, in order."""

LabelFormat = Literal["auto", "diagnoses", "long", "wide", "mad", "mastlint", "present-list", "review"]
Role = Literal["pred", "gold"]
LabelSource: TypeAlias = str | os.PathLike[str] | pd.DataFrame | Iterable[Diagnosis]
"""What :func:`read_labels` accepts: a path, a DataFrame (long or wide), or diagnoses."""

_TRUE = frozenset({"1", "true", "t", "yes", "y", "present", "1.0"})
_FALSE = frozenset({"0", "false", "f", "no", "n", "absent", "0.0"})
_MISSING = frozenset({"", "null", "none", "na", "nan", "n/a", "-"})


# --- values -----------------------------------------------------------------------------------


def parse_present(value: Any, *, where: str = "") -> bool | None:
    """Read a yes/no label: True, False, or None for "not assessed".

    Raises:
        EvaluationError: for a value that is neither (``"maybe"``, ``2``).
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, int | float):
        if value in (0, 1):
            return bool(value)
    else:
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        if text in _MISSING:
            return None
    raise EvaluationError(
        f"{where}: label {value!r} is not a yes/no value (1/0, true/false, yes/no)".lstrip(": ")
    )


def normalize_label_code(code: Any, taxonomy: Taxonomy, *, where: str = "") -> str:
    """Normalise a mode code and check the taxonomy has it."""
    try:
        normal = normalize_code(code)
    except ValueError as exc:
        raise EvaluationError(f"{where}: {exc}".lstrip(": ")) from exc
    if normal not in taxonomy.codes:
        raise EvaluationError(
            f"{where}: mode {code!r} is not in taxonomy {taxonomy.version} ({', '.join(taxonomy.codes)})".lstrip(
                ": "
            )
        )
    return normal


# --- the table --------------------------------------------------------------------------------


def label_table(
    rows: Iterable[Mapping[Any, Any]], *, taxonomy: Taxonomy | None = None, source: str | None = None
) -> pd.DataFrame:
    """Build a validated label table from row mappings (see the module docstring for columns).

    Rows whose ``present`` is missing (not assessed) are dropped. Codes are normalised; a repeated
    (trace_id, code, annotator) with conflicting labels is an error.
    """
    tax = taxonomy or load_taxonomy()
    records: list[dict[str, Any]] = []
    # Label files repeat a handful of codes and values thousands of times: parse each once.
    codes: dict[Any, str] = {}
    values: dict[Any, bool | None] = {}
    for n, row in enumerate(rows):
        line = row.get(LINE_COLUMN)
        where = (
            f"{source or 'labels'} line {line}" if line is not None else f"{source or 'labels'} row {n + 1}"
        )
        if "trace_id" not in row or _is_missing(row["trace_id"]):
            raise EvaluationError(f"{where}: no trace_id")
        if "code" not in row:
            raise EvaluationError(f"{where}: no code")
        raw = row.get("present")
        try:
            present = values[raw]
        except (KeyError, TypeError):
            present = parse_present(raw, where=where)
            if not (isinstance(raw, float) and math.isnan(raw)):
                values[raw] = present
        if present is None:
            continue
        code = codes.get(row["code"])
        if code is None:
            code = codes[row["code"]] = normalize_label_code(row["code"], tax, where=where)
        confidence = row.get("confidence")
        annotator = row.get("annotator")
        evidence = row.get("evidence")
        records.append(
            {
                "trace_id": _id_text(row["trace_id"]),
                "code": code,
                "present": present,
                "annotator": None if _is_missing(annotator) else str(annotator),
                "confidence": math.nan if confidence is None else _confidence(confidence, where),
                "evidence": ""
                if evidence is None or evidence == "" or _is_missing(evidence)
                else str(evidence),
            }
        )
    return _finish(pd.DataFrame.from_records(records, columns=list(LABEL_COLUMNS)), source)


def check_label_table(frame: pd.DataFrame, *, taxonomy: Taxonomy | None = None) -> pd.DataFrame:
    """Validate and normalise a DataFrame given as a label table (long or wide form)."""
    columns = set(frame.columns)
    if {"trace_id", "code", "present"} <= columns:
        source = str(frame.attrs.get("source", "DataFrame"))
        # object columns iterate far faster than Arrow-backed strings
        return label_table(frame.astype(object).to_dict("records"), taxonomy=taxonomy, source=source)
    if "trace_id" in columns:
        return _from_wide(frame, taxonomy or load_taxonomy(), str(frame.attrs.get("source", "DataFrame")))
    raise EvaluationError(
        "a label DataFrame needs columns trace_id, code, present (long form) or trace_id plus one column per mode"
    )


def _finish(frame: pd.DataFrame, source: str | None) -> pd.DataFrame:
    # Plain object strings: pandas' Arrow-backed default is slow to iterate and group row by row.
    frame = frame.astype(
        {"trace_id": object, "code": object, "evidence": object, "present": bool, "confidence": float}
    )
    frame["annotator"] = frame["annotator"].astype(object).where(frame["annotator"].notna(), None)
    keys = ["trace_id", "code", "annotator"]
    keyed = frame.assign(annotator=frame["annotator"].fillna(""))
    dup = keyed.duplicated(keys, keep=False)
    if dup.any():
        conflicts = keyed[dup].groupby(keys)["present"].nunique()
        bad = conflicts[conflicts > 1]
        if not bad.empty:
            trace_id, code, annotator = bad.index[0]
            who = f" by {annotator}" if annotator else ""
            raise EvaluationError(
                f"{source or 'labels'}: trace {trace_id} mode {code}{who} is labelled both present and absent"
            )
        frame = frame[~keyed.duplicated(keys, keep="first")]
    frame = frame.sort_values(["trace_id", "code"], kind="stable").reset_index(drop=True)
    frame.attrs["source"] = source or "labels"
    return frame


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value.strip().lower() in _MISSING


def _id_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def _confidence(value: Any, where: str) -> float:
    if _is_missing(value):
        return math.nan
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise EvaluationError(f"{where}: confidence {value!r} is not a number") from exc
    if not 0.0 <= number <= 1.0:
        raise EvaluationError(f"{where}: confidence {value!r} is outside 0..1")
    return number


def _from_wide(frame: pd.DataFrame, taxonomy: Taxonomy, source: str) -> pd.DataFrame:
    code_columns: dict[str, str] = {}
    for column in frame.columns:
        if column in ("trace_id", "annotator", LINE_COLUMN):
            continue
        try:
            code = normalize_code(column)
        except ValueError:
            continue  # metadata columns (framework, notes...) are allowed beside the codes
        if code not in taxonomy.codes:
            raise EvaluationError(
                f"{source}: column {column!r} names mode {code}, not in taxonomy {taxonomy.version}"
            )
        code_columns[str(column)] = code
    if not code_columns:
        raise EvaluationError(f"{source}: no column named after a failure mode (expected e.g. 1.1 or FM-1.1)")
    has_annotator = "annotator" in frame.columns
    rows: list[dict[str, Any]] = []
    for record in frame.to_dict("records"):
        for column, code in code_columns.items():
            rows.append(
                {
                    "trace_id": record["trace_id"],
                    "code": code,
                    "present": record[column],
                    "annotator": record["annotator"] if has_annotator else None,
                    LINE_COLUMN: record.get(LINE_COLUMN),
                }
            )
    return label_table(rows, taxonomy=taxonomy, source=source)


# --- diagnoses ----------------------------------------------------------------------------------


def read_diagnoses(path: str | os.PathLike[str]) -> list[Diagnosis]:
    """Read a ``results.jsonl`` of :class:`~mast.diagnosis.Diagnosis` lines (or a JSON list of them).

    The one reader is :func:`mast.results.read_results` (a torn last line is skipped, as ``mast
    label`` itself does on resume); this name stays for the evaluation's callers.

    Raises:
        EvaluationError: naming the line that is not a valid diagnosis
            (:class:`~mast.errors.ResultsFileError`, an EvaluationError).
    """
    return read_results(path)


def verdict_evidence(verdict: ModeVerdict) -> str:
    """One line of text backing a verdict: its explanation and quotes with their steps."""
    parts = [verdict.explanation.strip()] if verdict.explanation.strip() else []
    for item in verdict.evidence:
        where = f"[S{item.step}] " if item.step is not None else ""
        parts.append(f'{where}"{item.quote.strip()}"')
    return " ".join(parts)


def labels_from_diagnoses(
    diagnoses: Iterable[Diagnosis], *, taxonomy: Taxonomy | None = None, source: str = "diagnoses"
) -> pd.DataFrame:
    """Label table of the assessed verdicts of judged diagnoses (annotator = the judge's model).

    The diagnoses are read one at a time and not kept: only the table's columns grow, so a results
    file of 100,000 lines costs its table (a row per assessed verdict) and not its diagnoses.
    """
    from mast.evaluation.judges import JudgeTally
    from mast.evaluation.sourcekeys import SOURCE_MAP_ATTR, SourceMap

    tax = taxonomy or load_taxonomy()
    tally, sources = JudgeTally(), SourceMap()
    trace_ids: list[str] = []
    codes: list[str] = []
    present = array("b")
    confidence = array("d")
    evidence: list[str] = []
    known: dict[str, str] = {}  # a few codes repeated per verdict: normalised once, one string each
    texts: dict[str, str] = {}  # the offline detectors repeat their explanations: one string each
    first_source: dict[str, tuple[str | None, int | None]] = {}  # where each judged trace id was first seen
    shared: dict[str, set[tuple[str | None, int | None]]] = {}  # ids judged from more than one file/record
    for n, diagnosis in enumerate(diagnoses):
        tally.add(diagnosis)
        sources.add(diagnosis)
        if diagnosis.status != "judged":
            continue
        trace_id = _id_text(diagnosis.trace_id)
        where_from = (diagnosis.source.absolute_path or diagnosis.source.path, diagnosis.source.record)
        seen_at = first_source.setdefault(trace_id, where_from)
        if seen_at != where_from:
            shared.setdefault(trace_id, {seen_at}).add(where_from)
        for verdict in diagnosis.failure_modes:
            if verdict.present is None:
                continue
            code = known.get(verdict.code)
            if code is None:
                where = f"{source} row {n + 1}"
                code = known[verdict.code] = normalize_label_code(verdict.code, tax, where=where)
            text = verdict_evidence(verdict)
            trace_ids.append(trace_id)
            codes.append(code)
            present.append(verdict.present)
            confidence.append(math.nan if verdict.confidence is None else verdict.confidence)
            evidence.append(texts.setdefault(text, text))
    tally.check(source)
    frame = pd.DataFrame(
        {
            "trace_id": pd.Series(trace_ids, dtype=object),
            "code": pd.Series(codes, dtype=object),
            "present": np.frombuffer(present, dtype=np.int8).astype(bool),
            "annotator": None,
            "confidence": np.frombuffer(confidence, dtype=np.float64),
            "evidence": pd.Series(evidence, dtype=object),
        }
    )
    del trace_ids, codes, evidence
    # One judge per results file: its name is kept in attrs, not as a second "annotator" to vote with.
    try:
        table = _finish(frame, source)
    except EvaluationError as exc:  # a conflict between two files' results under one id: say that too
        if not shared:
            raise
        raise EvaluationError(
            f"{exc}; {shared_ids_warning(source, {k: len(v) for k, v in shared.items()})}"
        ) from None
    table.attrs[SOURCE_MAP_ATTR] = sources  # for gold keyed by path (+ record), built when asked
    if shared:
        table.attrs[SHARED_IDS_ATTR] = [shared_ids_warning(source, {k: len(v) for k, v in shared.items()})]
    return table


SHARED_IDS_ATTR = "shared_ids"
"""Label-table attribute: the warning that rows of different files share a trace id (counted as one trace)."""


def shared_ids_warning(source: str, counts: Mapping[str, int]) -> str:
    """One line: which trace id several files' results share, how many rows, and how many other ids do."""
    trace_id, rows = next(iter(counts.items()))
    more = len(counts) - 1
    others = f"; {more} more trace id(s) shared the same way" if more else ""
    return (
        f"{source}: trace id {trace_id} is shared by {rows} rows from different files or records, "
        f"compared as one trace{others} (give the traces distinct ids)"
    )


# --- reading files --------------------------------------------------------------------------------


def read_labels(
    source: LabelSource,
    *,
    format: LabelFormat = "auto",
    role: Role | None = None,
    taxonomy: Taxonomy | None = None,
    trace_id_prefix: str = "",
) -> pd.DataFrame:
    """Read labels from a file, a DataFrame or diagnoses into a label table.

    Args:
        source: a path (CSV, JSON, JSONL), a DataFrame (long or wide) or an iterable of diagnoses.
        format: one of the shapes in the module docstring; ``auto`` decides from the content.
        role: which side to read from files that hold both a judge's and humans' labels
            (mast-lint); ``pred`` or ``gold``.
        taxonomy: taxonomy the codes must belong to (default ``mast-v3``).
        trace_id_prefix: prepended to MAD trace ids (``"mad-"`` matches mast-lint's ids).

    Raises:
        EvaluationError: a file that cannot be read, or labels of no known shape.
    """
    tax = taxonomy or load_taxonomy()
    if isinstance(source, pd.DataFrame):
        return check_label_table(source, taxonomy=tax)
    if not isinstance(source, str | os.PathLike):
        items = list(source)
        if items and all(isinstance(item, Mapping) for item in items):
            # Rows of a label table (long or wide), e.g. [{"trace_id": "t1", "1.3": True}, ...]
            return check_label_table(pd.DataFrame.from_records([dict(item) for item in items]), taxonomy=tax)
        return labels_from_diagnoses(items, taxonomy=tax)
    path = Path(source)
    if not is_results_path(path):
        raise EvaluationError(f"{path}: no such file")
    kind = sniff_format(path) if format == "auto" else format
    name = str(path)
    if kind == "diagnoses":
        return labels_from_diagnoses(iter_results(path), taxonomy=tax, source=name)
    if kind == "review":
        from mast.gold import iter_events, label_rows

        return label_table(label_rows(iter_events(path)), taxonomy=tax, source=name)
    if kind in ("long", "wide"):
        from mast.evaluation.sourcekeys import add_source_keys

        raw = _read_tabular(path)
        given = [str(c) for c in raw.columns if c != LINE_COLUMN]  # as the file names them, for errors
        frame = add_source_keys(_long_aliases(raw))
        frame.attrs["source"] = name
        if kind == "wide" and {"trace_id", "code", "present"} <= set(frame.columns):
            kind = "long"  # trace_id,mode,label: the long form under other names
        if kind == "long" and not {"trace_id", "code", "present"} <= set(frame.columns):
            found = ", ".join(given[:8]) or "none"
            raise EvaluationError(
                f"{path}: long labels need columns trace_id, code (or mode), present (or label); "
                f"found columns: {found}"
            )
        if kind == "wide" and "trace_id" not in frame.columns:
            found = ", ".join(given[:8]) or "none"
            raise EvaluationError(
                f"{path}: labels need a trace_id column, then either code and present (long: one row per mode) "
                f"or one column per mode code (wide); found columns: {found}"
            )
        return check_label_table(frame, taxonomy=tax)

    from mast.evaluation import mad

    if kind == "mad":
        return mad.labels_from_mad(
            iter_json_records(path), taxonomy=tax, source=name, trace_id_prefix=trace_id_prefix
        )
    if kind == "mastlint":
        if role is None:
            raise EvaluationError(
                f"{path} holds both a judge's findings and gold labels; say which to read (role='pred' or 'gold')"
            )
        return mad.labels_from_mastlint(iter_json_records(path), role=role, taxonomy=tax, source=name)
    if kind == "present-list":
        return mad.labels_from_present_list(_load_json(path), taxonomy=tax, source=name)
    raise EvaluationError(f"unknown label format {format!r}")


LINE_COLUMN = "_line"
"""The file line a tabular label row came from, for error messages (dropped from the table)."""
CODE_ALIASES = ("mode", "failure_mode", "mode_code")
"""Other names of the long form's ``code`` column."""
PRESENT_ALIASES = ("label", "value", "is_present")
"""Other names of the long form's ``present`` column."""


def _long_aliases(frame: pd.DataFrame) -> pd.DataFrame:
    """``trace_id,mode,label`` (and similar) renamed to the long form's ``trace_id,code,present``."""
    columns = {str(c).lower(): c for c in frame.columns}
    renames: dict[Any, str] = {}
    for target, aliases in (("code", CODE_ALIASES), ("present", PRESENT_ALIASES)):
        if target in columns:
            continue
        found = next((columns[a] for a in aliases if a in columns), None)
        if found is not None:
            renames[found] = target
    if len(renames) + sum(t in columns for t in ("code", "present")) < 2:
        return frame  # not a long form under other names: a wide file may have a "label" column
    return frame.rename(columns=renames)


def _read_tabular(path: Path) -> pd.DataFrame:
    try:
        if path.suffix.lower() in (".jsonl", ".ndjson"):
            return pd.DataFrame.from_records(list(iter_json_records(path)))
        if path.suffix.lower() == ".json":
            data = _load_json(path)
            if not isinstance(data, list):
                raise EvaluationError(f"{path}: expected a JSON list of label rows")
            return pd.DataFrame.from_records(data)
        sep = "\t" if path.suffix.lower() == ".tsv" else ","
        frame = read_csv(path, sep=sep)
        # Errors name the physical file line (the header is line 1): blank lines, which pandas
        # skips, and quoted cells spanning lines are counted by the csv module's own line count.
        starts = _record_lines(path, sep)
        frame[LINE_COLUMN] = starts if len(starts) == len(frame) else range(2, len(frame) + 2)
        return frame
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        if isinstance(exc, EvaluationError):
            raise
        raise EvaluationError(f"cannot read {path}: {' '.join(str(exc).split())}") from exc


def _record_lines(path: Path, sep: str) -> list[int]:
    """The file line each data record of a CSV/TSV starts on, blank lines skipped (as pandas does)."""
    starts: list[int] = []
    with path.open(encoding="utf-8-sig", errors="replace", newline="") as handle:
        reader = csv.reader(handle, delimiter=sep)
        previous = 0
        header_seen = False
        for row in reader:
            start, previous = previous + 1, reader.line_num
            if not row:
                continue
            if header_seen:
                starts.append(start)
            header_seen = True
    return starts


def _load_json(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise EvaluationError(f"{path}: not valid JSON ({exc})") from exc
    except OSError as exc:
        raise EvaluationError(f"cannot read {path}: {exc.strerror or exc}") from exc


def iter_json_records(path: str | os.PathLike[str]) -> Iterator[Any]:
    """Records of a JSON list (streamed, so a 200 MB MAD file never sits in memory twice) or a JSONL file."""
    import ijson

    file = Path(path)
    try:
        with file.open("rb") as handle:
            first = _first_char(handle)
            if first == b"[":
                try:
                    yield from ijson.items(handle, "item", use_float=True)
                except ijson.JSONError as exc:
                    raise EvaluationError(f"{file}: not valid JSON ({exc})") from exc
            elif first == b"{" and file.suffix.lower() == ".json":
                yield _load_json(file)
            else:
                for number, line in enumerate(handle, start=1):
                    if line.strip():
                        try:
                            yield orjson.loads(line)
                        except orjson.JSONDecodeError as exc:
                            raise EvaluationError(f"{file}:{number}: not valid JSON ({exc})") from exc
    except OSError as exc:
        raise EvaluationError(f"cannot read {file}: {exc.strerror or exc}") from exc


def _first_char(handle: Any) -> bytes:
    while True:
        char: bytes = handle.read(1)
        if not char or not char.isspace():
            handle.seek(handle.tell() - len(char))
            return char


def sniff_format(path: Path) -> LabelFormat:
    """The label format of a file, from its name and first record (a Scout scan folder: diagnoses)."""
    if is_scout_scan(path):
        return "diagnoses"
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        with path.open(encoding="utf-8", errors="replace") as handle:
            header = handle.readline().lower()
        columns = {c.strip().strip('"') for c in header.strip().split("\t" if suffix == ".tsv" else ",")}
        has_code = "code" in columns or bool(columns & set(CODE_ALIASES))
        has_present = "present" in columns or bool(columns & set(PRESENT_ALIASES))
        return "long" if has_code and has_present else "wide"
    if suffix not in (".json", ".jsonl", ".ndjson"):
        raise EvaluationError(
            f"{path}: cannot tell the label format from the name; use .csv, .json or .jsonl"
        )
    try:
        first = next(iter(iter_json_records(path)), None)
    except EvaluationError:
        raise
    if first is None:
        raise EvaluationError(f"{path}: no labels in the file")
    if isinstance(first, dict):
        keys = set(first)
        if "failure_modes" in keys or str(first.get("schema_version", "")).startswith("mast-diagnosis"):
            return "diagnoses"
        if str(first.get("schema_version", "")).startswith("mast-gold"):
            return "review"
        if {"modes", "labels"} <= keys:
            return "present-list"
        if {"report", "gold"} <= keys:
            return "mastlint"
        if "mast_annotation" in keys or "annotations" in keys:
            return "mad"
        if {"trace_id", "code", "present"} <= keys:
            return "long"
        if "trace_id" in keys:
            return "wide"
    raise EvaluationError(
        f"{path}: labels of no known shape (expected mast results, long/wide rows, MAD or mast-lint records)"
    )
