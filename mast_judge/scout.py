"""``mast_judge/mast_scanner``: mast as an Inspect Scout scanner, registered (see :mod:`mast.integrations.scout`).

Defined here rather than in :mod:`mast.integrations.scout` so that Scout's registry names it after
the distribution, ``mast-judge`` (see :mod:`mast_judge`); the ``inspect_ai`` entry point named
``mast_judge`` loads this module when ``scout scan`` asks for the name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inspect_scout import Scanner, Transcript, scanner

from mast.integrations.scout import build_scan

__all__ = ["mast_scanner"]


@scanner(messages="all", events=["model"], name="mast_scanner")
def mast_scanner(
    model: str | None = None,
    judge: str | None = None,
    jury: str | Sequence[str] | None = None,
    taxonomy: str | None = None,
    **options: Any,
) -> Scanner[Transcript]:
    """A Scout scanner that labels each transcript with the MAST failure modes.

    Args:
        model: the judge's litellm model string; ``None``: ``MAST_MODEL``, else the offline detectors.
        judge: ``auto``, ``llm``, ``detectors`` or ``both``.
        jury: several models (``"openai/a,anthropic/b"``, a list, or a jury YAML file).
        taxonomy: a built-in taxonomy version or a taxonomy file.
        **options: any other judge option (``api_base``, ``temperature``, ``samples``, ``cache``...).

    The provider key comes from the provider's usual variable or ``MAST_API_KEY``, never from an
    argument: Scout writes a scanner's arguments into the scan's spec.

    Raises:
        UsageError: unknown or invalid judge options, or an ``api_key`` argument.
    """
    return build_scan(model=model, judge=judge, jury=jury, taxonomy=taxonomy, **options)
