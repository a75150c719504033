"""The agent loop over the real google-genai client and respx: the exact JSON of every turn."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any

import httpx
import pytest
import respx

from agent import (
    Agent,
    ClientSettings,
    ConfigurationError,
    Hooks,
    ModelSettings,
    RunLimits,
    ToolDeclarationWarning,
)
from agent.events import DoneEvent, TextEvent, ToolCallEvent, ToolResultEvent, UsageEvent
from tests.agent._loop_support import (
    KEY,
    Script,
    call,
    declarations,
    decode_signature,
    echo_toolkit,
    json_schema_of,
    make_agent,
    reply,
    text,
    usage,
)
from toolnexus import Tool, toolkit

SIG = "+vv8/f7/AAEC"  # standard base64; the SDK re-encodes it URL-safe


async def test_parallel_calls_answered_in_one_content_in_call_order(http, mock):
    script = Script(
        mock,
        [
            reply(
                text("Let me check both.", thought=True),
                call("echo", {"text": "a"}, id="fc_1", sig=SIG),
                call("echo", {"text": "b"}, id="fc_2"),
                meta=usage(10, 5, 15),
            ),
            reply(text("Both done."), meta=usage(30, 3, 33)),
        ],
    )
    result = await make_agent(http, echo_toolkit(), system_prompt="Be terse.").run("go")

    assert result.status == "completed"
    assert result.text == "Both done."
    assert len(script.bodies) == 2
    first = script.bodies[0]
    assert first["contents"] == [{"role": "user", "parts": [{"text": "go"}]}]
    assert first["systemInstruction"]["parts"] == [{"text": "Be terse."}]

    sent = script.contents(1)
    assert len(sent) == 3
    model_turn = sent[1]
    assert model_turn["role"] == "model"
    assert model_turn["parts"][0] == {"text": "Let me check both.", "thought": True}
    assert model_turn["parts"][1]["functionCall"] == {
        "id": "fc_1",
        "name": "echo",
        "args": {"text": "a"},
    }
    assert decode_signature(model_turn["parts"][1]["thoughtSignature"]) == decode_signature(SIG)
    assert "thoughtSignature" not in model_turn["parts"][2]
    assert sent[2] == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "id": "fc_1",
                    "name": "echo",
                    "response": {"output": "echo:a", "isError": False},
                }
            },
            {
                "functionResponse": {
                    "id": "fc_2",
                    "name": "echo",
                    "response": {"output": "echo:b", "isError": False},
                }
            },
        ],
    }
    assert [(c.name, c.args, c.id) for c in result.tool_calls] == [
        ("echo", {"text": "a"}, "fc_1"),
        ("echo", {"text": "b"}, "fc_2"),
    ]
    # The transcript keeps the signature too, and is valid history for another run.
    assert decode_signature(result.contents[1]["parts"][1]["thoughtSignature"]) == (
        decode_signature(SIG)
    )
    assert result.contents[2] == sent[2]
    assert result.contents[3] == {"role": "model", "parts": [{"text": "Both done."}]}


async def test_calls_without_ids_get_responses_without_ids(http, mock):
    script = Script(mock, [reply(call("echo", {"text": "x"})), reply(text("ok"))])
    await make_agent(http, echo_toolkit()).run("go")
    assert script.contents(1)[2]["parts"] == [
        {"functionResponse": {"name": "echo", "response": {"output": "echo:x", "isError": False}}}
    ]


async def test_eight_calls_run_concurrently(http, mock):
    # Every call waits until all eight have started: run one at a time, the first would
    # wait alone until the barrier's timeout (there only so a hang fails) broke it.
    all_started = threading.Barrier(8, timeout=60)

    def meet(args: dict[str, Any], ctx: Any) -> str:
        all_started.wait()
        return f"met {args['n']}"

    tk = toolkit([Tool("meet", meet, "Wait for the others.", {"type": "object"})])
    script = Script(
        mock,
        [
            reply(*(call("meet", {"n": n}, id=f"c{n}") for n in range(8))),
            reply(text("all done")),
        ],
    )
    result = await make_agent(http, tk).run("go")
    assert result.status == "completed"
    outputs = [p["functionResponse"]["response"]["output"] for p in script.contents(1)[2]["parts"]]
    assert outputs == [f"met {n}" for n in range(8)]


async def test_async_tools_also_run_concurrently(http, mock):
    both_started = asyncio.Barrier(2)

    async def wait(args: dict[str, Any], ctx: Any) -> str:
        async with asyncio.timeout(60):  # only so that calls run one by one fail, not hang
            await both_started.wait()
        return "ok"

    tk = toolkit([Tool("wait", wait, "Wait.", {"type": "object"})])
    script = Script(mock, [reply(call("wait", {}), call("wait", {"x": 1})), reply(text("done"))])
    await make_agent(http, tk).run("go")
    outputs = [p["functionResponse"]["response"] for p in script.contents(1)[2]["parts"]]
    assert outputs == [{"output": "ok", "isError": False}] * 2


RICH_SCHEMA = {
    "type": "object",
    "$defs": {"Unit": {"type": "string", "enum": ["C", "F"]}},
    "properties": {
        "unit": {"$ref": "#/$defs/Unit"},
        "city": {"type": ["string", "null"]},
        "mode": {"const": "fast"},
        "target": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        "extra": {"type": "object", "additionalProperties": {"type": "number"}},
    },
    "required": ["unit"],
    "additionalProperties": False,
}


async def test_json_schema_reaches_the_wire_intact(http, mock):
    tk = toolkit([Tool("weather", lambda a, c: "sunny", "Weather.", RICH_SCHEMA)])
    script = Script(mock, [reply(text("hi"))])
    await make_agent(http, tk).run("go")
    (decl,) = declarations(script.bodies[0])
    assert decl["name"] == "weather"
    assert decl["description"] == "Weather."
    assert json_schema_of(decl) == RICH_SCHEMA


async def test_a_tool_gemini_would_refuse_is_reported_and_left_out(http, mock):
    bad = Tool("1bad name", lambda a, c: "x", "Bad name.", {"type": "object"})
    tk = echo_toolkit(bad)
    with pytest.warns(ToolDeclarationWarning, match=r"1bad_name.*field name"):
        agent = make_agent(http, tk)
    assert [(p.tool, p.field) for p in agent.problems] == [("1bad_name", "name")]
    script = Script(mock, [reply(text("fine"))])
    result = await agent.run("go")
    assert result.status == "completed"
    assert [d["name"] for d in declarations(script.bodies[0])] == ["echo"]


async def test_refused_declarations_can_raise_instead(http):
    # (A ``required`` name missing from ``properties`` used to be refused here; it is valid.)
    remote = {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}}
    bad = Tool("ok", lambda a, c: "x", "", remote)
    with pytest.raises(ConfigurationError, match=r"'ok'.*parametersJsonSchema.properties.a.\$ref"):
        make_agent(http, toolkit([bad]), limits=RunLimits(invalid_tools="raise"))


async def test_no_tools_means_no_tools_key(http, mock):
    script = Script(mock, [reply(text("hello"))])
    result = await make_agent(http).run("hi")
    assert result.status == "completed"
    assert "tools" not in script.bodies[0]
    assert "toolConfig" not in script.bodies[0]
    assert "systemInstruction" not in script.bodies[0]


async def test_unknown_tool_gets_an_error_response_and_the_run_goes_on(http, mock):
    script = Script(mock, [reply(call("nope", {"a": 1}, id="x1")), reply(text("sorry"))])
    result = await make_agent(http, echo_toolkit()).run("go")
    assert result.status == "completed"
    (part,) = script.contents(1)[2]["parts"]
    response = part["functionResponse"]
    assert response["id"] == "x1"
    assert response["name"] == "nope"
    assert response["response"]["isError"] is True
    assert "Unknown tool 'nope'" in response["response"]["output"]
    assert "echo" in response["response"]["output"]


async def test_usage_is_summed_and_kept_per_turn(http, mock):
    Script(
        mock,
        [
            reply(
                call("echo", {"text": "a"}),
                meta=usage(100, 20, 170, thoughtsTokenCount=50, cachedContentTokenCount=40),
            ),
            reply(
                text("done"),
                meta=usage(130, 7, 137, toolUsePromptTokenCount=3),
                model_version="gemini-2.5-flash-001",
            ),
        ],
    )
    result = await make_agent(http, echo_toolkit()).run("go")
    assert result.turns == 2
    assert [u.total for u in result.turn_usage] == [170, 137]
    u = result.usage
    assert (u.prompt, u.candidates, u.thoughts, u.cached, u.tool_use_prompt, u.total) == (
        230,
        27,
        50,
        40,
        3,
        307,
    )
    assert result.model == "gemini-2.5-flash-001"
    assert result.finish_reason == "STOP"


async def test_history_continues_a_conversation(http, mock):
    script = Script(mock, [reply(text("first")), reply(text("second"))])
    agent = make_agent(http)
    first = await agent.run("one")
    second = await agent.run("two", history=first.contents)
    assert second.text == "second"
    assert script.contents(1) == [
        {"role": "user", "parts": [{"text": "one"}]},
        {"role": "model", "parts": [{"text": "first"}]},
        {"role": "user", "parts": [{"text": "two"}]},
    ]
    answer = {"role": "model", "parts": [{"text": "second"}]}
    assert second.contents == [*script.contents(1), answer]


async def test_history_dicts_come_back_as_fresh_wire_json(http, mock):
    script = Script(mock, [reply(text("ok"))])
    parts = [{"text": "b", "thought_signature": b"\x01\x02"}]
    history = [
        {"role": "user", "parts": [{"text": "a"}]},
        {"role": "model", "parts": parts},
    ]
    result = await make_agent(http).run("c", history=history)
    model_turn = {"role": "model", "parts": [{"text": "b", "thoughtSignature": "AQI="}]}
    assert result.contents[1] == model_turn
    assert script.contents(0)[1] == model_turn  # the signature went out byte for byte
    json.dumps(result.to_dict())
    # Nothing is shared with the caller's history, in either direction.
    result.contents[0]["parts"].append({"text": "mutated"})
    assert history[0]["parts"] == [{"text": "a"}]
    parts.append({"text": "late"})
    assert result.contents[1] == model_turn


async def test_stream_yields_typed_events_from_the_same_loop(http, mock):
    Script(
        mock,
        [reply(call("echo", {"text": "a"}, id="1")), reply(text("bye"), meta=usage(1, 1, 2))],
    )
    events = [e async for e in make_agent(http, echo_toolkit()).stream("go")]
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "UsageEvent",
        "ToolCallEvent",
        "ToolResultEvent",
        "TextEvent",
        "UsageEvent",
        "DoneEvent",
    ]
    assert isinstance(events[1], ToolCallEvent) and events[1].call.id == "1"
    assert isinstance(events[2], ToolResultEvent) and events[2].result.output == "echo:a"
    assert isinstance(events[3], TextEvent) and events[3].text == "bye"
    assert isinstance(events[4], UsageEvent) and events[4].total.total == 2
    assert isinstance(events[-1], DoneEvent) and events[-1].result.status == "completed"


async def test_run_emits_the_same_event_kinds_in_unary_mode(http, mock):
    script = Script(mock, [reply(text("hello"), meta=usage(1, 1, 2))])
    agent = make_agent(http)
    seen: list[str] = []

    def spy(request, response):
        seen.append(type(response).__name__)

    agent_with_spy = make_agent(http, capabilities=[Hooks(after_model=spy)])
    result = await agent_with_spy.run("hi")
    assert result.text == "hello"
    assert script.kinds == ["unary"]
    assert seen == ["GenerateContentResponse"]
    assert agent.model == "gemini-2.5-flash"


async def test_the_api_key_never_leaks(http, mock, caplog):
    caplog.set_level(logging.DEBUG)
    Script(
        mock,
        [
            reply(call("echo", {"text": "a"})),
            reply(text("done")),
        ],
    )
    agent = make_agent(http, echo_toolkit())
    result = await agent.run("go")
    assert KEY not in json.dumps(result.to_dict())
    assert KEY not in repr(agent)
    for record in caplog.records:
        assert KEY not in record.getMessage()


async def test_missing_key_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="GEMINI_API_KEY") as info:
        Agent()
    assert "GOOGLE_API_KEY" in str(info.value)


async def test_key_from_environment(monkeypatch, http, mock):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    script = Script(mock, [reply(text("ok"))])
    await Agent(client=ClientSettings(http_client=http)).run("hi")
    assert script.headers[0]["x-goog-api-key"] == KEY


@pytest.mark.filterwarnings("ignore::agent.UnknownModelWarning")  # a made-up model name
async def test_base_url_and_version_and_timeout(http, mock):
    route = mock.post("http://127.0.0.1:9/v1beta/models/gemini-x:generateContent").mock(
        return_value=httpx.Response(200, json=reply(text("ok")))
    )
    agent = Agent(
        "gemini-x",
        client=ClientSettings(
            api_key=KEY,
            http_client=http,
            base_url="http://127.0.0.1:9",
            api_version="v1beta",
            timeout=30,
        ),
    )
    assert (await agent.run("hi")).text == "ok"
    assert route.calls.last.request.headers["x-server-timeout"] == "30"


async def test_base_url_from_the_environment(monkeypatch, http, mock):
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:7")
    route = mock.post(url__regex=r"^http://127\.0\.0\.1:7/.*:generateContent$").mock(
        return_value=httpx.Response(200, json=reply(text("ok")))
    )
    await Agent(client=ClientSettings(api_key=KEY, http_client=http)).run("hi")
    assert route.called


def test_run_sync_works_twice_on_the_default_client():
    with respx.mock(assert_all_called=False) as router:
        script = Script(router, [reply(text("one")), reply(text("two"))])
        agent = Agent(client=ClientSettings(api_key=KEY))
        assert agent.run_sync("a").text == "one"
        assert agent.run_sync("b").text == "two"
        assert len(script.bodies) == 2
        asyncio.run(agent.aclose())


async def test_run_sync_refuses_inside_a_running_loop(http):
    with pytest.raises(ConfigurationError, match=r"await agent\.run"):
        make_agent(http).run_sync("hi")


async def test_a_prompt_or_history_is_required(http):
    with pytest.raises(ConfigurationError, match="needs a prompt"):
        await make_agent(http).run()


async def test_bad_options_are_configuration_errors(http):
    with pytest.raises(ConfigurationError, match="max_turns"):
        make_agent(http, limits=RunLimits(max_turns=0))
    with pytest.raises(ConfigurationError, match="may not set 'tools'"):
        make_agent(http, settings=ModelSettings(config={"tools": []}))
    with pytest.raises(ConfigurationError, match="generation config"):
        make_agent(http, settings=ModelSettings(config={"no_such_field": 1}))


async def test_vertex_settings_pass_through(http, mock):
    script = Script(mock, [reply(text("ok"))])
    result = await Agent(client=ClientSettings(vertexai=True, api_key=KEY, http_client=http)).run(
        "hi"
    )
    assert result.text == "ok"
    assert script.route.calls.last.request.url.host == "aiplatform.googleapis.com"
    with pytest.raises(ConfigurationError, match="project/location"):
        Agent(
            client=ClientSettings(
                project="p", location="us-central1", api_key=KEY, http_client=http
            )
        )


async def test_an_injected_genai_client_is_used_as_is(http, mock):
    from google import genai
    from google.genai import types

    script = Script(mock, [reply(text("ok"))])
    client = genai.Client(
        api_key=KEY, http_options=types.HttpOptions(httpx_async_client=http, api_version="v1beta")
    )
    result = await Agent(client=client).run("hi")
    assert result.text == "ok"
    assert "/v1beta/" in str(script.route.calls.last.request.url)
