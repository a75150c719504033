"""A run stopped inside a tool leaves calls without responses; the next run answers them.

A deadline or a raising hook ends a run while its calls are still running, so
``result.contents`` ends with the model's calls and no function responses. Gemini refuses
such a history (so does the strict fake): the next run answers each call with an error
response carrying its id before anything else is sent.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import toolnexus as tn
from agent import (
    Agent,
    ClientSettings,
    DeadlineExceededError,
    Hooks,
    MemoryStore,
    RetryPolicy,
    RunLimits,
)
from agent._transcript import Transcript
from agent.errors import HookError
from agent.testing import FakeGemini, function_call, reply

NOT_RUN = "not run: the previous run stopped before this call finished"


async def _blocked(args: dict[str, Any], ctx: tn.ToolContext) -> str:
    await asyncio.Event().wait()  # until the run is stopped
    return "never"


def _echo(args: dict[str, Any], ctx: tn.ToolContext) -> str:
    return str(args.get("text", ""))


TOOLS = tn.toolkit(
    [
        tn.Tool("block", _blocked, "Blocks until stopped.", {"type": "object"}),
        tn.Tool("echo", _echo, "Echoes its text.", {"type": "object"}),
    ]
)


def agent_on(fake: FakeGemini, model: str = "gemini-3-flash-preview", **kw: Any) -> Agent:
    limits = kw.pop("limits", RunLimits(retry=RetryPolicy(attempts=1)))
    return Agent(
        model,
        TOOLS,
        client=ClientSettings(api_key="k", http_client=fake.http_client()),
        limits=limits,
        **kw,
    )


def _responses(content: dict[str, Any]) -> list[dict[str, Any]]:
    return [part["functionResponse"] for part in content["parts"]]


def _refused(response: dict[str, Any]) -> bool:
    return response["response"] == {"output": NOT_RUN, "isError": True}


def _raise_after_tool(call: Any, result: Any) -> None:
    raise RuntimeError("audit log is down")


async def _stopped_by_deadline(fake: FakeGemini, **kw: Any) -> DeadlineExceededError:
    limits = RunLimits(deadline=0.3, retry=RetryPolicy(attempts=1))
    run = kw.pop("run", {})
    with pytest.raises(DeadlineExceededError) as info:
        await agent_on(fake, limits=limits, **kw).run("Go.", **run)
    return info.value


async def test_a_history_cut_by_the_deadline_continues_with_its_calls_answered() -> None:
    fake = FakeGemini(
        [
            reply(function_call("echo", {"text": "a"}, id="c1"), function_call("block", id="c2")),
            "Fine, let us go on.",
        ]
    )
    stopped = await _stopped_by_deadline(fake)
    history = stopped.result.contents
    assert history[-1]["role"] == "model"  # the calls have no responses
    result = await agent_on(fake).run("Go on.", history=history)
    fake.assert_consumed()
    assert fake.requests[-1].status == 200, fake.requests[-1].error
    responses = _responses(fake.requests[-1].contents[-2])
    assert [(r["id"], r["name"]) for r in responses] == [("c1", "echo"), ("c2", "block")]
    assert all(_refused(r) for r in responses)
    assert fake.requests[-1].contents[-1] == {"role": "user", "parts": [{"text": "Go on."}]}
    assert result.status == "completed"
    assert not result.tool_calls  # nothing ran in this run


async def test_a_history_cut_by_a_hook_error_continues_without_a_prompt() -> None:
    fake = FakeGemini(
        [
            # Gemini 2.5: calls without ids are answered by name and position
            reply(function_call("echo", {"text": "a"}, id=None), signature=None),
            "Continued.",
        ]
    )
    hooks = Hooks(after_tool=_raise_after_tool)
    with pytest.raises(HookError) as info:
        await agent_on(fake, "gemini-2.5-flash", capabilities=[hooks]).run("Go.")
    history = info.value.result.contents
    result = await agent_on(fake, "gemini-2.5-flash").run(history=history)
    fake.assert_consumed()
    assert fake.requests[-1].status == 200, fake.requests[-1].error
    (response,) = fake.requests[-1].function_responses
    assert response["name"] == "echo" and "id" not in response
    assert _refused(response)
    assert result.text == "Continued."
    # The answered history is valid: the returned contents continue as they are.
    assert [c["role"] for c in result.contents] == ["user", "model", "user", "model"]


async def test_a_session_cut_by_the_deadline_or_a_hook_error_stays_usable() -> None:
    store = MemoryStore()
    fake = FakeGemini(
        [
            reply(function_call("block", id="c1")),
            reply(function_call("echo", {"text": "x"}, id="c2")),
            "Still here.",
        ]
    )
    await _stopped_by_deadline(fake, store=store, run={"session": "s"})
    with pytest.raises(HookError):
        await agent_on(fake, store=store, capabilities=[Hooks(after_tool=_raise_after_tool)]).run(
            "Again.", session="s"
        )
    result = await agent_on(fake, store=store).run("Still there?", session="s")
    fake.assert_consumed()
    assert all(request.status == 200 for request in fake.requests), fake.requests[-1].error
    assert result.text == "Still here."


async def test_a_stored_session_that_ends_with_calls_is_answered_and_saved() -> None:
    fake = FakeGemini([reply(function_call("block", id="c9")), "Back again."])
    stopped = await _stopped_by_deadline(fake)
    store = MemoryStore()
    await store.save("s", Transcript(stopped.result.contents))  # as a crashed host left it
    result = await agent_on(fake, store=store).run("Hello?", session="s")
    fake.assert_consumed()
    assert fake.requests[-1].status == 200, fake.requests[-1].error
    (response,) = _responses(fake.requests[-1].contents[-2])
    assert response["id"] == "c9" and _refused(response)
    saved = await store.get("s")
    assert saved is not None and saved.contents == result.contents
    assert [c["role"] for c in saved.contents] == ["user", "model", "user", "user", "model"]
