"""The judge's rooms used on their own: requests, raw answers, cache keys, and Judge as a batch judge."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from mast.batch import BatchRunner, ResultsFile, scan
from mast.batch.judges import BatchJudge, judge_for
from mast.errors import JudgeOutputError
from mast.judge import Judge, JudgeConfig
from mast.judge.cache import judgement_key
from mast.judge.messages import build_single, prepare_trace
from mast.judge.schema import FULL_LIMITS, diagnosis_spec
from mast.judge.verdicts import diagnosis_from_completion
from mast.testing import FakeLLMServer, Reply, judge_answer
from mast.trace import Step, Trace


def trace(trace_id: str = "t-rooms") -> Trace:
    return Trace(
        trace_id=trace_id,
        task="Rename every .txt file under ./notes to .md",
        steps=[
            Step(index=0, agent="planner", role="user", content="Rename every .txt file under ./notes to .md"),
            Step(index=1, agent="coder", content="Renamed notes/a.txt to notes/a.md; mail me at ops@example.org"),
            Step(index=2, agent="coder", content="All files are renamed."),
        ],
        final_output="All files are renamed.",
    )


ANSWER = judge_answer(
    ["3.1"],
    evidence={"3.1": [(2, "All files are renamed"), (1, "this sentence is not in the trace")]},
    summary="Only one file was renamed before the coder declared success.",
)


def config(server: FakeLLMServer, **extra: object) -> JudgeConfig:
    return JudgeConfig(
        model="openai/fake-judge", api_base=server.base_url, api_key="k", cache=False, max_retries=0, **extra  # type: ignore[arg-type]
    )


def test_build_single_is_what_the_judge_sends() -> None:
    with FakeLLMServer(lambda body: Reply(content=ANSWER)) as server:

        async def main() -> dict[str, Any]:
            async with Judge(config(server)) as judge:
                await judge.classify(trace())
                prepared = prepare_trace(trace(), judge.config, judge.taxonomy)
                messages = build_single(judge.prompts, prepared.material)
                backend = judge.backend
                mode = backend.resolve_mode(judge.config.structured_output)
                return backend.request_kwargs(messages, diagnosis_spec(judge.taxonomy), mode, judge.config.max_output_tokens)  # type: ignore[attr-defined, no-any-return]

        request = asyncio.run(main())
        body = server.chat_requests[0].body
    messages = request["messages"]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"] == messages
    # litellm adapts the schema to the provider on the way; the request names the same answer.
    assert body["response_format"]["json_schema"]["name"] == request["response_format"]["json_schema"]["name"]
    assert body["temperature"] == request["temperature"] and body["max_tokens"] == request["max_tokens"]
    assert "ops@example.org" not in str(messages)  # redacted before the request is built


def test_a_raw_completion_becomes_a_checked_diagnosis() -> None:
    judge = Judge(JudgeConfig(model="openai/fake-judge", cache=False))
    prepared = prepare_trace(trace(), judge.config, judge.taxonomy)
    diagnosis = diagnosis_from_completion(
        orjson.dumps(ANSWER).decode(), spec=diagnosis_spec(judge.taxonomy), trace=trace(), material=prepared.material,
        taxonomy=judge.taxonomy, info=judge.info,
    )
    assert diagnosis.status == "judged" and diagnosis.present_codes == ["3.1"]
    assert [e.verified for e in diagnosis.verdict("3.1").evidence] == [True, False]
    assert any("not found there" in w for w in diagnosis.warnings)
    assert diagnosis.judge == judge.info and diagnosis.trace_hash == trace().content_hash()
    with pytest.raises(JudgeOutputError) as caught:
        diagnosis_from_completion(
            "I think 3.1 is present.", spec=diagnosis_spec(judge.taxonomy), trace=trace(),
            material=prepared.material, taxonomy=judge.taxonomy, info=judge.info,
        )
    assert caught.value.last_completion == "I think 3.1 is present."


def test_the_sample_index_gives_each_draw_its_own_cache_key() -> None:
    judge = Judge(JudgeConfig(model="openai/fake-judge"))
    material = prepare_trace(trace(), judge.config, judge.taxonomy).material
    parts = dict(
        config=judge.config, prompts=judge.prompts, taxonomy=judge.taxonomy, taxonomy_hash="t",
        trace_hash=trace().content_hash(), material=material, context=32_768, limits=FULL_LIMITS,
    )
    keys = [judgement_key(**parts, sample=k) for k in range(3)]  # type: ignore[arg-type]
    assert len(set(keys)) == 3
    assert keys[0] == judgement_key(**parts)  # type: ignore[arg-type]
    other_seed = Judge(JudgeConfig(model="openai/fake-judge", seed=7))
    assert judgement_key(**{**parts, "config": other_seed.config}) != keys[0]  # type: ignore[arg-type]


def test_judge_is_the_batch_judge_and_results_record_its_own_params(tmp_path: Path) -> None:
    with FakeLLMServer(lambda body: Reply(content=ANSWER)) as server:
        judge = judge_for(config(server, redact_patterns={"ticket": r"TICKET-\d+"}))
        assert isinstance(judge, Judge) and isinstance(judge, BatchJudge)
        with ResultsFile(tmp_path / "out.jsonl") as results:
            report = asyncio.run(BatchRunner(judge, concurrency=2, results=results).run(list(scan([trace(f"t-{i}") for i in range(3)]))))
    assert report.statuses["judged"] == 3, report
    written = [d for _, d in ResultsFile.read(tmp_path / "out.jsonl")]
    assert all(d.judge.params["redact_patterns"] == judge.config.answer_params()["redact_patterns"] for d in written)
    assert all(d.judge.params["redact_patterns"] for d in written)
    assert {k: v for k, v in written[0].judge.params.items() if k in judge.info.params} == {
        **judge.info.params, "structured_output": written[0].judge.params["structured_output"]
    }


def test_one_canonical_json_keeps_the_keys_written_by_earlier_versions() -> None:
    import hashlib

    from mast._json import canonical_hash
    from mast.judge.cache import CACHE_FORMAT, cache_key

    parts = {"b": [1, 2.5, None], "a": {"z": "é", "y": True}, "trace": "abc"}
    # What cache keys and resume fingerprints were before they shared one helper: orjson, sorted keys.
    before = hashlib.sha256(orjson.dumps({"format": CACHE_FORMAT, **parts}, option=orjson.OPT_SORT_KEYS)).hexdigest()
    assert cache_key(parts) == before == canonical_hash({**parts, "format": CACHE_FORMAT})
    # Values orjson refuses still hash (and deterministically) instead of failing a trace.
    big = {"n": 2**70, 3: "non-string key"}
    assert canonical_hash(big) == canonical_hash(dict(reversed(list(big.items()))))
    assert canonical_hash("\ud800") != canonical_hash("")
