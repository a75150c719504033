"""`DurableAgent` in this process, on SQLite: results, errors and answers through DBOS."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("dbos", reason="needs the dbos extra: pip install '.[dbos]'")

from dbos import DBOS

import toolnexus as tn
from agent import Agent, ModelError, RetryPolicy, RunLimits
from agent.capabilities import Admission, InMemoryLedger, TokenRate
from agent.dbos import (
    ANSWER_TOPIC,
    EVENTS_STREAM,
    DurableAgent,
    engine_options,
    follow,
    pending,
    send,
)
from agent.dbos._steps import as_answer
from agent.errors import ConfigurationError
from agent.events import DoneEvent, PendingEvent, ToolResultEvent, UsageEvent
from agent.testing import FakeGemini, error, function_call, reply


@tn.define_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


# Created at import time, before DBOS launches, as DBOS wants its workflows.
ADDING = FakeGemini(
    lambda body: (
        "2 + 3 = 5"
        if "functionResponse" in body["contents"][-1]["parts"][0]
        else reply(function_call("add", {"a": 2, "b": 3}))
    )
)
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


class CountingLedger(InMemoryLedger):
    """The default ledger, counting the calls it let through."""

    def __init__(self) -> None:
        super().__init__()
        self.admitted = 0

    async def admit(self, tokens: int, rate: TokenRate) -> Admission:
        admission = await super().admit(tokens, rate)
        self.admitted += admission.entry is not None
        return admission


LIMITED_LEDGER = CountingLedger()
LIMITED = FakeGemini(lambda body: "Done.")
limited = DurableAgent(
    Agent(client=LIMITED.client(), capabilities=[TokenRate(10_000, ledger=LIMITED_LEDGER)]),
    name="test_limited",
)


HELD, RELEASED = threading.Event(), threading.Event()


@tn.define_tool
async def hold() -> str:
    """Wait until the test lets go."""
    HELD.set()
    while not RELEASED.is_set():
        await asyncio.sleep(0.01)
    return "let go"


def _question(text: str) -> dict[str, list[dict[str, str]]]:
    return {"questions": [{"question": text}]}


BINDING = FakeGemini(
    [
        reply(function_call("hold", {})),
        reply(function_call("question", _question("Which region?"))),
        reply(function_call("question", _question("Deploy now?"))),
        "Deployed nowhere.",
    ]
)
binding = DurableAgent(
    Agent(
        toolkit=tn.build(tools=[hold], builtins={"tools": {"bash": False}}),
        client=BINDING.client(),
    ),
    name="test_binding",
)

OTHER = FakeGemini([reply(function_call("question", _question("Deploy?"))), "Not deploying."])
other_run = DurableAgent(
    Agent(toolkit=tn.build(builtins={"tools": {"bash": False}}), client=OTHER.client()),
    name="test_other",
)


@pytest.fixture(scope="module", autouse=True)
def launched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    database = tmp_path_factory.mktemp("dbos") / "runs.sqlite"
    url = f"sqlite:///{database}"
    options = engine_options(url)  # as docs/durable.md advises
    DBOS(config={"name": "durable-tests", "system_database_url": url, "db_engine_kwargs": options})
    DBOS.launch()
    yield
    DBOS.destroy()
    with sqlite3.connect(database) as connection:
        (mode,) = connection.execute("PRAGMA journal_mode").fetchone()
    assert mode == "wal"


def test_engine_options_leave_postgres_to_dbos() -> None:
    assert engine_options("postgresql://agent@db/runs") == {}
    assert engine_options("sqlite:///:memory:") == {}
    assert set(engine_options("sqlite:///runs.sqlite")) == {"creator"}


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


async def test_a_durable_run_is_one_step_per_call_and_one_stream_write_per_turn() -> None:
    await adding.run("What is 2 + 3?", run_id="sum-2")
    steps = await DBOS.list_workflow_steps_async("sum-2", load_output=False)
    names = [step["function_name"] for step in steps]
    # Model, tool (with its begin mark: `add` is not declared idempotent), model, and the
    # stream write of the last turn: the first turn's events went with the second model
    # call's step, which records no step of its own for them.
    assert names == [
        "toolnexus.model_call",
        "toolnexus.tool:add:begin",
        "toolnexus.tool:add",
        "toolnexus.model_call",
        "DBOS.writeStream",
    ]
    entries = [entry async for entry in DBOS.read_stream_async("sum-2", EVENTS_STREAM)]
    assert [(e["number"], [type(event).__name__ for event in e["events"]]) for e in entries] == [
        (0, ["UsageEvent", "ToolCallEvent", "ToolResultEvent"]),
        (1, ["TextEvent", "UsageEvent", "DoneEvent"]),
    ]


async def test_a_durable_runs_calls_go_through_its_token_rate_once() -> None:
    first = await limited.run("hello", run_id="limited-1")
    again = await limited.run("hello", run_id="limited-1")  # its result, read back
    assert first == again and first.text == "Done."
    assert len(LIMITED.requests) == LIMITED_LEDGER.admitted == 1


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
    await send("ask-1", {"ok": False}, request_id=asked["id"])
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
    bound = {"id": "q1", "ok": True, "data": "yes"}
    assert as_answer(bound, request) == bound  # type: ignore[arg-type]
    assert as_answer({"id": "q1", "ok": False}, request) == {"id": "q1", "ok": False}  # type: ignore[arg-type]
    # Not bound to this request, or not made by send: not an answer to it.
    for message in (
        "yes",
        {"ok": True, "data": "yes"},
        {"id": "q0", "ok": True, "data": "yes"},
        {"id": "q1", "ok": 1, "data": "yes"},
        {"id": "q1", "ok": "false"},
        {"id": "q1", "ok": True, "reason": "because"},
    ):
        assert as_answer(message, request) is None, message  # type: ignore[arg-type]


async def test_send_refuses_an_answer_of_the_wrong_shape() -> None:
    cases = {
        "ok must be true or false, got 'false'": {"id": "q1", "ok": "false"},
        "ok must be true or false, got 0": {"id": "q1", "ok": 0},
        "holds id, ok and data only, not reason": {"id": "q1", "ok": False, "reason": "x"},
        "the answer's id 'q2' is not request_id='q1'": {"id": "q2", "ok": True},
    }
    for message, answer in cases.items():
        with pytest.raises(ConfigurationError, match=message):
            await send("ask-1", answer, request_id="q1")


async def test_an_answer_counts_only_for_the_request_the_run_waits_on() -> None:
    HELD.clear()
    RELEASED.clear()
    handle = await binding.start("Deploy the site.", run_id="bind-1")
    other = await other_run.start("Deploy the site.", run_id="bind-other")
    try:
        await asyncio.to_thread(HELD.wait, 30)
        # Before anything is asked: refused, and what bypasses send is dropped by the run.
        with pytest.raises(ConfigurationError, match="'bind-1' waits on no request"):
            await send("bind-1", "eu-west", request_id="a-guess")
        await DBOS.send_async("bind-1", "us-east", ANSWER_TOPIC)  # how send sent answers
        await DBOS.send_async("bind-1", {"ok": True, "data": "us-east"}, ANSWER_TOPIC)
        RELEASED.set()
        first = await pending("bind-1", wait=30)
        assert first is not None and first["prompt"] == "Which region?"
        # Named for one run's request, sent to another: refused, the other still waits.
        theirs = await pending("bind-other", wait=30)
        assert theirs is not None
        with pytest.raises(ConfigurationError, match=f"waits on request {theirs['id']!r}"):
            await send("bind-other", "yes", request_id=first["id"])
        assert await pending("bind-other") == theirs
        with pytest.raises(ConfigurationError, match="'nobody' waits on no request"):
            await send("nobody", "yes", request_id=first["id"])
        with pytest.raises(ConfigurationError, match="name the request this answers"):
            await send("bind-1", "eu-west")
        await send("bind-1", "eu-west", request_id=first["id"])
        # The same answer again, racing past send's check: dropped, the next one waits.
        await DBOS.send_async(
            "bind-1", {"id": first["id"], "ok": True, "data": "eu-west"}, ANSWER_TOPIC
        )
        second = await _next_request("bind-1", first["id"])
        assert second["prompt"] == "Deploy now?"
        with pytest.raises(ConfigurationError, match=f"waits on request {second['id']!r}"):
            await send("bind-1", "eu-west", request_id=first["id"])
        await send("bind-1", {"id": second["id"], "ok": False})
        result = await handle.get_result()
        with pytest.raises(ConfigurationError, match="waits on no request"):
            await send("bind-1", {"id": second["id"], "ok": True})
    finally:
        RELEASED.set()
        waiting = await pending("bind-other")
        if waiting is not None:
            await send("bind-other", {"id": waiting["id"], "ok": False})
        await other.get_result()
    assert result.text == "Deployed nowhere."
    answers = [BINDING.requests[n].function_responses[0]["response"] for n in (2, 3)]
    assert answers[0] == {"output": '"eu-west"', "isError": False}
    assert answers[1] == {
        "output": "The request was declined or expired: Deploy now?",
        "isError": True,
    }
    assert await pending("bind-other") is None


async def _next_request(run_id: str, after: str) -> dict[str, object]:
    """Wait for the run to ask something other than the request ``after``."""
    for _ in range(3000):
        asked = await pending(run_id)
        if asked is not None and asked["id"] != after:
            return dict(asked)
        await asyncio.sleep(0.01)
    raise AssertionError(f"{run_id} asked nothing after {after}")
