"""A resumed run's stream reports the result of each call re-run with its answer."""

from __future__ import annotations

from typing import Any

import toolnexus as tn
from agent import Agent, ApprovalPolicy, ClientSettings
from agent.events import DoneEvent, ToolResultEvent
from agent.testing import FakeGemini, function_call, reply
from tests.agent._loop_support import KEY


async def test_the_answered_call_s_result_comes_first_in_the_resumed_stream() -> None:
    ran: list[dict[str, Any]] = []

    def note(args: dict[str, Any], ctx: Any) -> str:
        ran.append(args)
        return "noted " + args["text"]

    tools = tn.toolkit([tn.Tool("note", note, "Note it.", {"type": "object"})])
    fake = FakeGemini([reply(function_call("note", {"text": "a"})), "Done."], api_key=KEY)
    agent = Agent(
        toolkit=tools,
        approval=ApprovalPolicy(tools={"note": "ask"}),
        client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
    )
    first = [event async for event in agent.stream("Note a")]
    result = first[-1].result  # type: ignore[union-attr]
    assert result.status == "pending" and ran == []
    answer = {"id": result.pending["id"], "ok": True}
    resumed = [event async for event in agent.stream(history=result.contents, answer=answer)]
    assert isinstance(resumed[0], ToolResultEvent)
    assert resumed[0].call.name == "note" and resumed[0].call.turn == 0
    assert resumed[0].result.output == "noted a"
    assert isinstance(resumed[-1], DoneEvent) and resumed[-1].result.status == "completed"
    assert [e for e in resumed if isinstance(e, ToolResultEvent)] == [resumed[0]]
    assert ran == [{"text": "a"}]
