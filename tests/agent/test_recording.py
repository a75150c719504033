"""agent.recording: a run's tree (run, turns, model calls, tool calls) and its spans.

The recording is checked against the OpenTelemetry SDK's in-memory exporter: the tree with
its turn nodes left out is the span tree of the same run, sub-agents and retries included.
"""

from __future__ import annotations

from typing import Any

import toolnexus as tn
from agent import Agent, ClientSettings, RetryPolicy, RunLimits
from agent.recording import Recording, TraceNode, record
from agent.testing import FakeGemini, error, function_call, reply, thought
from tests.agent._loop_support import KEY, Sleeps, echo_toolkit
from tests.agent._otel_support import spans, telemetry

__all__ = ["spans", "telemetry"]  # fixtures

USAGE = {"promptTokenCount": 1000, "candidatesTokenCount": 50, "totalTokenCount": 1050}


def team(fake: FakeGemini) -> Agent:
    """A lead agent with an ``echo`` tool and a ``helper`` sub-agent, on one fake."""
    client = ClientSettings(api_key=KEY, http_client=fake.http_client())
    limits = RunLimits(retry=RetryPolicy(sleep=Sleeps(), jitter=0.0))
    helper = Agent(toolkit=echo_toolkit(), client=client, limits=limits)
    tools = tn.toolkit([*echo_toolkit(), helper.as_tool(name="helper", description="Helps.")])
    return Agent(toolkit=tools, client=client, limits=limits)


def team_script() -> FakeGemini:
    return FakeGemini(
        [
            error(503, retry_delay=0.01),  # the lead's first call is retried
            reply(
                thought("Two things at once."),
                function_call("echo", {"text": "a"}),
                function_call("helper", {"task": "say b"}),
                usage=USAGE,
            ),
            # the helper's own conversation, inside the lead's call to `helper`
            reply(function_call("echo", {"text": "b"}), usage=USAGE),
            reply("b said", usage=USAGE),
            # the lead again
            reply("Both done.", usage=USAGE),
        ],
        api_key=KEY,
    )


def shape(nodes: list[TraceNode]) -> list[Any]:
    """The tree as (name, children) pairs, siblings in a fixed order (parallel calls)."""
    return sorted((node.name, shape(node.children)) for node in nodes)


def span_shape(finished: Any) -> list[Any]:
    children: dict[Any, list[Any]] = {}
    for span in finished:
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent, []).append(span)

    def under(parent: Any) -> list[Any]:
        return sorted((span.name, under(span.context.span_id)) for span in children.get(parent, []))

    return under(None)


async def test_a_run_is_recorded_as_run_turn_model_call_and_tool_calls() -> None:
    agent = team(team_script())
    with record() as recording:
        result = await agent.run("go")
    assert result.status == "completed"
    (run,) = recording.runs
    assert run.kind == "run" and run.name == "invoke_agent"
    assert run.attributes["status"] == "completed"
    assert [turn.name for turn in run.children] == ["turn 1", "turn 2"]
    first = run.children[0]
    kinds = [(child.kind, child.name) for child in first.children]
    assert kinds == [
        ("model_call", "generate_content gemini-2.5-flash"),
        ("model_call", "generate_content gemini-2.5-flash"),
        ("tool_call", "execute_tool echo"),
        ("tool_call", "execute_tool helper"),
    ]
    failed, answered, echo, helper = first.children
    # The retried attempt: its error, no tokens, nothing billed; the next one waited.
    assert failed.attributes["status"] == "error"
    assert failed.attributes["error"]["code"] == 503
    assert failed.attributes["attempt"] == 1 and answered.attributes["attempt"] == 2
    assert answered.attributes["waited"] is not None and answered.attributes["waited"] >= 0
    assert failed.usage == {} and failed.cost_usd == 0.0
    assert answered.usage == {"prompt": 1000, "candidates": 50, "total": 1050}
    assert answered.cost_usd is not None and answered.cost_usd > 0
    assert answered.attributes["calls"] == ["echo", "helper"]
    # Parallel calls are siblings; the sub-agent's run is under its tool call.
    assert echo.attributes["args"] == {"text": "a"} and echo.attributes["status"] == "ok"
    (sub,) = helper.children
    assert sub.kind == "run" and sub.name == "invoke_agent helper"
    assert [c.name for c in sub.children] == ["turn 1", "turn 2"]
    assert sub.children[0].children[1].attributes["args"] == {"text": "b"}
    # Tokens and cost add up the tree: the run counts its sub-agent's calls.
    assert run.usage["total"] == 4 * 1050
    assert run.cost_usd is not None
    assert abs(run.cost_usd - result.cost.usd) < 1e-9
    for node in (run, first, answered, echo):
        assert node.duration is None or node.duration >= 0
    assert first.extent() is not None


async def test_the_tree_is_the_opentelemetry_span_tree_of_the_same_run(spans) -> None:
    agent = team(team_script())
    with record() as recording:
        await agent.run("go")
    spans_of_recording = [span for run in recording.runs for span in run.spans()]
    assert shape(spans_of_recording) == span_shape(spans.get_finished_spans())
    assert len(spans.get_finished_spans()) == 10  # 2 runs, 5 model attempts, 3 tool calls


async def test_each_model_call_keeps_its_request_and_response_for_reading() -> None:
    fake = FakeGemini([function_call("echo", {"text": "x"}), "done"], api_key=KEY)
    agent = Agent(
        toolkit=echo_toolkit(), client=ClientSettings(api_key=KEY, http_client=fake.http_client())
    )
    with record() as recording:
        await agent.run("hello there")
    call = recording.runs[0].children[0].children[0]
    exchange = recording.exchange(call.id)
    assert exchange is not None
    assert exchange["request"]["contents"] == fake.requests[0].contents
    assert exchange["request"]["model"] == "gemini-2.5-flash"
    assert "tools" in exchange["request"]["config"]
    parts = exchange["response"]["candidates"][0]["content"]["parts"]
    assert parts[0]["functionCall"]["name"] == "echo"
    assert "sdkHttpResponse" not in exchange["response"]
    assert KEY not in str(exchange)
    assert recording.exchange("n999") is None
    assert recording.exchange(recording.runs[0].id) is None  # not a model call
    data = recording.to_dict()
    assert data["runs"][0]["children"][0]["children"][0]["kind"] == "model_call"


async def test_nothing_is_recorded_outside_a_record_block() -> None:
    fake = FakeGemini(["one", "two"], api_key=KEY)
    agent = Agent(client=ClientSettings(api_key=KEY, http_client=fake.http_client()))
    await agent.run("not recorded")
    kept = Recording()
    with record(kept):
        await agent.run("recorded")
    assert len(kept.runs) == 1
    assert kept.runs[0].children[0].children[0].attributes["usage"]["total"] > 0
