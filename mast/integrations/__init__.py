"""Bridges to other systems, each an optional extra imported only when used.

Trace stores where mast writes its verdicts besides ``results.jsonl``: Phoenix annotations
(``mast.integrations.phoenix``) and MLflow feedback (``mast.integrations.mlflow``, REST only), in
the shared wording of ``mast.integrations.verdicts``; they are reached as sinks
(:mod:`mast.sinks`). ``mast.integrations.ray`` is the Ray engine (:mod:`mast.engines`).
"""
