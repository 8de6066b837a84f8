"""The judge: label a trace with the MAST failure modes (LLM through litellm, or offline detectors)."""
