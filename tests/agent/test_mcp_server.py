"""`agent.mcp_server` and `Agent.serve_mcp`: embedding the MCP server in a program.

Each test writes a small program that serves an agent (on the fake Gemini, in process) or a
toolkit, starts it as a stdio server, and talks to it with the official ``mcp`` client. The
forms themselves (how an elicitation reply becomes an `Answer`) are checked directly.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, ClientSettings, SqliteStore
from agent._mcp_agents import MAX_CONVERSATIONS, Conversations
from agent._mcp_forms import answer_from, form_for
from agent.testing import FakeGemini
from tests.cli.conftest import REPO, cli_env
from tests.cli.serve_support import TasksClient, accept, all_text, connect, text_of

pytest.importorskip("mcp")

import mcp_types as types
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

SERVED_AGENT = """\
import sys

from pydantic import BaseModel

import toolnexus as tn
from agent import Agent, ClientSettings, UsageLimits
from agent.testing import FakeGemini, function_call


class Forecast(BaseModel):
    city: str
    sky: str


@tn.define_tool
def get_weather(city: str) -> str:
    \"\"\"Today's forecast for a city.\"\"\"
    return f"sunny in {city}"


fake = FakeGemini([
    function_call("get_weather", {"city": "Rome"}),
    function_call("final_result", {"city": "Rome", "sky": "sunny"}),
    "never reached",
])
agent = Agent(
    toolkit=tn.toolkit([get_weather]),
    output_type=Forecast,
    usage_limits=UsageLimits(requests=int(sys.argv[1])),
    client=ClientSettings(api_key="test", http_client=fake.http_client()),
)
agent.serve_mcp("forecaster", "Says the weather of a city.")
"""


def _program(tmp_path: Path, name: str, code: str, *args: str) -> StdioServerParameters:
    (tmp_path / name).write_text(code, encoding="utf-8")
    env = {**cli_env(), "PYTHONPATH": str(REPO)}
    return StdioServerParameters(
        command=sys.executable, args=[name, *args], env=env, cwd=str(tmp_path)
    )


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_served_agent_returns_its_typed_output_as_structured_content(
    tmp_path: Path, era: Any
) -> None:
    params = _program(tmp_path, "serve_agent.py", SERVED_AGENT, "10")
    async with connect(params, era=era, errlog=tmp_path / "err.txt") as client:
        [tool] = (await client.list_tools()).tools
        result = await client.call_tool("forecaster", {"task": "Weather in Rome?"})
    assert (tool.name, tool.description) == ("forecaster", "Says the weather of a city.")
    assert not result.is_error, all_text(result)
    assert result.structured_content == {"city": "Rome", "sky": "sunny"}
    assert json.loads(text_of(result)) == {"city": "Rome", "sky": "sunny"}


async def test_a_served_agent_keeps_its_usage_limits(tmp_path: Path) -> None:
    params = _program(tmp_path, "serve_agent.py", SERVED_AGENT, "1")
    async with connect(params, errlog=tmp_path / "err.txt") as client:
        result = await client.call_tool("forecaster", {"task": "Weather in Rome?"})
    assert result.is_error
    assert text_of(result).startswith(
        "Agent 'forecaster' did not finish (incomplete: usage:requests)."
    )


SERVED_TOOLKIT = """\
import asyncio
import sys

import toolnexus as tn
from agent.mcp_server import serve_mcp


@tn.define_tool(requires_approval=True)
def sdk_loaded() -> str:
    \"\"\"Whether the Gemini SDK is loaded in this process.\"\"\"
    return str("google.genai" in sys.modules)


asyncio.run(serve_mcp(tn.toolkit([sdk_loaded])))
"""


async def test_serving_a_toolkit_asks_before_a_gated_tool_and_never_loads_the_sdk(
    tmp_path: Path,
) -> None:
    params = _program(tmp_path, "serve_tools.py", SERVED_TOOLKIT)
    forms: list[Any] = []
    async with connect(params, elicit=accept({"decision": "approve"}, forms)) as client:
        result = await client.call_tool("sdk_loaded", {})
    assert (result.is_error, text_of(result)) == (False, "False")
    assert "The MCP client wants to run the tool 'sdk_loaded'" in forms[0].message


async def test_a_retry_runs_only_the_call_it_answers(tmp_path: Path) -> None:
    params = _program(tmp_path, "serve_tools.py", SERVED_TOOLKIT)
    approve = {"k": types.ElicitResult(action="accept", content={"decision": "approve"})}
    async with connect(params, era="modern", elicit=accept({"decision": "approve"})) as client:
        asked = await client.session.call_tool("sdk_loaded", {}, allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult)
        [key] = asked.input_requests
        answer = {key: approve["k"]}
        forged = await client.session.call_tool(
            "sdk_loaded", {}, input_responses=answer, request_state="made-up"
        )
        other = await client.session.call_tool(
            "sdk_loaded", {"x": 1}, input_responses=answer, request_state=asked.request_state
        )
        done = await client.session.call_tool(
            "sdk_loaded", {}, input_responses=answer, request_state=asked.request_state
        )
    assert forged.is_error and "belongs to no call" in text_of(forged)
    assert other.is_error and "belongs to no call" in text_of(other)
    assert (done.is_error, text_of(done)) == (False, "False")


async def test_tasks_methods_answer_only_clients_that_declared_the_extension(
    tmp_path: Path,
) -> None:
    params = _program(tmp_path, "serve_tools.py", SERVED_TOOLKIT)
    request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id="nope"))
    codes = []
    for era, tasks in (("legacy", None), ("modern", None), ("modern", TasksClient())):
        async with connect(params, era=era, tasks=tasks) as client:
            session = client if era == "legacy" else client.session
            with pytest.raises(MCPError) as raised:
                await session.send_request(request, types.EmptyResult)
            codes.append(raised.value.error.code)
    assert codes == [types.METHOD_NOT_FOUND, -32021, types.INVALID_PARAMS]


# -- the forms ------------------------------------------------------------------------------

APPROVAL = {
    "id": "approval-1",
    "kind": "approval",
    "prompt": "Allow write?",
    "data": {"tool": "write", "args": {"path": "a.txt", "content": "x"}},
}


_SAME = '{"content": "x", "path": "a.txt"}'


@pytest.mark.parametrize(
    ("action", "content", "data"),
    [
        ("accept", {"decision": "approve"}, {"approved": True}),
        ("accept", {"decision": "approve", "arguments": _SAME}, {"approved": True}),
        ("accept", {"decision": "deny"}, {"approved": False, "reason": "denied in the MCP client"}),
        (
            "accept",
            {"decision": "edit", "arguments": '{"path": "b.txt"}'},
            {"approved": True, "args": {"path": "b.txt"}},
        ),
    ],
)
def test_an_approval_form_reads_a_clear_decision(action: str, content: Any, data: Any) -> None:
    assert answer_from(APPROVAL, action, content) == {"id": "approval-1", "ok": True, "data": data}


@pytest.mark.parametrize(
    ("action", "content"),
    [
        ("decline", None),
        ("cancel", None),
        (None, None),
        ("accepted", {"decision": "approve"}),
        ("accept", None),
        ("accept", ["approve"]),
        ("accept", {"decision": "APPROVE"}),
        ("accept", {"decision": True}),
        ("accept", {"decision": "approve", "arguments": '{"path": "b.txt"}'}),
        ("accept", {"decision": "edit", "arguments": "[1, 2]"}),
        ("accept", {"decision": "edit", "arguments": 7}),
    ],
)
def test_an_approval_form_refuses_anything_else(action: Any, content: Any) -> None:
    answer = answer_from(APPROVAL, action, content)
    assert answer["ok"] is False
    assert isinstance(answer["data"]["reason"], str)


def test_a_question_form_offers_the_options_and_reads_the_replies() -> None:
    request = {
        "id": "q1",
        "kind": "question",
        "prompt": "Colours?",
        "data": {
            "questions": [
                {"question": "Colours?", "options": ["red", "blue"], "multiple": True},
                {"question": "Shade?", "options": ["dark", "light"]},
            ]
        },
    }
    form = form_for(request, "Agent 'painter'")  # type: ignore[arg-type]
    first = form.schema["properties"]["answer_1"]
    assert first == {
        "title": "Colours?",
        "description": "Colours?",
        "type": "array",
        "items": {"type": "string", "enum": ["red", "blue"]},
    }
    good = answer_from(request, "accept", {"answer_1": ["blue"], "answer_2": "dark"})  # type: ignore[arg-type]
    bad = answer_from(request, "accept", {"answer_1": ["green"], "answer_2": "dark"})  # type: ignore[arg-type]
    assert good == {"id": "q1", "ok": True, "data": {"Colours?": ["blue"], "Shade?": "dark"}}
    assert bad["ok"] is False and "Colours?" in bad["data"]
    assert textwrap.dedent(form.message) == "Agent 'painter' asks:\nColours?"


def test_the_module_exports_little_and_imports_nothing_optional() -> None:
    code = (
        "import sys\n"
        "import agent.mcp_server as served\n"
        "assert served.__all__ == ['INSTALL_HINT', 'ServedAgent', 'serve_mcp'], served.__all__\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')]\n"
        "assert not loaded, loaded\n"
        "assert 'google.genai' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


async def test_a_conversation_is_its_connections_and_the_oldest_is_forgotten_past_the_cap() -> None:
    fake = FakeGemini(["hello there"])
    agent = Agent(client=ClientSettings(api_key="test", http_client=fake.http_client()))
    conversations = Conversations()
    first = await conversations.open("helper", agent, None, "connection-1")
    assert first is not None and first.startswith("helper-")
    await agent.run("hello", session=first)
    assert await conversations.open("helper", agent, first, "connection-1") == first
    assert await conversations.open("helper", agent, first, "connection-2") is None
    assert await conversations.open("other", agent, first, "connection-1") is None
    assert await conversations.open("helper", agent, "helper-made-up", "connection-1") is None
    for _ in range(MAX_CONVERSATIONS):
        await conversations.open("helper", agent, None, "connection-1")
    assert await conversations.open("helper", agent, first, "connection-1") is None
    assert await agent.store.get(first) is None  # forgotten by the store too


async def test_with_a_persistent_store_a_session_id_names_a_stored_conversation(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "chats.db")
    agent = Agent(client=ClientSettings(api_key="test"), store=store)
    conversations = Conversations()
    try:
        assert await conversations.open("helper", agent, "notes", None) == "notes"
        made = await conversations.open("helper", agent, None, "connection-1")
        assert made is not None and made.startswith("helper-")
        assert await conversations.open("helper", agent, made, "connection-2") == made
    finally:
        await store.close()
