"""Discover the failure modes of your own domain: MAST-14 extended with modes that pass an agreement gate.

:func:`discover` (``mast discover TRACES -o DIR``) judges the traces with MAST-14 (or reuses a results
file), open-codes what the modes found do not explain (the whole trace, in windows of whole steps,
each code with a quote verified against its step), groups the codes (scikit-learn: TF-IDF and
agglomerative clustering) and has the model name and define each group, refuses groups below a
minimum prevalence and catch-alls, then gates every candidate on traces it was not built from: two
annotators label that part with MAST-14 plus the candidates, and a mode is accepted when the lower
bound of its kappa bootstrap CI (:mod:`mast.evaluation`) reaches the threshold. A mode below it is
merged with the mode it is confused with, or revised once and gated again, or kept as a candidate;
every decision carries its figures. The same discovery on the other half measures stability, and a
saturation curve shows whether more traces would find more.

Outputs in the folder: ``taxonomy.yaml`` (usable as ``mast label --taxonomy``), ``candidates.yaml``,
``report.html``, ``manifest.json``; ``work/`` holds what a rerun resumes from.

Example:
    >>> import mast
    >>> result = mast.discover(["runs/"], "discovered", model="openai/gpt-4.1-mini")   # doctest: +SKIP
    >>> [(m.code, m.name, m.relation) for m in result.accepted]                       # doctest: +SKIP
"""

from mast.discovery.estimate import DiscoveryPlan, plan_discovery
from mast.discovery.models import Candidate, Example, GateFigures, OpenCode
from mast.discovery.run import DiscoverOptions, DiscoveryResult, adiscover, discover

__all__ = [
    "Candidate",
    "DiscoverOptions",
    "DiscoveryPlan",
    "DiscoveryResult",
    "Example",
    "GateFigures",
    "OpenCode",
    "adiscover",
    "discover",
    "plan_discovery",
]
