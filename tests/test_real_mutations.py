"""Every real file of ``tests/data/real/``, mutated as the wild mutates files: still a trace that says what it lost, or one line of error.

Mutations: cut at a random point, a key dropped, a value retyped (a list where text was, a number,
null, an object), the document wrapped in an envelope, a nested payload re-encoded as a JSON string,
colour codes added, a stray byte inserted. Whatever comes out must be traces (with warnings where
something was lost) or :class:`~mast.errors.TraceFormatError` s whose message is one line: never
another exception, and never one step holding the whole input without a warning.

Bounded (``max_examples``) and derandomised so the fast tier stays fast and repeatable.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from _real import RealFile, real_files
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mast.errors import TraceFormatError
from mast.normalize import iter_traces
from mast.trace import Trace

FILES = [f for f in real_files() if f.golden is not None]
STRUCTURED = [f for f in FILES if f.path.suffix in (".json", ".traj", ".jsonl", ".yaml", ".yml")]
BINARY_SUFFIXES = (".eval",)
"""Zip files (Inspect logs): cuts and flipped bytes apply to them, the text mutations (stray UTF-8, colour codes) do not."""
TEXTUAL = [f for f in FILES if f.path.suffix not in BINARY_SUFFIXES]
TEXT_SUFFIXES = (".log", ".txt", ".md")
SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _read(item: RealFile, blob: bytes, tmp: Path) -> tuple[list[Trace], list[TraceFormatError]]:
    """Read a mutated copy (same file name, so the same suffix rules apply): traces and per-record errors."""
    path = tmp / item.path.name
    path.write_bytes(blob)
    traces: list[Trace] = []
    errors: list[TraceFormatError] = []
    try:
        for got in iter_traces(path):
            (traces if isinstance(got, Trace) else errors).append(got)  # type: ignore[arg-type]
    except TraceFormatError as exc:
        errors.append(exc)
    return traces, errors


def _check(item: RealFile, blob: bytes, traces: list[Trace], errors: list[TraceFormatError]) -> None:
    for error in errors:
        assert "\n" not in str(error), f"{item.id}: error of more than one line: {error!s:.300}"
    size = len(blob.decode("utf-8", "replace"))
    for trace in traces:
        if len(trace.steps) == 1 and size > 400 and len(trace.steps[0].content) >= 0.8 * size:
            assert trace.warnings, f"{item.id}: one step holds the whole input and no warning says why"


# --- structured mutations -------------------------------------------------------------------------


def _load(item: RealFile, blob: bytes) -> Any:
    text = blob.decode("utf-8")
    if item.path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if item.path.suffix in (".yaml", ".yml"):
        return yaml.safe_load(text)
    # A CLI's export may print a line before its JSON (`opencode export`: "Exporting session: ...");
    # the mutations work on the document, which is written back without that line.
    start = re.search(r"^[\[{]", text, re.M)
    return json.loads(text[start.start() :] if start else text)


def _dump(item: RealFile, data: Any) -> bytes:
    if item.path.suffix == ".jsonl":
        return ("\n".join(json.dumps(r, ensure_ascii=False) for r in data) + "\n").encode()
    if item.path.suffix in (".yaml", ".yml"):
        return yaml.safe_dump(data, allow_unicode=True, sort_keys=False).encode()
    return json.dumps(data, ensure_ascii=False).encode()


def _slots(value: Any, limit: int = 4000) -> list[tuple[Any, Any]]:
    """(container, key) for every value inside ``value``, breadth first, at most ``limit``."""
    out: list[tuple[Any, Any]] = []
    queue = [value]
    while queue and len(out) < limit:
        node = queue.pop(0)
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in items:
            out.append((node, key))
            if isinstance(child, dict | list):
                queue.append(child)
    return out


RETYPES: list[Any] = [["a", "b"], 7, None, {"x": 1}, True, "", 1.5]


@SETTINGS
@given(item=st.sampled_from(STRUCTURED), how=st.sampled_from(["drop", "retype", "stringify", "envelope"]), data=st.data())
def test_structured_mutations_end_in_traces_or_one_line_errors(tmp_path_factory: Any, item: RealFile, how: str, data: st.DataObject) -> None:
    original = item.path.read_bytes()
    document = _load(item, original)
    slots = _slots(document)
    if how == "envelope":
        mutated: Any = data.draw(st.sampled_from([{"data": document}, {"trace": document}, {"result": document, "ok": True}]))
        if item.path.suffix == ".jsonl":
            mutated = [mutated]
    elif not slots:
        return
    else:
        container, key = slots[data.draw(st.integers(0, len(slots) - 1))]
        if how == "drop":
            if isinstance(container, dict):
                del container[key]
            else:
                container.pop(key)
        elif how == "retype":
            container[key] = data.draw(st.sampled_from(RETYPES))
        else:  # a nested payload re-encoded as a JSON string, as exporters often do
            container[key] = json.dumps(container[key], ensure_ascii=False, default=str)
        mutated = document
    blob = _dump(item, mutated)
    traces, errors = _read(item, blob, tmp_path_factory.mktemp("m"))
    _check(item, blob, traces, errors)


# --- byte and text mutations ----------------------------------------------------------------------


@SETTINGS
@given(item=st.sampled_from(FILES), data=st.data())
def test_a_file_cut_anywhere_ends_in_traces_or_one_line_errors(tmp_path_factory: Any, item: RealFile, data: st.DataObject) -> None:
    original = item.path.read_bytes()
    cut = data.draw(st.integers(1, max(1, len(original) - 1)))
    blob = original[:cut]
    traces, errors = _read(item, blob, tmp_path_factory.mktemp("m"))
    _check(item, blob, traces, errors)
    if item.path.suffix not in TEXT_SUFFIXES and cut < len(original.rstrip()) - 1 and traces and not errors:
        # A structured file cut short either fails to parse or says what it skipped, unless the cut
        # fell on a record boundary (a JSONL line, a YAML item) and only whole records are gone.
        whole_records = original[:cut].endswith(b"\n")
        assert whole_records or any(t.warnings for t in traces) or item.path.suffix in (".yaml", ".yml"), item.id


@SETTINGS
@given(item=st.sampled_from(TEXTUAL), data=st.data())
def test_a_stray_byte_is_replaced_and_said(tmp_path_factory: Any, item: RealFile, data: st.DataObject) -> None:
    original = item.path.read_bytes()
    lines = original.split(b"\n")
    row = data.draw(st.integers(0, len(lines) - 1))
    column = data.draw(st.integers(0, len(lines[row])))
    stray = data.draw(st.sampled_from([b"\xff", b"\xc3", b"\x80", b"\xfe\xfe"]))
    lines[row] = lines[row][:column] + stray + lines[row][column:]
    blob = b"\n".join(lines)
    traces, errors = _read(item, blob, tmp_path_factory.mktemp("m"))
    _check(item, blob, traces, errors)
    for trace in traces:
        assert any("not valid UTF-8" in w for w in trace.warnings), f"{item.id}: a replaced byte must be said"


COLOURS = ["\x1b[32m", "\x1b[1;31m", "\x1b[0m", "\x1b[38;5;208m", "\x1b]0;title\x07", "\x1b[2K"]


@SETTINGS
@given(item=st.sampled_from(TEXTUAL), data=st.data())
def test_colour_codes_change_nothing(tmp_path_factory: Any, item: RealFile, data: st.DataObject) -> None:
    original = item.path.read_bytes()
    lines = original.decode("utf-8").split("\n")
    rows = data.draw(st.lists(st.integers(0, len(lines) - 1), min_size=1, max_size=8))
    for row in rows:
        lines[row] = data.draw(st.sampled_from(COLOURS)) + lines[row] + data.draw(st.sampled_from(["", "\x1b[0m"]))
    blob = "\n".join(lines).encode()
    tmp = tmp_path_factory.mktemp("m")
    traces, errors = _read(item, blob, tmp)
    _check(item, blob, traces, errors)
    clean, _ = _read(item, original, tmp_path_factory.mktemp("o"))
    view = [[(s.agent, s.content, [c.name for c in s.tool_calls]) for s in t.steps] for t in traces]
    assert view == [[(s.agent, s.content, [c.name for c in s.tool_calls]) for s in t.steps] for t in clean], item.id


# --- every file, every mutation, once (seeded): the hypothesis tests above sample; this covers all ---


def _sweep(item: RealFile, seed: int) -> list[bytes]:
    rng = random.Random(f"{item.id}:{seed}")
    original = item.path.read_bytes()
    out = [original[: rng.randrange(1, max(2, len(original)))]]
    if item.path.suffix in BINARY_SUFFIXES:
        flipped = bytearray(original)
        flipped[rng.randrange(len(flipped))] ^= 0xFF
        return [*out, bytes(flipped)]
    position = rng.randrange(0, len(original) + 1)
    out.append(original[:position] + b"\xff" + original[position:])
    lines = original.decode("utf-8").split("\n")
    row = rng.randrange(len(lines))
    lines[row] = "\x1b[1;32m" + lines[row] + "\x1b[0m"
    out.append("\n".join(lines).encode())
    if item in STRUCTURED:
        for how in ("drop", "retype", "stringify"):
            document = _load(item, original)
            slots = _slots(document)
            if not slots:
                continue
            container, key = slots[rng.randrange(len(slots))]
            if how == "drop":
                container.pop(key)
            elif how == "retype":
                container[key] = RETYPES[rng.randrange(len(RETYPES))]
            else:
                container[key] = json.dumps(container[key], default=str)
            out.append(_dump(item, document))
        out.append(_dump(item, [{"data": _load(item, original)}] if item.path.suffix == ".jsonl" else {"data": _load(item, original)}))
    return out


@pytest.mark.parametrize("item", FILES, ids=lambda f: f.id)
def test_every_real_file_survives_every_mutation(tmp_path: Path, item: RealFile) -> None:
    for number, blob in enumerate(_sweep(item, 0)):
        folder = tmp_path / str(number)
        folder.mkdir()
        traces, errors = _read(item, blob, folder)
        _check(item, blob, traces, errors)
