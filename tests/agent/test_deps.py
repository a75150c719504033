"""Run data: ``run(..., deps=obj)`` reaches every tool and a callable system prompt."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import toolnexus as tn
from agent import Agent, ClientSettings
from agent.events import DoneEvent
from agent.testing import FakeGemini, function_call, reply
from toolnexus import ToolContext


@dataclass
class Shop:
    user: str
    stock: dict[str, int]


@tn.define_tool
def stock_of(item: str, context: ToolContext) -> str:
    """How many of an item are in stock."""
    shop: Shop = context.deps
    return f"{shop.stock.get(item, 0)} {item} for {shop.user}"


@tn.define_tool
async def whoami(ctx: ToolContext | None = None) -> str:
    """Who is asking."""
    await asyncio.sleep(0)
    assert ctx is not None
    return str(ctx.deps.user)


def prompt_for(shop: Shop | None) -> str:
    return f"You serve {shop.user}." if shop else "You serve nobody."


def agent_on(fake: FakeGemini) -> Agent:
    return Agent(
        toolkit=tn.toolkit([stock_of, whoami]),
        system_prompt=prompt_for,
        client=ClientSettings(api_key="test", http_client=fake.http_client()),
    )


def script() -> list[object]:
    return [reply(function_call("stock_of", {"item": "pears"}), function_call("whoami", {})), "ok"]


def test_deps_reach_a_sync_tool_an_async_tool_and_the_system_prompt() -> None:
    fake = FakeGemini(script())
    result = agent_on(fake).run_sync("Pears?", deps=Shop("ada", {"pears": 3}))
    assert [call.result.output for call in result.tool_calls] == ["3 pears for ada", "ada"]
    assert fake.requests[0].system_text == "You serve ada."
    assert fake.requests[1].system_text == "You serve ada."


def test_deps_never_appear_in_a_declaration() -> None:
    fake = FakeGemini(script())
    agent_on(fake).run_sync("Pears?", deps=Shop("ada", {"pears": 3}))
    sent = json.dumps(fake.requests[0].body["tools"])
    assert "context" not in sent and "ctx" not in sent and "deps" not in sent
    assert stock_of.input_schema["properties"] == {"item": {"type": "string"}}
    assert "properties" not in whoami.input_schema or not whoami.input_schema["properties"]


async def test_each_run_gets_its_own_deps_in_stream_and_run() -> None:
    fake = FakeGemini(script() + script())
    agent = agent_on(fake)
    first = await agent.run("Pears?", deps=Shop("ada", {"pears": 1}))
    events = [event async for event in agent.stream("Pears?", deps=Shop("bob", {}))]
    second = events[-1]
    assert isinstance(second, DoneEvent)
    assert first.tool_calls[0].result.output == "1 pears for ada"
    assert second.result.tool_calls[0].result.output == "0 pears for bob"
    assert [r.system_text for r in fake.requests] == [
        "You serve ada.",
        "You serve ada.",
        "You serve bob.",
        "You serve bob.",
    ]


async def test_an_async_system_prompt_and_no_deps() -> None:
    async def prompt(deps: object) -> str:
        return f"deps={deps!r}"

    fake = FakeGemini(["hi"])
    agent = Agent(
        system_prompt=prompt, client=ClientSettings(api_key="test", http_client=fake.http_client())
    )
    await agent.run("Hello")
    assert fake.requests[0].system_text == "deps=None"
