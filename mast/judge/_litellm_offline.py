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


def pin_offline() -> None:
    """Set :data:`OFFLINE_ENV` where the user has not set the variable."""
    for name, value in OFFLINE_ENV.items():
        os.environ.setdefault(name, value)


pin_offline()
