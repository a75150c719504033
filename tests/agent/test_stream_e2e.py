"""Issue 5 acceptance, streaming: `Agent.stream` end to end against the strict fake Gemini.

No respx here: the real google-genai client talks to ``FakeGemini``, which checks every
request the way Gemini does (ids echoed, thought signatures, one content of responses).
"""

from __future__ import annotations

import asyncio
from typing import Any

from agent import Agent, ClientSettings, RetryPolicy, RunLimits
from agent.events import (
    DoneEvent,
    Event,
    PendingEvent,
    RetryEvent,
    TextEvent,
    ThoughtEvent,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from agent.testing import FakeGemini, error, function_call, reply, thought
from toolnexus import Tool, Toolkit, toolkit


async def _no_wait(seconds: float) -> None:
    """Retry sleep that returns at once (the retry itself still happens)."""


def echo_toolkit() -> Toolkit:
    def echo(args: dict[str, Any], ctx: Any) -> str:
        return "echo:" + str(args.get("text", ""))

    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    return toolkit([Tool("echo", echo, "Echo the text.", schema)])


def make_agent(fake: FakeGemini, tk: Toolkit | None = None) -> Agent:
    return Agent(
        toolkit=tk if tk is not None else echo_toolkit(),
        limits=RunLimits(retry=RetryPolicy(sleep=_no_wait, jitter=0.0)),
        client=ClientSettings(api_key="fake-key", http_client=fake.http_client()),
    )


def turn_of(event: Event) -> int:
    if isinstance(event, ToolResultEvent | PendingEvent):
        return event.call.turn
    if isinstance(event, DoneEvent):
        return 0
    return event.turn


def check_order(events: list[Event], turns: int) -> None:
    """Fail unless ``events`` is a valid run: see the assertions for the rules."""
    assert [type(e) for e in events].count(DoneEvent) == 1
    assert isinstance(events[-1], DoneEvent)
    numbered = [(turn_of(e), e) for e in events[:-1]]
    # Turns never go back: every event of turn t comes before any event of turn t + 1.
    sequence = [t for t, _ in numbered]
    assert sequence == sorted(sequence), sequence
    assert set(sequence) == set(range(1, turns + 1))
    for t in range(1, turns + 1):
        of_turn = [e for n, e in numbered if n == t]
        usage = [i for i, e in enumerate(of_turn) if isinstance(e, UsageEvent)]
        assert len(usage) == 1, f"turn {t}: {len(usage)} UsageEvents"
        # Usage follows all of the turn's text (it is taken from the final chunk).
        texts = [i for i, e in enumerate(of_turn) if isinstance(e, TextEvent | ThoughtEvent)]
        assert all(i < usage[0] for i in texts), f"turn {t}: text after usage"
        # Every result follows its own call, once.
        call_events = [e for e in of_turn if isinstance(e, ToolCallEvent)]
        calls = [e.call for e in call_events]
        results = [e for e in of_turn if isinstance(e, ToolResultEvent)]
        assert sorted(r.call.index for r in results) == [c.index for c in calls]
        for r in results:
            assert r.call in calls
            assert of_turn.index(call_events[r.call.index]) < of_turn.index(r)
        assert [c.index for c in calls] == list(range(len(calls)))


# One text part per turn: a stream carries text as pieces of one growing part, so adjacent
# text parts of a unary reply come back merged from a stream (as they do from Gemini).
def script() -> list[Any]:
    return [
        reply(
            thought("Two lookups needed."),
            "Let me check both.",
            function_call("echo", {"text": "a"}),
            function_call("echo", {"text": "b"}),
        ),
        reply("Now ", function_call("echo", {"text": "c"})),
        reply("They say a, b and c."),
    ]


async def test_stream_events_are_ordered_and_done_equals_run() -> None:
    streamed_fake, run_fake = FakeGemini(script()), FakeGemini(script())
    events = [event async for event in make_agent(streamed_fake).stream("Look up a, b, c.")]
    check_order(events, turns=3)
    done = events[-1]
    assert isinstance(done, DoneEvent)
    ran = await make_agent(run_fake).run("Look up a, b, c.")
    streamed_fake.assert_consumed()
    run_fake.assert_consumed()
    assert [r.kind for r in streamed_fake.requests] == ["stream"] * 3
    assert [r.kind for r in run_fake.requests] == ["unary"] * 3
    assert done.result.status == "completed"
    assert done.result.text == "They say a, b and c."
    # RunResult carries no timing field: the whole dict must match.
    assert done.result.to_dict() == ran.to_dict()
    # Both modes sent the very same conversation on every turn.
    assert [r.contents for r in streamed_fake.requests] == [r.contents for r in run_fake.requests]
    # The events tell the same story as the result.
    calls = [
        (e.call.name, e.call.args, e.call.id, e.call.turn)
        for e in events
        if isinstance(e, ToolCallEvent)
    ]
    assert calls == [(c.name, c.args, c.id, c.turn) for c in ran.tool_calls]
    outputs = [e.result.output for e in events if isinstance(e, ToolResultEvent)]
    assert outputs == ["echo:a", "echo:b", "echo:c"]
    usages = [e for e in events if isinstance(e, UsageEvent)]
    assert tuple(u.usage for u in usages) == ran.turn_usage
    assert usages[-1].total == ran.usage
    thoughts = [e.text for e in events if isinstance(e, ThoughtEvent)]
    assert "".join(thoughts) == "Two lookups needed."
    texts_3 = "".join(e.text for e in events if isinstance(e, TextEvent) and e.turn == 3)
    assert texts_3 == "They say a, b and c."


async def test_stream_parallel_calls_with_a_503_between_turns() -> None:
    both_started = asyncio.Barrier(2)

    async def meet(args: dict[str, Any], ctx: Any) -> str:
        # Each call waits for the other: this only returns if the two run concurrently.
        async with asyncio.timeout(5):
            await both_started.wait()
        return "met:" + str(args["who"])

    schema = {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]}
    tk = toolkit([Tool("meet", meet, "Meet someone.", schema)])
    fake = FakeGemini(
        [
            reply(
                function_call("meet", {"who": "ann"}, id="call-ann"),
                function_call("meet", {"who": "bob"}, id="call-bob"),
            ),
            error(503),
            reply("Met ", "both."),
        ]
    )
    events = [event async for event in make_agent(fake, tk).stream("Meet Ann and Bob.")]
    fake.assert_consumed()
    assert [r.status for r in fake.requests] == [200, 503, 200], [r.error for r in fake.requests]
    check_order(events, turns=2)
    last = events[-1]
    assert isinstance(last, DoneEvent)
    result = last.result
    assert result.status == "completed"
    assert result.text == "Met both."
    # The RetryEvent comes after turn 1's results and before anything of turn 2's answer.
    kinds = [type(e).__name__ for e in events]
    retry_at = kinds.index("RetryEvent")
    assert kinds[:retry_at].count("ToolResultEvent") == 2
    assert all(k in ("TextEvent", "UsageEvent", "DoneEvent") for k in kinds[retry_at + 1 :])
    retry = events[retry_at]
    assert isinstance(retry, RetryEvent)
    assert (retry.attempt, retry.code, retry.status, retry.turn) == (1, 503, "UNAVAILABLE", 2)
    assert result.retries == (retry,)
    # The retried request is the failed one again, and well-formed: both answers in one
    # user content, in call order, each echoing its call's id.
    assert fake.requests[2].body == fake.requests[1].body
    assert fake.requests[2].contents[-1]["role"] == "user"
    assert len(fake.requests[2].contents) == 3
    assert fake.requests[2].function_responses == [
        {"id": "call-ann", "name": "meet", "response": {"output": "met:ann", "isError": False}},
        {"id": "call-bob", "name": "meet", "response": {"output": "met:bob", "isError": False}},
    ]
    assert [c.result.output for c in result.tool_calls] == ["met:ann", "met:bob"]
