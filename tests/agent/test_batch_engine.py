"""The Gemini Batch engine (`agent.batch`) against the fake's Batch API, through the real SDK."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from google import genai
from pydantic import BaseModel

import toolnexus as tn
from agent import (
    Agent,
    ApprovalPolicy,
    ClientSettings,
    ConfigurationError,
    Hooks,
    ModelSettings,
    RetryPolicy,
    RunLimits,
    UsageLimits,
)
from agent.batch import GeminiBatch, JobNote
from agent.steps import Steps
from agent.testing import FakeGemini, error, function_call, reply
from tests.agent._otel_support import spans, telemetry

__all__ = ["spans", "telemetry"]  # fixtures

USAGE = {"promptTokenCount": 1_000, "candidatesTokenCount": 100, "totalTokenCount": 1_100}


class Tools:
    """A tool that counts its executions (per key), to see that none runs twice."""

    def __init__(self) -> None:
        self.runs: Counter[str] = Counter()

        @tn.define_tool
        def lookup(key: str) -> str:
            """Look a key up."""
            self.runs[key] += 1
            return f"{key} = {len(key)}"

        self.toolkit = tn.toolkit([lookup])


def two_tool_turns(body: dict[str, Any]) -> Any:
    """Call ``lookup`` twice (one turn each), then answer; the keys name the task."""
    task = body["contents"][0]["parts"][0]["text"]
    turns = sum(1 for content in body["contents"] if content.get("role") == "model")
    if turns < 2:
        return reply(function_call("lookup", {"key": f"{task}/{turns}"}), usage=USAGE)
    return reply(f"done with {task}", usage=USAGE)


def make_agent(fake: FakeGemini, tools: Tools, **options: Any) -> Agent:
    options.setdefault("limits", RunLimits(retry=RetryPolicy(initial_backoff=0.01, jitter=0)))
    return Agent(
        toolkit=tools.toolkit,
        client=ClientSettings(api_key="k", http_client=fake.http_client()),
        **options,
    )


def instant(fake: FakeGemini) -> FakeGemini:
    fake.batches.progression = ()
    return fake


def without_ids(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The transcript without call ids and signatures (each fake run draws its own)."""
    text = json.dumps(contents)
    data: list[dict[str, Any]] = json.loads(text)
    for content in data:
        for part in content.get("parts", []):
            part.pop("thoughtSignature", None)
            for kind in ("functionCall", "functionResponse"):
                if kind in part:
                    part[kind].pop("id", None)
    return data


PROMPTS = {f"t{i:02d}": f"task {i}" for i in range(50)}


async def test_fifty_tasks_of_two_tool_turns_take_three_jobs_and_equal_direct_runs() -> None:
    fake, tools = FakeGemini(two_tool_turns), Tools()
    agent = make_agent(fake, tools)
    notes: list[JobNote] = []
    batch = GeminiBatch(poll_interval=0.001, on_job=notes.append)
    results = await batch.run(agent, PROMPTS)
    assert fake.batches.created == 3 and batch.jobs_created == 3
    assert [n.requests for n in notes if n.kind == "created"] == [50, 50, 50]
    assert [n.state for n in notes if n.kind == "ended"] == ["JOB_STATE_SUCCEEDED"] * 3
    for job in fake.batches.jobs.values():
        answered = [result["key"] for result in job.results]
        assert sorted(answered) == sorted(job.keys) and answered != job.keys  # shuffled
    assert len(tools.runs) == 100 and set(tools.runs.values()) == {1}
    direct = {task: await agent.run(prompt) for task, prompt in list(PROMPTS.items())[:5]}
    for task, local in direct.items():
        batched = results[task]
        assert (batched.status, batched.text, batched.turns) == ("completed", local.text, 3)
        assert without_ids(batched.contents) == without_ids(local.contents)
        assert batched.usage == local.usage
        assert [c.name for c in batched.tool_calls] == ["lookup", "lookup"]
        assert local.cost.usd is not None and batched.cost.usd is not None
        assert batched.cost.usd == pytest.approx(local.cost.usd / 2)
        assert batched.cost.turns == pytest.approx([usd / 2 for usd in local.cost.turns])
        assert not batched.cost.estimated


async def test_a_failed_and_an_expired_job_requeue_their_tasks_with_the_reason() -> None:
    fake, tools = instant(FakeGemini(two_tool_turns)), Tools()
    fake.batches.endings = ["FAILED", "EXPIRED"]
    results = await GeminiBatch(poll_interval=0).run(
        make_agent(fake, tools), {"a": "task a", "b": "task b"}
    )
    assert fake.batches.created == 5  # two bad jobs, then one per turn
    for result in results.values():
        assert result.status == "completed" and result.turns == 3
        assert [(r.status, r.delay) for r in result.retries] == [
            ("JOB_STATE_FAILED", 0.0),
            ("JOB_STATE_EXPIRED", 0.0),
        ]
    assert len(tools.runs) == 4 and set(tools.runs.values()) == {1}


async def test_a_per_request_error_retries_only_that_task() -> None:
    failed: list[str] = []

    def model(body: dict[str, Any]) -> Any:
        task = body["contents"][0]["parts"][0]["text"]
        if task == "task 3" and len(body["contents"]) == 1 and not failed:
            failed.append(task)
            return error(503)
        return two_tool_turns(body)

    fake, tools = instant(FakeGemini(model)), Tools()
    prompts = {f"t{i}": f"task {i}" for i in range(6)}
    results = await GeminiBatch(poll_interval=0).run(make_agent(fake, tools), prompts)
    sizes = [len(job.keys) for job in fake.batches.jobs.values()]
    # t3 goes again in the second job, with the others' second turns; it ends a job later.
    assert sizes == [6, 6, 6, 1]
    assert [job.keys for job in fake.batches.jobs.values()][-1] == ["t3:3"]
    assert [r.status for r in results["t3"].retries] == ["UNAVAILABLE"]
    assert all(not results[t].retries for t in prompts if t != "t3")
    assert {r.status for r in results.values()} == {"completed"}


async def test_a_request_error_the_api_would_not_retry_fails_that_task_only() -> None:
    def model(body: dict[str, Any]) -> Any:
        if body["contents"][0]["parts"][0]["text"] == "task 1":
            return error(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")
        return two_tool_turns(body)

    fake = instant(FakeGemini(model))
    results = await GeminiBatch(poll_interval=0).run(
        make_agent(fake, Tools()), {"t0": "task 0", "t1": "task 1"}
    )
    assert results["t0"].status == "completed"
    assert (results["t1"].status, results["t1"].reason) == ("incomplete", "400 INVALID_ARGUMENT")
    assert fake.batches.created == 3


async def test_a_job_too_large_to_send_inline_goes_as_an_uploaded_file() -> None:
    fake, tools = instant(FakeGemini(two_tool_turns)), Tools()
    fake.files.processing_gets = 0
    prompts = dict(list(PROMPTS.items())[:4])
    notes: list[JobNote] = []
    filed = await GeminiBatch(poll_interval=0, inline_limit=500, on_job=notes.append).run(
        make_agent(fake, tools), prompts
    )
    assert {n.source for n in notes if n.kind == "created"} == {"file"}
    assert {job.source for job in fake.batches.jobs.values()} == {"file"}
    sent_by_file = [request.body for request in fake.requests]
    other = instant(FakeGemini(two_tool_turns))
    inline = await GeminiBatch(poll_interval=0).run(make_agent(other, Tools()), prompts)
    assert {job.source for job in other.batches.jobs.values()} == {"inline"}
    # The file's lines are the requests the SDK sends inline, byte for byte once parsed.
    assert without_ids([b for body in sent_by_file for b in body["contents"]]) == without_ids(
        [b for request in other.requests for b in request.body["contents"]]
    )
    assert [r["tools"] for r in sent_by_file] == [r.body["tools"] for r in other.requests]
    for task in prompts:
        assert without_ids(filed[task].contents) == without_ids(inline[task].contents)


async def test_max_enqueued_tokens_splits_the_jobs_in_flight() -> None:
    fake = FakeGemini(two_tool_turns)
    fake.batches.progression = ("RUNNING",)
    # About 600 tokens each (a token per four characters of JSON): two fit under 1,500.
    prompts = {f"t{i}": f"task {i} " + "x" * 2_400 for i in range(6)}
    flying: list[int] = []
    notes: list[JobNote] = []

    def note(job: JobNote) -> None:
        notes.append(job)
        running = sum(1 for n in notes if n.kind == "created") - sum(
            1 for n in notes if n.kind == "ended"
        )
        flying.append(running)

    batch = GeminiBatch(poll_interval=0, max_enqueued_tokens=1_500, on_job=note)
    results = await batch.run(make_agent(fake, Tools()), prompts)
    assert {r.status for r in results.values()} == {"completed"}
    created = [n.requests for n in notes if n.kind == "created"]
    assert max(created) <= 2 and sum(created) == 18
    assert max(flying) == 1  # one job in flight at a time: the next did not fit


async def test_tasks_replay_their_recorded_steps_when_run_again(tmp_path: Path) -> None:
    fake, tools = instant(FakeGemini(two_tool_turns)), Tools()
    agent = make_agent(fake, tools)
    state = tmp_path / "state.jsonl"
    prompts = dict(list(PROMPTS.items())[:3])
    first = await GeminiBatch(state=state, poll_interval=0).run(agent, prompts)
    assert fake.batches.created == 3
    again = await GeminiBatch(state=state, poll_interval=0).run(agent, prompts)
    assert fake.batches.created == 3  # nothing sent again
    assert set(tools.runs.values()) == {1}  # no tool ran again
    for task in prompts:
        assert again[task].contents == first[task].contents
        assert again[task].cost == first[task].cost
    # A task whose prompt changed runs afresh; the others still replay.
    changed = {**prompts, "t01": "task 1 (changed)"}
    third = await GeminiBatch(state=state, poll_interval=0).run(agent, changed)
    assert third["t01"].text == "done with task 1 (changed)"
    assert fake.batches.created == 6 and [len(j.keys) for j in fake.batches.jobs.values()][3:] == [
        1,
        1,
        1,
    ]


async def test_a_batch_stopped_after_its_second_job_follows_that_job_when_run_again(
    tmp_path: Path,
) -> None:
    fake, tools = FakeGemini(two_tool_turns), Tools()
    fake.batches.progression = ("PENDING",) * 10**6  # the jobs stay pending: stop in one
    agent = make_agent(fake, tools)
    state = tmp_path / "state.jsonl"
    prompts = dict(list(PROMPTS.items())[:10])
    stopped = asyncio.get_running_loop().create_future()

    def note(job: JobNote) -> None:
        if job.kind == "created" and job.job.endswith("2") and not stopped.done():
            stopped.set_result(None)
        if job.kind == "created" and job.job.endswith("1"):
            fake.batches.jobs["fakebatch000001"].gets = 10**6  # job 1 ends at the next get

    run = asyncio.ensure_future(
        GeminiBatch(state=state, poll_interval=0.001, on_job=note).run(agent, prompts)
    )
    await stopped
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert fake.batches.created == 2 and len(tools.runs) == 10
    fake.batches.progression = ()
    notes: list[JobNote] = []
    results = await GeminiBatch(state=state, poll_interval=0, on_job=notes.append).run(
        agent, prompts
    )
    assert fake.batches.created == 3  # job 2 was followed, not created again
    assert [n.kind for n in notes][:2] == ["resumed", "ended"]
    assert notes[0].job == "batches/fakebatch000002"
    assert {r.status for r in results.values()} == {"completed"}
    assert len(tools.runs) == 20 and set(tools.runs.values()) == {1}
    assert all(result.turns == 3 for result in results.values())


async def test_a_job_whose_creation_was_cut_short_is_found_by_its_display_name(
    tmp_path: Path,
) -> None:
    fake = instant(FakeGemini(two_tool_turns))
    agent = make_agent(fake, Tools())
    client = fake.client()
    # A crash between the create call and the line that records its answer leaves this:
    state = tmp_path / "state.jsonl"
    display = "toolnexus-abc-1"
    lines = [
        {"version": 1, "run": "abc"},
        {"creating": display, "model": "gemini-2.5-flash", "keys": ["a:1"]},
    ]
    state.write_text("".join(json.dumps(line) + "\n" for line in lines))
    await client.aio.batches.create(
        model="gemini-2.5-flash",
        src=[{"contents": "task a", "metadata": {"key": "a:1"}}],
        config={"display_name": "someone else's"},
    )
    await client.aio.batches.create(
        model="gemini-2.5-flash",
        src=[{"contents": "task a", "metadata": {"key": "a:1"}}],
        config={"display_name": display},
    )
    results = await GeminiBatch(state=state, poll_interval=0).run(agent, {"a": "task a"})
    assert results["a"].status == "completed"
    assert fake.batches.created == 4  # the two above, then turns 2 and 3
    recorded = [json.loads(line) for line in state.read_text().splitlines()]
    assert {"job": "batches/fakebatch000002", "display": display}.items() <= recorded[2].items()


async def test_a_job_whose_creation_never_happened_sends_its_calls_in_a_new_job(
    tmp_path: Path,
) -> None:
    fake = instant(FakeGemini(two_tool_turns))
    # A crash before the create call reached the API: no job has the display name.
    state = tmp_path / "state.jsonl"
    lines = [
        {"version": 1, "run": "abc"},
        {"creating": "toolnexus-abc-1", "model": "gemini-2.5-flash", "keys": ["a:1"]},
    ]
    state.write_text("".join(json.dumps(line) + "\n" for line in lines))
    results = await GeminiBatch(state=state, poll_interval=0).run(
        make_agent(fake, Tools()), {"a": "task a"}
    )
    assert results["a"].status == "completed" and results["a"].retries == ()
    assert fake.batches.created == 3  # turns 1, 2 and 3, each in a job of its own
    recorded = [json.loads(line) for line in state.read_text().splitlines()]
    assert {"ended": "toolnexus-abc-1", "state": "NOT_CREATED"}.items() <= recorded[2].items()
    assert recorded[3] == {
        "creating": "toolnexus-abc-2",
        "model": "gemini-2.5-flash",
        "keys": ["a:1"],
    }


async def test_a_job_that_is_gone_requeues_its_requests(tmp_path: Path) -> None:
    fake = instant(FakeGemini(two_tool_turns))
    state = tmp_path / "state.jsonl"
    lines = [
        {"version": 1, "run": "abc"},
        {"creating": "toolnexus-abc-1", "model": "gemini-2.5-flash", "keys": ["a:1"]},
        {"job": "batches/deleted", "display": "toolnexus-abc-1", "keys": ["a:1"]},
    ]
    state.write_text("".join(json.dumps(line) + "\n" for line in lines))
    results = await GeminiBatch(state=state, poll_interval=0).run(
        make_agent(fake, Tools()), {"a": "task a"}
    )
    assert results["a"].status == "completed" and fake.batches.created == 3
    assert [r.status for r in results["a"].retries] == ["JOB_LOST"]


async def test_the_agents_capabilities_apply_to_batched_runs() -> None:
    class Answer(BaseModel):
        city: str

    seen: list[int] = []

    def model(body: dict[str, Any]) -> Any:
        if len(body["contents"]) == 1:
            return reply(function_call("lookup", {"key": "paris"}), function_call("write", {}))
        return reply(function_call("final_result", {"city": "Paris"}))

    @tn.define_tool
    def write() -> str:
        """Change something."""
        raise AssertionError("refused tools do not run")

    fake, tools = instant(FakeGemini(model)), Tools()
    agent = Agent(
        toolkit=tn.toolkit([*tools.toolkit, write]),
        client=ClientSettings(api_key="k", http_client=fake.http_client()),
        output_type=Answer,
        approval=ApprovalPolicy(tools={"write": "deny"}),
        capabilities=[Hooks(before_model=lambda request: seen.append(request.turn))],
    )
    results = await GeminiBatch(poll_interval=0).run(agent, {"a": "Where?", "b": "Where?"})
    for result in results.values():
        assert result.output == Answer(city="Paris")
        assert [c.result.metadata for c in result.tool_calls][1] == {"approval": "denied"}
    assert sorted(seen) == [1, 1, 2, 2]
    limited = await GeminiBatch(poll_interval=0).run(
        agent, {"c": "Where?"}, usage_limits=UsageLimits(requests=1)
    )
    assert (limited["c"].status, limited["c"].limit) == ("incomplete", "usage:requests")


async def test_run_tasks_gives_each_task_its_steps_and_hands_back_any_value() -> None:
    fake = instant(FakeGemini(two_tool_turns))
    agent = make_agent(fake, Tools())
    finished: list[str] = []

    async def task(steps: Steps) -> str:
        first = await agent.plan("task x", steps=steps).result()
        second = await agent.plan("task y", history=first.contents, steps=steps).result()
        return second.text

    values = await GeminiBatch(poll_interval=0).run_tasks(
        {"x": task}, on_done=lambda key, value: finished.append(f"{key}={value}")
    )
    assert values == {"x": "done with task x"} and finished == ["x=done with task x"]


async def test_agents_the_engine_cannot_batch_are_refused(tmp_path: Path) -> None:
    fake = FakeGemini(two_tool_turns)
    flex = make_agent(fake, Tools(), settings=ModelSettings(service_tier="flex"))
    with pytest.raises(ConfigurationError, match="service_tier"):
        await GeminiBatch().run(flex, {"a": "task a"})
    vertex = Agent(client=genai.Client(vertexai=True, api_key="k"))  # express mode, no network
    with pytest.raises(ConfigurationError, match="Vertex AI client is not supported"):
        await GeminiBatch().run(vertex, {"a": "task a"})
    with pytest.raises(ConfigurationError, match="poll_interval"):
        GeminiBatch(poll_interval=-1)
    state = tmp_path / "state.jsonl"
    state.write_text("not a state file\n")
    with pytest.raises(ConfigurationError, match="not a batch state file"):
        await GeminiBatch(state=state).run(make_agent(fake, Tools()), {"a": "task a"})


async def test_a_state_file_in_use_is_refused(tmp_path: Path) -> None:
    fake = FakeGemini(two_tool_turns)
    fake.batches.progression = ("PENDING",) * 10**6
    agent = make_agent(fake, Tools())
    state = tmp_path / "state.jsonl"
    created = asyncio.get_running_loop().create_future()
    first = asyncio.ensure_future(
        GeminiBatch(
            state=state,
            poll_interval=0.001,
            on_job=lambda n: created.done() or created.set_result(None),
        ).run(agent, {"a": "task a"})
    )
    await created
    with pytest.raises(ConfigurationError, match="in use by another batch"):
        await GeminiBatch(state=state).run(agent, {"b": "task b"})
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_batched_runs_are_traced_like_direct_runs(spans: Any) -> None:
    fake = instant(FakeGemini(two_tool_turns))
    results = await GeminiBatch(poll_interval=0).run(make_agent(fake, Tools()), {"a": "task a"})
    assert results["a"].status == "completed"
    names = sorted(span.name for span in spans.get_finished_spans())
    assert names == [
        "execute_tool lookup",
        "execute_tool lookup",
        "generate_content gemini-2.5-flash",
        "generate_content gemini-2.5-flash",
        "generate_content gemini-2.5-flash",
        "invoke_agent",
    ]


async def test_native_typed_output_goes_in_each_requests_generation_config() -> None:
    class Answer(BaseModel):
        city: str

    fake = instant(FakeGemini(lambda body: '{"city": "Paris"}'))
    agent = Agent(
        client=ClientSettings(api_key="k", http_client=fake.http_client()), output_type=Answer
    )
    results = await GeminiBatch(poll_interval=0).run(agent, {"a": "Where?"})
    assert results["a"].output == Answer(city="Paris")
    (job,) = fake.batches.jobs.values()
    config = job.bodies[0]["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"]["properties"] == {
        "city": {"title": "City", "type": "string"}
    }


async def test_a_refused_create_retries_its_calls_in_a_new_job(tmp_path: Path) -> None:
    fake = instant(FakeGemini(two_tool_turns))
    fake.batches.create_errors = [error(429, retry_delay=0.01)]
    state = tmp_path / "state.jsonl"
    results = await GeminiBatch(state=state, poll_interval=0).run(
        make_agent(fake, Tools()), {"a": "task a", "b": "task b"}
    )
    assert {r.status for r in results.values()} == {"completed"}
    assert [r.status for r in results["a"].retries] == ["RESOURCE_EXHAUSTED"]
    assert fake.batches.created == 3
    ended = [json.loads(line) for line in state.read_text().splitlines() if "ended" in line]
    assert ended[0]["state"] == "NOT_CREATED" and ended[0]["job"] is None
