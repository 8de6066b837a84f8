"""``mast hooks``: label Claude Code and Codex CLI sessions as they finish, from the tools' own hooks.

The work is in :mod:`mast.integrations.hooks`; this module reads the options.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from mast.cli._shared import write_line
from mast.cli._source_options import parse_duration
from mast.errors import MastError, one_line

_TOOL = click.argument("tool", type=click.Choice(["claude-code", "codex"]))
_SCOPE_USER = click.option("--user", "scope", flag_value="user", default=True,
                           help="The user's settings (~/.claude/settings.json, ~/.codex/config.toml) [default].")
_SCOPE_PROJECT = click.option("--project", "scope", flag_value="project",
                              help="This project's settings (.claude/settings.json, .codex/config.toml).")
_SETTINGS = click.option("--settings", "settings_file", type=click.Path(dir_okay=False, path_type=Path),
                         help="Edit this settings file instead.")
_OUTPUT = click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
                       help="Results file [default: one per judge in a folder per project under the user's data folder, or $MAST_HOOKS_DIR].")
_QUIET = click.option("--quiet", default=None, metavar="DURATION",
                      help="After Stop or a Codex turn, label once the transcript was quiet this long [default: 5m].")


def _judge_flags(command: Any) -> Any:
    """The judge options carried by an installed hook (keys stay in the environment)."""
    for flag, help_text in reversed([
        ("--model", "Judge model (litellm string); default: MAST_MODEL, else the offline detectors."),
        ("--judge", "auto | llm | detectors | both."),
        ("--jury", "Several judge models, MODEL,MODEL,... or a jury YAML file."),
        ("--taxonomy", "A built-in taxonomy version or a taxonomy file."),
        ("--api-base", "Base URL of an OpenAI-compatible endpoint."),
    ]):
        command = click.option(flag, default=None, help=help_text)(command)
    return command


def _judge(options: dict[str, Any]) -> dict[str, str | None]:
    from mast.integrations.hooks import JUDGE_FLAGS

    return {name: options.get(name) for name in JUDGE_FLAGS if options.get(name) is not None}


@click.group("hooks")
def command() -> None:
    """Label coding-agent sessions (Claude Code, Codex CLI) from the tools' hooks.

    \b
    mast hooks install claude-code            Stop/SubagentStop/SessionEnd hook in ~/.claude/settings.json
    mast hooks install codex                  notify program in ~/.codex/config.toml
    mast hooks uninstall claude-code|codex    removes exactly mast's entries
    """


@command.command("install")
@_TOOL
@_SCOPE_USER
@_SCOPE_PROJECT
@_SETTINGS
@_OUTPUT
@_QUIET
@_judge_flags
def install_command(tool: str, scope: str, settings_file: Path | None, output: Path | None, quiet: str | None,
                    **options: Any) -> None:
    """Merge mast's hook into TOOL's settings; other settings and hooks stay as they are."""
    from mast.integrations import hooks

    path = settings_file or hooks.settings_path(tool, "project" if scope == "project" else "user")  # type: ignore[arg-type]
    seconds = parse_duration(quiet).total_seconds() if quiet else None
    judge = _judge(options)
    from mast.judge.config import JudgeConfig

    JudgeConfig.from_options(**judge)  # a bad value fails here, not silently in every hook run later
    argv = hooks.hook_argv(tool, output=output, quiet=seconds, judge=judge)  # type: ignore[arg-type]
    write_line(f"mast: {hooks.install(tool, path, argv)}")  # type: ignore[arg-type]


@command.command("uninstall")
@_TOOL
@_SCOPE_USER
@_SCOPE_PROJECT
@_SETTINGS
def uninstall_command(tool: str, scope: str, settings_file: Path | None) -> None:
    """Remove mast's hook from TOOL's settings (only mast's own entries)."""
    from mast.integrations import hooks

    path = settings_file or hooks.settings_path(tool, "project" if scope == "project" else "user")  # type: ignore[arg-type]
    write_line(f"mast: {hooks.uninstall(tool, path)}")  # type: ignore[arg-type]


@command.command("run")
@click.option("--tool", type=click.Choice(["claude-code", "codex"]), default=None,
              help="Which tool sent the event [default: told apart by the payload].")
@_OUTPUT
@_QUIET
@_judge_flags
@click.argument("payload", required=False)
def run_command(tool: str | None, output: Path | None, quiet: str | None, payload: str | None, **options: Any) -> None:
    """What the hook runs: read the event (stdin, or PAYLOAD for Codex), label its session in the background.

    Returns at once and always exits 0, so the agent is never slowed or stopped; one line says what happens.
    """
    from mast.integrations import hooks

    try:
        seconds = parse_duration(quiet).total_seconds() if quiet else hooks.DEFAULT_QUIET_S
        event = hooks.read_payload(payload, sys.stdin)
        write_line(hooks.handle_event(event, tool=tool, output=output, quiet=seconds, judge=_judge(options)))  # type: ignore[arg-type]
    except Exception as exc:  # noqa: BLE001 - a hook must never fail the agent: say why, exit 0
        click.echo(hooks.error_line(exc), err=True)


@command.command("label", hidden=True)
@click.option("--transcript", required=True, type=click.Path(path_type=Path))
@click.option("--session", required=True)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--quiet", default="0s")
@click.option("--tool", type=click.Choice(["claude-code", "codex"]), default=None)
@_judge_flags
def label_command(transcript: Path, session: str, output: Path, quiet: str, tool: str | None, **options: Any) -> None:
    """The detached process ``mast hooks run`` starts: label one session into the results file."""
    from datetime import UTC, datetime

    from mast.integrations import hooks

    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    try:
        line = hooks.label_session(transcript, session, output, quiet=parse_duration(quiet).total_seconds(),
                                   judge_options=_judge(options), tool=tool)  # type: ignore[arg-type]
    except MastError as exc:
        line = f"session {session}: not labelled: {one_line(exc)}"
    except Exception as exc:  # noqa: BLE001 - the log is all a detached process has: the reason, in one line
        line = f"session {session}: not labelled: {type(exc).__name__}: {one_line(exc)}"
    write_line(f"{stamp} {line}")
