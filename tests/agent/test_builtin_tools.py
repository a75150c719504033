"""Gemini's built-in tools beside function tools, over the real SDK against the strict fake."""

from __future__ import annotations

import io

import pytest
from google.genai import types

import toolnexus as tn
from agent import Agent, ClientSettings, ConfigurationError, RetryPolicy, RunLimits
from agent._builtin_tools import Source
from agent.cli._printer import EventPrinter, stream_run
from agent.events import CodeExecutionEvent, GroundingEvent
from agent.testing import (
    FakeGemini,
    code_execution,
    function_call,
    grounding,
    reply,
    server_tool_call,
)


@tn.define_tool
def forecast(city: str) -> str:
    """Today's weather for a city."""
    return f"{city}: 21 C"


SEARCH = server_tool_call("GOOGLE_SEARCH_WEB", {"queries": ["paris events"]}, {"hits": 2})
SOURCES = [("https://example.org/paris", "example.org"), ("https://news.example/p", "news")]


def agent_on(fake: FakeGemini, model: str, **kw: object) -> Agent:
    return Agent(
        model,
        tn.toolkit([forecast]),
        client=ClientSettings(api_key="k", http_client=fake.http_client()),
        limits=RunLimits(retry=RetryPolicy(attempts=1)),
        **kw,  # type: ignore[arg-type]
    )


async def test_google_search_beside_a_function_tool_echoes_the_records() -> None:
    fake = FakeGemini(
        [
            reply(*SEARCH, function_call("forecast", {"city": "Paris"})),
            reply(
                "Sunny, and a jazz festival [1].",
                grounding=grounding(["paris events"], SOURCES),
            ),
        ]
    )
    agent = agent_on(fake, "gemini-3-flash-preview", builtin_tools=["google_search"])
    events = [event async for event in agent.stream("What's on in Paris?")]
    fake.assert_consumed()
    result = events[-1].result  # type: ignore[attr-defined]
    assert result.status == "completed"
    for request in fake.requests:
        assert request.body["tools"][0] == {"googleSearch": {}}
        assert request.declared_functions == ["forecast"]
        assert request.body["toolConfig"] == {"includeServerSideToolInvocations": True}
    echoed = fake.requests[1].contents[1]["parts"]
    assert echoed[0]["toolCall"] == SEARCH[0]["toolCall"]
    assert echoed[0]["thoughtSignature"].rstrip("=") in SEARCH[0]["thoughtSignature"]
    assert echoed[1] == SEARCH[1]
    assert result.grounding.queries == ("paris events",)
    assert result.grounding.sources == tuple(Source(u, t) for u, t in SOURCES)
    assert result.to_dict()["grounding"]["sources"][0] == {
        "uri": "https://example.org/paris",
        "title": "example.org",
    }
    [found] = [e for e in events if isinstance(e, GroundingEvent)]
    assert found.turn == 2 and found.grounding == result.grounding


async def test_a_changed_server_tool_part_is_refused() -> None:
    fake = FakeGemini([reply(*SEARCH, function_call("forecast", {"city": "Paris"})), "unused"])
    client = fake.client(api_version="v1beta")
    first = client.models.generate_content(model="gemini-3-flash-preview", contents="hi")
    model_turn = first.candidates[0].content
    model_turn.parts[0].thought_signature = b"forged"
    answer = types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    id=model_turn.parts[2].function_call.id, name="forecast", response={}
                )
            )
        ],
    )
    with pytest.raises(Exception, match="send server-side tool parts back exactly as received"):
        client.models.generate_content(
            model="gemini-3-flash-preview",
            contents=[
                types.Content(role="user", parts=[types.Part(text="hi")]),
                model_turn,
                answer,
            ],
        )


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("gemini-2.5-flash", "Tool use with function calling is unsupported"),
        ("gemini-2.5-pro", "Tool use with function calling is unsupported"),
    ],
)
async def test_gemini_2_refuses_built_ins_beside_functions(model: str, message: str) -> None:
    # The agent refuses the mix before sending (see check_tool_mix); the fake, like Gemini,
    # refuses a request that carries it anyway.
    fake = FakeGemini(["unused"])
    with pytest.raises(ConfigurationError, match=message):
        agent_on(fake, model, builtin_tools=["url_context"])
    config = types.GenerateContentConfig(
        tools=[
            types.Tool(url_context=types.UrlContext()),
            types.Tool(function_declarations=[types.FunctionDeclaration(name="forecast")]),
        ]
    )
    with pytest.raises(Exception, match="INVALID_ARGUMENT"):
        fake.client().models.generate_content(model=model, contents="hi", config=config)
    assert fake.requests[0].error == message


async def test_gemini_3_needs_the_flag_and_built_ins_alone_need_none() -> None:
    fake = FakeGemini(["unused"])
    client = fake.client()
    config = types.GenerateContentConfig(
        tools=[
            types.Tool(google_search=types.GoogleSearch()),
            types.Tool(function_declarations=[types.FunctionDeclaration(name="f")]),
        ]
    )
    with pytest.raises(Exception, match="include_server_side_tool_invocations"):
        client.models.generate_content(model="gemini-3-flash-preview", contents="x", config=config)
    fake2 = FakeGemini(["fine"])
    agent = Agent(
        "gemini-2.5-flash",
        builtin_tools=[types.Tool(code_execution=types.ToolCodeExecution())],
        client=ClientSettings(api_key="k", http_client=fake2.http_client()),
    )
    assert (await agent.run("hi")).text == "fine"
    assert "toolConfig" not in fake2.requests[0].body


async def test_code_execution_turn_is_kept_and_shown_by_the_cli_printer() -> None:
    fake = FakeGemini([reply(*code_execution("print(6 * 7)", "42\n"), "It is 42.")])
    agent = Agent(
        "gemini-2.5-flash",
        builtin_tools=["code_execution"],
        client=ClientSettings(api_key="k", http_client=fake.http_client()),
    )
    out, err = io.StringIO(), io.StringIO()
    result = await stream_run(agent, "What is 6 * 7?", EventPrinter(out, err))
    assert (result.status, result.text) == ("completed", "It is 42.")
    assert out.getvalue() == "It is 42.\n"
    assert err.getvalue() == (
        "(code execution) python:\n   print(6 * 7)\n(code output, OUTCOME_OK) 42\n"
    )
    parts = result.contents[-1]["parts"]
    assert parts[0]["executableCode"]["code"] == "print(6 * 7)"
    assert parts[1]["codeExecutionResult"]["output"] == "42\n"
    assert fake.requests[0].body["tools"] == [{"codeExecution": {}}]
    events = [
        e
        async for e in Agent(
            "gemini-2.5-flash",
            builtin_tools=["code_execution"],
            client=ClientSettings(
                api_key="k",
                http_client=FakeGemini([reply(*code_execution("1", "1"), "ok")]).http_client(),
            ),
        ).stream("x")
        if isinstance(e, CodeExecutionEvent)
    ]
    assert [(e.turn, e.run.output) for e in events] == [(1, "1")]


def test_unknown_built_in_tool_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="unknown built-in tool 'web_search'"):
        Agent(builtin_tools=["web_search"], client=ClientSettings(api_key="k"))


def test_built_ins_beside_functions_are_checked_by_model_generation() -> None:
    from agent._builtin_tools import check_tool_mix

    for model in ("gemini-2.5-flash", "gemini-2.0-flash", "gemini-1.5-pro"):
        with pytest.raises(ConfigurationError, match="Tool use with function calling") as info:
            check_tool_mix(model, ["google_search"], ["read", "write"])
        assert "Gemini 3" in str(info.value) and "--no-builtins" in str(info.value)
    with pytest.raises(ConfigurationError, match=r"\(code_execution\)"):
        check_tool_mix(
            "gemini-2.5-pro", [types.Tool(code_execution=types.ToolCodeExecution())], ["f"]
        )
    check_tool_mix("gemini-3-flash-preview", ["google_search"], ["read"])
    check_tool_mix("gemini-2.5-flash", ["google_search"], [])
    check_tool_mix("gemini-2.5-flash", [], ["read"])
    check_tool_mix("my-tuned-model", ["google_search"], ["read"])
