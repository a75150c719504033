"""`DurableAgent` in this process, on SQLite: results, errors and answers through DBOS."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("dbos", reason="needs the dbos extra: pip install '.[dbos]'")

from dbos import DBOS

import toolnexus as tn
from agent import Agent, ModelError, RetryPolicy, RunLimits
from agent.dbos import DurableAgent, follow, pending, send
from agent.dbos._steps import as_answer
from agent.errors import ConfigurationError
from agent.events import DoneEvent, PendingEvent, ToolResultEvent, UsageEvent
from agent.testing import FakeGemini, error, function_call, reply


@tn.define_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


# Created at import time, before DBOS launches, as DBOS wants its workflows.
ADDING = FakeGemini([reply(function_call("add", {"a": 2, "b": 3})), "2 + 3 = 5"])
adding = DurableAgent(Agent(toolkit=tn.toolkit([add]), client=ADDING.client()), name="test_adding")
FAILING = FakeGemini([error(400, "INVALID_ARGUMENT", "bad request")])
failing = DurableAgent(
    Agent(client=FAILING.client(), limits=RunLimits(retry=RetryPolicy(attempts=1))),
    name="test_failing",
)
ASKING = FakeGemini(
    [reply(function_call("question", {"questions": [{"question": "Deploy?"}]})), "Not deploying."]
)
asking = DurableAgent(
    Agent(toolkit=tn.build(builtins={"tools": {"bash": False}}), client=ASKING.client()),
    name="test_asking",
)


@pytest.fixture(scope="module", autouse=True)
def launched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    database = tmp_path_factory.mktemp("dbos") / "runs.sqlite"
    DBOS(config={"name": "durable-tests", "system_database_url": f"sqlite:///{database}"})
    DBOS.launch()
    yield
    DBOS.destroy()


async def test_a_durable_run_returns_its_result_once_and_for_all() -> None:
    result = await adding.run("What is 2 + 3?", run_id="sum-1")
    assert (result.status, result.text, result.turns) == ("completed", "2 + 3 = 5", 2)
    assert [call.result.output for call in result.tool_calls] == ["5"]
    # The same run id is the same run: its result again, no new request.
    again = await adding.run("What is 2 + 3?", run_id="sum-1")
    assert again == result
    assert len(ADDING.requests) == 2
    handle = await DBOS.retrieve_workflow_async("sum-1")
    assert await handle.get_result() == result
    events = [event async for event in follow("sum-1")]
    assert [type(e).__name__ for e in events if not isinstance(e, UsageEvent)] == [
        "ToolCallEvent",
        "ToolResultEvent",
        "TextEvent",
        "DoneEvent",
    ]
    assert isinstance(events[-1], DoneEvent) and events[-1].result == result


async def test_a_failed_model_call_raises_the_usual_error_with_its_partial_result() -> None:
    with pytest.raises(ModelError) as caught:
        await failing.run("Hello?", run_id="fails-1")
    assert caught.value.code == 400 and caught.value.status == "INVALID_ARGUMENT"
    assert caught.value.result.status == "incomplete"


async def test_a_declined_question_is_an_error_result_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    handle = await asking.start("Deploy the site.", run_id="ask-1")
    asked = await pending("ask-1", wait=30)
    assert asked is not None and asked["prompt"] == "Deploy?"
    await send("ask-1", {"ok": False})
    result = await handle.get_result()
    assert (result.status, result.text) == ("completed", "Not deploying.")
    sent = ASKING.requests[1].function_responses[0]["response"]
    assert sent["isError"] is True and "declined" in sent["output"]
    events = [event async for event in follow("ask-1")]
    assert sum(isinstance(e, PendingEvent) for e in events) == 1
    results = [e.result for e in events if isinstance(e, ToolResultEvent)]
    assert results[0].pending is not None
    assert await pending("ask-1") is None


def test_a_name_is_taken_once() -> None:
    with pytest.raises(ConfigurationError, match="test_adding"):
        DurableAgent(Agent(client=ADDING.client()), name="test_adding")


def test_what_send_delivers_becomes_the_answer() -> None:
    request = {"id": "q1", "kind": "question", "prompt": "?", "data": {}}
    assert as_answer("yes", request) == {"id": "q1", "ok": True, "data": "yes"}  # type: ignore[arg-type]
    assert as_answer({"ok": False}, request) == {"id": "q1", "ok": False}  # type: ignore[arg-type]
    assert as_answer({"ok": 1, "data": [1]}, request) == {"id": "q1", "ok": True, "data": [1]}  # type: ignore[arg-type]
