"""Agent.stream: SSE chunks assembled into turns, through the same loop as Agent.run."""

from __future__ import annotations

from typing import Any

from agent import Agent, ClientSettings, RetryPolicy, RunLimits
from agent.events import (
    DoneEvent,
    Event,
    RetryEvent,
    TextEvent,
    ThoughtEvent,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from agent.testing import FakeGemini, error, function_call, reply, thought
from tests.agent._loop_support import (
    KEY,
    Script,
    Sleeps,
    api_error,
    call,
    chunk,
    decode_signature,
    echo_toolkit,
    make_agent,
    sse,
    text,
    usage,
)


async def collect(agent: Agent, prompt: str | None = "go", **kw: Any) -> list[Event]:
    return [event async for event in agent.stream(prompt, **kw)]


def done(events: list[Event]) -> Any:
    last = events[-1]
    assert isinstance(last, DoneEvent)
    return last.result


SIG = "c2lnbmF0dXJlLWJ5dGVz"


async def test_text_arrives_in_pieces_and_is_assembled(http, mock):
    script = Script(
        mock,
        [
            [
                chunk(text("Thinking", thought=True), meta=usage(5, 0, 5)),
                chunk(text("Hello, "), meta=usage(5, 1, 6)),
                chunk(text("world."), meta=usage(5, 2, 7)),
                chunk(text("", thoughtSignature=SIG), finish="STOP", meta=usage(5, 3, 8)),
            ]
        ],
    )
    events = await collect(make_agent(http))
    assert script.kinds == ["stream"]
    pieces = [(type(e).__name__, e.text) for e in events if isinstance(e, TextEvent | ThoughtEvent)]
    assert pieces == [
        ("ThoughtEvent", "Thinking"),
        ("TextEvent", "Hello, "),
        ("TextEvent", "world."),
    ]
    result = done(events)
    assert result.status == "completed"
    assert result.text == "Hello, world."
    # Usage is cumulative across chunks: the last one counts, once.
    assert (result.usage.prompt, result.usage.candidates, result.usage.total) == (5, 3, 8)
    assert [e.turn for e in events if isinstance(e, UsageEvent)] == [1]
    model = result.contents[1]
    assert model["parts"][:2] == [
        {"text": "Thinking", "thought": True},
        {"text": "Hello, world."},
    ]
    # The empty text part that carries the signature is kept, signature intact.
    assert model["parts"][2]["text"] == ""
    assert decode_signature(model["parts"][2]["thoughtSignature"]) == decode_signature(SIG)


async def test_calls_across_chunks_run_together_and_are_echoed_exactly(http, mock):
    script = Script(
        mock,
        [
            [
                chunk(text("Checking.")),
                chunk(call("echo", {"text": "a"}, id="c1", sig=SIG)),
                chunk(call("echo", {"text": "b"}, id="c2"), call("echo", {"text": "c"}, id="c3")),
                chunk(finish="STOP", meta=usage(10, 6, 16)),
            ],
            [chunk(text("All three."), finish="STOP", meta=usage(40, 2, 42))],
        ],
    )
    events = await collect(make_agent(http, echo_toolkit()))
    result = done(events)
    assert result.status == "completed"
    assert [e.call.id for e in events if isinstance(e, ToolCallEvent)] == ["c1", "c2", "c3"]
    sent = script.contents(1)
    assert sent[1]["role"] == "model"
    assert sent[1]["parts"][0] == {"text": "Checking."}
    assert [p["functionCall"]["id"] for p in sent[1]["parts"][1:]] == ["c1", "c2", "c3"]
    assert decode_signature(sent[1]["parts"][1]["thoughtSignature"]) == decode_signature(SIG)
    assert sent[2] == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "id": cid,
                    "name": "echo",
                    "response": {"output": f"echo:{x}", "isError": False},
                }
            }
            for cid, x in (("c1", "a"), ("c2", "b"), ("c3", "c"))
        ],
    }
    assert result.usage.total == 58


async def test_stream_and_run_send_the_same_requests(http, mock):
    streamed = Script(
        mock,
        [
            [chunk(call("echo", {"text": "a"}, id="1")), chunk(finish="STOP")],
            [chunk(text("ok"), finish="STOP")],
        ],
    )
    by_stream = done(await collect(make_agent(http, echo_toolkit())))
    bodies = list(streamed.bodies)
    unary = Script(
        mock,
        [
            {
                "candidates": [
                    {
                        "content": {
                            "role": "model",
                            "parts": [call("echo", {"text": "a"}, id="1")],
                        },
                        "finishReason": "STOP",
                    }
                ]
            },
            {
                "candidates": [
                    {"content": {"role": "model", "parts": [text("ok")]}, "finishReason": "STOP"}
                ]
            },
        ],
    )
    by_run = await make_agent(http, echo_toolkit()).run("go")
    assert unary.bodies == bodies
    assert by_run.contents == by_stream.contents
    assert by_run.tool_calls == by_stream.tool_calls


async def test_prompt_block_in_the_first_chunk(http, mock):
    Script(mock, [[{"promptFeedback": {"blockReason": "SAFETY"}}]])
    result = done(await collect(make_agent(http)))
    assert (result.status, result.reason) == ("blocked", "SAFETY")


async def test_safety_finish_on_the_last_chunk(http, mock):
    Script(mock, [[chunk(text("Here is how to")), {"candidates": [{"finishReason": "SAFETY"}]}]])
    result = done(await collect(make_agent(http)))
    assert (result.status, result.reason) == ("blocked", "SAFETY")


async def test_max_tokens_and_malformed_in_streams(http, mock):
    Script(
        mock,
        [
            [{"candidates": [{"content": {}, "finishReason": "MALFORMED_FUNCTION_CALL"}]}],
            [chunk(text("cut")), chunk(finish="MAX_TOKENS")],
        ],
    )
    result = done(await collect(make_agent(http)))
    assert (result.status, result.limit, result.turns) == ("incomplete", "max_tokens", 2)


async def test_an_error_before_the_stream_is_retried(http, mock):
    sleeps = Sleeps()
    Script(mock, [api_error(503, "UNAVAILABLE", "busy"), [chunk(text("ok"), finish="STOP")]])
    events = await collect(make_agent(http, sleeps=sleeps))
    assert [(e.attempt, e.code) for e in events if isinstance(e, RetryEvent)] == [(1, 503)]
    assert done(events).text == "ok"
    assert sleeps.waits == [1.0]


async def test_a_mid_stream_error_is_retried_and_voids_the_partial_turn(http, mock):
    broken = sse(
        chunk(text("Half an ans")),
        {"error": {"code": 500, "status": "INTERNAL", "message": "oops"}},
    )
    Script(mock, [broken, [chunk(text("A whole answer."), finish="STOP")]])
    events = await collect(make_agent(http))
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["TextEvent", "RetryEvent", "TextEvent", "UsageEvent", "DoneEvent"]
    result = done(events)
    assert result.text == "A whole answer."
    assert result.contents[-1] == {"role": "model", "parts": [{"text": "A whole answer."}]}


async def test_stream_against_the_strict_fake(tmp_path):
    fake = FakeGemini(
        [
            reply(
                thought("Two lookups."),
                "Let me ",
                "look.",
                function_call("echo", {"text": "a"}),
                function_call("echo", {"text": "b"}),
            ),
            error(503),
            "Both ",
        ],
        api_key=KEY,
    )
    agent = Agent(
        toolkit=echo_toolkit(),
        limits=RunLimits(retry=RetryPolicy(sleep=Sleeps(), jitter=0.0)),
        client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
    )
    events = await collect(agent)
    result = done(events)
    assert result.status == "completed", [r.error for r in fake.requests]
    assert [r.kind for r in fake.requests] == ["stream", "stream", "stream"]
    assert fake.requests[2].function_responses[1]["response"]["output"] == "echo:b"
    assert any(isinstance(e, RetryEvent) for e in events)
    fake.assert_consumed()


async def test_leaving_a_stream_early_cancels_running_tools(http, mock):
    import asyncio
    import contextlib

    from toolnexus import Tool, toolkit

    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def forever(args, ctx):
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    tk = toolkit([Tool("forever", forever, "Never ends.", {"type": "object"})])
    Script(mock, [[chunk(call("forever", {}), call("echo", {"text": "x"}), finish="STOP")]])
    tk = echo_toolkit(*tk)
    async with contextlib.aclosing(make_agent(http, tk).stream("go")) as events:
        async for event in events:
            if isinstance(event, ToolResultEvent):  # echo is done, forever still runs
                await started.wait()
                break
    assert cancelled.is_set()
