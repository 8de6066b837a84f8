"""Every option of the judge, in one model, with its ``MAST_*`` environment variable.

The CLI's judge options (same names on ``mast classify`` and ``mast label``) and the Python API's
keyword arguments all land here. :meth:`JudgeConfig.answer_params` is the part that changes the
answer, and the only part that goes into cache keys and resume keys: never keys, timeouts,
retries or concurrency.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from mast._env import env_value, parse_bool, parse_number
from mast._json import canonical_hash
from mast.errors import UsageError

StructuredOutput = Literal["auto", "json_schema", "tool", "json"]
JudgeKind = Literal["auto", "llm", "detectors", "both"]

ENV_VARS: dict[str, str] = {
    "model": "MAST_MODEL",
    "api_base": "MAST_API_BASE",
    "api_key": "MAST_API_KEY",
    "temperature": "MAST_TEMPERATURE",
    "seed": "MAST_SEED",
    "max_output_tokens": "MAST_MAX_OUTPUT_TOKENS",
    "timeout": "MAST_TIMEOUT",
    "max_retries": "MAST_MAX_RETRIES",
    "max_reasks": "MAST_MAX_REASKS",
    "structured_output": "MAST_STRUCTURED_OUTPUT",
    "context_window": "MAST_CONTEXT_WINDOW",
    "cache": "MAST_CACHE",
    "cache_dir": "MAST_CACHE_DIR",
    "judge": "MAST_JUDGE",
    "hints": "MAST_HINTS",
    "taxonomy": "MAST_TAXONOMY",
    "redact": "MAST_REDACT",
    "redact_ips": "MAST_REDACT_IPS",
    "price_input": "MAST_PRICE_INPUT",
    "price_output": "MAST_PRICE_OUTPUT",
    "samples": "MAST_SAMPLES",
    "jury": "MAST_JURY",
    "reducer": "MAST_REDUCER",
    "quorum": "MAST_QUORUM",
}
"""Each option that a ``MAST_*`` variable sets, and the variable (``--help`` shows them)."""

NumberRule = tuple[type[int] | type[float], float | None, bool]
"""``(kind, minimum, minimum excluded)`` of a number option."""

FLAG_RANGES: dict[str, NumberRule] = {
    "timeout": (float, 0, True),
    "max_retries": (int, 0, False),
    "max_reasks": (int, 0, False),
    "temperature": (float, 0, False),
    "seed": (int, None, False),
    "max_output_tokens": (int, 64, False),
    "context_window": (int, 512, False),
    "price_input": (float, 0, False),
    "price_output": (float, 0, False),
    "samples": (int, 1, False),
    "quorum": (int, 1, False),
}
"""The range of each number option, as its flag and its ``MAST_*`` variable both check it (the CLI's
click types are built from this table). The Python API checks only what the model itself needs."""

BOOL_OPTIONS = frozenset({"cache", "hints", "redact", "redact_ips"})
"""Options a ``MAST_*`` variable switches on or off (read by :func:`mast._env.parse_bool`)."""


def _env_option(name: str, var: str, raw: str) -> Any:
    """The value of option ``name`` from its variable ``var``, read with the rules of its flag.

    Raises:
        UsageError: a boolean or number the flag would refuse.
    """
    if name in BOOL_OPTIONS:
        return parse_bool(var, raw)
    if name in FLAG_RANGES:
        kind, minimum, min_open = FLAG_RANGES[name]
        return parse_number(var, raw, kind, minimum=minimum, min_open=min_open)
    return raw


class JudgeConfig(BaseModel):
    """How to judge a trace. Build with :meth:`from_options` to honour ``MAST_*`` variables."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    model: str | None = None
    """litellm model string (``openai/gpt-4.1-mini``, ``anthropic/claude-...``, ``local``); ``None``
    means no LLM is configured and the offline detectors judge."""
    api_base: str | None = None
    """Base URL of an OpenAI-compatible or other custom endpoint."""
    api_key: SecretStr | None = None
    """Provider key; otherwise litellm reads the provider's usual variable."""
    temperature: float = 0.0
    """Sampling temperature."""
    seed: int | None = None
    """Sampling seed, for providers that honour one."""
    max_output_tokens: int = 4096
    """Cap on the judge's answer length."""
    timeout: float = 120.0
    """Seconds to wait for one LLM call."""
    max_retries: int = 4
    """Transport retries per call (429, 5xx, timeouts, connection errors)."""
    max_reasks: int = 2
    """Re-asks when the model's answer does not validate."""
    structured_output: StructuredOutput = "auto"
    """How the answer's shape is enforced: JSON Schema response format, a tool call, or JSON mode."""
    context_window: int | None = None
    """The model's context size in tokens; looked up from litellm when ``None``."""
    cache: bool = True
    """Reuse identical earlier answers from the on-disk cache."""
    cache_dir: Path | None = None
    """Cache folder; a per-user cache folder when ``None``."""
    judge: JudgeKind = "auto"
    """``llm``, ``detectors``, ``both``, or ``auto`` (llm when a model is set, else detectors)."""
    hints: bool = True
    """Give the LLM judge the offline detectors' findings as hints."""
    taxonomy: str = "mast-v3"
    """Built-in taxonomy version or a path to a taxonomy file."""
    redact: bool = True
    """Replace secrets and personal data before the trace leaves the process."""
    redact_ips: bool = False
    """Also replace IPv4 addresses (off by default: IT traces need them)."""
    redact_patterns: tuple[tuple[str, str], ...] = ()
    """More things to redact, as ``(kind name, regex)`` pairs (a mapping works too), on top of the
    built-in rules and the ``name: regex`` file named by ``MAST_REDACT_PATTERNS``."""
    price_input: float | None = Field(default=None, ge=0)
    """Dollars per million input tokens, for a model litellm has no price for (a custom endpoint)
    or to override its price; used by dry runs, ``--budget-usd`` and the reported cost."""
    price_output: float | None = Field(default=None, ge=0)
    """Dollars per million output tokens (give both prices, or neither)."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Extra keyword arguments passed to ``litellm.acompletion``; their fingerprint is part of the
    answer key (they reach the request), never their values."""
    samples: int = Field(default=1, ge=1)
    """Independent judgements per trace (and per juror), reduced to one verdict; above 1 needs a
    temperature above 0 (see :mod:`mast.judge.jury`)."""
    jury: str | None = None
    """Several models judging each trace: ``MODEL,MODEL,...`` (``detectors`` names the offline
    detectors) or a YAML file listing jurors with their own options (see :mod:`mast.judge.jury`)."""
    reducer: str = "majority"
    """How the votes of jurors/samples become one verdict: ``majority``, ``any``, ``all``, ``at_least:N``."""
    quorum: int | None = Field(default=None, ge=1)
    """Jurors/samples that must answer for a trace to be judged; ``None``: more than half of them."""
    sample: int | None = Field(default=None, ge=0)
    """Which of several samples this judge draws (set by the jury, part of the cache key from 1 up)."""

    @field_validator("jury", mode="before")
    @classmethod
    def _jury_list(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return ",".join(str(v) for v in value)
        return value

    @field_validator("reducer")
    @classmethod
    def _known_reducer(cls, value: str) -> str:
        # Checked whether or not a jury will use it: MAST_REDUCER=bogus is an error, never ignored.
        from mast.judge.reduce import parse_reducer  # numpy: not on every start-up's path

        try:
            parse_reducer(value)
        except UsageError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("api_base")
    @classmethod
    def _endpoint_url(cls, value: str | None) -> str | None:
        # Checked even when the detectors judge: MAST_API_BASE=localhost:8000 would fail only later.
        if value is not None:
            parts = urlsplit(value.strip())
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError("not an http(s) URL with a host, e.g. http://127.0.0.1:8000/v1")
        return value

    @field_validator("redact_patterns", mode="before")
    @classmethod
    def _pairs(cls, value: Any) -> Any:
        pairs = tuple(value.items()) if isinstance(value, Mapping) else value
        for pair in pairs or ():
            if isinstance(pair, list | tuple) and len(pair) == 2 and isinstance(pair[1], str):
                try:
                    re.compile(pair[1])
                except re.error as exc:
                    raise ValueError(f"redaction pattern {pair[0]!r} does not compile: {exc}") from None
        return pairs

    @model_validator(mode="after")
    def _both_prices(self) -> JudgeConfig:
        if (self.price_input is None) != (self.price_output is None):
            raise ValueError(
                "give both --price-input and --price-output (dollars per million tokens), or neither"
            )
        return self

    @classmethod
    def from_options(cls, **options: Any) -> JudgeConfig:
        """Options given explicitly win; unset ones come from ``MAST_*`` variables, then defaults.

        Raises:
            UsageError: unknown option names or values of the wrong type.
        """
        check_option_names(options)
        values: dict[str, Any] = {}
        from_env: set[str] = set()
        for name, var in ENV_VARS.items():
            raw = env_value(var)
            if options.get(name) is None and raw is not None:
                values[name] = _env_option(name, var, raw)
                from_env.add(name)
        values.update({k: v for k, v in options.items() if v is not None})
        if "taxonomy" in from_env:  # loaded on every run; from the variable, its error names it
            _check_taxonomy(values["taxonomy"])
        if "jury" in from_env:  # MAST_JURY=,, is said of the variable, before any trace is read
            _check_jury(values["jury"])
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise invalid_options(exc, from_env) from exc

    @property
    def kind(self) -> Literal["llm", "detectors", "both"]:
        """The judge that will run, with ``auto`` resolved."""
        if self.judge == "auto":
            return "llm" if self.model else "detectors"
        return self.judge

    def answer_params(self) -> dict[str, Any]:
        """What changes the answer: the only options hashed into cache and resume keys.

        ``redact_patterns`` is a fingerprint of the custom redaction patterns in force (the
        ``MAST_REDACT_PATTERNS`` file, then :attr:`redact_patterns`), ``None`` when there are none:
        they change what the LLM judge sees.

        Raises:
            UsageError: ``MAST_REDACT_PATTERNS`` names a file that cannot be read as patterns.
        """
        return {
            "kind": self.kind,
            "model": self.model if self.kind != "detectors" else None,
            "temperature": self.temperature if self.kind != "detectors" else None,
            "seed": self.seed if self.kind != "detectors" else None,
            "max_output_tokens": self.max_output_tokens if self.kind != "detectors" else None,
            "hints": self.hints if self.kind == "llm" else None,
            "redact": self.redact,
            "redact_ips": self.redact_ips,
            "redact_patterns": self.redact_patterns_fingerprint() if self.kind != "detectors" else None,
            # The endpoint and the extra request options change who answers and how. Left out when
            # unset, so the keys of runs without them stay those of earlier releases, while an entry
            # written without an endpoint never matches a run that has one.
            **(
                {"endpoint": public_endpoint(self.api_base)}
                if self.api_base and self.kind != "detectors"
                else {}
            ),
            **(
                {"extra": "sha256:" + canonical_hash(self.extra)}
                if self.extra and self.kind != "detectors"
                else {}
            ),
            # Sample 0 (and a single judgement) keeps the plain key, so a run with one sample is reused.
            **({"sample": self.sample} if self.sample else {}),
        }

    def redact_patterns_fingerprint(self) -> str | None:
        """sha256 of the custom redaction patterns in force, in the order they apply; ``None`` when none.

        Raises:
            UsageError: ``MAST_REDACT_PATTERNS`` names a file that cannot be read as patterns.
        """
        if not self.redact:
            return None
        pairs = [*_env_patterns(), *self.redact_patterns]
        if not pairs:
            return None
        return "sha256:" + canonical_hash(pairs)


# Query parameters that carry credentials in a base URL (Azure's ``api-key``, signed URLs' ``sig``...).
SECRET_QUERY_WORDS = r"key|token|secret|passw|pwd|sig|auth|credential|session"
"""Words that make a query parameter's value a secret (kept out of endpoints and error messages)."""
_SECRET_QUERY = re.compile(SECRET_QUERY_WORDS, re.IGNORECASE)


def public_endpoint(url: str | None) -> str | None:
    """``url`` without what must not be written down: user and password, and query values that are secrets.

    What the cache key and the results' judge record hold as the endpoint: the same server under other
    credentials is the same endpoint, and a results file can be shared.

    Example:
        >>> public_endpoint("https://me:pw@llm.example/v1/?api-key=s3cret&api-version=2024-06-01")
        'https://llm.example/v1?api-version=2024-06-01'
    """
    if not url:
        return None
    parts = urlsplit(url.strip())
    host = parts.netloc.rpartition("@")[2]
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _SECRET_QUERY.search(k)]
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), urlencode(query), ""))


def _env_patterns() -> tuple[tuple[str, str], ...]:
    """The ``name, regex`` pairs of the ``MAST_REDACT_PATTERNS`` file (read again when it changes)."""
    from mast.redact import PATTERNS_ENV

    path = os.environ.get(PATTERNS_ENV, "")
    if not path:
        return ()
    try:
        stat = os.stat(path)
    except OSError as exc:
        raise UsageError(f"{PATTERNS_ENV}={path}: {exc.strerror or exc}") from exc
    return _load_env_patterns(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _load_env_patterns(path: str, mtime_ns: int, size: int) -> tuple[tuple[str, str], ...]:
    # mtime and size are only part of the cache key: an edited file is read again.
    from mast.redact import load_patterns

    return tuple(load_patterns(path).items())


def _check_jury(value: str) -> None:
    """A ``MAST_JURY`` list that names no juror (``,,``) is refused naming the variable (a file is read later)."""
    if value.strip() and os.path.isfile(value):
        return
    if not any(part.strip() for part in value.split(",")):
        raise UsageError(f"{ENV_VARS['jury']}={value!r} names no model (MODEL,MODEL,... or a jury file)")


def _check_taxonomy(value: str) -> None:
    from mast.errors import MastError
    from mast.taxonomy import load_taxonomy

    try:
        load_taxonomy(value)
    except MastError as exc:
        raise UsageError(f"invalid judge option: {ENV_VARS['taxonomy']}={value}: {exc}") from None


def check_option_names(options: Mapping[str, Any]) -> None:
    """Refuse unknown judge option names, suggesting the nearest known one (``modle=`` -> ``model``).

    Raises:
        UsageError: a name that is not a :class:`JudgeConfig` field.
    """
    unknown = sorted(set(options) - set(JudgeConfig.model_fields))
    if not unknown:
        return
    parts = []
    for name in unknown:
        near = difflib.get_close_matches(name, list(JudgeConfig.model_fields), n=1, cutoff=0.6)
        parts.append(f"{name} (did you mean {near[0]}?)" if near else name)
    raise UsageError(f"unknown judge option(s): {', '.join(parts)}")


def invalid_options(exc: ValidationError, from_env: frozenset[str] | set[str] = frozenset()) -> UsageError:
    """One line naming each bad value by where it came from: ``MAST_TEMPERATURE=hot`` or ``temperature='hot'``."""
    parts = []
    for error in exc.errors():
        loc = error.get("loc") or ()
        name = str(loc[0]) if loc else ""
        value = error.get("input")
        if name in from_env:
            where = f"{ENV_VARS[name]}={os.environ.get(ENV_VARS[name], value)}"
        elif name:
            where = f"{name}={value!r}"
        else:
            where = "judge options"
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{where}: {message}")
    return UsageError(f"invalid judge option: {'; '.join(parts)}")
