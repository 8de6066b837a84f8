r"""CrewAI runs: recorded LLM traffic of a crew (VCR cassettes) and CrewAI's own outputs.

**Cassettes.** A VCR cassette (``interactions: [{request, response}]``, YAML) of a crew run holds every
chat-completions call the crew made. CrewAI writes each agent's identity only into its system prompt
(``You are <role>. <backstory>\\nYour personal goal is: <goal>``), so the agent of a call is read from
there. Each call re-sends the agent's conversation so far: only messages not emitted before become
steps. A manager's ``Delegate work to coworker`` / ``Ask question to coworker`` calls become
``handoff`` steps to the named coworker; the coworker's first new user message of the delegated work
is attributed to the manager, and the delegation's tool result to the coworker that answered.
Calls to other hosts (CrewAI's telemetry exporter) are counted, not rendered. Cassettes of other
providers' APIs (Anthropic's ``/v1/messages``) are not this format.

**Outputs.** ``CrewOutput`` dicts (``raw``, ``tasks_output: [{description, agent, raw, messages}]``,
``token_usage``) and the ``output_log_file`` JSON list (``{timestamp, task_name, task, agent, status,
output}``) become one task message and one answer per task.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import Any, Literal

import orjson

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import as_dict, parse_time, text_of, tool_call, usage_from
from mast.normalize._messages import CREWAI_DELEGATION_TOOLS, Msg, from_openai, name_from_system_prompt
from mast.normalize._streams import assemble_stream, is_event_stream
from mast.normalize._timeline import Timeline
from mast.normalize._vcr import body_of
from mast.normalize._vcr import body_text as vcr_text
from mast.normalize.base import RawInput, TraceFormat, register
from mast.trace import SourceInfo, Step, Trace

_GOAL = re.compile(r"Your personal goal is:\s*(?P<goal>[^\n]+)")
_TASK = re.compile(r"Current Task:\s*(?P<task>.+?)(?:\n\nThis is the expect|\Z)", re.DOTALL)
_FINAL = re.compile(r"Final Answer:\s*(?P<answer>.+)\Z", re.DOTALL)
_REACT_ACTION = re.compile(
    r"Action:[ \t]*\n?[ \t]*(?P<tool>[^\n]+?)[ \t]*\n\s*Action Input:\s*(?P<input>\{.*?\})[ \t]*(?=\n\s*(?:Observation|Thought|Action)\b|\s*\Z)",
    re.DOTALL,
)
_CREWAI_MARK = re.compile(r"Your\s+personal\s+goal\s+is|telemetry\.crewai\.com|crewai", re.IGNORECASE)


def _is_chat_call(interaction: Any) -> bool:
    request = as_dict(as_dict(interaction).get("request"))
    return "/chat/completions" in str(request.get("uri", ""))


def _interactions(data: Any) -> list[Any] | None:
    items = as_dict(data).get("interactions")
    return (
        items
        if isinstance(items, list) and items and all(isinstance(i, dict) and "request" in i for i in items)
        else None
    )


def _coworker(arguments: Any) -> str | None:
    value = as_dict(arguments).get("coworker")
    return value.strip() if isinstance(value, str) and value.strip() else None


class _Crew:
    """Rebuilds a crew run from its chat-completions calls, in recorded order."""

    def __init__(self) -> None:
        self.timeline = Timeline(default_agent="agent")
        self.goals: dict[str, str] = {}
        self.prompts: dict[str, str] = {}
        self.prompted: set[str] = set()
        self.root: str | None = None
        self.helpers: set[str] = set()
        """Coworkers that work was delegated to: their answers go back to the delegator, not to the user."""
        self.task: str | None = None
        self.final: str | None = None
        self.delegations: list[
            tuple[str, str, str | None]
        ] = []  # (delegator, coworker, call id) not yet taken up
        self.skipped: Counter[str] = Counter()
        self.notes: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self.errors: list[str] = []

    def read(self, interactions: list[Any]) -> None:
        for position, interaction in enumerate(interactions):
            request = as_dict(interaction.get("request"))
            uri = str(request.get("uri", ""))
            if not _is_chat_call(interaction):
                host = uri.split("/")[2] if uri.count("/") >= 2 else uri
                self.skipped[f"request to {host}"] += 1
                continue
            body = body_of(request, self.notes, "request.body")
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                self.skipped["chat call without a readable request body"] += 1
                continue
            self._call(body, as_dict(interaction.get("response")), f"/interactions/{position}")

    def _call(self, body: dict[str, Any], response: dict[str, Any], ref: str) -> None:
        msgs = [m for raw in body["messages"] if isinstance(raw, dict) for m in from_openai(raw)]
        system = next((m.text for m in msgs if m.role == "system"), "")
        if not system and msgs and msgs[0].role == "user":
            system = msgs[0].text  # CrewAI 0.x sent the persona, tools and task in one user message
        agent = name_from_system_prompt(system) or "agent"
        goal = _GOAL.search(system)
        if goal:
            self.goals.setdefault(agent, goal.group("goal").strip())
        self.root = self.root or agent
        self.timeline.default_agent = agent
        for step in self.timeline.add_new(msgs, source_ref=f"{ref}/request"):
            if step.role == "user":
                self._attribute_user(step, agent)
            elif step.role == "system" and self.prompts.get(agent) == step.content:
                # An agent starting a new piece of work re-sends its persona: shown once is enough.
                self.timeline.steps.remove(step)
                self.skipped["repeated system prompt"] += 1
            elif step.role == "system":
                self.prompts[agent] = step.content
                step.agent, step.recipient = "system", agent
        status = as_dict(response.get("status")).get("code")
        reply = body_of(response, self.notes, "response.body")
        if is_event_stream(reply):
            reply = assemble_stream(reply)  # stream: true, recorded as server-sent events
        tools = [
            as_dict(t.get("function")).get("name") for t in body.get("tools") or [] if isinstance(t, dict)
        ]
        self.calls.append({"agent": agent, "model": body.get("model"), "tools": tools, "status": status})
        if not isinstance(reply, dict) or (isinstance(status, int) and status >= 400):
            message = (
                text_of(as_dict(as_dict(reply).get("error")).get("message"))
                or f"HTTP {status}: no completion recorded"
            )
            self.errors.append(message)
            self.timeline.add_step(
                kind="error", agent=agent, content=message, error=message, source_ref=f"{ref}/response"
            )
            return
        choices = reply.get("choices") or []
        message_data = as_dict(as_dict(choices[0]).get("message")) if choices else {}
        model = reply.get("model") if isinstance(reply.get("model"), str) else body.get("model")
        for msg in from_openai(message_data) if message_data else []:
            self._reply(
                msg,
                agent,
                model,
                usage_from(reply.get("usage")),
                as_dict(choices[0]).get("finish_reason"),
                ref,
            )

    def _attribute_user(self, step: Step, agent: str) -> None:
        """The task prompt of delegated work comes from the manager that delegated it."""
        step.recipient = agent
        for position, (delegator, coworker, call_id) in enumerate(self.delegations):
            if coworker.lower() == agent.lower():
                step.agent = delegator
                step.attributes["delegated_by_call"] = call_id
                del self.delegations[position]
                break
        if step.agent == "user" and agent in self.prompted:
            # Later user-role prompts in an agent's conversation ("Analyze the tool result...") are
            # CrewAI's own nudges, not a person stepping in.
            step.agent = "crewai"
            step.attributes["framework_prompt"] = True
        self.prompted.add(agent)
        if self.task is None and step.agent == "user":
            match = _TASK.search(step.content)
            self.task = match.group("task").strip() if match else step.content.strip()

    def _reply(self, msg: Msg, agent: str, model: Any, usage: Any, finish: Any, ref: str) -> None:
        step = self.timeline.add(
            msg,
            agent=agent,
            model=model if isinstance(model, str) else None,
            usage=usage,
            source_ref=f"{ref}/response",
            attributes={"finish_reason": finish} if finish else {},
        )
        if step is None:
            return
        coworkers = []
        for call in step.tool_calls:
            coworker = _coworker(call.arguments)
            if call.name in CREWAI_DELEGATION_TOOLS and coworker:
                coworkers.append(coworker)
                self.delegations.append((agent, coworker, call.id))
        action = _REACT_ACTION.search(step.content) if not step.tool_calls else None
        if action and action.group("tool").strip() in CREWAI_DELEGATION_TOOLS:
            try:
                coworker = _coworker(orjson.loads(action.group("input")))
            except orjson.JSONDecodeError:
                coworker = None
            if coworker:
                coworkers.append(coworker)
                self.delegations.append((agent, coworker, None))
        elif action:
            # The ReAct text protocol (CrewAI 0.x): "Action: tool / Action Input: {...}" is a tool call.
            name, arguments = action.group("tool").strip(), action.group("input")
            step.tool_calls = [tool_call(name, arguments, None)]
            self.timeline.remember_call(step.tool_calls[0], agent)
        if coworkers:
            step.kind, step.recipient = "handoff", ", ".join(dict.fromkeys(coworkers))
        elif step.tool_calls:
            step.kind = "tool_call"
        self.helpers.update(coworkers)
        if (
            (agent == self.root or agent.lower() not in {h.lower() for h in self.helpers})
            and step.content
            and not step.tool_calls
        ):
            # The answer of a crew's own agent (not a coworker answering a delegation); with several
            # crews in one cassette (kickoff_for_each), the last crew's.
            answer = _FINAL.search(step.content)
            self.final = answer.group("answer").strip() if answer else step.content.strip()

    def trace(self, source: SourceInfo, version: Any) -> Trace:
        steps = self.timeline.steps
        if not steps:
            raise TraceFormatError(
                "cassette holds no chat-completions calls to rebuild a crew run from", path=source.path
            )
        agents = [
            a for a in self.timeline.agents() if a.name != "crewai"
        ]  # the framework's prompts, not an agent
        for agent in agents:
            if agent.name in self.goals:
                agent.role = f"goal: {self.goals[agent.name]}"
        metadata: dict[str, Any] = {"cassette_version": version, "llm_calls": self.calls}
        if self.skipped:
            metadata["not_rendered"] = dict(self.skipped)
        status: Literal["ok", "error", "unknown"] = (
            "error" if self.errors else ("ok" if self.final else "unknown")
        )
        return assemble_trace(
            steps,
            source=source,
            known_agents=agents,
            task=self.task,
            final_output=self.final,
            derive_task=False,
            derive_final_output=False,
            derive_agents=False,
            framework="crewai",
            status=status,
            error=self.errors[-1] if self.errors else None,
            metadata=metadata,
            warnings=[*self.timeline.warnings, *dict.fromkeys(self.notes)],
        )


# --- CrewAI's own outputs -----------------------------------------------------------------------


def _is_crew_output(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("tasks_output"), list) and "raw" in data


def _is_output_log(data: Any) -> bool:
    return (
        isinstance(data, list)
        and bool(data)
        and all(
            isinstance(e, dict)
            and {"task", "agent", "output"} <= set(e)
            and ("status" in e or "task_name" in e)
            for e in data[:5]
        )
    )


def _task_steps(
    timeline: Timeline,
    description: str,
    agent: str,
    output: str,
    ref: str,
    extra: dict[str, Any],
    when: Any = None,
) -> None:
    timeline.add_step(
        kind="message",
        agent="user",
        role="user",
        recipient=agent,
        content=description,
        started_at=when,
        source_ref=f"{ref}/description",
    )
    timeline.add_step(
        kind="message",
        agent=agent,
        role="assistant",
        content=output,
        started_at=when,
        source_ref=f"{ref}/output",
        attributes=extra,
    )


def _outputs_trace(data: Any, source: SourceInfo) -> Trace:
    timeline = Timeline(default_agent="agent")
    descriptions: list[str] = []
    if _is_crew_output(data):
        entries = [(as_dict(t), f"/tasks_output/{i}") for i, t in enumerate(data["tasks_output"])]
        final: str | None = text_of(data.get("raw"))
        usage = usage_from(data.get("token_usage"))
        metadata = {k: v for k, v in data.items() if k not in ("raw", "tasks_output", "token_usage")}
        variant = "crew_output"
    else:
        entries = [(as_dict(t), f"/{i}") for i, t in enumerate(data)]
        final = text_of(entries[-1][0].get("output")) if entries else None
        usage = None
        metadata = {}
        variant = "output_log"
    for entry, ref in entries:
        description = text_of(entry.get("description") or entry.get("task"))
        agent = text_of(entry.get("agent")).strip() or "agent"
        descriptions.append(description)
        messages = entry.get("messages")
        if isinstance(messages, list) and messages:
            timeline.default_agent = agent
            timeline.add_new(
                [m for raw in messages if isinstance(raw, dict) for m in from_openai(raw)],
                source_ref=f"{ref}/messages",
            )
        else:
            extra = {
                k: v
                for k, v in entry.items()
                if k not in ("description", "task", "agent", "raw", "output", "messages", "timestamp")
            }
            _task_steps(
                timeline,
                description,
                agent,
                text_of(entry.get("raw", entry.get("output"))),
                ref,
                extra,
                parse_time(entry.get("timestamp")),
            )
    if not timeline.steps:
        raise TraceFormatError("CrewAI output lists no tasks", path=source.path)
    task = (
        descriptions[0]
        if len(descriptions) == 1
        else "\n\n".join(f"Task {i + 1}: {d}" for i, d in enumerate(descriptions))
    )
    failed = [e for e, _ in entries if str(e.get("status", "")).lower() in ("failed", "error")]
    return assemble_trace(
        timeline.steps,
        source=source.model_copy(update={"variant": variant}),
        known_agents=timeline.agents(),
        task=task,
        final_output=final or None,
        usage=usage,
        derive_task=False,
        derive_final_output=False,
        derive_usage=False,
        derive_agents=False,
        framework="crewai",
        status="error" if failed else "ok",
        metadata=metadata,
        warnings=list(timeline.warnings),
    )


class CrewAI(TraceFormat):
    """CrewAI: a crew run's recorded LLM calls (VCR cassette) or its CrewOutput / output log."""

    name = "crewai"
    description = (
        "CrewAI crew runs: VCR cassettes of their OpenAI chat calls, CrewOutput dicts, output_log_file JSON"
    )
    priority = 80
    example = 'interactions: [{request: {body: {messages: [{role: system, content: "You are Researcher. ..."}]}}, response: ...}] (VCR cassette) or CrewOutput'

    def detect(self, raw: RawInput) -> float:
        """Cassettes by their request URIs and CrewAI prompts; outputs by their keys."""
        if raw.path is not None:
            head = raw.head.lstrip("\ufeff").lstrip()
            cassette = head.startswith("interactions:") or (
                head.startswith("---") and "\ninteractions:" in head[:200]
            )
            if not cassette and not ('"tasks_output"' in head or '"task_name"' in head):
                return 0.0
        try:
            data = raw.data()
        except TraceFormatError:
            return 0.0
        interactions = _interactions(data)
        if interactions is not None:
            chat = [i for i in interactions if _is_chat_call(i)]
            if not chat:
                return 0.0
            marked = any(_CREWAI_MARK.search(vcr_text(as_dict(i.get("request"))) or "") for i in chat[:3])
            marked = marked or any(
                "crewai" in str(as_dict(i.get("request")).get("uri", "")) for i in interactions
            )
            return 0.95 if marked else 0.5
        if _is_crew_output(data):
            return 0.9
        return 0.85 if _is_output_log(data) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """Yield the one crew run the input holds."""
        data = raw.data()
        interactions = _interactions(data)
        if interactions is not None:
            crew = _Crew()
            crew.read(interactions)
            yield crew.trace(self.source(raw, variant="vcr_cassette"), as_dict(data).get("version"))
        elif _is_crew_output(data) or _is_output_log(data):
            yield _outputs_trace(data, self.source(raw))
        else:
            raise raw.fail(
                "not a CrewAI run: expected a VCR cassette of chat-completions calls, a CrewOutput or an output log"
            )


register(CrewAI())
