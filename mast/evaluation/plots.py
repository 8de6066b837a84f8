"""Figures for reports and notebooks (matplotlib, a core dependency: ``mast report`` works after a plain install).

Each function returns a :class:`matplotlib.figure.Figure` built without pyplot, so nothing touches
global state or needs a display; :func:`png_base64` embeds one in HTML.

Example:
    >>> from mast.analysis import prevalence                               # doctest: +SKIP
    >>> fig = prevalence_figure(prevalence(frame))                          # doctest: +SKIP
"""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from mast.errors import UsageError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from mast.evaluation.report import EvaluationReport

MATPLOTLIB_HINT = "plots need matplotlib, a dependency of mast that is missing here: pip install 'matplotlib>=3.7'"
HISTOGRAM_AXIS = {"step": "step of the first failure", "agent": "agent responsible for the first failure",
                  "bin_start": "position of the first failure in the trace (0: start, 1: end)"}
"""The x label of :func:`histogram_figure`, by the first column of its counts."""
_CATEGORY_COLOURS = {"FC1": "#4C72B0", "FC2": "#DD8452", "FC3": "#55A868"}


def _figure(width: float, height: float) -> Figure:
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise UsageError(MATPLOTLIB_HINT) from exc
    return Figure(figsize=(width, height), layout="constrained")


def _colour(code: str) -> str:
    return _CATEGORY_COLOURS.get(f"FC{code.split('.')[0]}", "#8172B3")


def prevalence_figure(prevalence: pd.DataFrame, *, title: str = "Prevalence of each failure mode") -> Figure:
    """Horizontal bars of :func:`mast.analysis.prevalence` (mode rows), with Wilson CIs, coloured by category."""
    data = prevalence[prevalence["level"] == "mode"] if "level" in prevalence.columns else prevalence
    fig = _figure(7, 0.35 * max(len(data), 3) + 1)
    ax = fig.add_subplot()
    y = np.arange(len(data))[::-1]
    values = data["prevalence"].to_numpy(float)
    low = np.nan_to_num(values - data["low"].to_numpy(float))
    high = np.nan_to_num(data["high"].to_numpy(float) - values)
    ax.barh(y, np.nan_to_num(values), xerr=[low, high], color=[_colour(c) for c in data["code"]],
            error_kw={"elinewidth": 0.8, "capsize": 2})
    ax.set_yticks(y, [f"{c} {n}" for c, n in zip(data["code"], data["name"], strict=True)], fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of traces (95% Wilson CI)")
    ax.set_title(title, fontsize=10)
    return fig


def cooccurrence_figure(matrix: pd.DataFrame, *, title: str = "Mode co-occurrence (traces)") -> Figure:
    """Heatmap of :func:`mast.analysis.cooccurrence`, counts written in the cells."""
    fig = _figure(6.5, 5.5)
    ax = fig.add_subplot()
    image = ax.imshow(matrix.to_numpy(float), cmap="Blues")
    ax.set_xticks(range(len(matrix.columns)), matrix.columns, rotation=90, fontsize=8)
    ax.set_yticks(range(len(matrix.index)), matrix.index, fontsize=8)
    values = matrix.to_numpy()
    peak = values.max() if values.size else 0
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            if values[i, j]:
                ax.text(j, i, str(int(values[i, j])), ha="center", va="center", fontsize=7,
                        color="white" if values[i, j] > peak / 2 else "black")
    fig.colorbar(image, ax=ax, shrink=0.8)
    ax.set_title(title, fontsize=10)
    return fig


def agreement_figure(report: EvaluationReport, *, metric: str = "kappa") -> Figure:
    """Per-mode ``metric`` with its bootstrap CI, and the pooled value as a dashed line."""
    entries = [m for m in report.per_mode if m.n]
    fig = _figure(7, 0.35 * max(len(entries), 3) + 1.2)
    ax = fig.add_subplot()
    for k, entry in enumerate(entries[::-1]):
        value = entry.value(metric)
        interval = entry.ci.get(metric)
        if interval is not None:
            ax.plot([interval.low, interval.high], [k, k], color="#888888", linewidth=1.5)
        if value is not None:
            ax.plot([value], [k], "o", color=_colour(entry.code))
        else:
            ax.text(0, k, "undefined", fontsize=7, va="center", color="#888888")
    pooled = report.pooled.value(metric)
    if pooled is not None:
        ax.axvline(pooled, linestyle="--", color="black", linewidth=0.8, label=f"pooled {pooled:z.2f}")
        # Above the plot, not on it: inside, it hid the dots of the lowest modes.
        ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    ax.set_yticks(range(len(entries)), [f"{e.code} {e.name} (n={e.n})" for e in entries[::-1]], fontsize=8)
    low = -1.0 if metric == "kappa" else 0.0
    ax.set_xlim(low - 0.08, 1.08)  # a dot at -1 or 1 stays whole inside the frame
    ax.set_ylim(-0.7, len(entries) - 0.3)
    ax.axvline(0, color="#cccccc", linewidth=0.6)
    level = f"{report.bootstrap.level:.0%} CI" if report.bootstrap.n_boot else "no CI"
    ax.set_xlabel(f"{metric} ({level}, traces resampled)")
    ax.set_title(f"Agreement per mode: {metric}", fontsize=10)
    return fig


def fatal_benign_figure(table: pd.DataFrame) -> Figure:
    """Difference in prevalence (failed - successful) per mode, from :func:`mast.analysis.fatal_vs_benign`."""
    fig = _figure(7, 0.35 * max(len(table), 3) + 1)
    ax = fig.add_subplot()
    y = np.arange(len(table))[::-1]
    diff = table["difference"].to_numpy(float)
    err = [np.nan_to_num(diff - table["diff_low"].to_numpy(float)), np.nan_to_num(table["diff_high"].to_numpy(float) - diff)]
    colours = ["#C44E52" if v == "fatal" else "#8C8C8C" for v in table["verdict"]]
    ax.barh(y, np.nan_to_num(diff), xerr=err, color=colours, error_kw={"elinewidth": 0.8, "capsize": 2})
    ax.axvline(0, color="black", linewidth=0.6)
    ax.set_yticks(y, [f"{c} {n}" for c, n in zip(table["code"], table["name"], strict=True)], fontsize=8)
    ax.set_xlabel("prevalence in failed - in successful runs (red: CI above 0)")
    ax.set_title("Which modes mark failing runs", fontsize=10)
    return fig


def histogram_figure(counts: pd.DataFrame, *, title: str = "Where the first failure falls") -> Figure:
    """Bars of :func:`mast.analysis.first_failure_histogram` (step, agent or relative position)."""
    fig = _figure(7, 3.2)
    ax = fig.add_subplot()
    label_column = counts.columns[0]
    labels: list[Any] = (
        [f"{a:.1f}-{b:.1f}" for a, b in zip(counts["bin_start"], counts["bin_end"], strict=True)]
        if label_column == "bin_start" else [str(v) for v in counts[label_column]]
    )
    from matplotlib.ticker import MaxNLocator

    ax.bar(range(len(counts)), counts["count"].to_numpy(), color="#4C72B0")
    ax.set_xticks(range(len(counts)), labels, rotation=45 if len(counts) > 8 else 0, fontsize=8,
                  ha="right" if len(counts) > 8 else "center")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts of traces: no 0.5 ticks
    ax.set_ylabel("traces")
    ax.set_xlabel(HISTOGRAM_AXIS.get(str(label_column), str(label_column)))
    ax.set_title(title, fontsize=10)
    return fig


def png_base64(fig: Figure, *, dpi: int = 110) -> str:
    """The figure as a base64 PNG, ready for ``<img src="data:image/png;base64,...">``."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return base64.b64encode(buffer.getvalue()).decode("ascii")
