"""An agent run against the strict fake Gemini that calls an MCP tool and an HTTP tool in one turn.

The MCP tool comes from a real MCP server (written with the SDK, over stdio); the HTTP
tool calls a real local HTTP server. Both the async world (`build_async` + `Agent.run`)
and the sync world (`build` + `Agent.run_sync`) are covered.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import toolnexus as tn
from agent import Agent, ClientSettings, RetryPolicy, RunLimits
from agent.testing import FakeGemini, function_call, reply
from tests.toolnexus.mcp_servers.local_http import serve

KEY = "AIzaTEST-sources-key-0123456789"
SERVER = Path(__file__).parents[1] / "toolnexus" / "mcp_servers" / "demo_server.py"


async def _weather(request: Request) -> Response:
    city = request.path_params["city"]
    return JSONResponse({"city": city, "sky": "sunny", "unit": request.query_params["unit"]})


@pytest.fixture(scope="module")
def weather_url() -> Iterator[str]:
    with serve(Starlette(routes=[Route("/weather/{city}", _weather)])) as url:
        yield url


def mcp_config() -> dict[str, Any]:
    return {"mcpServers": {"calc": {"command": [sys.executable, str(SERVER), "stdio"]}}}


def weather_tool(base_url: str) -> tn.Tool:
    return tn.http_tool(
        "weather",
        "Current weather for a city.",
        "GET",
        base_url + "/weather/{city}",
        query=["unit"],
        input_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            "required": ["city", "unit"],
        },
    )


def script() -> FakeGemini:
    return FakeGemini(
        [
            reply(
                function_call("calc_add", {"a": 2, "b": 3}),
                function_call("weather", {"city": "Paris", "unit": "C"}),
            ),
            "2 + 3 = 5 and Paris is sunny.",
        ],
        api_key=KEY,
    )


def check_run(fake: FakeGemini, result: Any) -> None:
    assert result.status == "completed"
    assert result.text == "2 + 3 = 5 and Paris is sunny."
    # Both calls ran in the same turn (they may finish in either order).
    assert sorted(call.name for call in result.tool_calls) == ["calc_add", "weather"]
    assert all(call.turn == 1 for call in result.tool_calls)
    fake.assert_consumed()
    declared = {
        d["name"] for tool in fake.requests[0].body["tools"] for d in tool["functionDeclarations"]
    }
    assert {"calc_add", "calc_echo", "weather"} <= declared
    add, weather = fake.requests[1].function_responses
    assert add["name"] == "calc_add"
    assert json.loads(add["response"]["output"]) == {"sum": 5}
    assert weather["name"] == "weather"
    assert json.loads(weather["response"]["output"]) == {
        "city": "Paris",
        "sky": "sunny",
        "unit": "C",
    }


async def test_async_agent_calls_an_mcp_tool_and_an_http_tool_in_one_turn(
    weather_url: str,
) -> None:
    fake = script()
    tools = [weather_tool(weather_url)]
    async with await tn.build_async(builtins=False, tools=tools, mcp=mcp_config()) as tk:
        agent = Agent(
            toolkit=tk,
            limits=RunLimits(retry=RetryPolicy(jitter=0.0)),
            client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
        )
        result = await agent.run("Add 2 and 3, and tell me the weather in Paris.")
    check_run(fake, result)


def test_sync_agent_calls_an_mcp_tool_and_an_http_tool_in_one_turn(weather_url: str) -> None:
    fake = script()
    tools = [weather_tool(weather_url)]
    with tn.build(builtins=False, tools=tools, mcp=mcp_config()) as tk:
        agent = Agent(
            toolkit=tk,
            limits=RunLimits(retry=RetryPolicy(jitter=0.0)),
            client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
        )
        result = agent.run_sync("Add 2 and 3, and tell me the weather in Paris.")
    check_run(fake, result)
