"""Hostile model replies: whatever the model sends, `run` raises only the typed errors.

A reply the client cannot use (arguments nested hundreds of levels deep, a body nested past
Python's recursion limit) ends the run with a `ModelError` carrying the partial result, and
the turns completed before it stay saved in the session.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from agent import Agent, ClientSettings, MemoryStore, ModelError, RetryPolicy, RunLimits
from agent.testing import FakeGemini, function_call, reply
from tests.agent._loop_support import GENERATE, KEY, echo_toolkit


def nested(depth: int) -> dict[str, Any]:
    args: dict[str, Any] = {}
    inner = args
    for _ in range(depth):
        inner["a"] = {}
        inner = inner["a"]
    return args


@pytest.mark.parametrize("depth", [65, 900])
@pytest.mark.parametrize("streaming", [False, True])
async def test_deeply_nested_arguments_end_in_a_model_error_with_the_turns_saved(depth, streaming):
    fake = FakeGemini(
        [
            reply(function_call("echo", {"text": "first"})),
            reply(function_call("echo", nested(depth))),
        ],
        api_key=KEY,
    )
    store = MemoryStore()
    agent = Agent(
        toolkit=echo_toolkit(),
        store=store,
        client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
    )
    with pytest.raises(ModelError) as failure:
        if streaming:
            async for _ in agent.stream("go", session="s"):
                pass
        else:
            await agent.run("go", session="s")
    error = failure.value
    assert (error.code, error.status, error.attempts) == (None, "UNKNOWN_RESPONSE", 1)
    assert "nest deeper than 64 levels" in error.message
    assert [call.result.output for call in error.result.tool_calls] == ["echo:first"]
    saved = await store.get("s")
    assert saved is not None and saved.contents == error.result.contents
    assert len(saved.contents) == 3  # the prompt, the first call and its result


async def test_a_reply_nested_past_the_recursion_limit_is_a_model_error(http, mock):
    depth = 5000
    body = '{"candidates": [{"content": {"role": "model", "parts": [{"text": ' + "[" * depth
    body += "]" * depth + "}]}}]}"
    mock.post(url__regex=GENERATE).mock(
        return_value=httpx.Response(200, text=body, headers={"content-type": "application/json"})
    )
    agent = Agent(
        limits=RunLimits(retry=RetryPolicy(attempts=1)),
        client=ClientSettings(api_key=KEY, http_client=http),
    )
    with pytest.raises(ModelError) as failure:
        await agent.run("go")
    assert failure.value.status == "UNKNOWN_RESPONSE"
    assert failure.value.result.turns == 0
