"""`UsageLimits` against the strict FakeGemini: each of the six limits stops the run in time."""

from __future__ import annotations

from typing import Any

import pytest

from agent import Agent, ClientSettings, ConfigurationError, UsageLimits
from agent.testing import FakeGemini, function_call, reply
from tests.agent._loop_support import KEY, echo_toolkit


def usage(prompt: int, out: int) -> dict[str, int]:
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": out,
        "totalTokenCount": prompt + out,
    }


def call_turn(text: str, prompt: int = 100, out: int = 10) -> Any:
    return reply(function_call("echo", {"text": text}), usage=usage(prompt, out))


def agent_on(fake: FakeGemini, **kwargs: Any) -> Agent:
    client = ClientSettings(api_key=KEY, http_client=fake.http_client())
    return Agent(toolkit=echo_toolkit(), client=client, **kwargs)


# Each case: the limit, a script long enough to run past it, and the model calls allowed.
CASES = [
    (UsageLimits(requests=2), 2),
    (UsageLimits(input_tokens=150), 2),  # 100 after turn 1, 200 > 150 after turn 2
    (UsageLimits(output_tokens=15), 2),
    (UsageLimits(total_tokens=200), 2),
    (UsageLimits(tool_calls=1), 2),  # turn 2 asks for a second call: not run
    (UsageLimits(cost_usd=0.0006), 2),  # 1000 in + 40 out on 2.5 flash = $0.0004 a turn
]


@pytest.mark.parametrize(("limits", "calls"), CASES, ids=lambda v: repr(v)[:40])
async def test_each_limit_ends_the_run_and_no_call_is_made_past_it(limits, calls):
    if limits.cost_usd is not None:
        turns = [call_turn(str(i), prompt=1000, out=40) for i in range(5)]
    else:
        turns = [call_turn(str(i)) for i in range(5)]
    fake = FakeGemini(turns, api_key=KEY)
    result = await agent_on(fake, usage_limits=limits).run("go")
    name = next(
        k
        for k in (
            "requests",
            "input_tokens",
            "output_tokens",
            "total_tokens",
            "tool_calls",
            "cost_usd",
        )
        if getattr(limits, k) is not None
    )
    assert result.status == "incomplete"
    assert result.limit == f"usage:{name}"
    assert len(fake.requests) == calls
    assert all(r.status == 200 for r in fake.requests), [r.error for r in fake.requests]
    # The partial transcript is valid history: the strict fake takes it as is.
    follow = FakeGemini(["ok"], api_key=KEY)
    again = await agent_on(follow).run("go on", history=result.contents)
    assert again.status == "completed", follow.requests[0].error


async def test_tool_calls_limit_refuses_the_calls_it_would_pass():
    fake = FakeGemini([call_turn("a"), call_turn("b"), "unused"], api_key=KEY)
    result = await agent_on(fake, usage_limits=UsageLimits(tool_calls=1)).run("go")
    assert result.limit == "usage:tool_calls"
    assert [call.args for call in result.tool_calls] == [{"text": "a"}]
    last = result.contents[-1]["parts"][0]["functionResponse"]["response"]
    assert last["isError"] is True
    assert "usage:tool_calls" in last["output"]
    assert fake.remaining == 1


async def test_a_per_call_limit_replaces_the_agents():
    fake = FakeGemini([call_turn("a"), call_turn("b"), "done"], api_key=KEY)
    ag = agent_on(fake, usage_limits=UsageLimits(requests=1))
    result = await ag.run("go", usage_limits=UsageLimits(requests=10))
    assert result.status == "completed"
    assert len(fake.requests) == 3


async def test_stream_takes_limits_too():
    fake = FakeGemini([call_turn("a"), "unused"], api_key=KEY)
    events = [e async for e in agent_on(fake).stream("go", usage_limits=UsageLimits(requests=1))]
    assert events[-1].result.limit == "usage:requests"
    assert len(fake.requests) == 1


async def test_a_final_answer_past_a_limit_is_still_completed():
    fake = FakeGemini([reply("done", usage=usage(500, 10))], api_key=KEY)
    result = await agent_on(fake, usage_limits=UsageLimits(input_tokens=100)).run("go")
    assert (result.status, result.text) == ("completed", "done")


@pytest.mark.filterwarnings("ignore::agent.UnknownModelWarning")  # a made-up model name
def test_limits_are_checked_when_made():
    with pytest.raises(ConfigurationError, match="requests"):
        UsageLimits(requests=-1)
    with pytest.raises(ConfigurationError, match="needs a price"):
        Agent(
            model="not-a-gemini",
            usage_limits=UsageLimits(cost_usd=1),
            client=ClientSettings(api_key=KEY),
        )
