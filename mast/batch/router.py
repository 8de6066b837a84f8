"""Spread a batch's calls over many keys, regions and providers with a litellm ``Router``.

``--router ROUTER.yaml`` takes litellm Router's own configuration: a ``model_list`` of deployments
(several entries may share one ``model_name``: the same model behind different keys or providers),
each with its ``litellm_params`` and optional ``rpm``/``tpm``, and router settings either at the top
level or under ``router_settings`` (``routing_strategy``, ``fallbacks``, ``num_retries``,
``allowed_fails``, ``cooldown_time``...)::

    model_list:
      - model_name: judge
        litellm_params: {model: openai/gpt-4.1-mini, api_key: os.environ/OPENAI_KEY_A, rpm: 500}
      - model_name: judge
        litellm_params: {model: azure/gpt-4.1-mini, api_base: https://..., api_key: os.environ/AZURE_KEY, rpm: 300}
    router_settings:
      routing_strategy: simple-shuffle
      num_retries: 3
      fallbacks: [{judge: [judge-backup]}]

The judge's model (``--model``) names the group to call (``judge`` above); when it is not a
``model_name`` in the file, the first one is used.

**Rate limits across processes.** Each process (each Ray actor) builds its own Router from the same
file, with every deployment's ``rpm`` and ``tpm`` divided by the number of processes sharing it
(:func:`load_router_config` ``share=``). No Redis is needed and the sum never passes the
deployment's limit; the price is that an idle actor's share is not lent to a busy one, which at
the scale of a batch (every actor busy until the end) costs little. A deployment that answers 429
is put in cooldown by the Router of the actor that saw it, which then sends its traffic elsewhere.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import yaml

from mast.errors import UsageError
from mast.judge.classify import Judge
from mast.judge.config import JudgeConfig

ROUTER_SETTINGS = ("routing_strategy", "fallbacks", "context_window_fallbacks", "num_retries", "allowed_fails",
                   "cooldown_time", "retry_after", "timeout", "routing_strategy_args", "default_fallbacks")
"""Router keyword arguments read from the file (top level or ``router_settings``)."""


def load_router_config(path: str | os.PathLike[str], *, share: int = 1) -> dict[str, Any]:
    """The Router's keyword arguments from a YAML file, each deployment's rpm/tpm divided by ``share``.

    Raises:
        UsageError: the file cannot be read or has no ``model_list``.
    """
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(f"--router {path}: cannot read it ({' '.join(str(exc).split())})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("model_list"), list) or not data["model_list"]:
        raise UsageError(f"--router {path}: expected a YAML mapping with a non-empty model_list")
    settings = {**{k: v for k, v in data.items() if k in ROUTER_SETTINGS}, **(data.get("router_settings") or {})}
    unknown = set(settings) - set(ROUTER_SETTINGS)
    if unknown:
        raise UsageError(f"--router {path}: unknown router setting(s): {', '.join(sorted(unknown))}")
    deployments = []
    for number, entry in enumerate(data["model_list"], start=1):
        if not isinstance(entry, dict) or "model_name" not in entry or not isinstance(entry.get("litellm_params"), dict):
            raise UsageError(f"--router {path}: model_list entry {number} needs model_name and litellm_params")
        deployments.append(_shared(entry, share))
    return {"model_list": deployments, **settings}


def _shared(entry: dict[str, Any], share: int) -> dict[str, Any]:
    entry = {**entry, "litellm_params": dict(entry["litellm_params"])}
    for holder in (entry, entry["litellm_params"]):
        for limit in ("rpm", "tpm"):
            if holder.get(limit):
                holder[limit] = max(1, math.floor(float(holder[limit]) / share))
    return entry


def router_group(config: dict[str, Any], model: str | None) -> str:
    """The ``model_name`` to call: the judge's model when the file names it, else the first one."""
    names = [entry["model_name"] for entry in config["model_list"]]
    return model if model is not None and model in names else str(names[0])


def router_judge(config: JudgeConfig, router_file: str | os.PathLike[str], *, share: int = 1) -> Judge:
    """The LLM judge of ``config``, calling through a Router built from ``router_file``.

    Raises:
        UsageError: a bad router file, or a judge kind that calls no model (``detectors``).
    """
    if config.kind == "detectors":
        raise UsageError("--router needs an LLM judge (--judge detectors calls no model)")
    from mast.judge.jury import is_jury

    if is_jury(config):
        raise UsageError("--router takes one judge model, not a jury")
    settings = load_router_config(router_file, share=share)
    group = router_group(settings, config.model)
    config = config.model_copy(update={"model": group})
    from mast.judge.backend_router import router_backend

    return Judge(config, backend=router_backend(config, settings))
