"""The judge: label a trace with the MAST failure modes (LLM through litellm, or offline detectors).

``classify`` / ``aclassify`` judge one trace; :class:`Judge` keeps a backend, a local model server
and the cache open across many. litellm is imported only when an LLM judge starts.
"""

from mast.judge.classify import Judge, aclassify, classify, judge_notice
from mast.judge.config import JudgeConfig

__all__ = ["Judge", "JudgeConfig", "aclassify", "classify", "judge_notice"]
