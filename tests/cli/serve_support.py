"""Clients of ``toolnexus-agent serve`` for the tests: the official ``mcp`` SDK's, both eras.

- ``legacy``: `ClientSession` with the ``initialize`` handshake (2025-11-25), as gemini-cli,
  desktop assistants and IDEs speak it today; questions come as ``elicitation/create``.
- ``modern``: `mcp.Client`, which negotiates 2026-07-28 with ``server/discover``; questions
  come as ``InputRequiredResult`` rounds the client answers by itself. With ``tasks=True``
  it declares the tasks extension (`TasksClient`, the requester side of the extension
  written on the SDK's public extension API: the SDK ships no tasks support yet).

Both take the same elicitation callback and offer ``call_tool`` / ``list_tools``.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
import pytest
from mcp.client.client import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.cli.conftest import cli_env

TASKS = "io.modelcontextprotocol/tasks"

Elicit = Callable[[Any, types.ElicitRequestFormParams], Awaitable[types.ElicitResult]]


def accept(content: dict[str, Any], seen: list[Any] | None = None) -> Elicit:
    """An elicitation callback that accepts every form with ``content`` (and notes the form)."""

    async def answer(context: Any, params: Any) -> types.ElicitResult:
        if seen is not None:
            seen.append(params)
        return types.ElicitResult(action="accept", content=content)

    return answer


def in_turn(*replies: dict[str, Any], seen: list[Any] | None = None) -> Elicit:
    """An elicitation callback answering each form with the next reply: an action and
    content (``{"action": "decline"}``, ``{"content": {...}}`` accepts)."""
    queue = list(replies)

    async def answer(context: Any, params: Any) -> types.ElicitResult:
        if seen is not None:
            seen.append(params)
        reply = queue.pop(0)
        return types.ElicitResult(
            action=reply.get("action", "accept"), content=reply.get("content")
        )

    return answer


def text_of(result: Any) -> str:
    """The first text block of a tool result (an agent's answer; its session note follows)."""
    return str(result.content[0].text)


def all_text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def stdio_params(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "agent", "serve", *args],
        env=env if env is not None else cli_env(),
        cwd=str(root),
    )


@contextlib.asynccontextmanager
async def connect(
    target: StdioServerParameters | str,
    *,
    era: Literal["legacy", "modern"] = "legacy",
    elicit: Elicit | None = None,
    tasks: TasksClient | None = None,
    timeout: float | None = None,
    errlog: Path | None = None,
) -> AsyncIterator[Any]:
    """Yield a connected client of ``era`` (its ``call_tool`` / ``list_tools`` are the SDK's)."""
    with contextlib.ExitStack() as files:
        log = files.enter_context(errlog.open("a")) if errlog is not None else sys.stderr
        if era == "modern":
            transport: Any = (
                streamable_http_client(target)
                if isinstance(target, str)
                else stdio_client(target, errlog=log)
            )
            extensions = [tasks] if tasks is not None else None
            async with Client(
                transport,
                elicitation_callback=elicit,
                extensions=extensions,
                read_timeout_seconds=timeout,
            ) as client:
                assert client.protocol_version == "2026-07-28"
                yield client
            return
        async with contextlib.AsyncExitStack() as stack:
            if isinstance(target, str):
                streams = await stack.enter_async_context(streamable_http_client(target))
            else:
                streams = await stack.enter_async_context(stdio_client(target, errlog=log))
            session = await stack.enter_async_context(
                ClientSession(
                    streams[0],
                    streams[1],
                    read_timeout_seconds=timeout,
                    elicitation_callback=elicit,
                )
            )
            await session.initialize()
            yield session


@contextlib.contextmanager
def http_server(root: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """Start ``serve --transport http --port 0``; yield its URL; stop it afterwards."""
    command = [sys.executable, "-m", "agent", "serve", "--transport", "http", "--port", "0"]
    process = subprocess.Popen(
        [*command, *args],
        cwd=root,
        env=env if env is not None else cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        seen = []
        for line in process.stderr:  # the server says its URL once it accepts connections
            seen.append(line)
            if "MCP (streamable HTTP) at " in line:
                yield line.rsplit(" ", 1)[1].strip()
                break
        else:
            pytest.fail(f"the server never said its URL: {''.join(seen)}")
    finally:
        process.terminate()
        out, _ = process.communicate(timeout=30)
    assert out == ""


# -- the tasks extension, requester side ------------------------------------------------


class _CreatedTask(types.Result):
    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    poll_interval_ms: int | None = None


class _TaskParams(types.RequestParams):
    task_id: str


class _UpdateParams(types.RequestParams):
    task_id: str
    input_responses: dict[str, Any]


class _GetTask(types.Request[_TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"


class _UpdateTask(types.Request[_UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param = "taskId"


class _Task(types.Result):
    task_id: str
    status: str
    status_message: str | None = None
    result: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None


class TasksClient(ClientExtension):
    """Declares the tasks extension and finishes a task: poll ``tasks/get``, answer its forms.

    Every poll is a request of its own, under the client's timeout; ``polls`` keeps each
    status message seen, ``created`` the task ids.
    """

    identifier = TASKS

    def __init__(self, elicit: Elicit | None = None) -> None:
        self.elicit = elicit
        self.polls: list[str] = []
        self.created: list[str] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=_CreatedTask, resolve=self._finish)]

    async def _finish(self, created: _CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
        self.created.append(created.task_id)
        answered: set[str] = set()
        while True:
            await anyio.sleep((created.poll_interval_ms or 1000) / 1000)
            request = _GetTask(params=_TaskParams(task_id=created.task_id))
            task = await ctx.session.send_request(request, _Task)
            self.polls.append(f"{task.status}: {task.status_message}")
            if task.status == "completed":
                assert task.result is not None
                return types.CallToolResult.model_validate(task.result, by_name=False)
            if task.status != "working" and task.status != "input_required":
                raise RuntimeError(f"task ended {task.status}")
            fresh = {k: v for k, v in (task.input_requests or {}).items() if k not in answered}
            if fresh:
                await self._answer(ctx, created.task_id, fresh)
                answered |= set(fresh)

    async def _answer(self, ctx: ClaimContext, task_id: str, asked: dict[str, Any]) -> None:
        assert self.elicit is not None, "the task asked a question nobody can answer"
        responses = {}
        for key, request in asked.items():
            form = types.ElicitRequestFormParams.model_validate(request["params"], by_name=False)
            reply = await self.elicit(None, form)
            responses[key] = reply.model_dump(by_alias=True, mode="json", exclude_none=True)
        update = _UpdateTask(params=_UpdateParams(task_id=task_id, input_responses=responses))
        await ctx.session.send_request(update, types.EmptyResult)
