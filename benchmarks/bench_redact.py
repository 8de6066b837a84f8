"""Redaction speed: a 1 MB transcript, the real sample traces, and adversarial runs, through mast.redact.

Run: .venv/bin/python benchmarks/bench_redact.py [--adversarial-only] [--sizes 8000,16000] [--no-mb]

Adversarial runs are the units of tests/data/redact/adversarial.yaml repeated to each size: the
CPU time of each size (median of 3), the ratio of each size to the one before (2 when linear, 4 when
quadratic), and 1 MB of each unit unless ``--no-mb`` (or the last size already took over 2 s).
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

from mast.redact import Redactor, redact_trace
from mast.trace import Step, Trace

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from _data import TRACES  # noqa: E402 (the third-party corpus, located in one place)


def synthetic(size: int, seed: int = 0) -> str:
    """Agent-log-like text: commands, ids, versions, JSON usage blocks, and a secret every ~2 KB."""
    rng = random.Random(seed)
    words = (
        "the agent ran pytest and 3 tests failed; editing src/app/models.py line 42 to fix the import "
        "commit 3f786850e387550fdab836ed7e6dc881de23001b request 123e4567-e89b-12d3-a456-426614174000 "
        'numpy 1.26.4 pod api-7d9f8b6c4-x2kqz {"prompt_tokens": 1234, "max_tokens": 4096} OK'
    ).split()
    secrets = [
        "password=hunter2", "Authorization: Bearer 0a1b2c3d4e5f6a7b8c9d0e1f", "ops@example.com",
        # A fake key, assembled so no key-shaped literal sits in the source.
        "sk-" + "proj-" + "Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789", "postgres://u:pw9@db/x",
    ]
    parts: list[str] = []
    total = 0
    while total < size:
        line = " ".join(rng.choice(words) for _ in range(20))
        if rng.random() < 0.07:
            line += " " + rng.choice(secrets)
        parts.append(line)
        total += len(line) + 1
    return "\n".join(parts)[:size]


def lookalikes(size: int, seed: int = 0) -> str:
    """Text made only of things that look like secrets or personal data but are not (must stay)."""
    rng = random.Random(seed)
    digits, hexd = "0123456789", "0123456789abcdef"

    def pick(chars: str, n: int) -> str:
        return "".join(rng.choice(chars) for _ in range(n))

    makers = [
        lambda: pick(hexd, 40),  # git SHA
        lambda: f"{pick(hexd, 8)}-{pick(hexd, 4)}-4{pick(hexd, 3)}-a{pick(hexd, 3)}-{pick(hexd, 12)}",  # UUID
        lambda: pick(hexd, 16),  # span id
        lambda: "17" + pick(digits, 11),  # epoch milliseconds
        lambda: "17" + pick(digits, 17),  # epoch nanoseconds
        lambda: f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{pick(digits, 2)[0]}5:00.{pick(digits, 3)}Z",
        lambda: f"checkout-{pick(hexd, 9)}-{pick('abcdefghijklmnopqrstuvwxyz0123456789', 5)}",  # pod name
        lambda: f"{rng.randint(1, 9)}.{rng.randint(0, 99)}.{rng.randint(0, 999)}",  # version
        lambda: pick(digits, 16),  # order number / numeric id (may pass Luhn by chance: counted)
    ]
    parts: list[str] = []
    total = 0
    while total < size:
        word = rng.choice(makers)()
        parts.append(word)
        total += len(word) + 1
    return " ".join(parts)[:size]


def best_of(runs: int, func) -> float:  # type: ignore[no-untyped-def]
    """Least CPU seconds of this process over ``runs``."""
    times = []
    for _ in range(runs):
        start = time.process_time()
        func()
        times.append(time.process_time() - start)
    return min(times)


ADVERSARIAL = REPO / "tests" / "data" / "redact" / "adversarial.yaml"


def median_of(runs: int, func) -> float:  # type: ignore[no-untyped-def]
    """Median CPU seconds of this process (the shared machine's other work inflates wall time)."""
    times = []
    for _ in range(runs):
        start = time.process_time()
        func()
        times.append(time.process_time() - start)
    return sorted(times)[len(times) // 2]


def adversarial(sizes: list[int], megabyte: bool, only: list[str]) -> None:
    import yaml

    units: dict[str, str] = yaml.safe_load(ADVERSARIAL.read_text())["units"]
    if only:
        units = {name: unit for name, unit in units.items() if name in only}
    redactor = Redactor(ips=True)
    worst = ("", 0.0)
    print(f"adversarial runs, ips=True, median CPU time of 3; sizes {sizes} characters" + (" and 1 MB" if megabyte else ""))
    for name, unit in units.items():
        cells, previous, last = [], None, 0.0
        for size in sizes:
            if last > 3.0:
                cells.append("(stopped: over 3 s)")
                break
            text = (unit * (size // len(unit) + 1))[:size]
            last = median_of(3, lambda text=text: redactor.redact(text))
            cells.append(f"{last * 1000:.1f} ms" + (f" (x{last / previous:.1f})" if previous else ""))
            previous = last
        if megabyte and last < 2.0:
            text = (unit * (1_000_000 // len(unit) + 1))[:1_000_000]
            mb = median_of(1, lambda text=text: redactor.redact(text))
            cells.append(f"1 MB {mb * 1000:.0f} ms")
            if mb > worst[1]:
                worst = (name, mb)
        print(f"  {name:20} {unit!r:38} " + ", ".join(cells))
    if megabyte:
        print(f"slowest 1 MB: {worst[0]} {worst[1] * 1000:.0f} ms")


def main() -> None:
    text = synthetic(1_000_000)
    for ips in (False, True):
        redactor = Redactor(ips=ips)
        seconds = best_of(5, lambda redactor=redactor: redactor.redact(text))
        found = redactor.redact(text).total
        print(f"1 MB synthetic transcript, ips={ips}: {seconds * 1000:.0f} ms ({found} findings)")
    quiet = lookalikes(200_000)
    found = Redactor(ips=True).redact(quiet).counts
    print(f"200 kB of lookalikes (SHAs, UUIDs, span ids, epoch ms/ns, ISO times, pods, versions, 16-digit "
          f"numbers), ips=True: findings {found or 'none'}")
    if TRACES.is_dir():
        files = [p for p in sorted(TRACES.rglob("*")) if p.is_file() and p.name != "MANIFEST.md"]
        texts = [p.read_text(encoding="utf-8", errors="replace") for p in files]
        size = sum(map(len, texts))
        redactor = Redactor()
        seconds = best_of(3, lambda: [redactor.redact(t) for t in texts])
        print(f"real sample traces ({len(files)} files, {size / 1e6:.2f} MB as text): {seconds * 1000:.0f} ms")
    steps = [Step(index=i, agent="coder", content=synthetic(900, seed=i)) for i in range(50)]
    trace = Trace(steps=steps)
    per_trace = best_of(20, lambda: redact_trace(trace))
    print(f"redact_trace, 50 steps x 900 chars: {per_trace * 1000:.2f} ms per trace")


if __name__ == "__main__":
    import sys

    args = sys.argv[1:]
    sizes = [16_000, 32_000, 64_000]
    if "--sizes" in args:
        sizes = [int(x) for x in args[args.index("--sizes") + 1].split(",")]
    if "--adversarial-only" not in args:
        main()
    only = args[args.index("--only") + 1].split(",") if "--only" in args else []
    adversarial(sizes, megabyte="--no-mb" not in args, only=only)
