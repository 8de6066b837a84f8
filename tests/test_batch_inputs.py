"""Batch inputs: walking files and folders into work items, shards, re-reading, limits."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest
from _data import TRACES

from mast.batch.inputs import Reloader, in_shard, parse_shard, scan
from mast.batch.limits import Budget, RateLimiter
from mast.errors import TraceFormatError, UsageError


def chat_jsonl(path: Path, n: int, *, tag: str = "t", bad_lines: dict[int, bytes] | None = None) -> Path:
    """A JSONL file of ``n`` distinct chat transcripts (one trace per line)."""
    lines = []
    for i in range(n):
        if bad_lines and i in bad_lines:
            lines.append(bad_lines[i])
            continue
        lines.append(
            orjson.dumps(
                [
                    {"role": "user", "content": f"{tag} task {i}: add a retry to the HTTP client"},
                    {"role": "assistant", "content": f"{tag} answer {i}: wrapped the call in a retry loop"},
                ]
            )
        )
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_scan_walks_files_and_folders_in_order_with_positions(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    chat_jsonl(folder / "a.jsonl", 3, tag="a")
    chat_jsonl(folder / "b.jsonl", 2, tag="b")
    smol = next((TRACES / "smolagents_memory").glob("*.jsonl"))
    items = list(scan([folder, smol]))
    assert [i.index for i in items] == list(range(len(items)))
    assert [Path(i.source.path or "").name for i in items[:5]] == ["a.jsonl"] * 3 + ["b.jsonl"] * 2
    assert [i.file_position for i in items[:5]] == [0, 1, 2, 0, 1]
    assert all(i.trace is not None and i.trace_hash == i.trace.content_hash() for i in items)
    assert len(items) > 5 and all(i.source.path == str(smol) for i in items[5:])


def test_unreadable_file_is_one_item_and_the_walk_goes_on(tmp_path: Path) -> None:
    chat_jsonl(tmp_path / "a.jsonl", 2, tag="a")
    (tmp_path / "b.json").write_bytes(b'{"messages": [{"role": "user", "content": "cut of')
    (tmp_path / "c.json").write_bytes(b"\x00\x01binary")
    chat_jsonl(tmp_path / "d.jsonl", 2, tag="d")
    items = list(scan([tmp_path]))
    whole = [i for i in items if i.whole_file]
    assert [Path(i.trace_id).name for i in whole] == ["b.json", "c.json"]
    assert all(isinstance(i.error, TraceFormatError) for i in whole)
    assert sum(1 for i in items if i.trace is not None) == 4


def test_unreadable_record_is_an_item_with_its_place(tmp_path: Path) -> None:
    path = chat_jsonl(tmp_path / "a.jsonl", 4, bad_lines={2: b"{this is not json"})
    items = list(scan([path]))
    broken = [i for i in items if i.error is not None]
    assert len(items) == 4 and len(broken) == 1
    assert broken[0].source.record == 2 and broken[0].trace_id == f"{path}#2" and not broken[0].whole_file


def test_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file or folder"):
        list(scan([tmp_path / "nope"]))


def test_shards_partition_the_input() -> None:
    everything = [i for i in scan([TRACES]) if not i.whole_file]
    assert len(everything) >= 10
    seen: list[tuple[str, str | None]] = []
    for k in (1, 2, 3):
        part = [i for i in scan([TRACES], shard=(k, 3)) if not i.whole_file]
        assert all(in_shard(i.trace_id, (k, 3)) for i in part)
        seen.extend(i.key for i in part)
    assert sorted(seen, key=str) == sorted((i.key for i in everything), key=str)
    # Stable: a hash of the id, not of the machine or the order.
    assert in_shard("run-42", (2, 5)) == in_shard("run-42", (2, 5))
    assert sum(in_shard("run-42", (k, 5)) for k in range(1, 6)) == 1


def test_parse_shard() -> None:
    assert parse_shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "x", "1/0", "1-4"):
        with pytest.raises(UsageError, match="--shard"):
            parse_shard(bad)


def test_dropped_traces_are_read_back_identical(tmp_path: Path) -> None:
    a = chat_jsonl(tmp_path / "a.jsonl", 4, tag="a")
    b = chat_jsonl(tmp_path / "b.jsonl", 3, tag="b")
    kept = list(scan([a, b]))
    dropped = list(scan([a, b], keep_bytes=0))
    assert all(i.trace is None for i in dropped)
    reloader = Reloader()
    for k, d in zip(kept, dropped, strict=True):
        assert reloader.load(d) == k.trace
    # Changed on disk since the scan: a clear error, not a wrong trace.
    chat_jsonl(b, 3, tag="changed")
    with pytest.raises(TraceFormatError, match="changed while the batch ran"):
        Reloader().load(dropped[-1])


def test_budget_counts_spend_and_in_flight() -> None:
    budget = Budget(1.0)
    assert budget.try_start(0.5) and budget.try_start(0.4)
    assert not budget.try_start(0.2)  # 0.9 in flight + 0.2 > 1.0
    budget.finish(estimate=0.5, actual=0.1)
    assert budget.try_start(0.2)  # 0.1 spent + 0.4 + 0.2 in flight
    budget.finish(estimate=0.4, actual=None)  # unknown cost: the estimate is booked
    assert budget.spent_usd == pytest.approx(0.5)
    assert Budget(None).try_start(1e9)


def test_rate_limiter_waits_for_the_refill() -> None:
    """rpm=60: the bucket starts full, then one request per second (clock and sleep simulated)."""
    now = [1000.0]
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    async def main() -> None:
        limiter = RateLimiter(rpm=60, tpm=6000, clock=lambda: now[0], sleep=fake_sleep)
        for _ in range(60):
            await limiter.acquire(tokens=10)
        assert slept == []
        await limiter.acquire(tokens=10)
        assert slept == [pytest.approx(1.0)]
        # A trace that used far more tokens than estimated is charged afterwards: 5490 tokens
        # were left, the overrun of 6000 leaves a debt of 510, and 100 more need 610 refilled at
        # 100 tokens per second.
        limiter.settle(tokens=6000)
        await limiter.acquire(tokens=100)
        assert slept[-1] == pytest.approx(6.1)

    asyncio.run(main())


@pytest.mark.parametrize("read_memory", [None, 2**30])
def test_a_folder_file_swapped_for_a_link_after_it_was_listed_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_memory: int | None
) -> None:
    """Listed and checked as a regular file, a link to a file outside the folder by the time it is read: an error row."""
    import mast.batch.inputs as inputs

    folder = tmp_path / "runs"
    folder.mkdir()
    run = folder / "run.json"
    run.write_text(orjson.dumps([{"role": "user", "content": "hello"}]).decode())
    outside = tmp_path / "credentials.json"
    outside.write_text(orjson.dumps([{"role": "user", "content": "aws_secret_access_key LEAKED"}]).decode())
    real_read = inputs.read_file

    def swap_then_read(path: Path, *args: object, **kwargs: object) -> object:
        run.unlink()
        run.symlink_to(outside)
        return real_read(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(inputs, "read_file", swap_then_read)
    (item,) = list(scan([folder], read_memory=read_memory))
    assert item.trace is None and item.error is not None and "symbolic link" in str(item.error)
    assert "LEAKED" not in str(item.error)
    # a link found in the folder that leads out of it is still skipped at listing, as before
    monkeypatch.setattr(inputs, "read_file", real_read)
    assert list(scan([folder], read_memory=read_memory)) == []
