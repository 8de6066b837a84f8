"""The ``mast`` command line: a thin layer over the Python API.

Each sub-command lives in its own module here and is registered below. Errors reach the user as one
line on stderr (exit 2 for bad input or usage, 1 for other failures); ``--debug`` shows the traceback.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from mast.__about__ import __version__
from mast._env import check_direct_variables
from mast._outputs import terminal_safe
from mast.cli._shared import env_error
from mast.errors import MastError, one_line


class _Group(click.Group):
    """A click group that turns every error into one line and an exit code."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.BadParameter as exc:  # mast's own options (MAST_DEBUG)
            raise env_error(exc) or exc from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except click.BadParameter as exc:
            # A sub-command's option: said of its variable when its value came from one.
            bad = env_error(exc)
            if bad is not None:
                raise bad from None
            exc.message = terminal_safe(exc.message)  # type: ignore[misc]
            raise
        except click.ClickException as exc:  # click prints it: a value from a trace's name shown escaped
            # click types ``message`` Final yet reads it at show time; rewriting it in place keeps each
            # subclass's own formatting (BadParameter's hint, NoSuchOption's suggestions).
            exc.message = terminal_safe(exc.message)  # type: ignore[misc]
            raise
        except KeyboardInterrupt:
            click.echo("mast: interrupted", err=True)
            sys.exit(130)
        except Exception as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            code = exc.exit_code if isinstance(exc, MastError) else 1
            prefix = "error" if isinstance(exc, MastError) else f"unexpected {type(exc).__name__}"
            # --debug belongs to ``mast`` itself, before the sub-command (or MAST_DEBUG=1).
            click.echo(
                terminal_safe(
                    f"mast: {prefix}: {one_line(exc)} (for details: mast --debug {ctx.invoked_subcommand or ''} ..., "
                    "or MAST_DEBUG=1)"
                    if not isinstance(exc, MastError)
                    else f"mast: {one_line(exc)}"
                ),
                err=True,
            )
            sys.exit(code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, "--version", "-V", prog_name="mast")
@click.option("--debug", is_flag=True, envvar="MAST_DEBUG", help="Show full tracebacks on errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Tell why AI agent runs fail: label traces with the MAST failure taxonomy.

    \b
    mast normalize run.json                              read any supported trace file
    mast label runs/ -o results.jsonl                    label a folder of traces
    mast report results.jsonl -o report.html             an HTML report of them
    mast evaluate --pred results.jsonl --gold gold.csv   agreement with human labels
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    # A hook must never fail its agent's event on mast's settings: its runner logs and skips instead.
    if ctx.invoked_subcommand != "hooks":
        check_direct_variables()


def _register() -> None:
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_"):
            mod = importlib.import_module(f"{__name__}.{module.name}")
            command = getattr(mod, "command", None)
            if isinstance(command, click.Command):
                main.add_command(command)


_register()
