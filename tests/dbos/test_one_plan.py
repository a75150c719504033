"""One scenario through every Python entry point: every feature holds on each of them.

The agent has a system prompt built from ``deps``, a typed output, a usage limit, compaction
forced by a tiny trigger, an approval rule on the gated tool, a built-in tool and tracing
on. ``run``, ``stream``, ``run_sync``, a sub-agent call and a durable run (DBOS on SQLite)
must each send the same system instruction and declarations, ask before the gated tool,
compact, honour the limit (a sub-agent's calls counted in its parent's) and record the
same span names; ``compact`` compacts under the same limit. The CLI entry points have
their own tests (tests/dbos/test_batch_cli.py, tests/cli/test_one_factory.py).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest
from dbos import DBOS
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolnexus as tn
from agent import (
    Agent,
    ApprovalPolicy,
    ClientSettings,
    Compaction,
    RetryPolicy,
    RunLimits,
    RunResult,
    UsageLimits,
)
from agent.dbos import DurableAgent, pending, send
from agent.events import DoneEvent
from agent.recording import TraceNode, record
from agent.testing import FakeGemini, function_call, json_output, reply

MODEL = "gemini-3-flash-preview"
HISTORY = [
    {"role": "user", "parts": [{"text": "Which region do we deploy to?"}]},
    {"role": "model", "parts": [{"text": "eu-west, as agreed last week. " * 20}]},
    {"role": "user", "parts": [{"text": "And the owner of the service?"}]},
    {"role": "model", "parts": [{"text": "The platform team owns it. " * 20}]},
]
"""Two earlier exchanges: with a tiny trigger, the first is summarised away."""


class Verdict(pydantic.BaseModel):
    answer: str


ran: list[str] = []
"""What the gated tool and the approval saw, in order (reset per test)."""


@tn.define_tool
def deploy(env: str) -> str:
    """Deploy the service to an environment."""
    ran.append(f"deploy {env}")
    return f"deployed to {env}"


def approve(request: dict[str, Any]) -> dict[str, Any]:
    ran.append(f"asked {request['data']['tool']}")
    return {"id": request["id"], "ok": True, "data": {"approved": True}}


def play(body: dict[str, Any]) -> Any:
    """The model: call the sub-agent, or deploy, then answer; summarise when asked to."""
    if "tools" not in body:  # a compaction summary request
        return "The region is eu-west; the platform team owns the service."
    names = [d["name"] for t in body["tools"] for d in t.get("functionDeclarations", [])]
    last = body["contents"][-1]["parts"][-1]
    if "functionResponse" in last:
        output = last["functionResponse"]["response"]["output"]
        return reply(json_output({"answer": output})) if "helper" not in names else "done"
    if "helper" in names:
        return reply(function_call("helper", {"task": "Deploy to prod."}))
    return reply(function_call("deploy", {"env": "prod"}))


def featured(fake: FakeGemini, limits: UsageLimits | None = None) -> Agent:
    return Agent(
        MODEL,
        tn.toolkit([deploy]),
        system_prompt=lambda deps: f"You help {deps['user']}.",
        output_type=Verdict,
        usage_limits=limits or UsageLimits(requests=10),
        compaction=Compaction(trigger_tokens=20, keep_recent_turns=1),
        approval=ApprovalPolicy(tools={"deploy": "ask"}),
        wait_for=approve,
        builtin_tools=["google_search"],
        client=ClientSettings(api_key="k", http_client=fake.http_client()),
        limits=RunLimits(retry=RetryPolicy(attempts=1)),
    )


FAKE = FakeGemini(play)
DURABLE = DurableAgent(featured(FAKE), name="one_plan")
LIMITED_FAKE = FakeGemini(play)
DURABLE_LIMITED = DurableAgent(
    featured(LIMITED_FAKE, UsageLimits(requests=2)), name="one_plan_limited"
)


@pytest.fixture(scope="module", autouse=True)
def launched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    database = tmp_path_factory.mktemp("dbos") / "plan.sqlite"
    DBOS(config={"name": "one-plan-tests", "system_database_url": f"sqlite:///{database}"})
    DBOS.launch()
    yield
    DBOS.destroy()


@pytest.fixture(autouse=True)
def fresh() -> None:
    ran.clear()
    for fake in (FAKE, LIMITED_FAKE):
        fake.requests.clear()


async def by_run(agent: Agent, deps: Any) -> RunResult:
    return await agent.run("Deploy to prod.", history=HISTORY, deps=deps)


async def by_stream(agent: Agent, deps: Any) -> RunResult:
    async for event in agent.stream("Deploy to prod.", history=HISTORY, deps=deps):
        if isinstance(event, DoneEvent):
            return event.result
    raise AssertionError("no DoneEvent")


async def by_run_sync(agent: Agent, deps: Any) -> RunResult:
    done: list[RunResult] = []
    # The thread stands for synchronous code in the caller's context (a `record` block):
    # a new thread starts in an empty one.
    context = contextvars.copy_context()
    thread = threading.Thread(
        target=context.run,
        args=(lambda: done.append(agent.run_sync("Deploy to prod.", history=HISTORY, deps=deps)),),
    )
    thread.start()
    await asyncio.to_thread(thread.join)
    return done[0]


async def by_subagent(agent: Agent, deps: Any) -> RunResult:
    fake = agent_fake(agent)
    lead = Agent(
        MODEL,
        tn.toolkit([agent.as_tool(name="helper", description="Does the deploys.")]),
        client=ClientSettings(api_key="k", http_client=fake.http_client()),
        usage_limits=agent_limits(agent),
    )
    return await lead.run("Deploy to prod.", deps=deps)


async def by_durable(agent: Agent, deps: Any) -> RunResult:
    durable = DURABLE if agent is DURABLE.agent else DURABLE_LIMITED
    run_id = f"plan-{id(deps)}-{durable.name}"
    handle = await durable.start("Deploy to prod.", run_id=run_id, history=HISTORY, deps=deps)
    # A durable run asks through DBOS, not through wait_for: answer what it waits on.
    while not handle_done(await handle.get_status()):
        asked = await pending(run_id, wait=0.2)
        if asked is not None:
            ran.append(f"asked {asked['data']['tool']}")
            await send(run_id, {"id": asked["id"], "ok": True, "data": {"approved": True}})
            break
    return await handle.get_result()


def handle_done(status: Any) -> bool:
    return status.status in ("SUCCESS", "ERROR")


ENTRY_POINTS = {
    "run": by_run,
    "stream": by_stream,
    "run_sync": by_run_sync,
    "subagent": by_subagent,
    "durable": by_durable,
}


def agent_fake(agent: Agent) -> FakeGemini:
    return LIMITED_FAKE if agent is DURABLE_LIMITED.agent else FAKE


def agent_limits(agent: Agent) -> UsageLimits | None:
    return UsageLimits(requests=2) if agent is DURABLE_LIMITED.agent else None


def model_requests(fake: FakeGemini) -> list[dict[str, Any]]:
    """The requests the featured agent sent (not the lead's, not summaries)."""
    return [
        r.body
        for r in fake.requests
        if "tools" in r.body
        and "helper" not in str(r.body["tools"])
        and r.path.lower().endswith("generatecontent")
    ]


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
async def test_every_entry_point_applies_every_feature(
    entry: str, spans: InMemorySpanExporter
) -> None:
    agent = DURABLE.agent
    with record() as recording:
        result = await ENTRY_POINTS[entry](agent, {"user": "alice"})
    sent = model_requests(FAKE)
    assert sent, "the featured agent made no request"
    for body in sent:
        assert body["systemInstruction"]["parts"][0]["text"] == "You help alice."
        declarations = body["tools"][-1]["functionDeclarations"]
        assert [d["name"] for d in declarations] == ["deploy"]
        assert {"googleSearch": {}} in body["tools"]
        assert body["toolConfig"]["includeServerSideToolInvocations"] is True
        assert body["generationConfig"]["responseJsonSchema"]["required"] == ["answer"]
    # Asked before the gated tool ran; the typed answer came back.
    assert ran == ["asked deploy", "deploy prod"]
    if entry == "subagent":
        assert result.text == "done"
        assert result.tool_calls[0].result.output == '{"answer":"deployed to prod"}'
    else:
        assert result.status == "completed"
        assert result.output == Verdict(answer="deployed to prod")
        # Compacted: the first exchange went into a summary, asked for without tools.
        summaries = [r for r in FAKE.requests if "tools" not in r.body]
        assert len(summaries) == 1
        assert "Summary of the earlier conversation" in str(result.contents[0])
    names = {span.name for span in spans.get_finished_spans()}
    assert {"invoke_agent", f"generate_content {MODEL}", "execute_tool deploy"} <= names
    # Recorded too, the gated tool's call under its run.
    recorded = [(node.kind, node.name) for node in walk(recording.runs)]
    assert ("tool_call", "execute_tool deploy") in recorded, recorded


def walk(nodes: list[TraceNode]) -> Iterator[TraceNode]:
    for node in nodes:
        yield node
        yield from walk(node.children)


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
async def test_every_entry_point_honours_the_usage_limit(entry: str) -> None:
    agent = DURABLE_LIMITED.agent
    result = await ENTRY_POINTS[entry](agent, {"user": "bob"})
    # Two model calls in the whole tree, then the run stops before a third.
    assert len(LIMITED_FAKE.requests) == 2
    assert (result.status, result.limit) == ("incomplete", "usage:requests")


async def test_compact_applies_the_limit_and_the_summary(tmp_path: Path) -> None:
    agent = DURABLE.agent
    result = await agent.compact(HISTORY)
    assert len(FAKE.requests) == 1 and "tools" not in FAKE.requests[0].body
    assert "Summary of the earlier conversation" in str(result.contents[0])
    refused = await DURABLE_LIMITED.agent.compact(HISTORY)
    assert len(LIMITED_FAKE.requests) == 1  # the limit of 2 leaves room for the summary
    assert "Summary" in str(refused.contents[0])
