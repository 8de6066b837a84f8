"""``mast review``: review the judge's labels in a local browser app and keep them as gold."""

from __future__ import annotations

import getpass

import click

from mast.cli._judge_options import _read_patterns
from mast.cli._shared import stderr, stdout


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
@click.option("--no-open", is_flag=True, help="Print the URL; do not open a browser.")
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
    redact_patterns: tuple[tuple[str, str], ...] | None = None,
) -> None:
    """Review the judge's verdicts trace by trace in your browser; every action goes to the gold at once.

    \b
    mast review results.jsonl -o gold.jsonl                   a random sample, opens the browser
    mast review results.jsonl --queue improve --sample 50     the doubtful traces first
    mast validate --gold gold.jsonl                           then: how far to trust the judge
    """  # noqa: D301 (click's \b keeps the example lines as they are)
    import threading

    from mast.review import review

    name = reviewer or getpass.getuser()
    server = review(
        results,
        gold=gold,
        reviewer=name,
        queue=queue,  # type: ignore[arg-type]  # click.Choice(["random", "improve"])
        sample=sample,
        seed=seed,
        port=port,
        open_browser=False,
        block=False,
        redact_patterns=redact_patterns or (),
    )
    stdout.print(
        f"mast review: {len(server.session)} traces for {name}, gold {gold}", markup=False, highlight=False
    )
    # The URL holds the session's token: it is printed on its own line for the reviewer (and tests).
    click.echo(server.url)
    stderr.print(
        "Ctrl-C stops the server; every saved action is already in the gold.", markup=False, highlight=False
    )
    if not no_open:
        import webbrowser

        webbrowser.open(server.url)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
