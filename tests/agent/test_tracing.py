"""OpenTelemetry spans of a run, checked with the SDK's in-memory exporter."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from opentelemetry import trace

from agent import Agent, ClientSettings, ModelError, RetryPolicy, RunLimits
from agent.testing import FakeGemini, error, function_call, reply, thought
from tests.agent._loop_support import KEY, Sleeps, echo_toolkit
from tests.agent._otel_support import spans, telemetry

__all__ = ["spans", "telemetry"]  # fixtures


def parallel_fake() -> FakeGemini:
    return FakeGemini(
        [
            reply(
                thought("Both."),
                function_call("echo", {"text": "a"}),
                function_call("echo", {"text": "b"}),
                usage={"promptTokenCount": 10, "candidatesTokenCount": 4, "totalTokenCount": 14},
            ),
            reply(
                "Done: secret-answer.",
                usage={"promptTokenCount": 30, "candidatesTokenCount": 2, "totalTokenCount": 32},
            ),
        ],
        api_key=KEY,
    )


def agent_on(fake: FakeGemini) -> Agent:
    retry = RetryPolicy(sleep=Sleeps(), jitter=0.0)
    return Agent(
        toolkit=echo_toolkit(),
        limits=RunLimits(retry=retry),
        client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
    )


def every_value(span: Any) -> list[str]:
    return [json.dumps(value, default=str) for value in dict(span.attributes).values()]


async def test_a_parallel_turn_gives_one_run_span_with_model_and_tool_children(spans):
    result = await agent_on(parallel_fake()).run("go", session="s1")
    assert result.status == "completed"
    finished = spans.get_finished_spans()
    names = sorted(span.name for span in finished)
    assert names == [
        "execute_tool echo",
        "execute_tool echo",
        "generate_content gemini-2.5-flash",
        "generate_content gemini-2.5-flash",
        "invoke_agent",
    ]
    (root,) = [s for s in finished if s.name == "invoke_agent"]
    assert root.parent is None
    assert root.kind is trace.SpanKind.INTERNAL
    for span in finished:
        if span is not root:
            assert span.parent is not None and span.parent.span_id == root.context.span_id
            assert span.context.trace_id == root.context.trace_id
    tools = [s for s in finished if s.name.startswith("execute_tool")]
    assert sorted(s.attributes["gen_ai.tool.call.id"] for s in tools) == sorted(
        call.id for call in result.tool_calls
    )
    # Both tools ran at once: each started before the other ended.
    first, second = sorted(tools, key=lambda s: s.start_time)
    assert second.start_time < first.end_time
    model = next(s for s in finished if s.name.startswith("generate_content"))
    assert model.kind is trace.SpanKind.CLIENT
    assert model.attributes["gen_ai.operation.name"] == "generate_content"
    assert model.attributes["gen_ai.provider.name"] == "gcp.gemini"
    assert model.attributes["gen_ai.request.model"] == "gemini-2.5-flash"
    assert model.attributes["gen_ai.usage.input_tokens"] == 10
    assert model.attributes["gen_ai.usage.output_tokens"] == 4
    assert model.attributes["gen_ai.response.finish_reasons"] == ("tool_call",)
    assert root.attributes["gen_ai.conversation.id"] == "s1"
    assert root.attributes["gen_ai.usage.input_tokens"] == 40
    assert root.attributes["toolnexus.run.status"] == "completed"
    assert tools[0].attributes["gen_ai.tool.name"] == "echo"
    assert tools[0].attributes["gen_ai.operation.name"] == "execute_tool"
    # No content by default, and never the key.
    for span in finished:
        assert not any(key.startswith("gen_ai.input") for key in span.attributes)
        assert "gen_ai.output.messages" not in span.attributes
        assert "gen_ai.tool.call.arguments" not in span.attributes
        values = every_value(span)
        assert not any("secret-answer" in v or "echo:a" in v for v in values)
        assert not any(KEY in v for v in values)


async def test_content_is_recorded_when_switched_on(spans, monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    await agent_on(parallel_fake()).run("go")
    finished = spans.get_finished_spans()
    last_model = [s for s in finished if s.name.startswith("generate_content")][-1]
    assert "secret-answer" in last_model.attributes["gen_ai.output.messages"]
    assert '"go"' in last_model.attributes["gen_ai.input.messages"]
    tool = next(s for s in finished if s.name.startswith("execute_tool"))
    assert json.loads(tool.attributes["gen_ai.tool.call.result"]).startswith("echo:")
    for span in finished:
        assert not any(KEY in v for v in every_value(span))


async def test_a_failed_model_call_marks_its_span_and_the_run(spans):
    fake = FakeGemini([error(400, "INVALID_ARGUMENT", "bad")], api_key=KEY)
    with pytest.raises(ModelError):
        await agent_on(fake).run("go")
    finished = {s.name: s for s in spans.get_finished_spans()}
    model = finished["generate_content gemini-2.5-flash"]
    assert model.status.status_code is trace.StatusCode.ERROR
    assert finished["invoke_agent"].status.status_code is trace.StatusCode.ERROR
    assert finished["invoke_agent"].attributes["toolnexus.run.status"] == "incomplete"


def test_everything_works_without_opentelemetry():
    code = """
import sys
sys.modules["opentelemetry"] = None  # as if the extra were not installed
from agent import Agent, ClientSettings
from agent.testing import FakeGemini, function_call
from toolnexus import define_tool, toolkit

@define_tool
def echo(text: str) -> str:
    "Echo."
    return text

fake = FakeGemini([function_call("echo", {"text": "a"}), "done"])
agent = Agent(
    toolkit=toolkit([echo]),
    client=ClientSettings(api_key="k", http_client=fake.http_client()),
)
result = agent.run_sync("go")
import agent._tracing as t
assert t.trace is None
print(result.status)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.stdout == "completed\n", done.stderr
