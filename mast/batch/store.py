"""The results file of a batch: now :class:`mast.results.ResultsFile` (kept here for older imports)."""

from __future__ import annotations

from mast.results import ResultsFile

__all__ = ["ResultsFile"]
