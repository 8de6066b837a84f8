"""The public test seam mast.testing.FakeLLMServer behaves like an OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from _sync import hold_until_in_flight

from mast.taxonomy import load_taxonomy
from mast.testing import (
    DIAGNOSIS_SCHEMA_NAME,
    WINDOW_SCHEMA_NAME,
    FakeLLMServer,
    FaultPlan,
    Reply,
    judge_answer,
    quote_steps,
    request_kind,
)


def _chat(server: FakeLLMServer, **body: object) -> httpx.Response:
    body.setdefault("model", "fake-judge")
    body.setdefault("messages", [{"role": "user", "content": "hello"}])
    return httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=10)


def test_default_answer_is_a_complete_judge_answer() -> None:
    with FakeLLMServer() as server:
        assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")
        response = _chat(server, response_format={"type": "json_schema", "json_schema": {"name": DIAGNOSIS_SCHEMA_NAME, "schema": {}}})
        assert response.status_code == 200
        choice = response.json()["choices"][0]
        answer = json.loads(choice["message"]["content"])
        assert list(answer["failure_modes"]) == load_taxonomy().codes
        assert all(v["present"] is False for v in answer["failure_modes"].values())
        assert choice["finish_reason"] == "stop"
        assert response.json()["usage"]["prompt_tokens"] >= 1
        models = httpx.get(f"{server.base_url}/models").json()
        assert models["data"][0]["id"] == "fake-judge"
        assert len(server.chat_requests) == 1
        assert server.first_request_at is not None and server.last_response_at is not None
        assert server.last_response_at >= server.first_request_at


def test_tool_requests_get_a_tool_call_and_window_requests_a_window_answer() -> None:
    tools = [{"type": "function", "function": {"name": WINDOW_SCHEMA_NAME, "parameters": {}}}]
    with FakeLLMServer() as server:
        choice = _chat(server, tools=tools, tool_choice={"type": "function", "function": {"name": WINDOW_SCHEMA_NAME}}).json()["choices"][0]
        assert choice["finish_reason"] == "tool_calls"
        call = choice["message"]["tool_calls"][0]["function"]
        assert call["name"] == WINDOW_SCHEMA_NAME
        assert json.loads(call["arguments"]) == {"findings": [], "summary": "Nothing notable in this window."}
        assert server.requests[0].kind == "window"


def test_json_mode_request_kind_comes_from_the_prompt() -> None:
    body = {"messages": [{"role": "system", "content": f"Answer with JSON for schema {WINDOW_SCHEMA_NAME}."}]}
    assert request_kind(body) == "window"
    assert request_kind({"messages": [{"role": "user", "content": "hi"}]}) == "other"


def test_script_then_responder_and_reply_knobs() -> None:
    answer = judge_answer(["1.3"], evidence={"1.3": [(2, "ls -la")]})
    script = [
        Reply(status=429, headers={"Retry-After": "7"}),
        Reply(invalid_json=True),
        Reply(content="partial", finish_reason="length", usage=(11, 3)),
    ]
    with FakeLLMServer(lambda body: answer, script=script) as server:
        first = _chat(server)
        assert first.status_code == 429 and first.headers["Retry-After"] == "7"
        with pytest.raises(json.JSONDecodeError):
            json.loads(_chat(server).json()["choices"][0]["message"]["content"])
        third = _chat(server).json()
        assert third["choices"][0]["finish_reason"] == "length"
        assert third["usage"] == {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
        fourth = json.loads(_chat(server).json()["choices"][0]["message"]["content"])
        assert fourth["failure_modes"]["1.3"]["present"] is True
        assert fourth["first_failure"]["code"] == "1.3" and fourth["first_failure"]["step"] == 2


def test_hang_is_cut_off_by_the_client_timeout() -> None:
    with FakeLLMServer(script=[Reply(hang=True)]) as server:
        with pytest.raises(httpx.TimeoutException):
            _chat_timeout = httpx.post(
                f"{server.base_url}/chat/completions", json={"messages": []}, timeout=0.3
            )
            del _chat_timeout
        assert _chat(server).status_code == 200


def test_fault_plan_is_reproducible_and_recorded() -> None:
    plan = FaultPlan(rate=0.5, kinds=("500", "429"), seed=3)
    statuses: list[list[int]] = []
    for _ in range(2):
        with FakeLLMServer(faults=plan) as server:
            statuses.append([_chat(server).status_code for _ in range(20)])
            faulted = [r.fault for r in server.requests if r.fault]
            assert len(faulted) == sum(1 for s in statuses[-1] if s != 200)
    assert statuses[0] == statuses[1]
    assert {500, 429, 200} <= set(statuses[0])
    with pytest.raises(ValueError):
        FaultPlan(kinds=("teapot",))


def test_many_concurrent_connections() -> None:
    async def main(base: str) -> list[int]:
        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=300), timeout=120) as client:
            calls = [client.post(f"{base}/chat/completions", json={"messages": []}) for _ in range(300)]
            return [r.status_code for r in await asyncio.gather(*calls)]

    with FakeLLMServer() as server:
        # Answers wait until 150 requests are in flight (bounded): a server that serialised its handlers
        # could never get there, however fast or slow the machine is.
        server.responder = hold_until_in_flight(server, 150)
        codes = asyncio.run(main(server.base_url))
        assert codes == [200] * 300
        assert len(server.requests) == 300
        # All 300 were answered while others were waiting: the server did not serialise them.
        assert server.max_in_flight > 100


def test_async_responder_and_quote_steps() -> None:
    async def responder(body: dict[str, object]) -> Reply:
        await asyncio.sleep(0)
        pairs = quote_steps(body, words=2)
        return Reply(content=judge_answer(["1.1"], evidence={"1.1": pairs[:1]}))

    transcript = "[S0] user: fix the failing test\n[S1] coder (tool_call): running pytest now"
    with FakeLLMServer(responder) as server:
        content = _chat(server, messages=[{"role": "user", "content": transcript}]).json()["choices"][0]["message"]["content"]
        assert json.loads(content)["failure_modes"]["1.1"]["evidence"] == [{"step": 0, "quote": "fix the"}]


def test_start_stop_are_explicit_and_idempotent() -> None:
    server = FakeLLMServer()
    with pytest.raises(RuntimeError):
        _ = server.base_url
    server.start()
    try:
        assert _chat(server).status_code == 200
    finally:
        server.stop()
        server.stop()
