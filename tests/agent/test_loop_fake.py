"""The loop's scenarios against the strict FakeGemini (in process, and over a loopback server).

FakeGemini answers ``400 INVALID_ARGUMENT`` where Gemini would (a lost thought signature,
function responses that do not match the calls in count, ids or order, bad function names),
so a run that completes here sent protocol-correct requests on every turn.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

import toolnexus as tn
from agent import (
    Agent,
    ClientSettings,
    Hooks,
    ModelError,
    RetryPolicy,
    RunLimits,
    ToolDeclarationWarning,
)
from agent.testing import (
    FakeGemini,
    blocked,
    error,
    function_call,
    malformed_function_call,
    reply,
    thought,
)
from tests.agent._loop_support import KEY, Sleeps, echo_toolkit, with_retry
from toolnexus import Tool, ToolResult, toolkit


def agent_on(fake: FakeGemini, tk: tn.Toolkit | None = None, **kwargs: Any) -> Agent:
    sleeps = kwargs.pop("sleeps", None) or Sleeps()
    retry = RetryPolicy(sleep=sleeps, jitter=0.0)
    limits = with_retry(kwargs.pop("limits", None), retry)
    client = ClientSettings(api_key=KEY, http_client=fake.http_client())
    return Agent(toolkit=tk, client=client, limits=limits, **kwargs)


@pytest.fixture
async def fakes() -> AsyncIterator[list[FakeGemini]]:
    made: list[FakeGemini] = []
    yield made
    for fake in made:
        fake.assert_consumed()


def fake_of(fakes: list[FakeGemini], script: list[Any], **kwargs: Any) -> FakeGemini:
    fake = FakeGemini(script, api_key=KEY, **kwargs)
    fakes.append(fake)
    return fake


async def test_parallel_signed_calls_pass_the_strict_checks(fakes):
    fake = fake_of(
        fakes,
        [
            reply(
                thought("Both."),
                function_call("echo", {"text": "a"}),
                function_call("echo", {"text": "b"}),
                usage={"promptTokenCount": 10, "candidatesTokenCount": 4, "totalTokenCount": 14},
            ),
            reply(
                "Done.",
                usage={"promptTokenCount": 30, "candidatesTokenCount": 2, "totalTokenCount": 32},
            ),
        ],
    )
    result = await agent_on(fake, echo_toolkit()).run("go")
    assert result.status == "completed", [r.error for r in fake.requests]
    assert all(r.status == 200 for r in fake.requests)
    responses = fake.requests[1].function_responses
    call_ids = [
        p["functionCall"]["id"]
        for p in fake.requests[1].contents[1]["parts"]
        if "functionCall" in p
    ]
    assert [r["id"] for r in responses] == call_ids
    assert [r["response"] for r in responses] == [
        {"output": "echo:a", "isError": False},
        {"output": "echo:b", "isError": False},
    ]
    assert (result.usage.prompt, result.usage.total) == (40, 46)


async def test_calls_without_ids_pass_too(fakes):
    fake = fake_of(fakes, [reply(function_call("echo", {"text": "x"}, id=None)), "ok"])
    assert (await agent_on(fake, echo_toolkit()).run("go")).status == "completed"
    assert "id" not in fake.requests[1].function_responses[0]


async def test_eight_slow_calls_run_concurrently(fakes):
    # Each call blocks its thread until all eight have started (the timeout only turns a
    # loop that runs them one by one into a failure instead of a hang).
    all_started = threading.Barrier(8, timeout=60)

    def slow(args, ctx):
        all_started.wait()
        return "ok"

    tk = toolkit([Tool("slow", slow, "Slow.", {"type": "object"})])
    fake = fake_of(fakes, [reply(*(function_call("slow", {"n": n}) for n in range(8))), "done"])
    result = await agent_on(fake, tk).run("go")
    assert result.status == "completed"
    answers = [r["response"] for r in fake.requests[1].function_responses]
    assert answers == [{"output": "ok", "isError": False}] * 8


async def test_rich_schema_and_bad_name(fakes):
    schema = {
        "type": "object",
        "$defs": {"U": {"type": "string"}},
        "properties": {
            "u": {"$ref": "#/$defs/U"},
            "c": {"type": ["string", "null"]},
            "k": {"const": 1},
            "o": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        },
        "additionalProperties": False,
    }
    tk = toolkit(
        [
            Tool("rich", lambda a, c: "ok", "Rich.", schema),
            Tool("1bad name", lambda a, c: "x", "Bad.", {"type": "object"}),
        ]
    )
    fake = fake_of(fakes, [reply(function_call("rich", {"u": "x"})), "done"])
    with pytest.warns(ToolDeclarationWarning):
        agent = agent_on(fake, tk)
    result = await agent.run("go")
    assert result.status == "completed"
    (tool,) = fake.requests[0].body["tools"]
    assert [d["name"] for d in tool["functionDeclarations"]] == ["rich"]
    assert tool["functionDeclarations"][0]["parametersJsonSchema"] == schema


async def test_no_tools_and_unknown_tool(fakes):
    fake = fake_of(fakes, ["hello"])
    await agent_on(fake).run("hi")
    assert "tools" not in fake.requests[0].body
    fake = fake_of(fakes, [function_call("nope", {}), "sorry"])
    result = await agent_on(fake, echo_toolkit()).run("go")
    assert result.status == "completed"
    assert fake.requests[1].function_responses[0]["response"]["isError"] is True


@pytest.mark.parametrize(
    ("script", "status", "limit", "reason"),
    [
        ([malformed_function_call(), "ok"], "completed", None, None),
        (
            [malformed_function_call()] * 3,
            "incomplete",
            "malformed_function_call",
            "MALFORMED_FUNCTION_CALL",
        ),
        ([blocked("SAFETY", prompt=False)], "blocked", None, "SAFETY"),
        ([blocked("PROHIBITED_CONTENT")], "blocked", None, "PROHIBITED_CONTENT"),
        ([reply("cut off", finish_reason="MAX_TOKENS")], "incomplete", "max_tokens", "MAX_TOKENS"),
        ([function_call("echo", {"text": "x"})] * 3, "incomplete", "repeated_call", None),
    ],
)
async def test_finish_policy(fakes, script, status, limit, reason):
    fake = fake_of(fakes, script)
    result = await agent_on(fake, echo_toolkit()).run("go")
    assert (result.status, result.limit, result.reason) == (status, limit, reason)


async def test_a_no_argument_call_with_new_results_each_turn_runs_to_the_answer(fakes):
    # As in recorded Gemini 3 traffic: generate_topic() once per turn, a new topic each
    # time, four turns, then the answer. Not a loop: the results differ.
    topics = iter(["tides", "bees", "glaciers", "comets"])
    tk = toolkit([Tool("generate_topic", lambda a, c: next(topics), "A topic.", {})])
    calls = [reply(function_call("generate_topic", {})) for _ in range(4)]
    fake = fake_of(fakes, [*calls, "Four topics: tides, bees, glaciers, comets."])
    result = await agent_on(fake, tk, model="gemini-3-flash-preview").run("Four topics.")
    assert (result.status, result.limit, result.turns) == ("completed", None, 5)
    assert [call.result.output for call in result.tool_calls] == [
        "tides",
        "bees",
        "glaciers",
        "comets",
    ]


async def test_max_turns(fakes):
    fake = fake_of(fakes, [function_call("echo", {"text": str(n)}) for n in range(2)])
    result = await agent_on(fake, echo_toolkit(), limits=RunLimits(max_turns=2)).run("go")
    assert (result.status, result.limit, result.turns) == ("incomplete", "max_turns", 2)


async def test_retries_wait_the_servers_delay(fakes):
    sleeps = Sleeps()
    fake = fake_of(fakes, [error(429, retry_delay=1.5), error(503), error(503), "ok"])
    result = await agent_on(fake, sleeps=sleeps).run("go")
    assert result.status == "completed"
    assert sleeps.waits == [1.5, 2.0, 4.0]
    assert [r.code for r in result.retries] == [429, 503, 503]


async def test_per_day_quota_and_400_raise_at_once(fakes):
    fake = fake_of(fakes, [error(429, quota_id="GenerateRequestsPerDayPerProjectPerModel")])
    with pytest.raises(ModelError) as info:
        await agent_on(fake).run("go")
    assert info.value.attempts == 1
    fake = fake_of(fakes, [function_call("echo", {"text": "a"}), error(400)])
    with pytest.raises(ModelError) as info:
        await agent_on(fake, echo_toolkit()).run("go")
    assert info.value.code == 400
    assert info.value.result.turns == 1
    assert KEY not in str(info.value)


async def test_guard_denies_bash(fakes, tmp_path):
    marker = tmp_path / "x"

    def guard(call):
        return ToolResult("denied", is_error=True) if call.name == "bash" else None

    fake = fake_of(fakes, [function_call("bash", {"command": f"touch {marker}"}), "ok"])
    result = await agent_on(
        fake, tn.build(root=tmp_path), capabilities=[Hooks(before_tool=guard)]
    ).run("go")
    assert result.status == "completed"
    assert not marker.exists()
    assert fake.requests[1].function_responses[0]["response"] == {
        "output": "denied",
        "isError": True,
    }


QUESTION = {"questions": [{"question": "Ship it?", "options": ["yes", "no"]}]}


async def test_question_inline_and_suspended_then_resumed(fakes, tmp_path):
    tk = tn.build(root=tmp_path)

    def wait_for(request):
        return {"id": request["id"], "ok": True, "data": "yes"}

    fake = fake_of(fakes, [function_call("question", QUESTION), "Shipping."])
    result = await agent_on(fake, tk, wait_for=wait_for).run("ship?")
    assert result.status == "completed"
    assert json.loads(fake.requests[1].function_responses[0]["response"]["output"]) == "yes"

    fake = fake_of(fakes, [function_call("question", QUESTION), "Shipping."])
    first = await agent_on(fake, tk).run("ship?")
    assert first.status == "pending"
    assert first.pending is not None
    history = json.loads(json.dumps(first.contents))
    answer = {"id": first.pending["id"], "ok": True, "data": "yes"}
    resumed = await agent_on(fake, tk).run(history=history, answer=answer)
    assert resumed.status == "completed"
    assert resumed.text == "Shipping."


async def test_over_a_real_loopback_server_with_the_default_client(fakes):
    fake = fake_of(fakes, [function_call("echo", {"text": "net"}), "over the wire"])
    with fake.serve() as server:
        agent = Agent(
            toolkit=echo_toolkit(), client=ClientSettings(api_key=KEY, base_url=server.base_url)
        )
        try:
            result = await agent.run("go")
        finally:
            await agent.aclose()
    assert result.text == "over the wire"
    assert fake.requests[1].function_responses[0]["response"]["output"] == "echo:net"


@pytest.mark.parametrize("streaming", [False, True])
async def test_an_answer_of_only_an_image_is_an_answer_kept_in_the_result(fakes, streaming):
    png = {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}
    fake = fake_of(fakes, [reply(png)])
    agent = agent_on(fake, model="gemini-2.5-flash-image")
    if streaming:
        events = [event async for event in agent.stream("Draw a cat.")]
        result = events[-1].result
    else:
        result = await agent.run("Draw a cat.")
    assert (result.status, result.text, result.turns) == ("completed", "", 1)
    assert len(fake.requests) == 1  # not asked again: one generation billed
    assert result.contents[-1] == {"role": "model", "parts": [png]}


@pytest.mark.parametrize("prompt", [42, b"hi", {"text": "hi"}])
async def test_a_prompt_that_is_not_text_is_refused_before_anything_is_sent(fakes, prompt):
    # A list of parts is a prompt too (see tests/agent/test_media.py).
    fake = fake_of(fakes, [])
    agent = agent_on(fake)
    expected = f"the prompt must be a str or a list of parts, got {type(prompt).__name__}"
    with pytest.raises(TypeError, match=expected):
        await agent.run(prompt)
    with pytest.raises(TypeError, match="the prompt must be a str or a list of parts"):
        async for _ in agent.stream(prompt):
            pass
    assert fake.requests == []
