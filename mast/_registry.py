"""One registry shape for every extension point: formats, sources, sinks, engines.

A :class:`Registry` maps names to entries, each either the object itself or a lazy
``"module:attribute"`` string imported the first time it is asked for. Other packages join
through an entry-point group, read once, lazily, the first time the registry lists its names or
misses a name::

    mast.formats   a TraceFormat instance        (name: the format's name)
    mast.sources   an opener, url -> TraceSource  (name: the URL scheme)
    mast.sinks     an opener, SinkContext -> Sink (name: the sink's name)
    mast.engines   an engine function             (name: the engine's name)

A plugin's ``pyproject.toml``::

    [project.entry-points."mast.engines"]
    threaded = "acme_mast.engine:threaded"

A plugin that cannot be imported is skipped with a one-line warning naming its distribution;
mast itself goes on working.

Example:
    >>> from mast._registry import Registry
    >>> colours = Registry("colour", group="example.colours", builtins={"red": "builtins:str"})
    >>> colours.register("blue", int)
    >>> colours.names()
    ['blue', 'red']
    >>> colours.get("red")
    <class 'str'>
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar, cast

from mast.errors import UsageError

__all__ = ["Registry"]

T = TypeVar("T")

log = logging.getLogger("mast.plugins")


@dataclass(frozen=True)
class _Plugin:
    """An entry from an entry point, not imported yet."""

    point: EntryPoint

    @property
    def distribution(self) -> str:
        dist = self.point.dist
        return dist.name if dist is not None else "an unknown distribution"


class Registry(Generic[T]):
    """Entries by name; lazy ``"module:attribute"`` strings and entry-point plugins imported on first use.

    ``kind`` names the thing in messages (``unknown engine 'x' (known: local, ray)``); ``group`` is
    the entry-point group plugins join; ``on_plugin``, when given, checks each plugin entry as it is
    imported and returns what is registered (raising skips the plugin), and makes every plugin load
    when the names are first listed (formats: a reader must be imported to join detection).
    """

    def __init__(
        self,
        kind: str,
        *,
        group: str,
        builtins: Mapping[str, T | str] | None = None,
        on_plugin: Callable[[str, object], T] | None = None,
    ) -> None:
        self.kind = kind
        self.group = group
        self._entries: dict[str, T | str | _Plugin] = dict(builtins or {})
        self._on_plugin = on_plugin
        self._plugins_read = False

    def register(self, name: str, obj: T | str) -> None:
        """Make ``name`` stand for ``obj`` (or the ``"module:attribute"`` it names), replacing any entry."""
        self._entries[name] = obj

    def unregister(self, name: str) -> None:
        """Forget ``name`` (nothing happens if it is not registered)."""
        self._entries.pop(name, None)

    def copy(self) -> Registry[T]:
        """A registry with the same entries (plugins read or not), to change without touching this one."""
        other: Registry[T] = Registry(self.kind, group=self.group, on_plugin=self._on_plugin)
        other._entries = dict(self._entries)
        other._plugins_read = self._plugins_read
        return other

    def registered(self, name: str) -> bool:
        """Whether ``name`` is registered already (plugins not read, a plugin not yet imported not counted)."""
        return name in self._entries and not isinstance(self._entries[name], _Plugin)

    def names(self) -> list[str]:
        """Every registered name, plugins included, sorted."""
        self._read_plugins()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        """Whether ``name`` is registered (plugins read on a miss)."""
        if name not in self._entries:
            self._read_plugins()
        return name in self._entries

    def find(self, name: str) -> T | None:
        """The entry ``name``, imported if lazy; ``None`` when there is none (or its plugin is broken)."""
        if name not in self:
            return None
        entry = self._entries[name]
        if isinstance(entry, _Plugin):
            return self._load_plugin(name, entry)
        if isinstance(entry, str):
            module, _, attribute = entry.partition(":")
            loaded = importlib.import_module(module)
            found = cast(T, getattr(loaded, attribute) if attribute else loaded)
            self._entries[name] = found
            return found
        return entry

    def get(self, name: str) -> T:
        """The entry ``name``.

        Raises:
            UsageError: no such entry (the message names the known ones).
        """
        found = self.find(name)
        if found is None:
            raise UsageError(f"unknown {self.kind} {name!r} (known: {', '.join(self.names())})")
        return found

    def values(self) -> Iterator[tuple[str, T]]:
        """Every entry, imported (a broken plugin skipped), by name."""
        for name in self.names():
            found = self.find(name)
            if found is not None:
                yield name, found

    def _read_plugins(self) -> None:
        if self._plugins_read:
            return
        self._plugins_read = True
        for point in entry_points(group=self.group):
            self._entries.setdefault(point.name, _Plugin(point))  # a built-in keeps its name
        if self._on_plugin is not None:  # e.g. formats: a reader joins detection once imported
            for name, entry in list(self._entries.items()):
                if isinstance(entry, _Plugin):
                    self._load_plugin(name, entry)

    def _load_plugin(self, name: str, plugin: _Plugin) -> T | None:
        try:
            loaded = plugin.point.load()
            found = self._on_plugin(name, loaded) if self._on_plugin is not None else cast(T, loaded)
        except Exception as exc:  # a broken plugin never stops mast
            self._entries.pop(name, None)
            reason = str(exc).splitlines()[0] if str(exc) else ""
            log.warning(
                "mast: skipped the %s plugin %r of %s (%s: %s)",
                self.kind,
                name,
                plugin.distribution,
                type(exc).__name__,
                reason,
            )
            return None
        self._entries[name] = found
        return found
