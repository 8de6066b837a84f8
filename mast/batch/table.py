"""Results files as tables: CSV or Parquet export of a ``results.jsonl``.

The table itself is :func:`mast.results.to_dataframe` (one row per trace, a nullable
boolean column per mode): there is one implementation of "diagnoses as a DataFrame", and this
module only reads results and writes files.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from mast._outputs import write_csv
from mast.diagnosis import Diagnosis
from mast.errors import UsageError
from mast.results import iter_results, read_results, to_dataframe

TABLE_SUFFIXES = (".csv", ".parquet")
"""File endings :func:`write_table` can write."""

__all__ = ["TABLE_SUFFIXES", "check_table_writer", "read_results", "write_table"]

PARQUET_HINT = "pip install pyarrow (the extra mast-judge[parquet])"


def check_table_writer(path: str | os.PathLike[str]) -> None:
    """Refuse, before any work, a table that could not be written at the end (Parquet without pyarrow).

    Raises:
        UsageError: ``path`` ends in ``.parquet`` and pyarrow is not installed.
    """
    if Path(path).suffix.lower() == ".parquet" and importlib.util.find_spec("pyarrow") is None:
        raise UsageError(f"{path}: writing Parquet needs pyarrow: {PARQUET_HINT}; or write .jsonl or .csv now "
                         "and `mast export` to Parquet later. Nothing was judged")


def write_table(
    diagnoses: Iterable[Diagnosis] | str | os.PathLike[str],
    path: str | os.PathLike[str],
    *,
    form: Literal["wide", "long"] = "wide",
) -> Path:
    """Write results (or a results file) as CSV or Parquet, by the file ending; returns the path.

    ``wide``: one row per trace; ``long``: one row per trace and mode (see :func:`mast.to_dataframe`).
    The file is written beside the target and renamed over it, so a reader never sees half a table.

    Raises:
        UsageError: another file ending, or Parquet without pyarrow installed.
    """
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise UsageError(f"{target}: cannot tell the table format; use a name ending in .csv or .parquet")
    if isinstance(diagnoses, str | os.PathLike):
        if not Path(diagnoses).is_file():
            raise UsageError(f"{diagnoses}: no such results file")
        diagnoses = iter_results(diagnoses)  # streamed: only the table's columns are held
    frame = to_dataframe(diagnoses, form=form)
    if suffix == ".parquet" and importlib.util.find_spec("pyarrow") is None:
        raise UsageError(f"{target}: writing Parquet needs pyarrow: {PARQUET_HINT}")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        if suffix == ".csv":
            write_csv(frame, tmp)  # formula-leading cells escaped for spreadsheets
        else:
            frame.to_parquet(tmp, index=False)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target
