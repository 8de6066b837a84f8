"""The registry of message dialects: how one message-like dict of a given spelling becomes :class:`Msg` s.

:func:`mast.normalize._messages.to_messages` reads chat messages in every spelling mast knows. Each
spelling is a dialect registered here from a module of its own named ``_dialect_<name>.py``
(imported at start-up by ``mast.normalize``); the built-in ones (OpenAI chat, Anthropic, OTel GenAI
parts, LangChain, Gemini, Vercel AI, Responses items, Pydantic AI) are registered the same way::

    register_dialect(MessageDialect(name="pydantic_ai", matches=is_model_message, read=read_model_message, order=10))

Two questions are asked of a dict, separately:

* **Is it a message?** (:func:`is_message`) True when any dialect's ``is_message`` says so (by
  default its ``matches``). A list counts as a message list only when every item is a message.
* **Who reads it?** (:func:`dialect_of`) The first dialect, by ``order``, whose ``matches`` is true.
  ``matches`` must be cheap and exact (it sees every message of every source); ``read`` returns the
  messages the dict holds (one dict may hold several: a request with a system prompt, a user prompt
  and tool returns). OpenAI chat reads whatever no other dialect claims (``order`` 100).

Conversions are cached by ``mast.normalize._messages``: a dialect registered after messages were read
takes effect after :func:`~mast.normalize._messages.forget_history`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mast.normalize._msg_common import Msg


@dataclass(frozen=True)
class MessageDialect:
    """One spelling of chat messages."""

    name: str
    matches: Callable[[dict[str, Any]], bool]
    """True when this dialect reads the dict (asked in ``order``; the first that matches reads it)."""
    read: Callable[[dict[str, Any]], list[Msg]]
    """The messages the dict holds."""
    order: int = 50
    """Lower is asked first."""
    is_message: Callable[[dict[str, Any]], bool] | None = None
    """True when the dict counts as a message at all (``None``: the same as ``matches``)."""


_DIALECTS: dict[str, MessageDialect] = {}
_ORDERED: list[MessageDialect] = []
_RECOGNISERS: list[Callable[[dict[str, Any]], bool]] = []


def _reindex() -> None:
    _ORDERED[:] = sorted(_DIALECTS.values(), key=lambda d: (d.order, d.name))
    recognisers: list[Callable[[dict[str, Any]], bool]] = []
    # Membership does not depend on the order asked; the late, catch-all spellings (OpenAI chat)
    # are by far the commonest, so they are asked first.
    for dialect in reversed(_ORDERED):
        check = dialect.is_message or dialect.matches
        if all(check is not seen for seen in recognisers):  # dialects may share one predicate
            recognisers.append(check)
    _RECOGNISERS[:] = recognisers


def register_dialect(dialect: MessageDialect) -> MessageDialect:
    """Add a message dialect (module import time)."""
    if dialect.name in _DIALECTS:
        raise ValueError(f"message dialect {dialect.name!r} registered twice")
    _DIALECTS[dialect.name] = dialect
    _reindex()
    return dialect


def unregister_dialect(name: str) -> None:
    """Remove a dialect (tests and plugins that register one for a while)."""
    _DIALECTS.pop(name, None)
    _reindex()


def dialects() -> list[MessageDialect]:
    """Registered dialects in the order they are asked."""
    return list(_ORDERED)


def dialect_of(item: dict[str, Any]) -> MessageDialect | None:
    """The dialect that reads a message dict: the first, by ``order``, whose ``matches`` is true."""
    for dialect in _ORDERED:
        if dialect.matches(item):
            return dialect
    return None


def is_message(item: dict[str, Any]) -> bool:
    """True when some dialect counts the dict as a message."""
    for check in _RECOGNISERS:
        if check(item):
            return True
    return False
