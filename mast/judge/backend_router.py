"""The LLM backend through ``litellm.Router``: calls spread over several deployments of one model.

Part of the backend seam (with :mod:`mast.judge.backend` and :mod:`mast.judge.backend_errors`, the
only modules that import litellm). ``mast label --router FILE`` builds it from a Router YAML file
(:mod:`mast.batch.router` reads and checks the file).
"""

from __future__ import annotations

from typing import Any

# isort: off
# mast.judge.backend pins litellm offline before its first import (mast.judge._litellm_offline).
from mast.judge.backend import LiteLLMBackend
from litellm.router import Router

# isort: on
from mast.judge.backend_errors import translate_error
from mast.judge.config import JudgeConfig

__all__ = ["router_backend"]


def router_backend(config: JudgeConfig, settings: dict[str, Any]) -> LiteLLMBackend:
    """A :class:`~mast.judge.backend.LiteLLMBackend` whose calls go through a Router built from ``settings``."""

    class RouterBackend(LiteLLMBackend):
        """Sends each completion to the Router: it picks a deployment, retries, cools down, falls back."""

        router = Router(**settings)

        async def complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
            request = self._request(messages, kwargs["output"], kwargs["mode"], kwargs["max_tokens"])
            for name in ("api_base", "api_key", "num_retries", "max_retries"):
                request.pop(name, None)  # the deployments hold their own; retries are the Router's
            try:
                response = await self.router.acompletion(**request)
            except Exception as exc:
                raise translate_error(exc, model=self.model, attempts=1) from exc
            return self._completion(response, 1)

    return RouterBackend.from_config(config, api_base=None, api_key=None)
