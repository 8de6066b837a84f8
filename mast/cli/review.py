"""``mast review``: review the judge's labels in a local browser app and keep them as gold."""

from __future__ import annotations

import getpass
import sys
import threading

import click

from mast.cli._judge_options import _read_patterns
from mast.cli._shared import stderr, stdout, write_line
from mast.errors import UsageError


@click.command("review")
@click.argument("results", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-o",
    "--gold",
    default="gold.jsonl",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="Gold file every action is appended to (reopening it resumes where you stopped).",
)
@click.option("--reviewer", default=None, help="Your name in the gold (default: your login name).")
@click.option(
    "--queue",
    type=click.Choice(["random", "improve"]),
    default="random",
    show_default=True,
    help="random: a seeded uniform sample (agreement on it is unbiased); improve: doubtful traces first "
    "(jury disagreement, low confidence, rare modes), left out of the agreement estimate.",
)
@click.option("--sample", type=click.IntRange(min=1), default=None, help="Offer at most N traces.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random sample.")
@click.option(
    "--port",
    type=click.IntRange(min=0, max=65535),
    default=0,
    show_default=True,
    help="Port on 127.0.0.1 (0: a free one).",
)
@click.option(
    "--no-open", is_flag=True, help="Do not open the page in your browser (the URL is printed either way)."
)
@click.option(
    "--taxonomy",
    default=None,
    metavar="NAME|FILE",
    help="Taxonomy the run used (e.g. a `mast discover` taxonomy.yaml) [default: mast-v3].",
)
@click.option(
    "--redact-patterns",
    "redact_patterns",
    metavar="FILE",
    callback=_read_patterns,
    help="The custom redaction patterns the run used (as mast report).",
)
def command(
    results: str,
    gold: str,
    reviewer: str | None,
    queue: str,
    sample: int | None,
    seed: int,
    port: int,
    no_open: bool,
    taxonomy: str | None = None,
    redact_patterns: tuple[tuple[str, str], ...] | None = None,
) -> None:
    """Review the judge's verdicts trace by trace in your browser; every action goes to the gold at once.

    The page opens in your browser (--no-open: not); its URL, with the session's token, is printed
    either way. Ctrl-C stops the server.

    \b
    mast review results.jsonl -o gold.jsonl                   a random sample, opens the browser
    mast review results.jsonl --queue improve --sample 50     the doubtful traces first
    mast validate --gold gold.jsonl                           then: how far to trust the judge
    """  # noqa: D301 (click's \b keeps the example lines as they are)
    from mast.review import open_in_browser, review
    from mast.taxonomy import load_taxonomy

    name = reviewer or _login_name()
    server = review(
        results,
        gold=gold,
        reviewer=name,
        queue=queue,  # type: ignore[arg-type]  # click.Choice(["random", "improve"])
        sample=sample,
        seed=seed,
        port=port,
        open_browser=False,  # opened below, once the URL is printed
        block=False,
        taxonomy=load_taxonomy(taxonomy) if taxonomy is not None else None,
        redact_patterns=redact_patterns or (),
    )
    try:
        stdout.print(
            f"mast review: {len(server.session)} traces for {name}, gold {gold}",
            markup=False,
            highlight=False,
        )
        # The URL, token included, on a line of its own: to copy, and what scripts and tests read.
        write_line(server.url)
        if not no_open and (why := open_in_browser(server.url)) is not None:
            stderr.print(
                f"mast review: no browser opened ({why}): open the URL above "
                f"(from another machine: ssh -L {server.port}:127.0.0.1:{server.port} this-host)",
                markup=False,
                highlight=False,
            )
        stderr.print(
            "Ctrl-C stops the server; every saved action is already in the gold.",
            markup=False,
            highlight=False,
        )
        sys.stdout.flush()
        _wait()
    except KeyboardInterrupt:
        pass
    finally:
        try:
            server.stop()
        except KeyboardInterrupt:
            pass  # a second Ctrl-C: every saved action is on disk already
    stderr.print(f"mast review: stopped; the gold is in {gold}", markup=False, highlight=False)


def _wait() -> None:
    """Serve until Ctrl-C (a KeyboardInterrupt here, in the main thread); tests replace it."""
    threading.Event().wait()


def _login_name() -> str:
    """The user's login name, for the gold's reviewer column."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no LOGNAME/USER and no passwd entry (a container's bare uid)
        raise UsageError("cannot tell your login name: give --reviewer NAME") from None
