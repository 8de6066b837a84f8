"""Locate the files under ``prompts/`` in a wheel install and in a source checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def prompts_dir() -> Path:
    """The ``prompts/`` folder: ``mast/prompts`` inside a wheel, ``<repo>/prompts`` in a checkout."""
    for candidate in (_PACKAGE / "prompts", _PACKAGE.parent / "prompts"):
        if (candidate / "taxonomy").is_dir():
            return candidate
    raise FileNotFoundError(f"mast's prompts/ folder is missing next to {_PACKAGE}; reinstall mast-judge")
