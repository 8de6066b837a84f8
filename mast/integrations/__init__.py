"""Bridges to other systems, each an optional extra imported only when used.

Observability stores (Phoenix, OTel) where mast writes its verdicts besides ``results.jsonl``, and
``mast.integrations.ray`` (labelling on a Ray cluster).
"""
