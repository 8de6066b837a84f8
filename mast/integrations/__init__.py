"""Where mast writes its verdicts besides ``results.jsonl``: observability stores (one module each)."""
