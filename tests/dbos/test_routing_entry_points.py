"""Model fallback (and per-turn control) through every Python entry point: run, stream,
run_sync, a sub-agent call, compact and a durable run (DBOS on SQLite), whose fallback
replays the same way.

The agent's first model is overloaded (the fake answers it 503 on every request, after
checking the request like Gemini: another model's signature would get 400 first); with no
cool-down, each turn tries it, then falls back. Every entry point must end on the fallback
with no request refused for its signatures, and record the model of each turn.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("dbos", reason="needs the dbos extra: pip install '.[dbos]'")

from dbos import DBOS
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolnexus as tn
from agent import Agent, ClientSettings, Compaction, Hooks, RetryPolicy, RunLimits, RunResult
from agent._signatures import SignatureLedger
from agent.dbos import DurableAgent
from agent.events import DoneEvent, FallbackEvent, SubAgentEvent
from agent.testing import FakeGemini, function_call, reply

PRO = "gemini-3.1-pro-preview"
FLASH = "gemini-3-flash-preview"


@tn.define_tool
def echo(text: str) -> str:
    """Say it back."""
    return text


def play(body: dict[str, Any]) -> Any:
    """The model: one call, then the answer; a summary when asked without tools."""
    if "tools" not in body:
        return "Summary: they said hello."
    last = body["contents"][-1]["parts"][-1]
    if "functionResponse" in last:
        return "Done."
    if any(d["name"] == "helper" for t in body["tools"] for d in t["functionDeclarations"]):
        return reply(function_call("helper", {"task": "Echo x."}))
    return reply(function_call("echo", {"text": "x"}))


def chained(fake: FakeGemini) -> Agent:
    return Agent(
        [PRO, FLASH],
        tn.toolkit([echo]),
        compaction=Compaction(trigger_tokens=10**9, keep_recent_turns=1),
        limits=RunLimits(retry=RetryPolicy(attempts=1), fallback_cooldown=0.0),
        client=ClientSettings(api_key="k", http_client=fake.http_client()),
    )


FAKE = FakeGemini(play, overloaded=[PRO])
DURABLE = DurableAgent(chained(FAKE), name="routing_entry_points")


@tn.define_tool
def submit(answer: str) -> str:
    """Hand in the answer."""
    return f"filed {answer}"


def play_turns(body: dict[str, Any]) -> Any:
    """Echo first, then submit; a lead's helper call first when it is the lead."""
    names = [d["name"] for t in body.get("tools") or [] for d in t["functionDeclarations"]]
    last = body["contents"][-1]["parts"][-1]
    if "helper" in names:
        return (
            "Lead done." if "functionResponse" in last else function_call("helper", {"task": "x"})
        )
    if "functionResponse" in last:
        return function_call("submit", {"answer": "x"})
    return function_call("echo", {"text": "x"})


def prepare(state: Any) -> Any:
    from agent import TurnSettings

    return TurnSettings(allowed_tools=["submit"], thinking="low") if state.tool_calls else None


TURNS_FAKE = FakeGemini(play_turns)
PER_TURN = DurableAgent(
    Agent(
        FLASH,
        tn.toolkit([echo, submit]),
        capabilities=[Hooks(prepare_turn=prepare)],
        limits=RunLimits(stop_at_tools=["submit"]),
        client=ClientSettings(api_key="k", http_client=TURNS_FAKE.http_client()),
    ),
    name="routing_per_turn",
)


@pytest.fixture(scope="module", autouse=True)
def launched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    database = tmp_path_factory.mktemp("dbos") / "routing.sqlite"
    DBOS(config={"name": "routing-tests", "system_database_url": f"sqlite:///{database}"})
    DBOS.launch()
    yield
    DBOS.destroy()


@pytest.fixture(autouse=True)
def fresh() -> None:
    FAKE.requests.clear()
    TURNS_FAKE.requests.clear()


async def by_run(agent: Agent) -> RunResult:
    return await agent.run("Say x.")


async def by_stream(agent: Agent) -> RunResult:
    events = [event async for event in agent.stream("Say x.")]
    assert [e.fallback for e in events if isinstance(e, FallbackEvent)] == [FLASH, FLASH]
    done = events[-1]
    assert isinstance(done, DoneEvent)
    return done.result


async def by_stream_any(agent: Agent) -> RunResult:
    events = [event async for event in agent.stream("File x.")]
    done = events[-1]
    assert isinstance(done, DoneEvent)
    return done.result


async def by_run_sync(agent: Agent) -> RunResult:
    done: list[RunResult] = []
    thread = threading.Thread(target=lambda: done.append(agent.run_sync("Say x.")))
    thread.start()
    await asyncio.to_thread(thread.join)
    return done[0]


async def by_subagent(agent: Agent) -> RunResult:
    lead = Agent(
        FLASH,
        tn.toolkit([agent.as_tool(name="helper", description="Echoes.")]),
        client=ClientSettings(api_key="k", http_client=FAKE.http_client()),
    )
    events = [event async for event in lead.stream("Say x.")]
    nested = [e.event for e in events if isinstance(e, SubAgentEvent)]
    assert [e.model for e in nested if isinstance(e, FallbackEvent)] == [PRO, PRO]
    child = next(e.result for e in nested if isinstance(e, DoneEvent))
    done = events[-1]
    assert isinstance(done, DoneEvent)
    # The parent's cost holds the child's, priced at the model that answered each turn.
    assert done.result.cost.usd == pytest.approx(
        sum(done.result.cost.turns) + (child.cost.usd or 0.0)
    )
    return child


async def by_durable(agent: Agent) -> RunResult:
    return await DURABLE.run("Say x.", run_id="routing-1")


ENTRY_POINTS = {
    "run": by_run,
    "stream": by_stream,
    "run_sync": by_run_sync,
    "subagent": by_subagent,
    "durable": by_durable,
}


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
async def test_every_entry_point_falls_back_with_valid_signatures(
    entry: str, spans: InMemorySpanExporter
) -> None:
    result = await ENTRY_POINTS[entry](DURABLE.agent)
    assert result.status == "completed" and result.text == "Done."
    assert result.turn_models == (FLASH, FLASH)
    assert 400 not in [r.status for r in FAKE.requests], [r.error for r in FAKE.requests]
    ours = [r for r in FAKE.requests if "helper" not in str(r.body.get("tools"))]
    assert [(r.model, r.status) for r in ours] == [(PRO, 503), (FLASH, 200)] * 2
    # Pro's second request already held flash's call: with the placeholder, not flash's
    # signature (the fake checks before it answers 503).
    assert ours[2].contents[1]["parts"][0]["thoughtSignature"] == "skip_thought_signature_validator"
    if entry == "durable":
        return  # the workflow's spans are the DBOS thread's
    calls = [s for s in spans.get_finished_spans() if s.name.startswith("generate_content")]
    attempts = [(s.attributes or {}).get("gen_ai.request.model") for s in calls]
    answered = [(s.attributes or {}).get("gen_ai.response.model") for s in calls]
    if entry == "subagent":
        attempts, answered = attempts[1:-1], answered[1:-1]  # the lead's own two calls
    assert attempts == [PRO, FLASH, PRO, FLASH]
    assert answered == [None, FLASH, None, FLASH]


async def test_compact_falls_back_for_its_summary() -> None:
    history = [
        {"role": "user", "parts": [{"text": "Hello. " * 50}]},
        {"role": "model", "parts": [{"text": "Hi. " * 50}]},
        {"role": "user", "parts": [{"text": "Again. " * 50}]},
        {"role": "model", "parts": [{"text": "Yes. " * 50}]},
    ]
    result = await DURABLE.agent.compact(history)
    assert [(r.model, r.status) for r in FAKE.requests] == [(PRO, 503), (FLASH, 200)]
    assert "Summary: they said hello." in str(result.contents)
    # The summary is priced at the model that wrote it.
    assert result.cost.usd is not None and result.cost.usd > 0


async def test_a_replayed_durable_run_makes_the_same_fallback_decisions() -> None:
    first = await DURABLE.run("Say x.", run_id="routing-replay")
    assert first.turn_models == (FLASH, FLASH)
    steps = await DBOS.list_workflow_steps_async("routing-replay")
    model_steps = [s["function_id"] for s in steps if s["function_name"] == "toolnexus.model_call"]
    assert len(model_steps) == 4  # pro failed, flash called; pro failed, flash answered
    # As if in a new process: nothing is known of who signed what. Replay the first turn
    # from the records; the second turn's calls are made again.
    DURABLE.agent._core.model.standby.ledger = SignatureLedger()  # type: ignore[union-attr]
    FAKE.requests.clear()
    handle = await DBOS.fork_workflow_async("routing-replay", model_steps[2])
    again: RunResult = await handle.get_result()
    assert again.turn_models == first.turn_models
    assert again.text == "Done."
    # One live turn: pro (overloaded) got flash's call with the placeholder (who signed it
    # was learnt from the replayed steps), then flash answered.
    assert [(r.model, r.status) for r in FAKE.requests] == [(PRO, 503), (FLASH, 200)]
    sent = FAKE.requests[0].contents[1]["parts"][0]
    assert sent["thoughtSignature"] == "skip_thought_signature_validator"


async def lead_of(agent: Agent) -> RunResult:
    lead = Agent(
        FLASH,
        tn.toolkit([agent.as_tool(name="helper", description="Files it.")]),
        client=ClientSettings(api_key="k", http_client=TURNS_FAKE.http_client()),
    )
    events = [event async for event in lead.stream("File x.")]
    nested = [e.event for e in events if isinstance(e, SubAgentEvent)]
    return next(e.result for e in nested if isinstance(e, DoneEvent))


PER_TURN_ENTRIES = {
    "run": lambda agent: agent.run("File x."),
    "stream": by_stream_any,
    "subagent": lead_of,
    "durable": lambda agent: PER_TURN.run("File x.", run_id="per-turn-1"),
}


@pytest.mark.parametrize("entry", list(PER_TURN_ENTRIES))
async def test_every_entry_point_applies_prepare_turn_and_stops_at_the_submit_tool(
    entry: str,
) -> None:
    result = await PER_TURN_ENTRIES[entry](PER_TURN.agent)
    assert (result.status, result.text) == ("completed", "filed x")
    ours = [r for r in TURNS_FAKE.requests if "helper" not in str(r.body.get("tools"))]
    assert [sorted(r.declared_functions) for r in ours] == [["echo", "submit"], ["submit"]]
    assert ours[1].body["generationConfig"]["thinkingConfig"] == {"thinkingLevel": "LOW"}
