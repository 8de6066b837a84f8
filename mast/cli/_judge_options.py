"""The judge's command-line options, shared by ``mast classify`` and ``mast label``.

:func:`judge_options` adds the options to a click command and hands the command one
``judge_config: JudgeConfig`` argument instead. An option left unset falls back to its ``MAST_*``
environment variable (through :meth:`JudgeConfig.from_options`), then to the default.

Example:
    >>> @click.command()
    ... @judge_options
    ... def label(judge_config: JudgeConfig) -> None: ...
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from mast.errors import UsageError
from mast.judge.config import ENV_VARS, FLAG_RANGES, JudgeConfig

F = TypeVar("F", bound=Callable[..., Any])


def _env(name: str) -> str:
    return f"[env: {ENV_VARS[name]}]"


class _NumberRange(click.FloatRange):
    """A float range that also refuses ``nan`` (click's passes it: every comparison with it is false)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if number != number:
            self.fail(f"{value!r} is not a number", param, ctx)
        return number


def _number(name: str) -> click.ParamType[Any]:
    """The click type of a number option, from the one table its ``MAST_*`` variable is checked by too."""
    kind, minimum, min_open = FLAG_RANGES[name]
    if minimum is None:
        return click.INT if kind is int else click.FLOAT
    if kind is int:
        return click.IntRange(min=int(minimum), min_open=min_open)
    return _NumberRange(min=minimum, min_open=min_open)


def _read_patterns(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> tuple[tuple[str, str], ...] | None:
    """``--redact-patterns FILE`` -> the ``(name, regex)`` pairs it holds (a one-line error when unreadable)."""
    if value is None:
        return None
    from mast.redact import load_patterns

    return tuple(load_patterns(value).items())


_OPTIONS: list[tuple[str, Callable[[F], F]]] = [
    (
        "model",
        click.option(
            "--model",
            "-m",
            default=None,
            metavar="MODEL",
            help=f"litellm model string (openai/gpt-4.1-mini, anthropic/..., local, local/PATH.gguf). {_env('model')}",
        ),
    ),
    (
        "api_base",
        click.option(
            "--api-base",
            default=None,
            metavar="URL",
            help=f"Base URL of an OpenAI-compatible or other custom endpoint. {_env('api_base')}",
        ),
    ),
    (
        "api_key",
        click.option(
            "--api-key",
            default=None,
            metavar="KEY",
            help=f"Provider key (else the provider's usual variable). {_env('api_key')}",
        ),
    ),
    (
        "structured_output",
        click.option(
            "--structured-output",
            default=None,
            type=click.Choice(["auto", "json_schema", "tool", "json"]),
            help=f"How the answer's shape is enforced. {_env('structured_output')}",
        ),
    ),
    (
        "context_window",
        click.option(
            "--context-window",
            default=None,
            type=_number("context_window"),
            metavar="N",
            help=f"Model context in tokens (else litellm's model info). {_env('context_window')}",
        ),
    ),
    (
        "timeout",
        click.option(
            "--timeout",
            default=None,
            type=_number("timeout"),
            metavar="S",
            help=f"Seconds per LLM call. {_env('timeout')}",
        ),
    ),
    (
        "max_retries",
        click.option(
            "--max-retries",
            default=None,
            type=_number("max_retries"),
            metavar="N",
            help=f"Transport retries per call. {_env('max_retries')}",
        ),
    ),
    (
        "max_reasks",
        click.option(
            "--max-reasks",
            default=None,
            type=_number("max_reasks"),
            metavar="N",
            help=f"Re-asks when an answer does not validate. {_env('max_reasks')}",
        ),
    ),
    (
        "temperature",
        click.option(
            "--temperature",
            default=None,
            type=_number("temperature"),
            metavar="T",
            help=f"Sampling temperature (default 0). {_env('temperature')}",
        ),
    ),
    (
        "seed",
        click.option("--seed", default=None, type=_number("seed"), help=f"Sampling seed. {_env('seed')}"),
    ),
    (
        "max_output_tokens",
        click.option(
            "--max-output-tokens",
            default=None,
            type=_number("max_output_tokens"),
            metavar="N",
            help=f"Cap on the judge's answer length. {_env('max_output_tokens')}",
        ),
    ),
    (
        "judge",
        click.option(
            "--judge",
            "judge",
            default=None,
            type=click.Choice(["auto", "llm", "detectors", "both"]),
            help=f"Which judge: the LLM, the offline detectors, or both (auto: llm when a model is set). {_env('judge')}",
        ),
    ),
    (
        "hints",
        click.option(
            "--hints/--no-hints",
            default=None,
            help=f"Give the LLM the detectors' findings as hints. {_env('hints')}",
        ),
    ),
    (
        "taxonomy",
        click.option(
            "--taxonomy",
            default=None,
            metavar="NAME|FILE",
            help=f"Taxonomy version or YAML/JSON file. {_env('taxonomy')}",
        ),
    ),
    (
        "redact",
        click.option(
            "--redact/--no-redact",
            default=None,
            help=f"Replace secrets and personal data before the trace leaves the process (default on). {_env('redact')}",
        ),
    ),
    (
        "redact_ips",
        click.option(
            "--redact-ips/--keep-ips", default=None, help=f"Also redact IPv4 addresses. {_env('redact_ips')}"
        ),
    ),
    (
        "cache",
        click.option(
            "--cache/--no-cache",
            default=None,
            help=f"Reuse identical earlier answers (default on). {_env('cache')}",
        ),
    ),
    (
        "cache_dir",
        click.option(
            "--cache-dir",
            default=None,
            type=click.Path(file_okay=False),
            metavar="DIR",
            help=f"Folder of the answer cache (default: a per-user cache folder). {_env('cache_dir')}",
        ),
    ),
    (
        "redact_patterns",
        click.option(
            "--redact-patterns",
            default=None,
            metavar="FILE",
            callback=_read_patterns,
            help="File of extra `name: regex` patterns to redact, applied after those of "
            "the file that MAST_REDACT_PATTERNS names (read on every run).",
        ),
    ),
    (
        "price_input",
        click.option(
            "--price-input",
            default=None,
            type=_number("price_input"),
            metavar="USD",
            help=f"Dollars per million input tokens (for a model litellm has no price for). {_env('price_input')}",
        ),
    ),
    (
        "price_output",
        click.option(
            "--price-output",
            default=None,
            type=_number("price_output"),
            metavar="USD",
            help=f"Dollars per million output tokens. {_env('price_output')}",
        ),
    ),
    # Juries and repeated judging (mast.judge.jury).
    (
        "samples",
        click.option(
            "--samples",
            default=None,
            type=_number("samples"),
            metavar="K",
            help=f"Judge each trace K times (needs --temperature > 0) and reduce the votes. {_env('samples')}",
        ),
    ),
    (
        "jury",
        click.option(
            "--jury",
            default=None,
            metavar="MODEL,...|FILE",
            help=f"Several models judge each trace (`detectors` = offline detectors), or a YAML jury file. {_env('jury')}",
        ),
    ),
    (
        "reducer",
        click.option(
            "--reducer",
            default=None,
            metavar="RULE",
            help=f"How votes become a verdict: majority (tie = absent), any, all, at_least:N. {_env('reducer')}",
        ),
    ),
    (
        "quorum",
        click.option(
            "--quorum",
            default=None,
            type=_number("quorum"),
            metavar="N",
            help=f"Jurors that must answer (default: more than half). {_env('quorum')}",
        ),
    ),
]

JUDGE_OPTION_NAMES = tuple(name for name, _ in _OPTIONS)


def _check_cache_dir(config: JudgeConfig, given: str) -> None:
    """The answer cache's folder can be created, checked once before the run (not an error row per trace).

    Raises:
        UsageError: the folder cannot be created, said of ``--cache-dir`` or ``MAST_CACHE_DIR``.
    """
    if not config.cache or (config.kind == "detectors" and not config.jury):
        return  # the detectors alone never use the cache
    from mast.judge.cache import JudgeCache

    folder = JudgeCache(config.cache_dir).directory
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        where = given if config.cache_dir is not None else "the default cache folder"
        raise UsageError(
            f"{where} {str(folder)!r}: the answer cache folder cannot be created ({exc.strerror or exc}); "
            "give a writable --cache-dir or MAST_CACHE_DIR, or --no-cache"
        ) from None


def judge_options(func: F) -> F:
    """Add the judge options to a click command; the command receives ``judge_config``."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        values = {name: kwargs.pop(name, None) for name in JUDGE_OPTION_NAMES}
        config = JudgeConfig.from_options(**values)
        _check_cache_dir(
            config, given="--cache-dir" if values.get("cache_dir") is not None else ENV_VARS["cache_dir"]
        )
        if not config.redact:
            # Off only by an explicit, recognised value (mast._env); a run that sends traces as they are says so.
            click.echo(
                "mast: redaction is off (--no-redact or MAST_REDACT): secrets and personal data in the traces "
                "are sent and written as they are",
                err=True,
            )
        kwargs["judge_config"] = config
        return func(*args, **kwargs)

    decorated: Any = wrapper
    for _, option in reversed(_OPTIONS):
        decorated = option(decorated)
    return decorated  # type: ignore[no-any-return]
