"""Any supported trace file in, typed :class:`~mast.trace.Trace` s out.

Auto-detection asks every registered format how sure it is (0..1) and hands the input to the most
confident one; ``format=`` overrides it. ``mast formats`` lists them, each with an example.

Example:
    >>> from mast.normalize import load_trace
    >>> trace = load_trace([{"role": "user", "content": "fix the bug"}])
    >>> trace.source.format, trace.steps[0].content
    ('openai_chat', 'fix the bug')

Layout
------
The folder shows the four kinds of extension, each a subpackage, beside the shared core::

    mast/normalize/__init__.py   load_trace / iter_traces / detect_format: the entry points
    mast/normalize/base.py       RawInput (lazy bytes, JSON, JSONL), TraceFormat, the format registry
    mast/normalize/_*.py         the shared core: sniffing (_sniff), the one builder (_build), payload
                                 decoding (_payload), envelopes (_envelope), messages and their
                                 registry (_messages, _msg_common, _dialects), spans and their
                                 registry (_spans, _otel_attrs, _otel_dialects, _otlp_values), the
                                 framework-log registry and MAD payloads (_logs_common, _mad_logs)
    mast/normalize/file_formats/ one module per kind of file (a TraceFormat each)
    mast/normalize/logs/         framework logs: text a framework prints (ChatDev, MetaGPT, CrewAI...)
    mast/normalize/dialects/     message dialects: spellings of chat messages inside any format
    mast/normalize/spans/        span dialects: the attribute keys one tracing instrumentation writes

A format module is also reachable by its short name: ``mast.normalize.otlp`` is
``mast.normalize.file_formats.otlp``. (The subpackage is not called ``formats``: that name is
the function listing the registered formats.)

How to extend it
----------------
Four kinds of extension register themselves when their module is imported, and this package
imports every module of its four subpackages at start-up (``logs``, ``dialects`` and ``spans``
first, then ``file_formats``). Adding one is one new module plus its tests; nothing else is edited.

* **A format** (a kind of file): a module ``file_formats/<name>.py`` with a :class:`TraceFormat` subclass
  (``name``, ``description``, ``example``, ``priority``, ``detect``, ``parse``) and ``register(...)``.
* **A framework log** (text a framework prints, read on its own and inside MAD records): a module
  ``logs/<name>.py`` calling :func:`~mast.normalize._logs_common.register_log` with a
  :class:`~mast.normalize._logs_common.FrameworkLog` (``sniff``, ``parse`` returning a
  :class:`~mast.normalize._logs_common.LogParse`, ``framework``, the MAD ``mas_names`` it serves).
  The ``framework_log`` format and the MAD reader find it in the registry.
* **A span dialect** (the attribute keys one tracing instrumentation writes on its spans): a module
  ``spans/<name>.py`` calling :func:`~mast.normalize._otel_dialects.register_span_dialect` with a
  :class:`~mast.normalize._otel_dialects.SpanDialect`: the key prefixes that mark its spans, rules
  that read the span kind, readers that turn attributes into messages, and for each field (agent,
  tool, model, token counts...) the keys that hold it, ranked against the other dialects' keys.
  Every format that reads span attributes (OTLP, Langfuse, Vercel AI SDK...) then reads it.
  For example ``spans/acme.py``::

      from typing import Any

      from mast.normalize._otel_attrs import input_messages, output_messages
      from mast.normalize._otel_dialects import SpanDialect, SpanReading, register_span_dialect


      def acme_kind(attrs: dict[str, Any], used: set[str]) -> str | None:
          step = attrs.get("acme.step")
          return {"model_call": "llm", "action": "tool"}.get(step) if isinstance(step, str) else None


      def acme_messages(span: SpanReading) -> None:
          if span.inputs is None:
              span.inputs = input_messages(span.take("acme.prompt"))
          if span.outputs is None:
              span.outputs = output_messages(span.take("acme.reply"))


      register_span_dialect(SpanDialect(
          name="acme", prefixes=("acme.",), kinds=((25, acme_kind),), messages=((25, acme_messages),),
          fields={"agent": ((25, "acme.agent"),), "model": ((25, "acme.model"),), "tool_name": ((25, "acme.tool"),),
                  "input_tokens": ((25, "acme.tokens.in"),), "output_tokens": ((25, "acme.tokens.out"),)},
          flat_markers=("acme.step",), flat_prefixes=("acme.",),  # a bare {"acme.step": ...} dict is a span too
      ))

* **A message dialect** (a spelling of chat messages inside any format): a module
  ``dialects/<name>.py`` calling :func:`~mast.normalize._dialects.register_dialect` (``matches``,
  ``read``, ``order``; ``is_message`` when counting as a message differs from being read). The
  built-in dialects (OpenAI chat, Anthropic, OTel GenAI, LangChain, Gemini, Vercel AI, Responses,
  Pydantic AI) are such modules too; every format that reads messages
  (:func:`~mast.normalize._messages.to_messages`) asks the registry.

Whatever the source, the trace is assembled by one builder,
:func:`~mast.normalize._build.assemble_trace`: the format passes its steps and what the source
states (id, task, answer, usage); agents, usage totals, the task (first user message) and the final
output (closing assistant answer) are derived the same way for every format when the source is
silent. Envelope fields of wrapping records (``trace_id``, ``task``, ``outcome``...) are read by
:mod:`~mast.normalize._envelope`; strings holding JSON, Python literals or YAML-like dumps are
decoded by :mod:`~mast.normalize._payload` (size and depth limited); what cannot be read falls back
to text with a warning in :attr:`Trace.warnings`.

Worked example: a new format for a tool that writes ``{"run": ..., "turns": [{"who", "said"}]}``,
saved as ``mast/normalize/file_formats/turnlog.py``::

    from collections.abc import Iterator

    from mast.errors import TraceFormatError
    from mast.normalize import RawInput, TraceFormat, assemble_trace, register, sniffed_json
    from mast.trace import Step, Trace


    class TurnLog(TraceFormat):
        name = "turnlog"
        description = "TurnLog runs: {run, turns: [{who, said}]}"
        example = '{"run": "r1", "turns": [{"who": "planner", "said": "..."}]}'
        priority = 70

        def detect(self, raw: RawInput) -> float:
            data = sniffed_json(raw, '"turns"')  # decided from the file's head first: cheap
            return 0.9 if isinstance(data, dict) and isinstance(data.get("turns"), list) else 0.0

        def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
            data = raw.data()
            steps = [Step(index=i, kind="message", agent=t["who"], role="user" if t["who"] == "user" else "assistant",
                          content=t["said"]) for i, t in enumerate(data["turns"])]
            yield assemble_trace(steps, source=self.source(raw), trace_id=str(data["run"]), framework="turnlog")


    register(TurnLog())

Then ``load_trace("run.json")`` detects it, ``mast formats`` lists it, and its tests go in
``tests/test_normalize_turnlog.py``. A framework log is added the same way: see
``logs/crewai.py`` (CrewAI's verbose console output), which was added as one module and a test.

From another package, the same class without the ``register`` call, named by an entry point in
that package's ``pyproject.toml``; mast imports it the first time it lists or detects formats, and
it joins detection with its own ``priority`` (a plugin that fails to import is skipped with a
one-line warning naming its distribution)::

    [project.entry-points."mast.formats"]
    turnlog = "acme_mast.turnlog:TurnLog"
"""

from __future__ import annotations

import importlib
import logging
import os
import pkgutil
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, cast

from mast._outputs import terminal_safe
from mast.caps import CapExceeded, FileBudget, charging
from mast.errors import MastError, TraceFormatError, UsageError, one_line
from mast.normalize._build import assemble_trace
from mast.normalize._sniff import sniffed_json
from mast.normalize.base import RawInput, TraceFormat, formats, get_format, register
from mast.trace import Trace, field_notes

_END = object()

EXTENSION_PACKAGES = ("logs", "dialects", "spans", "file_formats")
"""Subpackages whose modules register an extension when imported, in import order: framework logs,
message dialects and span dialects first, then the formats that use them."""


def _import_extension_modules() -> None:
    """Import every module of the extension subpackages; importing one registers what it defines.

    Priority, not import order, decides which format wins a tie. Each format module is also
    bound as ``mast.normalize.<name>`` (its short, public path).
    """
    for package in EXTENSION_PACKAGES:
        pkg = importlib.import_module(f"{__name__}.{package}")
        for name in sorted(module.name for module in pkgutil.iter_modules(pkg.__path__)):
            module = importlib.import_module(f"{pkg.__name__}.{name}")
            if package == "file_formats" and not name.startswith("_"):
                sys.modules.setdefault(f"{__name__}.{name}", module)
                globals().setdefault(name, module)


_import_extension_modules()

__all__ = [
    "RawInput",
    "TraceFormat",
    "assemble_trace",
    "detect_format",
    "formats",
    "get_format",
    "iter_paths",
    "link_leaves",
    "iter_traces",
    "load_trace",
    "load_traces",
    "register",
    "sniffed_json",
]

DETECT_THRESHOLD = 0.3
"""Below this confidence no format is chosen and the input is rejected with the reasons."""

TRACE_SUFFIXES = frozenset({".eval", ".json", ".jsonl", ".ndjson", ".yaml", ".yml", ".traj", ".txt", ".log"})
"""File name endings :func:`iter_paths` picks up when walking folders."""


def looks_like_path(text: str) -> bool:
    """Whether a string given as input names a file (one short line) rather than holding JSON text."""
    return "\n" not in text and len(text) < 4096 and not text.lstrip().startswith(("{", "["))


def _raw(source: str | os.PathLike[str] | Any) -> RawInput:
    """Wrap a path (``Path`` or a one-line string) or an in-memory object as a :class:`RawInput`."""
    if isinstance(source, RawInput):
        return source
    if isinstance(source, os.PathLike) or (isinstance(source, str) and looks_like_path(source)):
        path = Path(source)
        if path.is_dir():
            raise UsageError(
                f"{path} is a folder, not a trace file; iter_paths() lists the files in a folder"
            )
        if not path.is_file():
            if path.is_symlink():
                raise TraceFormatError("symbolic link that leads nowhere (broken, or a loop)", path=str(path))
            if path.exists():
                # A FIFO would block the reader forever; devices and sockets are no traces either.
                raise TraceFormatError("not a regular file (a pipe, socket or device)", path=str(path))
            raise TraceFormatError("no such file", path=str(path))
        # Opened now and read from that descriptor only: a name the caller gave may be a link (followed),
        # but what is read is the regular file opened here, never a link swapped in later.
        return RawInput.from_path(path, follow=True)
    return RawInput.from_object(source)


def detect_format(source: str | os.PathLike[str] | Any) -> tuple[TraceFormat, float]:
    """The format auto-detection would choose for ``source`` and its confidence.

    Raises:
        TraceFormatError: when no format is confident enough; the message lists what was tried.
    """
    raw = _raw(source)
    scores: list[tuple[float, int, TraceFormat]] = []
    capped: CapExceeded | None = None
    for fmt in formats():
        try:
            with charging(FileBudget()):  # a detector's sniffing has a budget of its own, per format
                score = float(fmt.detect(raw))
        except CapExceeded as exc:  # the input would expand past a cap: said below if nothing else reads it
            capped, score = exc, 0.0
        except Exception:  # noqa: BLE001 - a detector must never decide for the others
            score = 0.0
        if score >= 1.0:
            return fmt, 1.0
        scores.append((score, -fmt.priority, fmt))
    score, _, best = max(scores, key=lambda item: (item[0], item[1]))
    if score < DETECT_THRESHOLD and capped is not None:
        raise raw.fail(f"not read: {capped}") from capped
    if score < DETECT_THRESHOLD:
        try:
            raw.data()
        except TraceFormatError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise raw.fail(f"unreadable: {exc}") from exc
        data = raw.data()
        if isinstance(data, str) and raw.kind == "json":
            raise raw.fail(
                "holds a JSON string, not an object: the trace is JSON encoded twice; decode it once"
            )
        shape = _describe(data)
        tried = ", ".join(f.name for f in formats())
        raise raw.fail(
            f"no known trace format matches {shape} (tried: {tried}); pass --format NAME (format= in Python) to force one"
        )
    return best, score


def _describe(data: Any) -> str:
    if isinstance(data, dict):
        keys = ", ".join(list(map(str, data))[:6])
        return f"a JSON object with keys [{keys}]"
    if isinstance(data, list):
        first = data[0] if data else None
        inner = f" of {type(first).__name__}" if first is not None else " (empty)"
        if isinstance(first, dict):
            inner = f" of objects with keys [{', '.join(list(map(str, first))[:6])}]"
        return f"a list{inner}"
    return f"a bare JSON {type(data).__name__}"


def iter_traces(
    source: str | os.PathLike[str] | Any, format: str = "auto"
) -> Iterator[Trace | TraceFormatError]:
    """Yield every trace in a file or object; a broken record yields its :class:`TraceFormatError`.

    Raises:
        TraceFormatError: when the input as a whole cannot be read or recognised.
    """
    raw = _raw(source)
    if format == "auto":
        fmt, confidence = detect_format(raw)
    else:
        fmt, confidence = get_format(format), None
    for item in _parse_guarded(fmt, raw):
        if isinstance(item, Trace):
            item.source.confidence = confidence
            # What reading the bytes cost (replaced bytes...), said on every trace of the input.
            if raw.warnings:
                item.warnings[:0] = [w for w in raw.warnings if w not in item.warnings]
        yield item


def _parse_guarded(fmt: TraceFormat, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
    """Run a format's parser, turning any non-:class:`MastError` it raises into a TraceFormatError.

    This is the one boundary for every normaliser; the error names the format.

    Input the parser did not foresee (a number where it wanted a dict, nesting deeper than the
    interpreter's recursion limit, a 50 MB line) must end as a one-line error for that file, never as
    a traceback that stops a batch.
    """
    # One budget for the whole file: every record's expansions (bodies, members, attachments) count.
    budget = FileBudget()
    try:
        items = iter(fmt.parse(raw))
        while True:
            # Odd field values converted to fit the schema are said on the trace (field_notes).
            with field_notes() as notes, charging(budget):
                item = next(items, _END)
            if item is _END:
                return
            if notes and isinstance(item, Trace):
                item.warnings.extend(
                    f"{note} (the trace was kept)"
                    for note in notes
                    if f"{note} (the trace was kept)" not in item.warnings
                )
            yield cast("Trace | TraceFormatError", item)
    except MastError:
        raise
    except CapExceeded as exc:
        raise raw.fail(f"{fmt.name}: not read: {exc}") from exc
    except RecursionError as exc:
        raise raw.fail(f"{fmt.name}: input nested too deeply to read") from exc
    except MemoryError as exc:
        raise raw.fail(f"{fmt.name}: input too large to read in memory") from exc
    except Exception as exc:  # noqa: BLE001 - translated once, here, with the cause chained
        raise raw.fail(f"{fmt.name}: cannot read this input ({type(exc).__name__}: {one_line(exc)})") from exc


def load_traces(source: str | os.PathLike[str] | Any, format: str = "auto") -> list[Trace]:
    """Every trace in a file or object (a MAD list or a JSONL file holds many).

    Raises:
        TraceFormatError: when the input cannot be read, or any record is broken (use
            :func:`iter_traces` to keep the good records and get the errors one by one).
    """
    traces: list[Trace] = []
    for item in iter_traces(source, format):
        if isinstance(item, TraceFormatError):
            raise item
        traces.append(item)
    if not traces:
        raise TraceFormatError(
            "input holds no traces", path=str(source) if isinstance(source, str | os.PathLike) else None
        )
    return traces


def load_trace(source: str | os.PathLike[str] | Any, format: str = "auto") -> Trace:
    """Read exactly one trace from a path or an in-memory object.

    Args:
        source: a file path, or an already parsed object (message list, OTLP dict, MAD record...).
        format: a name from ``mast formats``, or ``auto`` to detect it.

    Raises:
        TraceFormatError: unreadable input, unknown format, or a file holding several traces.
    """
    items = iter_traces(source, format)
    first = next(items, None)
    if first is None:
        raise TraceFormatError("input holds no trace")
    if isinstance(first, TraceFormatError):
        raise first
    if next(items, None) is not None:
        raise TraceFormatError("input holds several traces; use load_traces()", path=first.source.path)
    return first


def iter_paths(
    paths: Iterable[str | os.PathLike[str]], *, recursive: bool = True, follow_symlinks: bool = False
) -> Iterator[Path]:
    """Files to read under ``paths``: files as given, folders walked in sorted order.

    A path given is read as named, a symbolic link to a folder too (walked like the folder). Inside a
    folder, hidden entries are skipped, symbolic links to folders are not followed (no loops), and only
    names ending in :data:`TRACE_SUFFIXES` are picked up inside folders. A link to a file outside
    the folder walked is skipped, with one logged line (``follow_symlinks`` reads it): a trace
    archive holding a link to ``~/.aws/credentials`` must not send that file to the judge.

    Raises:
        UsageError: when a path does not exist.
    """
    for given in paths:
        path = Path(given)
        if not path.is_dir() and (path.is_file() or path.is_symlink() or path.exists()):
            yield path  # a pipe or a broken link too: reading it gives the one-line reason
        elif path.is_dir():
            top = path.resolve()
            for root, dirs, files in os.walk(path, followlinks=False):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if recursive else []
                for name in sorted(files):
                    file = Path(root) / name
                    if name.startswith(".") or file.suffix.lower() not in TRACE_SUFFIXES:
                        continue
                    if not follow_symlinks and link_leaves(file, top):
                        logging.getLogger("mast").warning(
                            "mast: skipped %s: a link that leaves the folder (follow_symlinks reads it)",
                            terminal_safe(file),
                        )
                        continue
                    yield file
        else:
            raise UsageError(f"{path}: no such file or folder")


def link_leaves(file: Path, top: Path) -> bool:
    """Whether ``file`` is a symbolic link whose target lies outside the folder ``top`` (resolved)."""
    if not file.is_symlink():
        return False
    try:
        target = file.resolve()
    # A loop leads nowhere, so nothing leaks: read, and reported with its reason.
    except (OSError, RuntimeError):
        return False
    return not target.is_relative_to(top)
