"""The registry of message dialects: how one message-like dict of a given spelling becomes :class:`Msg` s.

:func:`mast.normalize._messages.to_messages` reads chat messages in every spelling mast knows. The
built-in spellings (OpenAI, Anthropic, OTel GenAI parts, LangChain, Gemini, Vercel AI, Responses
items) are read in :mod:`mast.normalize._messages`; any other dialect registers here from a module
of its own named ``_dialect_<name>.py`` (imported at start-up by ``mast.normalize``)::

    register_dialect(MessageDialect(name="pydantic_ai", matches=is_model_message, read=read_model_message))

A registered dialect is asked first: ``matches`` must be cheap and exact (it sees every message of
every source), ``read`` returns the messages the dict holds (one dict may hold several: a request
with a system prompt, a user prompt and tool returns).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mast.normalize._messages import Msg


@dataclass(frozen=True)
class MessageDialect:
    """One spelling of chat messages."""

    name: str
    matches: Callable[[dict[str, Any]], bool]
    """True when a message dict is written in this dialect."""
    read: Callable[[dict[str, Any]], list[Msg]]
    """The messages the dict holds."""
    order: int = 50
    """Lower is asked first."""


_DIALECTS: dict[str, MessageDialect] = {}
_ORDERED: list[MessageDialect] = []


def register_dialect(dialect: MessageDialect) -> MessageDialect:
    """Add a message dialect (module import time)."""
    if dialect.name in _DIALECTS:
        raise ValueError(f"message dialect {dialect.name!r} registered twice")
    _DIALECTS[dialect.name] = dialect
    _ORDERED[:] = sorted(_DIALECTS.values(), key=lambda d: (d.order, d.name))
    return dialect


def dialects() -> list[MessageDialect]:
    """Registered dialects in the order they are asked."""
    return list(_ORDERED)


def dialect_of(item: dict[str, Any]) -> MessageDialect | None:
    """The registered dialect a message dict is written in, if any."""
    for dialect in _ORDERED:
        if dialect.matches(item):
            return dialect
    return None
