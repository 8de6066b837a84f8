"""Coding-agent hooks: Claude Code and Codex CLI sessions labelled as they finish (``mast hooks``).

Installing (:func:`install` / :func:`uninstall`) merges one entry into the tool's own settings and
never touches anything else there:

* **Claude Code** (``~/.claude/settings.json``, or ``.claude/settings.json`` of a project): a
  command hook on ``Stop``, ``SubagentStop`` and ``SessionEnd``. Claude Code runs it with the event
  as JSON on stdin: ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``.
* **Codex CLI** (``~/.codex/config.toml``, or ``$CODEX_HOME/config.toml``): the top-level
  ``notify`` program, which Codex runs after each turn with a JSON argument (``type:
  agent-turn-complete``, ``thread-id``, ``cwd``...); the session's rollout is found under
  ``~/.codex/sessions/`` by its thread id. Codex runs one notify program, so an existing one that
  is not mast's is left in place and reported.

Our entries are the commands that run ``mast hooks run``; uninstalling removes exactly those.

Running (:func:`handle_event`, what the hook calls) reads the event, answers in well under a second
and never fails the hook: it starts a detached process (:func:`label_session`) and prints one line.
``SessionEnd`` labels the session at once; ``Stop``, ``SubagentStop`` and Codex's turn notices label
it after a quiet period (``--quiet``, default 5 minutes) in which its transcript did not change: one
process per session waits (it starts its wait again whenever the transcript changed), and the
processes of later events find it waiting and leave at once. Results go
to one folder per project and one results file per judge in it (default
``<user data dir>/mast/hooks/<project>-<hash>/<judge>.jsonl``, e.g. ``detectors.jsonl`` beside
``openai-gpt-4o-mini.jsonl``; ``-o`` chooses a file), so trying the detectors first and adding a
model later never mixes two judges in one file, and ``mast report`` / ``mast diff`` take the
folder. Labelling goes through the batch runner, so a repeated event, a rerun or the same
transcript seen twice adds nothing (resume keys); the transcript is read once the results file is
locked, so of two processes for one session the later one reads the later transcript, and its
result replaces the session's older ones: one result per session and judge, the latest. The
detectors judge unless a model is configured (``--model`` at install, or ``MAST_MODEL`` in the
agent's environment).
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from mast._files import FileCheck, check_file, open_checked
from mast._outputs import terminal_safe
from mast.errors import MastError, TraceFormatError, UsageError, one_line

Tool = Literal["claude-code", "codex"]
TOOLS: tuple[Tool, ...] = ("claude-code", "codex")
CLAUDE_EVENTS = ("Stop", "SubagentStop", "SessionEnd")
"""Claude Code events the hook is installed for."""
FINAL_EVENTS = frozenset({"SessionEnd"})
"""Events after which the session is over: labelled at once, with no quiet period."""
DEFAULT_QUIET_S = 300.0
"""After a ``Stop`` (or a Codex turn), label the session once its transcript was quiet this long."""
HOOK_TIMEOUT_S = 30
"""The timeout written into Claude Code's hook entry (``mast hooks run`` returns long before)."""
LOCK_WAIT_S = 600.0
"""How long a labelling process waits for another one writing the same results file."""
MAX_EVENT_BYTES = 1 << 20
CODEX_MARK = (
    "# mast hooks: the notify program below is mast's (`mast hooks uninstall codex` removes both lines)"
)
CODEX_CREATED = " (mast created this file)"
"""Added to the mark when install created ``config.toml``: uninstall then removes the file if nothing else is left."""

JUDGE_FLAGS = ("model", "judge", "jury", "taxonomy", "api_base")
"""The judge options ``mast hooks install`` carries into the installed command (never keys)."""


# -- where things live -----------------------------------------------------------------------------


def codex_home() -> Path:
    """``$CODEX_HOME``, else ``~/.codex``."""
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


def settings_path(tool: Tool, scope: Literal["user", "project"], project: Path | None = None) -> Path:
    """The settings file ``install`` edits for ``tool`` at ``scope``."""
    base = project or Path.cwd()
    if tool == "claude-code":
        return (base / ".claude" if scope == "project" else Path.home() / ".claude") / "settings.json"
    return (base / ".codex" if scope == "project" else codex_home()) / "config.toml"


def hooks_dir() -> Path:
    """Where per-project results files go by default: ``$MAST_HOOKS_DIR``, else the user's data dir."""
    given = os.environ.get("MAST_HOOKS_DIR")
    if given:
        return Path(given)
    import platformdirs

    return Path(platformdirs.user_data_dir("mast")) / "hooks"


def project_dir(cwd: str | os.PathLike[str] | None) -> Path:
    """The results folder of the project at ``cwd``: its folder name and a hash of its path."""
    where = str(cwd or "unknown-project")
    name = _file_name(Path(where).name) or "project"
    digest = hashlib.sha256(where.encode()).hexdigest()[:10]
    return hooks_dir() / f"{name}-{digest}"


def judge_name(judge: Mapping[str, str | None] | None = None) -> str:
    """The file name (without ``.jsonl``) of a judge's results: ``detectors``, the model, or a jury.

    Read from the hook's options and ``MAST_MODEL`` / ``MAST_JUDGE`` alone, without loading the
    judge (the hook must answer at once); the labelling process judges with the same settings.
    """
    options = judge or {}
    kind = options.get("judge") or os.environ.get("MAST_JUDGE") or "auto"
    model = options.get("model") or os.environ.get("MAST_MODEL")
    jury = options.get("jury")
    if kind == "detectors" or not (model or jury):
        name = "detectors"
    else:
        name = f"jury-{hashlib.sha256(str(jury).encode()).hexdigest()[:8]}" if jury else str(model)
        name += "+detectors" if kind == "both" else ""
        api_base = options.get("api_base") or os.environ.get("MAST_API_BASE")
        if api_base and not jury:
            name += _endpoint_suffix(api_base)
    taxonomy = options.get("taxonomy") or os.environ.get("MAST_TAXONOMY")
    if taxonomy:
        name += f"-{Path(taxonomy).stem}"
    return _file_name(name) or "judge"


def _endpoint_suffix(api_base: str) -> str:
    """``-via-HOST-PORT-HASH`` for an endpoint: one model name served by two endpoints is two judges.

    Built from the endpoint without its credentials or query (never written into a file name).
    """
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(api_base.strip())
        port = parts.port
    except ValueError:
        return "-via-" + hashlib.sha256(api_base.encode()).hexdigest()[:6]
    host = parts.hostname or "endpoint"
    public = f"{parts.scheme}://{host}{f':{port}' if port else ''}{parts.path.rstrip('/')}"
    digest = hashlib.sha256(public.encode()).hexdigest()[:6]
    return f"-via-{host}{f'-{port}' if port else ''}-{digest}"


def _file_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "-", text).strip("-.")


def default_results(
    cwd: str | os.PathLike[str] | None, judge: Mapping[str, str | None] | None = None
) -> Path:
    """The results file of the project at ``cwd`` for ``judge``: ``<project folder>/<judge>.jsonl``."""
    return project_dir(cwd) / f"{judge_name(judge)}.jsonl"


def log_path(results: Path) -> Path:
    """The log the detached labelling processes of ``results`` append to."""
    return results.with_name(results.name + ".hooks.log")


# -- the installed command ---------------------------------------------------------------------


def hook_argv(
    tool: Tool,
    *,
    output: Path | None = None,
    quiet: float | None = None,
    judge: dict[str, str | None] | None = None,
    python: str | None = None,
) -> list[str]:
    """The command the tool runs: this Python's ``mast hooks run`` with the chosen options."""
    argv = [python or sys.executable, "-m", "mast", "hooks", "run", "--tool", tool]
    if output is not None:
        argv += ["-o", str(Path(output).expanduser().resolve())]
    if quiet is not None:
        argv += ["--quiet", f"{quiet:g}s"]
    for name, value in (judge or {}).items():
        if name not in JUDGE_FLAGS:
            raise UsageError(
                f"mast hooks install carries no --{name.replace('_', '-')} (keys stay in the environment)"
            )
        if value not in (None, ""):
            argv += [f"--{name.replace('_', '-')}", str(value)]
    return argv


def is_ours(command: Any) -> bool:
    """Whether a hook command (a shell string or an argv list) is ``mast hooks run``."""
    try:
        words = (
            command if isinstance(command, list) else shlex.split(command) if isinstance(command, str) else []
        )
    except ValueError:  # a command of the user's with unbalanced quotes: not ours, and left alone
        return False
    words = [str(w) for w in words]
    for at in range(len(words) - 1):
        if words[at] == "hooks" and words[at + 1] == "run":
            before = words[:at]
            return (
                any(Path(w).name in ("mast", "mast.exe") for w in before)
                or "mast" in before[-1:]
                or (len(before) >= 2 and before[-2:] == ["-m", "mast"])
            )
    return False


# -- Claude Code settings.json -----------------------------------------------------------------


def _read_json_settings(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = orjson.loads(path.read_bytes() or b"{}")
    except orjson.JSONDecodeError as exc:
        raise UsageError(
            f"{path} is not valid JSON ({exc}); fix it by hand, mast leaves it as it is"
        ) from exc
    if not isinstance(data, dict):
        raise UsageError(f"{path} does not hold a JSON object; mast leaves it as it is")
    return data


def _dump_settings(settings: dict[str, Any], path: Path) -> bytes:
    """``settings`` as JSON laid out like the file at ``path`` already is.

    Its indent (spaces or a tab) and its final newline are kept, and keys keep their order: a file
    of the usual layout (``json.dumps``, editors) that comes back to the same object comes back
    byte for byte.
    """
    import json

    old = path.read_bytes() if path.exists() else b""
    found = re.search(rb"\n([ \t]+)\S", old)
    indent: str | int = found.group(1).decode() if found else 2
    text = json.dumps(settings, indent=indent, ensure_ascii=False)
    return (text + ("\n" if not old or old.endswith(b"\n") else "")).encode()


def _write_atomic(path: Path, data: bytes) -> None:
    path = (
        path.resolve()
    )  # a settings file linked from a dotfiles repository stays a link: its target is written
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    if path.exists():
        os.chmod(tmp, path.stat().st_mode & 0o777)
    os.replace(tmp, path)


def _strip_claude(settings: dict[str, Any]) -> int:
    """Remove our hook commands from Claude Code settings; containers emptied by that go too."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return 0
    removed = 0
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                kept_groups.append(group)
                continue
            kept = [h for h in inner if not (isinstance(h, dict) and is_ours(h.get("command")))]
            removed += len(inner) - len(kept)
            if kept or not inner:
                kept_groups.append({**group, "hooks": kept} if len(kept) != len(inner) else group)
        if len(kept_groups) != len(groups) or kept_groups != groups:
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
    if removed and not hooks:
        del settings["hooks"]
    return removed


def _memo_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.mast-install")


def _read_memo(path: Path) -> dict[str, Any] | None:
    """What install remembered of ``path`` before it added the hook (``None``: nothing, or unreadable)."""
    try:
        memo = orjson.loads(_memo_path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return memo if isinstance(memo, dict) else None


def _memo_matches(memo: dict[str, Any], settings: dict[str, Any]) -> bool:
    """True when the remembered file holds ``settings`` (the user's part of the file now)."""
    before = memo.get("before")
    if isinstance(before, str):
        try:
            return bool(orjson.loads(before) == settings)
        except orjson.JSONDecodeError:
            return False
    return bool(memo.get("created")) and not settings


def _remember(path: Path, original: bytes | None, replaced: bool, settings: dict[str, Any]) -> None:
    """Keep the file's bytes before the first install beside it, so uninstall puts them back as they were.

    JSON has no comments to mark what mast wrote, and a JSON writer cannot keep a hand-made layout
    (arrays on one line, aligned values): the bytes are kept instead, and only restored while the
    user's part of the file is still what they were.
    """
    memo = _read_memo(path)
    if memo is not None and _memo_matches(memo, settings):
        return  # installed again over our own entry: the first install's memory still holds
    fresh = {
        "created": original is None,
        "before": original.decode("utf-8", "replace") if original and not replaced else None,
    }
    _write_atomic(_memo_path(path), orjson.dumps(fresh))


def install_claude(path: Path, argv: Sequence[str]) -> str:
    """Merge the hook into Claude Code's ``settings.json`` at ``path`` (an earlier mast entry is replaced)."""
    original = path.read_bytes() if path.exists() else None
    settings = _read_json_settings(path)
    replaced = _strip_claude(settings)
    _remember(path, original, bool(replaced), copy.deepcopy(settings))
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UsageError(f"{path}: 'hooks' is not an object; mast leaves the file as it is")
    command = shlex.join(argv)
    for event in CLAUDE_EVENTS:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise UsageError(f"{path}: hooks.{event} is not a list; mast leaves the file as it is")
        groups.append({"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}]})
    _write_atomic(path, _dump_settings(settings, path))
    return f"{'updated' if replaced else 'installed'} the mast hook for {', '.join(CLAUDE_EVENTS)} in {path}"


def uninstall_claude(path: Path) -> str:
    """Remove mast's hook entries from Claude Code's ``settings.json``; everything else stays.

    The file comes back byte for byte as it was before install while the rest of it is unchanged,
    and a file that install created is deleted when nothing else is in it.
    """
    settings = _read_json_settings(path)
    removed = _strip_claude(settings)
    if not removed:
        return f"no mast hook in {path}"
    memo = _read_memo(path)
    said = f"removed {removed} mast hook entr{'y' if removed == 1 else 'ies'} from {path}"
    created = memo is not None and memo.get("created") and not settings
    if created:
        path.unlink()
        said = f"{said} and the file, which mast hooks install had created"
    elif memo is not None and isinstance(memo.get("before"), str) and _memo_matches(memo, settings):
        _write_atomic(path, str(memo["before"]).encode("utf-8"))
    else:
        _write_atomic(path, _dump_settings(settings, path))
    _memo_path(path).unlink(missing_ok=True)
    if created:
        _remove_if_empty(path.parent)
    return said


def _remove_if_empty(folder: Path) -> None:
    """Remove ``folder`` when nothing is left in it (install made the file in it; uninstall took it out)."""
    try:
        folder.rmdir()  # refuses a folder that holds anything
    except OSError:
        pass


# -- Codex config.toml -----------------------------------------------------------------------------
# Python reads TOML (tomllib) but writes none, and a TOML writer would reformat the user's file.
# mast adds exactly two lines at the top of the file (where a top-level key must go: before any
# [table]) and removes exactly those two; each edit is checked by parsing the result, and the
# other settings must come out the same.


def _toml(path: Path) -> tuple[str, dict[str, Any]]:
    import tomllib

    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(
            f"{path} is not valid TOML ({exc}); fix it by hand, mast leaves it as it is"
        ) from exc


def _toml_array(argv: Sequence[str]) -> str:
    # JSON strings are valid TOML basic strings (same escapes), so each argument is written as JSON.
    return "[" + ", ".join(orjson.dumps(a).decode() for a in argv) + "]"


def _without_our_notify(text: str) -> tuple[str, bool]:
    lines = text.splitlines(keepends=True)
    for at, line in enumerate(lines):
        if (
            line.strip() in (CODEX_MARK, CODEX_MARK + CODEX_CREATED)
            and at + 1 < len(lines)
            and lines[at + 1].lstrip().startswith("notify")
        ):
            return "".join(lines[:at] + lines[at + 2 :]), True
    return text, False


def install_codex(path: Path, argv: Sequence[str]) -> str:
    """Set Codex's top-level ``notify`` to ``mast hooks run`` (refused when another program holds it)."""
    import tomllib

    text, config = _toml(path)
    text, replaced = _without_our_notify(text)
    rest = tomllib.loads(text)
    if "notify" in rest:
        raise UsageError(
            f"{path} already has notify = {rest['notify']!r}; Codex runs one notify program, "
            "so mast leaves it: remove it first, or call `mast hooks run --tool codex` from it"
        )
    created = not path.exists() or (
        replaced and CODEX_MARK + CODEX_CREATED in path.read_text(encoding="utf-8")
    )
    new = f"{CODEX_MARK}{CODEX_CREATED if created else ''}\nnotify = {_toml_array(argv)}\n" + text
    parsed = tomllib.loads(new)
    if parsed.get("notify") != list(argv) or {k: v for k, v in parsed.items() if k != "notify"} != rest:
        raise UsageError(
            f"{path}: could not add notify without changing other settings; add it by hand: notify = {_toml_array(argv)}"
        )
    _write_atomic(path, new.encode())
    return f"{'updated' if replaced else 'installed'} mast as Codex's notify program in {path}"


def uninstall_codex(path: Path) -> str:
    """Remove mast's ``notify`` (and its comment line) from Codex's ``config.toml``."""
    import tomllib

    text, config = _toml(path)
    new, removed = _without_our_notify(text)
    if not removed:
        if "notify" in config and is_ours(config["notify"]):
            raise UsageError(
                f"{path}: notify runs mast but was not written by mast hooks install; remove it by hand"
            )
        return f"no mast notify in {path}"
    after = tomllib.loads(new)
    if {k: v for k, v in config.items() if k != "notify"} != after:
        raise UsageError(f"{path}: removing mast's notify would change other settings; remove it by hand")
    if (
        not new.strip() and CODEX_MARK + CODEX_CREATED in text
    ):  # install made the file and nothing else is in it
        path.unlink()
        _remove_if_empty(path.parent)
        return f"removed mast's notify and {path}, which mast hooks install had created"
    _write_atomic(path, new.encode())
    return f"removed mast's notify from {path}"


def install(tool: Tool, path: Path, argv: Sequence[str]) -> str:
    """Install the hook for ``tool`` into its settings file ``path``; returns what was done."""
    return install_claude(path, argv) if tool == "claude-code" else install_codex(path, argv)


def uninstall(tool: Tool, path: Path) -> str:
    """Remove exactly mast's hook for ``tool`` from ``path``; returns what was done."""
    return uninstall_claude(path) if tool == "claude-code" else uninstall_codex(path)


# -- an event ------------------------------------------------------------------------------------


@dataclass
class HookEvent:
    """What a hook call says: which session, its transcript, its project and the event."""

    tool: Tool
    session_id: str
    transcript: Path
    cwd: str | None
    event: str
    final: bool
    """The session is over (``SessionEnd``): label without waiting for a quiet period."""
    raw: dict[str, Any] = field(default_factory=dict)


def read_payload(argument: str | None, stdin: Any) -> dict[str, Any]:
    """The event JSON: the command's last argument (Codex notify) or stdin (Claude Code)."""
    if argument:
        text: str | bytes = argument
    else:
        text = _read_event(stdin) if stdin is not None and not stdin.isatty() else ""
    if not text or not (text.strip() if isinstance(text, bytes) else str(text).strip()):
        raise UsageError("no hook event: expected event JSON on stdin or as the last argument")
    try:
        payload = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"hook event is not JSON ({exc})") from exc
    if not isinstance(payload, dict):
        raise UsageError("hook event is not a JSON object")
    return payload


STDIN_IDLE_S = 2.0
"""How long ``mast hooks run`` waits for (more of) the event on stdin before it gives up."""


def _read_event(stdin: Any, idle_s: float = STDIN_IDLE_S) -> str | bytes:
    """The event on ``stdin``: read until one whole JSON value arrived, stdin closed, or no byte came for ``idle_s``.

    The tool may keep stdin open after writing the event; the hook must not wait for it to close.
    """
    import select

    try:
        fd = stdin.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's in-memory stdin): read it all
        whole: str | bytes = stdin.read(MAX_EVENT_BYTES)
        return whole
    data = b""
    while len(data) < MAX_EVENT_BYTES:
        try:
            ready, _, _ = select.select([fd], [], [], idle_s)
        except (OSError, ValueError):  # pragma: no cover - select refuses this kind of file (Windows pipes)
            rest: bytes = stdin.buffer.read(MAX_EVENT_BYTES - len(data))
            return data + rest
        if not ready:
            if not data.strip():
                raise UsageError("no event on stdin")
            break  # what came is all there is: parsed (and refused if cut) below
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data += chunk
        if data.rstrip().endswith((b"}", b"]")):
            try:
                orjson.loads(data)
                break  # one complete event: do not wait for stdin to close
            except orjson.JSONDecodeError:
                pass
    return data


def find_codex_rollout(thread_id: str, home: Path | None = None) -> Path | None:
    """The rollout file of Codex session ``thread_id`` under ``sessions/`` (newest if several)."""
    if not re.fullmatch(r"[A-Za-z0-9-]{8,64}", thread_id):
        return None
    sessions = (home or codex_home()) / "sessions"
    found = sorted(sessions.glob(f"**/rollout-*{thread_id}.jsonl"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def parse_event(tool: Tool | None, payload: dict[str, Any]) -> HookEvent:
    """The :class:`HookEvent` of a Claude Code hook payload or a Codex notify payload.

    Raises:
        UsageError: a payload that names no session or transcript mast can find.
    """
    is_codex = tool == "codex" or (tool is None and "thread-id" in payload)
    if is_codex:
        thread = str(payload.get("thread-id") or payload.get("thread_id") or payload.get("session_id") or "")
        if not thread:
            raise UsageError("Codex notify payload names no thread-id")
        given = payload.get("rollout_path") or payload.get("transcript_path")
        rollout = (
            _event_path(given, payload.get("cwd"), "rollout_path")
            if isinstance(given, str) and given
            else find_codex_rollout(thread)
        )
        if rollout is None:
            raise UsageError(f"no rollout of Codex session {thread} under {codex_home() / 'sessions'}")
        kind = str(payload.get("type") or "agent-turn-complete")
        return HookEvent("codex", thread, rollout, payload.get("cwd"), kind, final=False, raw=payload)
    session = payload.get("session_id")
    transcript = payload.get("transcript_path")
    if not isinstance(session, str) or not session or not isinstance(transcript, str) or not transcript:
        raise UsageError("Claude Code hook event has no session_id and transcript_path")
    event = str(payload.get("hook_event_name") or "Stop")
    return HookEvent(
        "claude-code",
        session,
        _event_path(transcript, payload.get("cwd"), "transcript_path"),
        payload.get("cwd"),
        event,
        final=event in FINAL_EVENTS,
        raw=payload,
    )


def _event_path(given: str, cwd: Any, key: str) -> Path:
    """The event's ``transcript_path`` as an absolute path: a relative one is taken from the event's ``cwd``.

    The labeller runs in another folder, so a relative path left as it is would pass the hook's
    check and then name no file; without an absolute ``cwd`` to resolve it against it is refused.

    Raises:
        UsageError: a relative path and no absolute ``cwd`` in the event.
    """
    path = Path(given).expanduser()
    if path.is_absolute():
        return path
    if isinstance(cwd, str) and cwd and Path(cwd).expanduser().is_absolute():
        return Path(cwd).expanduser() / path
    why = (
        "the event has no cwd"
        if not (isinstance(cwd, str) and cwd)
        else f"its cwd {cwd!r} is not absolute either"
    )
    raise UsageError(f"{key} {given!r} is a relative path and {why} to resolve it against")


def last_verdict(results: Path, session_id: str) -> str | None:
    """``modes 1.3, 3.2`` / ``no failure mode found`` for the session's latest result, if any."""
    if not results.exists():
        return None
    from mast.results import iter_records

    found: dict[str, Any] | None = None
    try:
        for _, record in iter_records(results):
            if record.get("trace_id") == session_id:
                found = record
    except MastError:
        return None
    if found is None:
        return None
    if found.get("status") != "judged":
        return str(found.get("status"))
    codes = [
        m.get("code") for m in found.get("failure_modes") or [] if isinstance(m, dict) and m.get("present")
    ]
    return f"modes {', '.join(str(c) for c in codes)}" if codes else "no failure mode found"


def spawn_labeller(event: HookEvent, results: Path, quiet: float, judge: dict[str, str | None]) -> int:
    """Start the detached process that labels ``event``'s session; returns its pid.

    It runs in its own session (``start_new_session``), with no terminal and its output in the
    results file's hooks log, so neither the hook's return nor the agent waits for it, and a
    Ctrl-C in the agent's terminal does not reach it.
    """
    argv = [
        sys.executable,
        "-m",
        "mast",
        "hooks",
        "label",
        "--transcript",
        str(event.transcript),
        "--session",
        event.session_id,
        "-o",
        str(results),
        "--quiet",
        f"{0 if event.final else quiet:g}s",
        "--tool",
        event.tool,
    ]
    for name, value in judge.items():
        if value not in (None, ""):
            argv += [f"--{name.replace('_', '-')}", str(value)]
    log = log_path(results)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            close_fds=True,
            start_new_session=True,
            cwd=str(results.parent),
        )
    return process.pid


FORMATS: dict[Tool, str] = {"claude-code": "claude_code", "codex": "codex_rollout"}
"""The format each tool's transcripts are read as (the labeller reads no other)."""


def tool_roots(tool: Tool) -> list[Path]:
    """Where ``tool`` keeps its transcripts: a linked transcript must lead inside one of these."""
    if tool == "codex":
        return [codex_home() / "sessions"]
    roots = [Path.home() / ".claude" / "projects"]
    if os.environ.get("CLAUDE_CONFIG_DIR"):
        roots.append(Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects")
    return roots


def _looks_like_own_format(tool: Tool, fd: int) -> bool:
    """Whether the first line of the open file ``fd`` is a Claude Code session event / a Codex rollout line.

    A quick look at the head, so the hook answers before any normaliser is imported (that import
    costs seconds); the labelling process then reads the file with that format only.
    """
    os.lseek(fd, 0, os.SEEK_SET)
    head = os.read(fd, 1 << 16)
    first = next((line for line in head.lstrip(b"\xef\xbb\xbf").splitlines() if line.strip()), b"")
    try:
        value = orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        return False
    if tool == "codex":
        return "payload" in value
    return any(key in value for key in ("sessionId", "uuid", "leafUuid", "messageId"))


def check_transcript(event: HookEvent) -> None:
    """Refuse a transcript that is not the tool's own.

    That is a missing file, something not a regular file, a file outside the tool's transcript
    folder (:func:`tool_roots`; a link is followed first), or a file not in the tool's format.

    Raises:
        UsageError: why it is refused (the hook prints ``hook skipped: ...`` and exits 0).
    """
    transcript_check(
        event.transcript, event.tool, f"transcript {event.transcript} of session {event.session_id}"
    )


def transcript_check(path: Path, tool: Tool | None, what: str) -> FileCheck:
    """What :func:`check_transcript` checks, and the file it saw: the labeller reads that file only.

    The hook checks, and the detached labeller checks again just before it reads (the transcript
    may have been swapped for a link while it waited for the session to go quiet); the read then
    opens the very file this check saw (:mod:`mast._files`), never a link put there since.

    Raises:
        UsageError: why the transcript is refused.
    """
    import stat

    try:
        mode = path.stat().st_mode
    except OSError:
        raise UsageError(f"{what} does not exist") from None
    if not stat.S_ISREG(mode):
        raise UsageError(f"{what} is not a regular file")
    try:
        check = check_file(path)
    except TraceFormatError as exc:
        raise UsageError(f"{what} cannot be read ({exc.reason})") from None
    if tool is None:
        return check
    # The event names the file; a hostile or mistaken one must not make the hook read any file the
    # user can: only what lies, links followed, in the tool's own transcript folder is labelled.
    target = Path(check.target)
    roots = [root.resolve() for root in tool_roots(tool)]
    if not any(target.is_relative_to(root) for root in roots):
        # Said as it is: a link (the file or a folder above it), a `..` that leads out, or a plain path.
        linked = any(part.is_symlink() for part in (path, *path.parents))
        plain = ".." not in path.parts and target == Path(os.path.normpath(path.absolute()))
        where = f"is a link to {target}" if linked else "lies" if plain else f"resolves to {target}"
        raise UsageError(f"{what} {where}, outside {', '.join(map(str, roots))}")
    try:
        fd = open_checked(path, check)
    except TraceFormatError as exc:
        raise UsageError(f"{what} cannot be read ({exc.reason})") from None
    try:
        own = _looks_like_own_format(tool, fd)
    except OSError as exc:
        raise UsageError(f"{what} cannot be read ({one_line(exc)})") from None
    finally:
        os.close(fd)
    if not own:
        raise UsageError(f"{what} is not a {FORMATS[tool]} transcript")
    return check


def _other_judge(results: Path, info: Any, *, chosen: bool) -> str | None:
    """Why ``results`` cannot take this judge's results (it holds another judge's), else ``None``."""
    from mast.batch.mixing import check_one_judge

    try:
        check_one_judge(results, info)
    except UsageError as exc:
        if chosen:
            return (
                f"{results} holds results of another judge; give each judge its own -o, or leave -o out "
                "(the default folder keeps one results file per judge)"
            )
        # The default file is named by model, endpoint and taxonomy; what differs is another setting.
        return (
            f"{results} holds results of the same model judged with other settings "
            f"({error_line(exc).removeprefix('mast: ')}); move that file away to start afresh"
        )
    return None


def handle_event(
    payload: dict[str, Any],
    *,
    tool: Tool | None,
    output: Path | None,
    quiet: float,
    judge: dict[str, str | None],
) -> str:
    """Parse one hook event, start its labelling in the background, and say so in one line.

    Raises:
        UsageError: an event that names no session mast can find (the CLI prints it and exits 0).
    """
    event = parse_event(tool, payload)
    check_transcript(event)
    results = Path(output).expanduser() if output is not None else default_results(event.cwd, judge)
    from mast.batch.judges import configured_judge
    from mast.judge.config import JudgeConfig

    # Built here as well as in the labeller: a bad option or MAST_* value is said on the hook's line
    # (a UsageError), not only in the log, and a results file of another judge is refused at once.
    # The session is real (its transcript passed the check), so the reason also goes to the hooks log,
    # which gives the reason of every skipped session.
    try:
        info = configured_judge(JudgeConfig.from_options(**{k: v for k, v in judge.items() if v})).info
    except Exception as exc:
        _log_line(
            results, f"session {event.session_id} ({event.event}): {error_line(exc).removeprefix('mast: ')}"
        )
        raise
    if mixed := _other_judge(results, info, chosen=output is not None):
        _log_line(results, f"session {event.session_id} ({event.event}) not labelled: {mixed}")
        return f"mast: session {event.session_id} ({event.event}) not labelled: {mixed}"
    spawn_labeller(event, results, quiet, judge)
    when = "now" if event.final or quiet <= 0 else f"once its transcript is quiet for {quiet:g}s"
    verdict = last_verdict(results, event.session_id)
    known = f"; last verdict: {verdict}" if verdict else ""
    # The whole id: two sessions may share any prefix (11111111-aaaa-... and 11111111-aaab-...).
    return f"mast: session {event.session_id} ({event.event}) labelled {when} -> {results}{known}"


def _log_line(results: Path, line: str) -> None:
    """Append ``line``, time-stamped as the labeller's lines are, to ``results``' hooks log (best effort)."""
    from datetime import UTC, datetime

    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    log = log_path(results)
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            out.write(f"{stamp} {terminal_safe(line)}\n".encode())
    except OSError:  # the hook's own line still says why; a log that cannot be written must not fail it
        pass


# -- the detached labeller ---------------------------------------------------------------------


def _fingerprint(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


def _open_results(path: Path, wait_s: float) -> Any:
    """The results file, opened and locked; waits while another labelling process holds it."""
    from mast.results import ResultsFile

    deadline = time.monotonic() + wait_s
    while True:
        try:
            return ResultsFile(path).open()
        except UsageError as exc:
            if "another mast run" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.25)


def label_session(
    transcript: Path,
    session_id: str,
    results: Path,
    *,
    quiet: float,
    judge_options: dict[str, Any],
    sleep: Any = time.sleep,
    tool: Tool | None = None,
) -> str:
    """Label one session's transcript into ``results`` (what the detached process runs); one line back.

    With ``quiet`` > 0 it first waits until the transcript has not changed for that long; one process
    per session waits (a later event finds it waiting and leaves at once), so a long session does
    not pile up sleeping processes. A session already in the file with the same content adds
    nothing; one labelled again after it grew replaces its older result.
    """
    waiting = None
    # The file as it is when the labeller starts: after the wait it must still be this file (the
    # session appends to it; a file swapped in, or a link put in its place, is another one).
    first = transcript_check(transcript, tool, f"transcript {transcript}")
    if quiet > 0:
        waiting = _waiter_lock(results, session_id)
        if waiting is None:  # an earlier event's process already waits for this session: one per session
            return f"session {session_id}: another process is waiting for it to go quiet"
        before = _fingerprint(transcript)
        while True:
            sleep(quiet)
            now = _fingerprint(transcript)
            if now == before:
                break
            before = now  # the session went on: wait again from its latest change
    try:
        return _label_now(
            transcript, session_id, results, judge_options, FORMATS[tool] if tool else "auto", tool, first
        )
    finally:
        if waiting is not None:
            os.close(waiting)


def _waiter_lock(results: Path, session_id: str) -> int | None:
    """An exclusive lock on ``<results>.waiting/<session>.lock``; ``None`` when another process holds it.

    The lock dies with its process (``flock``), so a killed waiter never blocks the next event.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no advisory locks, every event waits on its own
        return os.open(os.devnull, os.O_RDONLY)
    folder = results.with_name(results.name + ".waiting")
    folder.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(session_id.encode()).hexdigest()[:24]
    fd = os.open(folder / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _label_now(
    transcript: Path,
    session_id: str,
    results: Path,
    judge_options: dict[str, Any],
    format: str = "auto",
    tool: Tool | None = None,
    first: FileCheck | None = None,
) -> str:
    import asyncio

    from mast.batch.inputs import scan
    from mast.batch.judges import configured_judge
    from mast.batch.runner import BatchRunner
    from mast.judge.config import JudgeConfig

    config = JudgeConfig.from_options(**judge_options)
    judge = configured_judge(config)
    written: list[Any] = []
    out = _open_results(results, LOCK_WAIT_S)
    try:
        mixed = _other_judge(results, judge.info, chosen=not results.is_relative_to(hooks_dir()))
        if mixed:  # one judge per results file, as `mast label` keeps it (the default folder does)
            return f"session {session_id}: not labelled: {mixed}"
        # The transcript is read under the results file's lock: a process that waited for the lock
        # (a Stop's, while SessionEnd's wrote) reads the transcript as it is now, never the older
        # copy it would have read before waiting, so the later result is always of the later content.
        # Checked again now, and read as the file this check saw (a link swapped in meanwhile is not read).
        check = transcript_check(transcript, tool, f"transcript {transcript}")
        if first is not None and (check.dev, check.ino) != (first.dev, first.ino):
            return f"session {session_id}: not labelled: {transcript} was replaced while it was waited on (not read)"
        items = list(scan([transcript], format=format, checks={str(transcript): check}))
        if not items:
            return f"session {session_id}: {transcript} holds no trace"
        unreadable = [item.error for item in items if item.error is not None]
        if format != "auto" and unreadable:  # not the tool's own transcript: nothing is judged or written
            return f"session {session_id}: not labelled: {transcript} is not a {format} transcript ({one_line(unreadable[0])})"
        runner = BatchRunner(judge, concurrency=2, results=out)
        runner.on_result = lambda _item, diagnosis, outcome: (
            written.append(diagnosis) if outcome == "judged" else None
        )
        report = asyncio.run(runner.run(items))
        new = {(d.trace_id, d.trace_hash) for d in written if d.status != "error"}
        if new:
            # One result per session: the new verdict replaces every other line of the session.
            ids = {trace_id for trace_id, _ in new}
            out.rewrite_without(lambda d: d.trace_id in ids and (d.trace_id, d.trace_hash) not in new)
    finally:
        out.close()
    if report.file_errors:
        return f"session {session_id}: not labelled: {'; '.join(report.file_errors)}"
    if not written:
        return (
            f"session {session_id}: already labelled, nothing new ({report.resumed} result(s) in {results})"
        )
    parts = []
    for diagnosis in written:
        codes = diagnosis.present_codes
        if diagnosis.status != "judged":
            reason = f" ({one_line(diagnosis.error.message)})" if diagnosis.error is not None else ""
            verdict = f"{diagnosis.status}{reason}"
        else:
            verdict = ", ".join(codes) if codes else "no failure mode"
        parts.append(f"{diagnosis.trace_id}: {verdict}")
    return f"session {session_id}: labelled {'; '.join(parts)}"


def error_line(exc: BaseException) -> str:
    """The one line a failed hook prints (it still exits 0).

    The reason may hold a session id, a path or a payload's text: terminal escapes (ESC, CSI, OSC, C1
    controls, BiDi overrides) are shown escaped, never sent to the agent's terminal.
    """
    return f"mast: hook skipped: {terminal_safe(one_line(exc))}"


def _seconds(text: str) -> float:
    """``90``, ``30s``, ``5m``, ``2h``: the ``--quiet`` values ``mast hooks run`` takes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if not match:
        raise UsageError(f"{text!r}: expected a duration such as 30s, 5m, 2h")
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]


def run_main(argv: Sequence[str], stdin: Any = None) -> int:
    """``python -m mast hooks run ARGS``, without loading the rest of the command line; always 0.

    A hook runs on every turn of the agent, so ``python -m mast`` sends ``hooks run`` here before
    importing the CLI (whose commands pull in the judge, the batch core and pandas: about four times
    the start-up CPU). It takes exactly the options of ``mast hooks run`` (see ``mast hooks run -h``).
    """
    import argparse

    parser = argparse.ArgumentParser(prog="mast hooks run", add_help=False)
    parser.add_argument("--tool", choices=TOOLS)
    parser.add_argument("-o", "--output", type=Path)
    parser.add_argument("--quiet")
    for name in JUDGE_FLAGS:
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name)
    parser.add_argument("payload", nargs="?")
    try:
        args, unknown = parser.parse_known_args(list(argv))
        if unknown:
            raise UsageError(f"unknown option(s) for mast hooks run: {' '.join(unknown)}")
        quiet = _seconds(args.quiet) if args.quiet else DEFAULT_QUIET_S
        judge = {name: getattr(args, name) for name in JUDGE_FLAGS if getattr(args, name) is not None}
        payload = read_payload(args.payload, stdin if stdin is not None else sys.stdin)
        print(
            terminal_safe(handle_event(payload, tool=args.tool, output=args.output, quiet=quiet, judge=judge))
        )
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a hook must never fail the agent: say why, exit 0
        print(error_line(exc), file=sys.stderr)
    return 0
