"""The README's FakeGemini guide, run as tests against the real Agent (keep them in sync)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import toolnexus as tn
from agent import Agent, ClientSettings, ModelError
from agent.testing import FakeGemini, ReplyLike, error, function_call, reply, thought


async def test_agent_reads_the_file(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("Buy milk\n")
    fake = FakeGemini(
        [
            reply(thought("I need the file."), function_call("read", {"path": "notes.txt"})),
            "Your notes say: Buy milk.",
        ]
    )
    agent = Agent(
        "gemini-3-flash-preview",
        tn.build(root=str(tmp_path)),
        client=ClientSettings(http_client=fake.http_client(), api_key="test"),
    )

    result = await agent.run("What do my notes say?")

    assert result.status == "completed" and result.text == "Your notes say: Buy milk."
    fake.assert_consumed()
    sent = fake.requests[1].function_responses[0]
    assert sent["name"] == "read" and "Buy milk" in sent["response"]["output"]
    assert all(r.status == 200 for r in fake.requests), "the loop's traffic passes strict mode"
    assert "read" in fake.requests[0].declared_functions


def _model(request: dict[str, Any]) -> ReplyLike:
    last = request["contents"][-1]["parts"][0]
    if "functionResponse" in last:
        return f"The command printed: {last['functionResponse']['response']['output'].strip()}"
    return function_call("bash", {"command": "echo hello"})


async def test_model_as_a_function(tmp_path: Path) -> None:
    fake = FakeGemini(_model)
    agent = Agent(
        toolkit=tn.build(root=str(tmp_path)),
        client=ClientSettings(http_client=fake.http_client(), api_key="test"),
    )
    result = await agent.run("Say hello through the shell")
    assert result.text == "The command printed: hello"


async def test_rate_limit_is_retried_after_the_servers_delay() -> None:
    fake = FakeGemini([error(429, retry_delay=0.01), "Recovered."])
    agent = Agent(client=ClientSettings(http_client=fake.http_client(), api_key="test"))
    assert (await agent.run("hi")).text == "Recovered." and len(fake.requests) == 2


async def test_a_bad_request_is_not_retried() -> None:
    fake = FakeGemini([error(400, message="Bad thing.")])
    with pytest.raises(ModelError):
        await Agent(client=ClientSettings(http_client=fake.http_client(), api_key="test")).run("hi")
    assert len(fake.requests) == 1


async def test_an_exhausted_script_fails_the_agent_at_once() -> None:
    fake = FakeGemini([])
    with pytest.raises(ModelError, match="script exhausted"):
        await Agent(client=ClientSettings(http_client=fake.http_client(), api_key="test")).run("hi")
    assert [r.status for r in fake.requests] == [400], "a script problem is not retried"
