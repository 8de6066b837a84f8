"""--router files: litellm Router's own format, limits shared among the processes that build a Router."""

from __future__ import annotations

from pathlib import Path

import pytest

from mast.batch.router import load_router_config, router_group
from mast.errors import UsageError

ROUTER = """\
model_list:
  - model_name: judge
    litellm_params: {model: openai/gpt-4o-mini, api_key: a, rpm: 100, tpm: 9000}
  - model_name: judge
    litellm_params: {model: openai/gpt-4o-mini, api_key: b}
    rpm: 7
routing_strategy: least-busy
router_settings:
  num_retries: 2
  fallbacks: [{judge: [backup]}]
"""


def test_each_deployment_limit_is_divided_among_the_sharing_processes(tmp_path: Path) -> None:
    path = tmp_path / "router.yaml"
    path.write_text(ROUTER)
    whole = load_router_config(path)
    quarter = load_router_config(path, share=4)
    first, second = quarter["model_list"]
    assert whole["model_list"][0]["litellm_params"]["rpm"] == 100
    assert first["litellm_params"]["rpm"] == 25 and first["litellm_params"]["tpm"] == 2250
    assert second["rpm"] == 1  # 7 / 4 rounds down, but never to zero
    assert quarter["routing_strategy"] == "least-busy" and quarter["num_retries"] == 2
    assert quarter["fallbacks"] == [{"judge": ["backup"]}]
    assert router_group(quarter, "judge") == "judge" and router_group(quarter, None) == "judge"


def test_a_file_without_model_list_or_with_unknown_settings_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "router.yaml"
    path.write_text("routing_strategy: simple-shuffle\n")
    with pytest.raises(UsageError, match="model_list"):
        load_router_config(path)
    path.write_text(ROUTER + "  retry_everything: true\n")
    with pytest.raises(UsageError, match="retry_everything"):
        load_router_config(path)
