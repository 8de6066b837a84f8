"""A corpus of SRE-like traces with planted domain failures, and a fake model scripted per prompt.

Shared by tests/test_discover.py and the README's worked example test. Each trace is an OpenAI chat
message list whose system message names its ticket (``Ticket T07``) so the fake can tell which
trace a request is about; the planted failures are known by ticket:

- ``namespace``: a kubectl command run in namespace ``default`` instead of the ticket's (even tickets);
- ``stale``: the agent acts on a metric reading an hour old (tickets divisible by 3);
- ``approval``: a production change made without the change approval the runbook asks for (i % 3 == 1);
- ``pager``: the wrong on-call team is paged (ticket 1 only).

The fake answers each prompt by its schema: MAST-14 finds nothing (and says the task failed when
something is planted); the open coder names the planted failures it sees in its window, quoting
the step; the namer names a group by its words; the gate's annotators agree on ``namespace``, B
labels ``stale`` at random, and B gives MAST 1.1 where A gives ``approval``.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from mast.testing import judge_answer, request_text

FILLER = [
    "Checking the cluster context before acting.",
    "Reading the runbook section for this alert.",
    "Looking at the dashboard for the service.",
    "Listing recent deploys of the service.",
]

PLANTS = {
    "namespace": {
        "step": "Running kubectl rollout restart deployment/api -n default",
        "labels": ["Command run in the wrong namespace", "Ran kubectl against the wrong namespace",
                   "Wrong Kubernetes namespace targeted"],
        "description": "The agent ran a kubectl command in namespace default instead of the namespace of the ticket.",
    },
    "stale": {
        "step": "CPU was 35% at 08:00 (metric last updated one hour ago), so capacity is fine",
        "labels": ["Trusted a stale metric", "Acted on outdated metric reading"],
        "description": "The agent based a capacity decision on a metric reading that was an hour old.",
    },
    "approval": {
        "step": "Applying the config change to production now; skipping the change approval ticket",
        "labels": ["Skipped the change approval", "Production change without approval"],
        "description": "The agent changed production without the change approval the runbook requires.",
    },
    "pager": {
        "step": "Paging the database on-call team about the api outage",
        "labels": ["Paged the wrong on-call team"],
        "description": "The agent paged a team that does not own the failing service.",
    },
}


def plants_of(ticket: int) -> list[str]:
    """The failures planted in a ticket's trace."""
    out = []
    if ticket % 2 == 0:
        out.append("namespace")
    if ticket % 3 == 0:
        out.append("stale")
    if ticket % 3 == 1:
        out.append("approval")
    if ticket == 1:
        out.append("pager")
    return out


def sre_trace(ticket: int, *, filler: int = 3, late: bool = False) -> list[dict[str, str]]:
    """One trace: the planted steps among ``filler`` filler steps (all of them after the filler when ``late``)."""
    messages = [
        {"role": "system", "content": f"You are an SRE agent. Ticket T{ticket:02d}: the api service in namespace "
                                      f"shop-{ticket:02d} is failing; fix it following the runbook."},
        {"role": "user", "content": f"Please restore the api service in namespace shop-{ticket:02d}."},
    ]
    planted = [{"role": "assistant", "content": f"{PLANTS[p]['step']} (ticket {ticket})"} for p in plants_of(ticket)]
    fill = [{"role": "assistant", "content": f"{FILLER[i % len(FILLER)]} Note {i} for ticket {ticket}."}
            for i in range(filler)]
    if late:
        messages.extend(fill)
        messages.extend(planted)
    else:
        messages.extend(planted[:1])
        messages.extend(fill)
        messages.extend(planted[1:])
    messages.append({"role": "assistant", "content": f"Done with ticket {ticket}."})
    return messages


def write_corpus(folder: Path, n: int = 30, **kwargs: Any) -> Path:
    """``n`` trace files in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for ticket in range(n):
        (folder / f"ticket-{ticket:02d}.json").write_text(json.dumps(sre_trace(ticket, **kwargs)))
    return folder


def schema_of(body: dict[str, Any]) -> str:
    """The answer schema a request asks for (response format, tool, or named in the prompt)."""
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and isinstance(fmt.get("json_schema"), dict):
        return str(fmt["json_schema"].get("name"))
    for tool in body.get("tools") or []:
        name = (tool.get("function") or {}).get("name")
        if name:
            return str(name)
    text = request_text(body)
    for name in ("mast_open_codes", "mast_candidate_mode", "mast_candidate_revision", "mast_window_findings"):
        if name in text:
            return name
    return "mast_diagnosis"


_TICKET = re.compile(r"Ticket T(\d+)|namespace shop-(\d+)")
_MODE_LINE = re.compile(r"^- (\d+\.\d+) ((?!present)[^:\n]+):", re.MULTILINE)  # not the examples' "- 1.3 present:"
_STEP = re.compile(r"^\[S(\d+)\][^:\n]*:\s?(.*)$", re.MULTILINE)


def _user(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    return "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")


def _system(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    return "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")


def _coin(ticket: int, salt: str) -> bool:
    return hashlib.sha256(f"{salt}:{ticket}".encode()).digest()[0] % 2 == 0


class Scripted:
    """The fake model: a responder for :class:`~mast.testing.FakeLLMServer`, and what it was asked."""

    def __init__(self, *, b_model: str = "fake-b", random_stale: bool = True,
                 confuse_approval: bool | str = True) -> None:
        self.b_model = b_model
        self.random_stale = random_stale
        self.confuse_approval = confuse_approval
        self.asked: dict[str, int] = {}
        self.open_code_windows: list[tuple[int, int, str]] = []
        """(ticket, window number, planted failures named) for each open-coding request."""

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        schema = schema_of(body)
        self.asked[schema] = self.asked.get(schema, 0) + 1
        if schema == "mast_open_codes":
            return self.open_codes(body)
        if schema == "mast_candidate_mode":
            return self.name_group(body)
        if schema == "mast_candidate_revision":
            return {"definition": "Revised: the agent acts on a metric reading that is stale by more than 30 minutes.",
                    "when_to_use": "A metric timestamp older than 30 minutes is used for a decision.",
                    "when_not_to_use": "Fresh metrics read wrongly belong to 3.3."}
        return self.diagnosis(body)

    def _ticket(self, text: str) -> int:
        match = _TICKET.search(text)
        return int(match.group(1) or match.group(2)) if match else -1

    def open_codes(self, body: dict[str, Any]) -> dict[str, Any]:
        user = _user(body)
        ticket = self._ticket(user)
        window = int(re.search(r"window (\d+) of", user).group(1))  # type: ignore[union-attr]
        codes = []
        named = []
        for step, text in _STEP.findall(user):
            for name, plant in PLANTS.items():
                if plant["step"] in text:
                    labels = plant["labels"]
                    codes.append({"step": int(step), "quote": plant["step"], "label": labels[ticket % len(labels)],
                                  "description": plant["description"], "covered_by": None})
                    named.append(name)
            if "Checking the cluster context" in text and ticket % 5 == 0:
                # A failure the coder itself says MAST already explains: not a new code.
                codes.append({"step": int(step), "quote": "Checking the cluster context",
                              "label": "Repeated context check", "description": "Checked again.", "covered_by": "1.3"})
        self.open_code_windows.append((ticket, window, ",".join(named)))
        return {"codes": codes, "summary": "window read"}

    def name_group(self, body: dict[str, Any]) -> dict[str, Any]:
        notes = _user(body).split("NEAREST OTHER GROUP:")[0].lower()
        if "namespace" in notes:
            return {"name": "Wrong Namespace Targeted", "definition": "A command acts on a Kubernetes namespace other "
                    "than the one the task is about.", "when_to_use": "A kubectl/helm command whose -n differs from "
                    "the ticket's namespace.", "when_not_to_use": "Not 1.1 when the task never named a namespace.",
                    "nearest_mast": "1.1", "relation": "extends", "relation_target": "FC1", "coherent": True}
        if "metric" in notes:
            return {"name": "Stale Metric Trusted", "definition": "A decision rests on a metric reading that is out "
                    "of date.", "when_to_use": "The reading is marked old.", "when_not_to_use": "Not 3.3.",
                    "nearest_mast": "3.3", "relation": "new", "relation_target": None, "coherent": True}
        if "approval" in notes:
            return {"name": "Change Approval Skipped", "definition": "A production change is made without the "
                    "approval the runbook requires.", "when_to_use": "A change applied with no approval.",
                    "when_not_to_use": "Not 1.2.", "nearest_mast": "1.1", "relation": "refines",
                    "relation_target": "1.1", "coherent": True}
        return {"name": "Other failure", "definition": "Something else.", "when_to_use": "", "when_not_to_use": "",
                "nearest_mast": "1.1", "relation": "new", "relation_target": None, "coherent": True}

    def diagnosis(self, body: dict[str, Any]) -> dict[str, Any]:
        system = _system(body)
        codes = [c for c, _ in _MODE_LINE.findall(system)]
        ticket = self._ticket(_user(body))
        planted = plants_of(ticket) if ticket >= 0 else []
        if len(codes) <= 14:  # MAST-14: no mode found; the task failed when something was planted
            return judge_answer(task_completed=not planted, codes=codes)
        names = dict(_MODE_LINE.findall(system))
        by_word = {word: code for code, name in names.items() for word in ("Namespace", "Stale", "Approval")
                   if word in name}
        is_b = str(body.get("model", "")).endswith(self.b_model)
        present: list[str] = []
        evidence: dict[str, list[tuple[int, str]]] = {}
        steps = _STEP.findall(_user(body))

        def mark(code: str, plant: str | None) -> None:
            present.append(code)
            for step, text in steps:
                if plant is None or PLANTS[plant]["step"] in text:
                    evidence[code] = [(int(step), text[:40])]
                    break

        if "Namespace" in by_word and "namespace" in planted:
            mark(by_word["Namespace"], "namespace")
        if "Stale" in by_word:
            says = _coin(ticket, "stale") if (is_b and self.random_stale) else "stale" in planted
            if says:
                mark(by_word["Stale"], "stale" if "stale" in planted else None)
        if "Approval" in by_word and "approval" in planted:
            if is_b and self.confuse_approval == "stale" and "Stale" in by_word:
                mark(by_word["Stale"], "approval")       # B calls a skipped approval a stale metric
            elif is_b and self.confuse_approval:
                mark("1.1", "approval")
            else:
                mark(by_word["Approval"], "approval")
        return judge_answer(present, evidence=evidence, task_completed=False, codes=codes)


ERROR_MARKERS = ("No such file or directory", "permission denied for schema", "error TS2",
                 "unconverted data remains", "raises ValueError")
"""Error text in the tool results of the repository's examples (data/examples)."""


def _blocks(text: str) -> list[tuple[str, str]]:
    """``(step, whole block)`` of every ``[S<n>]`` step in a prompt (blocks span several lines)."""
    out = []
    for block in re.split(r"\n(?=\[S\d+\])", text):
        match = re.match(r"\[S(\d+)\]", block)
        if match:
            out.append((match.group(1), block))
    return out


class ExamplesScripted(Scripted):
    """The fake model of the README's worked example on data/examples.

    The open coder names "error output not acted on" in every window whose steps show one of
    :data:`ERROR_MARKERS` (quoting it); the two annotators agree on it in the gate part.
    """

    def open_codes(self, body: dict[str, Any]) -> dict[str, Any]:
        codes = []
        for step, text in _blocks(_user(body)):
            for marker in ERROR_MARKERS:
                if marker in text:
                    codes.append({"step": int(step), "quote": marker, "label": "Error output not acted on",
                                  "description": "A tool reported an error and the agent carried on without "
                                                 "dealing with its cause.", "covered_by": None})
                    break
        return {"codes": codes[:1], "summary": "window read"}

    def name_group(self, body: dict[str, Any]) -> dict[str, Any]:
        return {"name": "Error Output Not Acted On", "definition": "A tool result reports an error and the next "
                "steps carry on as if it had succeeded, without addressing its cause.",
                "when_to_use": "An error message in a tool result, then no step that deals with it.",
                "when_not_to_use": "Not 3.2 when the error is looked at and judged harmless; not 1.3 when the "
                                   "agent repeats the failing call (that is repetition).",
                "nearest_mast": "3.2", "relation": "extends", "relation_target": "FC3", "coherent": True}

    def diagnosis(self, body: dict[str, Any]) -> dict[str, Any]:
        system = _system(body)
        codes = [c for c, _ in _MODE_LINE.findall(system)]
        if len(codes) <= 14:
            return judge_answer(task_completed=False, codes=codes)
        names = dict(_MODE_LINE.findall(system))
        mine = next(code for code, name in names.items() if name == "Error Output Not Acted On")
        for step, text in _blocks(_user(body)):
            marker = next((m for m in ERROR_MARKERS if m in text), None)
            if marker:
                return judge_answer([mine], evidence={mine: [(int(step), marker)]}, task_completed=False, codes=codes)
        return judge_answer(task_completed=False, codes=codes)
