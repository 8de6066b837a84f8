"""Keep litellm off the network except for the model call: imported before every ``import litellm``.

litellm fetches on its own, at import or on first use, a price map, Anthropic beta headers, blog
posts and Hugging Face tokenizers. Each has a bundled copy or can be skipped, and each is switched by
an environment variable read when it happens, so these must be set before litellm is imported.
``setdefault``: a user who sets one of them explicitly keeps their choice.
"""

from __future__ import annotations

import os

OFFLINE_ENV: dict[str, str] = {
    # Every catalog, check or tokenizer litellm would download on its own uses its bundled copy or is skipped.
    "LITELLM_OFFLINE_MODE": "true",
    # Older litellm releases know only the per-feature switches; they cost nothing on newer ones.
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
    "LITELLM_LOCAL_BLOG_POSTS": "True",
}
"""The variables set (unless already set) before litellm is imported."""


def _no_hub_lookup(model_name: str) -> None:
    """What litellm's hub lookup answers once unhooked: the size is unknown (``--context-window`` sets it)."""
    del model_name


def unhook_hub_lookups(litellm_module: object) -> None:
    """Stop litellm fetching a ``huggingface/`` model's ``config.json`` from the hub, after it is imported.

    Inside every call, and for every model-info lookup, litellm asks the hub how long a Hugging
    Face model's context is (``litellm.utils._get_max_position_embeddings``); no variable switches it
    off, offline mode included. Replacing that one private function is the only way to keep the
    call's own traffic the only traffic; when a litellm release renames it, this does nothing and
    tests/test_defaults.py's network audit says so.
    """
    utils = getattr(litellm_module, "utils", None)
    if utils is not None and hasattr(utils, "_get_max_position_embeddings"):
        utils._get_max_position_embeddings = _no_hub_lookup


def pin_offline() -> None:
    """Set :data:`OFFLINE_ENV` where the user has not set the variable."""
    for name, value in OFFLINE_ENV.items():
        os.environ.setdefault(name, value)


pin_offline()
