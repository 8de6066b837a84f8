"""mini-SWE-agent trajectories (``*.traj.json``): the bare message list and the v2 envelope.

Two shapes are written by mini-SWE-agent's runners:

* before v2, the bare OpenAI-style message list: system prompt, the task as the first user message,
  then assistant turns that each hold one fenced command (```` ```bash ```` or
  ```` ```mswea_bash_command ````) and the observations as *user* messages
  (``<returncode>0</returncode><output>...</output>``);
* from v2 an envelope ``{"info": {"config", "model_stats", "exit_status", "submission",
  "mini_version"}, "messages": [...], "trajectory_format": "mini-swe-agent-1.1"}``, whose
  assistant messages also carry the parsed commands in ``extra.actions`` (tool-call models send
  ``tool_calls`` and ``role: "tool"`` observations instead).

Each command becomes a ``bash`` tool call and each observation a tool result. The run ends with a
command that echoes ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``; what follows it is the submission,
which is the final output (``info.submission`` when the envelope has it), else the agent's last words.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import as_dict, text_of, tool_call, tool_result, usage_from
from mast.normalize._messages import from_item
from mast.normalize._msg_common import Msg
from mast.normalize._sniff import sniffed_json
from mast.normalize._timeline import Timeline
from mast.normalize.base import RawInput, TraceFormat, register
from mast.trace import Agent, Trace

SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
"""What the agent's last command echoes; the observation after it is the submission."""
_COMMAND = re.compile(r"```(?:bash|mswea_bash_command)[ \t]*\n(?P<command>.*?)\n?```", re.DOTALL)
_OBSERVATION = re.compile(r"^\s*(?:<returncode>|<output>|<exception>|<warning>)")


def _is_envelope(data: Any) -> bool:
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        return False
    info = as_dict(data.get("info"))
    return str(data.get("trajectory_format") or "").startswith("mini-swe-agent") or "mini_version" in info


def _is_bare(data: Any) -> bool:
    """A bare list of chat messages written by mini-SWE-agent: its submit marker or command fence is in the prompts."""
    if (
        not isinstance(data, list)
        or len(data) < 2
        or not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in data)
    ):
        return False
    prompts = " ".join(text_of(m.get("content")) for m in data[:2])
    return SUBMIT in prompts or "mswea_bash_command" in prompts


def _commands(message: dict[str, Any]) -> list[str]:
    actions = [
        a.get("command") for a in as_dict(message.get("extra")).get("actions") or [] if isinstance(a, dict)
    ]
    if actions and all(isinstance(a, str) for a in actions):
        return [str(a) for a in actions]
    return [m.group("command") for m in _COMMAND.finditer(text_of(message.get("content")))]


class MiniSweAgent(TraceFormat):
    """mini-SWE-agent ``.traj.json``: a bare message list or the v2 envelope with ``info`` and ``messages``."""

    name = "mini_swe_agent"
    description = "mini-SWE-agent trajectories: the bare message list and the envelope with info, messages, trajectory_format"
    priority = 25
    example = '{"info": {"submission": "...", "mini_version": "2.0"}, "messages": [...], "trajectory_format": "mini-swe-agent-1.1"}'

    def detect(self, raw: RawInput) -> float:
        """Surer than openai_chat, which would read the same list without its commands and submission."""
        data = sniffed_json(raw, '"role"', '"messages"')
        if data is None:
            return 0.0
        if _is_envelope(data):
            return 0.97
        return 0.9 if _is_bare(data) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace per file."""
        data = raw.data()
        if _is_envelope(data):
            yield self._trace(
                data["messages"],
                as_dict(data.get("info")),
                raw,
                variant=str(data.get("trajectory_format") or "envelope"),
            )
        elif _is_bare(data):
            yield self._trace(data, {}, raw, variant="messages")
        else:
            raise raw.fail("mini_swe_agent needs a message list or an envelope with info and messages")

    def _trace(self, messages: list[Any], info: dict[str, Any], raw: RawInput, *, variant: str) -> Trace:
        timeline = Timeline(default_agent="assistant", assistant_kind="llm")
        seen_task = False
        submitted_after: int | None = None
        submission: str | None = None
        last_call: str | None = None
        for position, message in enumerate(messages):
            if not isinstance(message, dict):
                timeline.warnings.append(
                    f"messages[{position}] is a {type(message).__name__}, not a message: skipped"
                )
                continue
            role = message.get("role")
            ref = f"messages[{position}]"
            if (
                role == "user"
                and seen_task
                and _OBSERVATION.match(text_of(message.get("content"))) is not None
                or (role == "user" and submitted_after is not None)
            ):
                output = text_of(message.get("content"))
                if submitted_after is not None:
                    submission = output
                if output.strip():
                    result = tool_result(output, last_call, name="bash")
                    timeline.add(
                        Msg(role="tool", text=output, name="bash", tool_results=[result]),
                        agent="bash",
                        source_ref=ref,
                    )
                continue
            msgs = from_item(message)
            if role == "user":
                seen_task = True
            if role == "assistant":
                commands = _commands(message)
                for msg in msgs:
                    if not msg.tool_calls and commands:
                        # the trajectory gives commands no ids: these pair each with the observation after it
                        msg.tool_calls = [
                            tool_call("bash", {"command": c}, f"{ref}.command{n}")
                            for n, c in enumerate(commands)
                        ]
                    last_call = next((c.id for c in msg.tool_calls), last_call)
                if any(SUBMIT in c for c in commands):
                    submitted_after = position
                extra = as_dict(message.get("extra"))
                usage = usage_from(as_dict(extra.get("response")).get("usage"))
                for msg in msgs:
                    timeline.add(msg, source_ref=ref, usage=usage)
                    usage = None  # one reply's usage, on its first message
                continue
            for msg in msgs:
                timeline.add(msg, source_ref=ref)
        if not timeline.steps:
            raise raw.fail("the trajectory holds no messages with content")
        final = (
            info.get("submission")
            if isinstance(info.get("submission"), str) and info["submission"].strip()
            else None
        )
        final = final or (submission if submission and submission.strip() else None)
        config = as_dict(info.get("config"))
        model = as_dict(config.get("model")).get("model_name")
        status = info.get("exit_status")
        return assemble_trace(
            timeline.steps,
            source=self.source(raw, variant=variant),
            timeline=timeline,
            known_agents=[Agent(name="assistant", model=model if isinstance(model, str) else None)],
            final_output=final,
            framework="mini-swe-agent",
            status="ok" if status in (None, "Submitted", "submitted") else "error",
            error=None if status in (None, "Submitted", "submitted") else str(status),
            metadata={k: v for k, v in info.items() if k not in ("submission", "config")}
            | ({"config": config} if config else {}),
        )


register(MiniSweAgent())
