"""Options that choose which traces a command judges and how its exit status gates CI.

``--limit N``, ``--sample N --sample-seed S`` and ``--trace-id ID`` pick traces; ``--fail-on CODES``
(``1.3,3.*``) makes ``mast classify`` / ``mast label`` exit 3 when a listed mode is found, so an
agent's test suite can gate on failure modes. ``--include`` / ``--exclude`` change which files a
folder walk reads (see :mod:`mast.batch.walk`). Kept out of the commands so each adds one line.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import click

from mast.batch.pick import pick_items as pick_items  # moved to the batch (mast label's API uses it)
from mast.diagnosis import Diagnosis
from mast.errors import UsageError
from mast.judge.config import JudgeConfig
from mast.taxonomy import Taxonomy

EXIT_FAIL_ON = 3
"""Exit status when ``--fail-on`` finds a listed mode (and nothing else went wrong)."""

F = TypeVar("F", bound=Callable[..., Any])


def file_options(func: F) -> F:
    """``--include`` / ``--exclude`` globs and ``--follow-symlinks`` for folder walks."""
    func = click.option("--follow-symlinks", is_flag=True,
                        help="Also read links found in folders whose target is outside the folder "
                             "(skipped by default, with a line saying so).")(func)
    func = click.option("--exclude", multiple=True, metavar="GLOB",
                        help="Skip files whose name or path matches GLOB (repeatable).")(func)
    func = click.option("--include", multiple=True, metavar="GLOB",
                        help="Also read files matching GLOB from folders, e.g. '*.md' or '*' (repeatable).")(func)
    return func


def selection_options(func: F) -> F:
    """``--limit``, ``--sample``/``--sample-seed`` and ``--trace-id``."""
    func = click.option("--trace-id", "trace_ids", multiple=True, metavar="ID",
                        help="Judge only this trace: its id, or PATH / PATH#RECORD as shown by `mast normalize` "
                             "(repeatable).")(func)
    # Not --seed: that is the judge's sampling seed, which changes the answers.
    func = click.option("--sample-seed", "sample_seed", type=int, default=0, show_default=True,
                        help="Seed of --sample.")(func)
    func = click.option("--sample", type=click.IntRange(min=1), metavar="N",
                        help="Judge a random subset of N traces (same --sample-seed, same subset).")(func)
    func = click.option("--limit", type=click.IntRange(min=1), metavar="N",
                        help="Judge only the first N traces.")(func)
    return func


def fail_on_option(func: F) -> F:
    """``--fail-on CODES``."""
    return click.option(
        "--fail-on", "fail_on", metavar="CODES", envvar="MAST_FAIL_ON",
        help="Exit 3 when any of these modes is found, e.g. '1.3,3.*' (comma-separated codes or globs).",
    )(func)


def parse_fail_on(
    text: str | None,
    taxonomy: Taxonomy,
    given: str = "--fail-on",
    assessed: Sequence[str] | None = None,
) -> list[str]:
    """``"1.3,3.*"`` -> the taxonomy codes it names; ``given`` is how the user gave it (see ``given_as``).

    ``assessed``: the codes the chosen judge can find at all (``None``: every mode, an LLM judge);
    a part naming none of them would never fire, so it is refused.

    Raises:
        UsageError: a code or glob that names no mode of the taxonomy, or no mode the judge assesses.
    """
    if not text:
        return []
    codes = [mode.code for mode in taxonomy.modes]
    chosen: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        matched = fnmatch.filter(codes, part)
        if not matched:
            where = f"{given} {part!r}" if given.startswith("-") else f"{given}={text!r}: {part!r}"
            raise UsageError(f"{where}: no such mode (codes are {codes[0]} .. {codes[-1]}, globs like 3.*)")
        if assessed is not None and not any(code in assessed for code in matched):
            where = f"{given} {part!r}" if given.startswith("-") else f"{given}={text!r}: {part!r}"
            judged = ", ".join(assessed) if assessed else "none"
            raise UsageError(
                f"{where} can never fire: the offline detectors assess only {judged} "
                "(an LLM judge, --model or MAST_MODEL, assesses every mode)"
            )
        chosen.extend(c for c in matched if c not in chosen)
    return chosen


def judge_assessed(config: JudgeConfig, taxonomy: Taxonomy) -> list[str] | None:
    """The codes ``config``'s judge can find present, ``None`` when it judges every mode (an LLM, a jury)."""
    if config.kind != "detectors" or config.jury:
        return None
    from mast.judge.detectors import assessed_codes

    return assessed_codes(taxonomy)


def modes_found(diagnoses: Iterable[Diagnosis | None], codes: Sequence[str]) -> list[str]:
    """The listed codes judged present in any of ``diagnoses``, in taxonomy order."""
    wanted = set(codes)
    found: set[str] = set()
    for diagnosis in diagnoses:
        if diagnosis is not None and diagnosis.status == "judged":
            found.update(code for code in diagnosis.present_codes if code in wanted)
    return [code for code in codes if code in found]


def gate_exit(exit_code: int, found: Sequence[str]) -> int:
    """A failing status wins; otherwise 3 when ``--fail-on`` found a listed mode."""
    if exit_code == 0 and found:
        return EXIT_FAIL_ON
    return exit_code
