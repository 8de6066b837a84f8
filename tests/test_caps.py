"""Bounded memory on small hostile files (issue 25): bombs built in tmp, read by `mast label` in a subprocess.

Each file is a few megabytes that once expanded into gigabytes: a VCR cassette whose body is a gzip
bomb, a MAD record of millions of empty steps, a Python literal of millions of empty lists, JSON
nested 100,000 deep. Each must fail (or degrade) alone with one line naming its cap, the batch must
go on to the clean trace beside them, and the peak RSS of the whole run must stay under 500 MB
(measured with ``resource`` in a wrapper process whose only child is the run: a memory bound, not
a timing one).
"""

from __future__ import annotations

import base64
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mast.caps import (
    MAX_DECOMPRESSED_BYTES,
    MAX_LITERAL_ITEMS,
    MAX_STEPS_PER_TRACE,
    CapExceeded,
    decompress,
    literal_items,
)

REPO = Path(__file__).resolve().parent.parent
PEAK_RSS_MB = 500


def _gzip_bomb(expanded_mb: int) -> bytes:
    """gzip members of 8 MiB of zeros, one after another: ~8 KiB each, ``expanded_mb`` MiB unpacked."""
    member = gzip.compress(b"\0" * (8 * 2**20), compresslevel=9)
    return member * (expanded_mb // 8)


def build_bombs(folder: Path) -> dict[str, Path]:
    """The hostile files of issue 25 point 5 (and 9: deep JSON), plus one clean trace."""
    folder.mkdir(parents=True, exist_ok=True)
    bombs: dict[str, Path] = {}
    body = base64.b64encode(_gzip_bomb(2048)).decode()  # ~2 MiB on disk, 2 GiB unpacked
    bombs["cassette"] = folder / "cassette.yaml"
    request = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 64,
                          "messages": [{"role": "user", "content": "Add two numbers."}]})
    bombs["cassette"].write_text(
        "interactions:\n- request:\n    method: POST\n    uri: https://api.anthropic.com/v1/messages\n"
        f"    body: {json.dumps(request)}\n"
        "  response:\n    status: {code: 200, message: OK}\n    headers: {Content-Encoding: [gzip]}\n"
        f"    body:\n      string: !!binary |\n        {body}\nversion: 1\n", encoding="utf-8")
    bombs["mad_steps"] = folder / "mad_steps.json"
    bombs["mad_steps"].write_text('{"mas_name": "AG2", "trace": {"trajectory": [' + "{}," * 2_700_000 + "{}]}}",
                                  encoding="utf-8")
    bombs["literal"] = folder / "literal.json"
    literal = "[" + "()," * 2_700_000 + "()]"  # not JSON: only the literal parser reads it
    bombs["literal"].write_text(json.dumps({"mas_name": "AG2", "trace": {"trajectory": literal}}), encoding="utf-8")
    bombs["literal_items"] = folder / "literal_items.json"  # under the size cap, over the items cap
    literal = "[" + "()," * 1_300_000 + "()]"
    bombs["literal_items"].write_text(json.dumps({"mas_name": "AG2", "trace": {"trajectory": literal}}),
                                      encoding="utf-8")
    bombs["deep"] = folder / "deep.json"
    bombs["deep"].write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    bombs["clean"] = folder / "clean.json"
    bombs["clean"].write_text(json.dumps({"id": "clean", "messages": [
        {"role": "user", "content": "Add two numbers."},
        {"role": "assistant", "name": "coder", "content": "def add(a, b): return a - b"}]}), encoding="utf-8")
    return bombs


def test_decompress_stops_a_gzip_bomb_at_the_cap_and_names_it():
    with pytest.raises(CapExceeded, match="MAX_DECOMPRESSED_BYTES"):
        decompress(_gzip_bomb(128))
    assert decompress(gzip.compress(b"a" * 1000) + gzip.compress(b"b")) == b"a" * 1000 + b"b"
    assert MAX_DECOMPRESSED_BYTES < 128 * 2**20


def test_caps_are_named_in_the_one_line_errors(tmp_path):
    from mast.errors import TraceFormatError
    from mast.normalize import iter_traces

    bombs = build_bombs(tmp_path / "bombs")
    messages = {}
    for name in ("mad_steps", "deep"):
        try:
            items = list(iter_traces(bombs[name]))
        except TraceFormatError as exc:
            messages[name] = str(exc)
            continue
        errors = [str(i) for i in items if isinstance(i, TraceFormatError)]
        messages[name] = errors[0] if errors else "; ".join(w for t in items for w in t.warnings)
    assert "MAX_STEPS_PER_TRACE" in messages["mad_steps"] and f"{MAX_STEPS_PER_TRACE:,}" in messages["mad_steps"]
    assert "nested too deeply" in messages["deep"] and "truncated or malformed" not in messages["deep"]
    # The cassette's bomb is cut at MAX_DECOMPRESSED_BYTES by the VCR reader (mast.normalize._vcr): read,
    # bounded, and the trace says it was cut.
    cassette = list(iter_traces(bombs["cassette"]))
    assert all(not isinstance(i, TraceFormatError) for i in cassette)
    assert any("MAX_DECOMPRESSED_BYTES" in w for t in cassette for w in t.warnings), [t.warnings for t in cassette]
    for name, cap in (("literal", "MAX_LITERAL_CHARS"), ("literal_items", "MAX_LITERAL_ITEMS")):
        warnings = [w for t in iter_traces(bombs[name]) if not isinstance(t, TraceFormatError) for w in t.warnings]
        assert any(cap in w for w in warnings), warnings
    # A bare Python literal file over the cap says so, not "truncated or malformed".
    bare = tmp_path / "bare_literal.json"
    bare.write_text("[" + "[]," * 1_300_000 + "]", encoding="utf-8")
    with pytest.raises(TraceFormatError, match="MAX_LITERAL_(ITEMS|CHARS) cap") as caught:
        list(iter_traces(bare))
    assert "truncated or malformed" not in str(caught.value)
    assert literal_items("[[], [], {'a': 1}]") > 4 and MAX_LITERAL_ITEMS < 2_700_000


@pytest.mark.spawns
def test_label_on_a_folder_of_bombs_stays_under_500_mb_and_goes_on(tmp_path):
    bombs = build_bombs(tmp_path / "bombs")
    out = tmp_path / "results.jsonl"
    # The wrapper's only child is the run, so RUSAGE_CHILDREN's peak is that run's own.
    wrapper = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stdout.write(done.stderr)\n"
        "print('EXIT', done.returncode)\n"
        "print('PEAK_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", wrapper, sys.executable, "-m", "mast", "label", str(bombs["clean"].parent),
         "--judge", "detectors", "-o", str(out), "--no-progress"],
        capture_output=True, text=True, timeout=600, cwd=REPO,
    )
    lines = run.stdout.splitlines()
    peak_mb = int(next(line for line in lines if line.startswith("PEAK_KB")).split()[1]) / 1024
    assert peak_mb < PEAK_RSS_MB, f"peak RSS {peak_mb:.0f} MB\n{run.stdout}"
    results = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert "clean" in {r["trace_id"] for r in results}, run.stdout  # the batch went on
    errors = "\n".join(lines)
    assert "MAX_STEPS_PER_TRACE" in errors and "nested too deeply" in errors
    assert any("cassette.yaml" in line and "MAX_DECOMPRESSED_BYTES" in line for line in lines), run.stdout
