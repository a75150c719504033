"""The durable-step seam: every model call, tool execution and human wait goes through `Steps`.

A recording `Steps` subclass stands in for a durable engine; the runs go through the real
loop and the real google-genai client against the fake Gemini.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import toolnexus as tn
from agent import Agent, RunResult
from agent.events import ToolCall
from agent.hooks import Hooks, ModelRequest
from agent.steps import ModelItem, Steps, ToolStep
from agent.testing import FakeGemini, function_call, reply
from toolnexus import Answer, Request, ToolResult


class Recording(Steps):
    """Records what went through each method; answers waits from ``answers``."""

    def __init__(self, answers: list[Answer] | None = None) -> None:
        self.log: list[str] = []
        self.answers = list(answers or [])

    def model(
        self, request: ModelRequest, call: Callable[[], AsyncGenerator[ModelItem, None]]
    ) -> AsyncGenerator[ModelItem, None]:
        self.log.append(f"model {request.turn}")
        return call()

    def tool(self, call: ToolCall) -> ToolStep:
        self.log.append(f"slot {call.turn}.{call.index} {call.name}")

        async def run(execute: Callable[[], Awaitable[ToolResult]]) -> ToolResult:
            result = await execute()
            self.log.append(f"ran {call.turn}.{call.index} {call.name}")
            return result

        return run

    async def wait(self, request: Request) -> Answer | None:
        self.log.append(f"wait {request['prompt']}")
        return self.answers.pop(0) if self.answers else None


async def _run(agent: Agent, steps: Steps, prompt: str) -> RunResult:
    return await agent.plan(prompt, steps=steps).result()


def _slow_first(delays: dict[str, float]) -> Hooks:
    async def before_tool(call: ToolCall) -> None:
        await asyncio.sleep(delays.get(str(call.args.get("text")), 0))

    return Hooks(before_tool=before_tool)


async def test_every_side_effect_goes_through_the_steps_in_call_order() -> None:
    @tn.define_tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    fake = FakeGemini(
        [
            reply(function_call("echo", {"text": "a"}), function_call("echo", {"text": "b"})),
            "done",
        ]
    )
    # The first call's hook is slower, so the second call's tool runs first: the slots are
    # still numbered in call order.
    agent = Agent(
        toolkit=tn.toolkit([echo]),
        client=fake.client(),
        capabilities=[_slow_first({"a": 0.05})],
    )
    steps = Recording()
    result = await _run(agent, steps, "go")
    assert result.status == "completed"
    assert steps.log == [
        "model 1",
        "slot 1.0 echo",
        "slot 1.1 echo",
        "ran 1.1 echo",
        "ran 1.0 echo",
        "model 2",
    ]
    assert [r.result.output for r in result.tool_calls] == ["a", "b"]


async def test_an_answer_from_wait_re_runs_the_tool_and_the_run_goes_on(tmp_path: Any) -> None:
    fake = FakeGemini(
        [reply(function_call("question", {"questions": [{"question": "Ship?"}]})), "Shipped."]
    )
    agent = Agent(toolkit=tn.build(root=tmp_path), client=fake.client())
    steps = Recording()

    async def wait(request: Request) -> Answer | None:
        steps.log.append(f"wait {request['prompt']}")
        return {"id": request["id"], "ok": True, "data": "yes"}

    steps.wait = wait  # type: ignore[method-assign]
    result = await _run(agent, steps, "ship it")
    assert result.status == "completed"
    assert result.text == "Shipped."
    assert steps.log == [
        "model 1",
        "slot 1.0 question",
        "ran 1.0 question",
        "wait Ship?",
        "slot 1.0 question",
        "ran 1.0 question",
        "model 2",
    ]
    sent = fake.requests[1].function_responses[0]["response"]
    assert json.loads(sent["output"]) and sent["isError"] is False
    assert [r.name for r in result.tool_calls] == ["question"]


async def test_without_an_answer_the_run_ends_pending_as_before(tmp_path: Any) -> None:
    fake = FakeGemini([reply(function_call("question", {"questions": [{"question": "Ship?"}]}))])
    agent = Agent(toolkit=tn.build(root=tmp_path), client=fake.client())
    steps = Recording()
    result = await _run(agent, steps, "ship it")
    assert result.status == "pending"
    assert result.pending is not None and result.pending["prompt"] == "Ship?"
    assert steps.log[-1] == "wait Ship?"


async def test_the_default_steps_read_the_clock_and_make_fresh_ids() -> None:
    steps = Steps()
    assert await steps.now() > 1_700_000_000
    first, second = await steps.new_id(), await steps.new_id()
    assert first != second and len(first) == 32
