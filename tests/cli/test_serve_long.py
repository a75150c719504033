"""``toolnexus-agent serve``: a 70-second agent run against a client whose timeout is 60 seconds.

The served agent's model (the fake) takes 35 seconds per answer, two answers per run; the
three clients run at once (two servers: stdio, and streamable HTTP with two clients), so the
test takes the run's 70 seconds once:

- a 2026-07-28 client with the tasks extension, over stdio and over streamable HTTP, each
  request limited to 60 seconds: the call returns a task at once and every ``tasks/get``
  poll is short, so the run outlives the timeout and its result arrives;
- a handshake-era client (no timeout of its own, as a host that restarts its timeout on
  each progress notification): it gets progress notifications with the run's events, at
  least every 10 seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from agent.testing import FakeGemini, delay, function_call
from tests.cli.conftest import cli_env
from tests.cli.serve_support import TasksClient, connect, http_server, stdio_params, text_of

pytest.importorskip("mcp")

HELPER = """\
---
name: helper
description: Looks up the weather.
tools: [get_weather]
---
You look up the weather.
"""

TOOLS = '''\
def get_weather(city: str) -> str:
    """Today's forecast for a city."""
    return f"sunny in {city}"


TOOLS = [get_weather]
'''

HALF = 35.0
"""Seconds the model takes per answer: two answers make a 70-second run."""
CLIENT_TIMEOUT = 60.0


def _slow_model(body: dict[str, Any]) -> Any:
    """The model: the weather tool, then the answer, each after `HALF` seconds."""
    answered = any("functionResponse" in part for part in body["contents"][-1]["parts"])
    if answered:
        return delay(HALF, "Rome: sunny.")
    return delay(HALF, function_call("get_weather", {"city": "Rome"}))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "helper.md").write_text(HELPER, encoding="utf-8")
    (tmp_path / "slowtools.py").write_text(TOOLS, encoding="utf-8")
    return tmp_path


FLAGS = ("--no-builtins", "--tools", "slowtools:TOOLS", "--agents", "agents")


async def _through_a_task(target: Any, log: Path | None) -> tuple[Any, TasksClient]:
    tasks = TasksClient()
    async with connect(target, era="modern", tasks=tasks, timeout=CLIENT_TIMEOUT, errlog=log) as c:
        result = await c.call_tool("helper", {"task": "Weather in Rome?"})
    return result, tasks


async def _through_progress(url: str) -> tuple[Any, list[str]]:
    said: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        said.append(message or "")

    async with connect(url, era="legacy") as client:
        result = await client.call_tool(
            "helper", {"task": "Weather in Rome?"}, progress_callback=progress
        )
    return result, said


async def test_a_70_second_run_completes_for_a_client_with_a_60_second_timeout(
    workspace: Path,
) -> None:
    fake = FakeGemini(_slow_model)
    with fake.serve() as gemini:
        env = cli_env(gemini)
        stdio = stdio_params(workspace, *FLAGS, env=env)

        async def over_http() -> list[Any]:
            with contextlib.ExitStack() as stack:  # one server, two clients
                starting = http_server(workspace, *FLAGS, env=env)
                url = await asyncio.to_thread(stack.enter_context, starting)
                return await asyncio.gather(_through_a_task(url, None), _through_progress(url))

        (stdio, stdio_tasks), ((http, http_tasks), (legacy, said)) = await asyncio.gather(
            _through_a_task(stdio, workspace / "stdio-stderr.txt"), over_http()
        )
    assert len(fake.requests) == 6
    for result, tasks in ((stdio, stdio_tasks), (http, http_tasks)):
        assert (result.is_error, text_of(result)) == (False, "Rome: sunny.")
        assert len(tasks.created) == 1
        assert tasks.polls[0].startswith("working: running the agent 'helper'")
        assert any("get_weather done" in poll for poll in tasks.polls)
        assert tasks.polls[-1].startswith("completed")
    assert (legacy.is_error, text_of(legacy)) == (False, "Rome: sunny.")
    # A notification on each change and at least every 10 s: over 70 s, no fewer than 6.
    assert len(said) >= 6, said
    assert any("calling get_weather" in message for message in said)
    assert any("get_weather done" in message for message in said)
