"""The spans and events of real runs against the OpenTelemetry GenAI semantic conventions.

Runs go through the real google-genai client to the fake Gemini; the SDK's in-memory
exporters collect what they emit. Message content is validated against the conventions' own
JSON schemas (``tests/fixtures/semconv``), each part also against the definition of its type.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from opentelemetry import trace
from pydantic import BaseModel

from agent import Agent, ClientSettings, ModelError, ModelSettings, RetryPolicy, RunLimits
from agent._semconv import finish_reason, tool_error_type
from agent.testing import FakeGemini, error, function_call, reply, thought
from tests.agent._loop_support import KEY, Sleeps, echo_toolkit, with_retry
from tests.agent._otel_support import Telemetry, spans, telemetry
from toolnexus import Tool, ToolError, define_tool, toolkit

__all__ = ["spans", "telemetry"]  # fixtures

SCHEMAS = Path(__file__).parents[1] / "fixtures" / "semconv"
CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
SIGNATURE = b"\xfb\xffsignature-bytes-that-must-stay-out-of-spans" * 8
SYSTEM = "You are terse."
PART_DEFINITIONS = {
    "text": "TextPart",
    "reasoning": "ReasoningPart",
    "tool_call": "ToolCallRequestPart",
    "tool_call_response": "ToolCallResponsePart",
    "server_tool_call": "ServerToolCallPart",
    "server_tool_call_response": "ServerToolCallResponsePart",
    "blob": "BlobPart",
    "uri": "UriPart",
}


def schema(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / f"gen-ai-{name}.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def plain(value: Any) -> Any:
    """Structured log attributes come back as tuples; JSON Schema wants lists."""
    if isinstance(value, tuple | list):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return value


def check(name: str, value: Any) -> None:
    """Validate ``value`` against schema ``name``, and each part against its own type."""
    full = schema(name)
    jsonschema.validate(value, full)
    parts = value if name == "system-instructions" else [p for m in value for p in m["parts"]]
    for part in parts:
        definition = PART_DEFINITIONS[part["type"]]
        jsonschema.validate(part, {"$ref": f"#/$defs/{definition}", "$defs": full["$defs"]})


def agent_on(fake: FakeGemini, **options: Any) -> Agent:
    """The agent under test (the one place that builds it)."""
    return Agent(
        toolkit=options.pop("toolkit", echo_toolkit()),
        client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
        limits=with_retry(options.pop("limits", None), RetryPolicy(sleep=Sleeps(), jitter=0.0)),
        system_prompt=options.pop("system_prompt", SYSTEM),
        **options,
    )


def tool_turn_fake() -> FakeGemini:
    return FakeGemini(
        [
            reply(
                thought("Echo it."),
                function_call("echo", {"text": "a"}),
                signature=SIGNATURE,
                usage={"promptTokenCount": 10, "candidatesTokenCount": 4, "totalTokenCount": 14},
            ),
            reply("Done.", usage={"promptTokenCount": 30, "candidatesTokenCount": 2}),
        ],
        api_key=KEY,
    )


def by_kind(finished: Any, prefix: str) -> list[Any]:
    return sorted((s for s in finished if s.name.startswith(prefix)), key=lambda s: s.start_time)


def values(span: Any) -> str:
    return json.dumps(dict(span.attributes), default=str)


async def test_captured_content_follows_the_conventions_schemas(spans, monkeypatch):
    monkeypatch.setenv(CAPTURE, "SPAN_ONLY")
    await agent_on(tool_turn_fake()).run("go")
    first, second = by_kind(spans.get_finished_spans(), "generate_content")
    for span in (first, second):
        check("input-messages", json.loads(span.attributes["gen_ai.input.messages"]))
        check("output-messages", json.loads(span.attributes["gen_ai.output.messages"]))
        system = json.loads(span.attributes["gen_ai.system_instructions"])
        check("system-instructions", system)
        assert system == [{"type": "text", "content": SYSTEM}]
    assert json.loads(first.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "go"}]}
    ]
    (answer,) = json.loads(first.attributes["gen_ai.output.messages"])
    assert answer["role"] == "assistant" and answer["finish_reason"] == "tool_call"
    reasoning, call = answer["parts"]
    assert reasoning == {"type": "reasoning", "content": "Echo it."}
    assert call["type"] == "tool_call" and call["name"] == "echo"
    assert call["arguments"] == {"text": "a"} and call["id"]
    sent = json.loads(second.attributes["gen_ai.input.messages"])
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    (response,) = sent[2]["parts"]
    assert response["type"] == "tool_call_response" and response["id"] == call["id"]
    assert response["response"] == {"output": "echo:a", "isError": False}  # JSON, as sent
    (final,) = json.loads(second.attributes["gen_ai.output.messages"])
    assert final == {
        "role": "assistant",
        "parts": [{"type": "text", "content": "Done."}],
        "finish_reason": "stop",
    }
    root = by_kind(spans.get_finished_spans(), "invoke_agent")[0]
    assert json.loads(root.attributes["gen_ai.system_instructions"]) == system


async def test_thought_signatures_never_reach_span_content(spans, monkeypatch):
    monkeypatch.setenv(CAPTURE, "SPAN_ONLY")
    await agent_on(tool_turn_fake()).run("go")
    forms = {base64.b64encode(SIGNATURE).decode(), base64.urlsafe_b64encode(SIGNATURE).decode()}
    finished = spans.get_finished_spans()
    for span in finished:
        text = values(span)
        assert not any(form[:24] in text for form in forms), span.name
    second = by_kind(finished, "generate_content")[1]
    echoed = json.loads(second.attributes["gen_ai.input.messages"])[1]["parts"]
    signed = [part for part in echoed if "thought_signature" in part]
    assert signed and signed[0]["thought_signature"]["length"] == len(SIGNATURE)
    assert len(signed[0]["thought_signature"]["sha256"]) == 16


@pytest.mark.parametrize(
    ("status_code", "status"), [(429, "RESOURCE_EXHAUSTED"), (400, "INVALID_ARGUMENT")]
)
async def test_a_failed_model_call_carries_geminis_status(spans, status_code, status):
    fake = FakeGemini([error(status_code, status, "Quota or argument trouble.")] * 3, api_key=KEY)
    with pytest.raises(ModelError):
        await agent_on(fake, limits=RunLimits(retry=RetryPolicy(attempts=1, sleep=Sleeps()))).run(
            "go"
        )
    finished = spans.get_finished_spans()
    (model,) = by_kind(finished, "generate_content")
    (root,) = by_kind(finished, "invoke_agent")
    for span in (model, root):
        assert span.attributes["error.type"] == status
        assert span.status.status_code is trace.StatusCode.ERROR
        assert span.status.description == "Quota or argument trouble."
        assert KEY not in values(span)


async def test_a_tool_that_failed_marks_its_span_failed(spans, monkeypatch):
    @define_tool
    def explode(text: str) -> str:
        """Always fails."""
        raise ValueError("boom")

    @define_tool
    def refuse(text: str) -> str:
        """Always refuses."""
        raise ToolError("not allowed")

    calls = (function_call("explode", {"text": "x"}), function_call("refuse", {"text": "y"}))
    fake = FakeGemini([reply(*calls), "ok"] * 2, api_key=KEY)
    await agent_on(fake, toolkit=toolkit([explode, refuse])).run("go")
    tools = {s.name: s for s in by_kind(spans.get_finished_spans(), "execute_tool")}
    raised, refused = tools["execute_tool explode"], tools["execute_tool refuse"]
    assert raised.status.status_code is trace.StatusCode.ERROR
    assert raised.attributes["error.type"] == "ValueError"
    assert refused.status.status_code is trace.StatusCode.ERROR
    assert refused.attributes["error.type"] == "tool_error"
    # The error text is the tool's data: not recorded without content capture.
    assert raised.status.description is None
    assert "boom" not in values(raised)
    # With content captured, the error text is the status description (and no result).
    spans.clear()
    monkeypatch.setenv(CAPTURE, "SPAN_ONLY")
    await agent_on(fake, toolkit=toolkit([explode, refuse])).run("go")
    tools = {s.name: s for s in by_kind(spans.get_finished_spans(), "execute_tool")}
    raised = tools["execute_tool explode"]
    assert raised.status.description == "Tool 'explode' failed: ValueError: boom"
    assert "gen_ai.tool.call.result" not in raised.attributes
    assert json.loads(raised.attributes["gen_ai.tool.call.arguments"]) == {"text": "x"}


async def test_inference_spans_carry_the_required_and_recommended_attributes(spans):
    fake = tool_turn_fake()
    agent = agent_on(fake, settings=ModelSettings(temperature=0.25, max_output_tokens=256))
    async for _ in agent.stream("go", session="conv-1"):
        pass
    finished = spans.get_finished_spans()
    (root,) = by_kind(finished, "invoke_agent")
    models = by_kind(finished, "generate_content")
    (tool,) = by_kind(finished, "execute_tool")
    assert root.name == "invoke_agent"
    for span in (root, *models):
        assert span.attributes["gen_ai.provider.name"] == "gcp.gemini"
        assert span.attributes["gen_ai.request.model"] == "gemini-2.5-flash"
        assert span.attributes["gen_ai.conversation.id"] == "conv-1"
        assert span.attributes["server.address"] == "generativelanguage.googleapis.com"
        assert span.attributes["server.port"] == 443
        assert span.attributes["gen_ai.request.temperature"] == 0.25
        assert span.attributes["gen_ai.request.max_tokens"] == 256
    for span in models:
        assert span.kind is trace.SpanKind.CLIENT
        assert span.attributes["gen_ai.operation.name"] == "generate_content"
        assert span.attributes["gen_ai.request.stream"] is True
        assert span.attributes["gen_ai.response.time_to_first_chunk"] >= 0
        assert "gen_ai.output.type" not in span.attributes  # the requests ask for no format
    assert [m.attributes["gen_ai.response.finish_reasons"] for m in models] == [
        ("tool_call",),
        ("stop",),
    ]
    assert root.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert tool.attributes["gen_ai.tool.description"] == "Echo the text."
    assert tool.attributes["gen_ai.tool.type"] == "function"
    assert tool.attributes["toolnexus.tool.source"] == "native"
    assert tool.status.status_code is trace.StatusCode.UNSET
    assert root.attributes["toolnexus.run.status"] == "completed"
    assert root.attributes["toolnexus.run.turns"] == 2
    for span in finished:  # our own attributes live under our own namespace
        assert not [key for key in span.attributes if key.startswith("agent.")], span.name


async def test_a_call_that_is_not_streamed_says_nothing_of_streams(spans):
    await agent_on(tool_turn_fake()).run("go")
    for span in by_kind(spans.get_finished_spans(), "generate_content"):
        assert "gen_ai.request.stream" not in span.attributes
        assert "gen_ai.response.time_to_first_chunk" not in span.attributes
        assert "gen_ai.conversation.id" not in span.attributes  # no session, no conversation


class Answer(BaseModel):
    city: str


async def test_typed_output_asks_for_json(spans):
    fake = FakeGemini([reply('{"city": "Oslo"}')], api_key=KEY)
    result = await agent_on(fake, toolkit=toolkit([]), output_type=Answer).run("where?")
    assert result.output == Answer(city="Oslo")
    (model,) = by_kind(spans.get_finished_spans(), "generate_content")
    assert model.attributes["gen_ai.output.type"] == "json"


def sub_agent(fake: FakeGemini) -> Tool:
    researcher = Agent(
        system_prompt="Research.",
        client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
    )
    return researcher.as_tool(name="researcher", description="Looks facts up.")


async def test_a_sub_agent_run_is_named_after_its_tool(spans):
    fake = FakeGemini(
        [
            reply(function_call("researcher", {"task": "look it up"})),
            reply("It is 42."),  # the sub-agent
            reply("The answer is 42."),
        ],
        api_key=KEY,
    )
    parent = agent_on(fake, toolkit=toolkit([sub_agent(fake)]))
    await parent.run("what is it?")
    finished = spans.get_finished_spans()
    runs = {s.name: s for s in by_kind(finished, "invoke_agent")}
    assert set(runs) == {"invoke_agent", "invoke_agent researcher"}
    nested = runs["invoke_agent researcher"]
    assert nested.attributes["gen_ai.agent.name"] == "researcher"
    assert nested.attributes["gen_ai.agent.description"] == "Looks facts up."
    assert "gen_ai.agent.name" not in runs["invoke_agent"].attributes
    (tool,) = by_kind(finished, "execute_tool")
    assert tool.attributes["toolnexus.tool.source"] == "agent"
    assert nested.parent is not None and nested.parent.span_id == tool.context.span_id


@pytest.mark.parametrize("mode", ["SPAN_AND_EVENT", "EVENT_ONLY"])
async def test_event_modes_emit_the_inference_details_event(
    telemetry: Telemetry, monkeypatch, mode
):
    monkeypatch.setenv(CAPTURE, mode)
    await agent_on(tool_turn_fake()).run("go")
    models = by_kind(telemetry.spans.get_finished_spans(), "generate_content")
    events = [record.log_record for record in telemetry.logs.get_finished_logs()]
    assert [e.event_name for e in events] == ["gen_ai.client.inference.operation.details"] * 2
    for event, span in zip(events, models, strict=True):
        attributes = dict(event.attributes or {})
        assert event.span_id == span.context.span_id
        assert attributes["gen_ai.operation.name"] == "generate_content"
        assert attributes["gen_ai.request.model"] == "gemini-2.5-flash"
        assert (
            attributes["gen_ai.usage.input_tokens"] == span.attributes["gen_ai.usage.input_tokens"]
        )
        check("input-messages", plain(attributes["gen_ai.input.messages"]))
        check("output-messages", plain(attributes["gen_ai.output.messages"]))
        check("system-instructions", plain(attributes["gen_ai.system_instructions"]))
        on_span = "gen_ai.input.messages" in span.attributes
        assert on_span is (mode == "SPAN_AND_EVENT")


async def test_no_content_no_events(telemetry: Telemetry):
    await agent_on(tool_turn_fake()).run("go")
    assert telemetry.logs.get_finished_logs() == ()


def test_no_span_is_made_without_a_tracer_provider():
    code = """
from opentelemetry import trace
made = []
for cls in (trace.ProxyTracer, trace.NoOpTracer):
    original = cls.start_span
    def counting(self, *args, _original=original, **kwargs):
        made.append(args[0] if args else kwargs.get("name"))
        return _original(self, *args, **kwargs)
    cls.start_span = counting
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
print(agent.run_sync("go").status, made)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.stdout == "completed []\n", done.stderr


@pytest.mark.parametrize(
    ("reason", "calls", "expected"),
    [
        ("STOP", False, "stop"),
        ("STOP", True, "tool_call"),
        ("MAX_TOKENS", False, "length"),
        ("SAFETY", False, "content_filter"),
        ("PROHIBITED_CONTENT", False, "content_filter"),
        ("MALFORMED_FUNCTION_CALL", False, "error"),
        ("NO_IMAGE", False, "no_image"),
    ],
)
def test_finish_reasons_use_the_well_known_values(reason, calls, expected):
    assert finish_reason(reason, calls=calls) == expected


def test_a_blocked_prompt_is_a_content_filter():
    assert finish_reason(None, blocked="SAFETY") == "content_filter"


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("Tool 'x' failed: ValueError: boom", "ValueError"),
        ("Tool 'x' failed: KeyError", "KeyError"),
        ("Tool 'x' timed out after 3 s.", "timeout"),
        ("not allowed", "tool_error"),
    ],
)
def test_tool_error_types(output, expected):
    assert tool_error_type(output) == expected
