"""The MCP server's handlers: ``tools/list``, ``tools/call`` and the tasks extension's methods.

`McpService` holds what is served — the toolkit's tools (`ServedTools`) and the agents
(`AgentTool`) — and routes each ``tools/call`` to the front door its client speaks (see
`agent._mcp_calls`): handshake-era clients are asked inline and get progress notifications;
2026-07-28 clients are asked by ``InputRequiredResult`` rounds, and an agent call of a
client that declares the tasks extension (``io.modelcontextprotocol/tasks``) becomes a task
it polls with ``tasks/get``. The tasks methods answer 2026-07-28 clients only.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agent._mcp_agents import AgentTool, Conversations
from agent._mcp_calls import Calls, ServedCall, deliver, error_result, inline, rounds, snapshot
from agent._mcp_tools import ServedTools

if TYPE_CHECKING:
    from agent._agent import Agent
    from agent._approval import ApprovalPolicy
    from toolnexus import Toolkit

__all__ = ["TASKS_EXTENSION", "McpService"]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
"""The identifier of the MCP tasks extension."""
_MISSING_CAPABILITY = -32021
"""The JSON-RPC code for a request that needs a capability the client did not declare."""


class McpService:
    """What the server offers, and the handlers that offer it.

    Args:
        toolkit: The tools served directly.
        agents: ``(name, description, agent)`` for each agent served as a tool.
        policy: The approval policy of direct calls (agents keep their own).
    """

    def __init__(
        self,
        toolkit: Toolkit,
        agents: Sequence[tuple[str, str, Agent]],
        policy: ApprovalPolicy,
    ) -> None:
        self.tools = ServedTools(toolkit, policy)
        conversations = Conversations()
        self.agents = {
            name: AgentTool(name, description, agent, conversations)
            for name, description, agent in agents
        }
        self.calls = Calls()
        self._declared = [*self.tools.declared(), *(a.declared() for a in self.agents.values())]

    def server(self, name: str, version: str) -> Server[Any]:
        """Return the SDK's low-level server with these handlers."""
        server: Server[Any] = Server(name, version=version, on_list_tools=self.list_tools)
        server.add_request_handler("tools/call", types.CallToolRequestParams, self.call_tool)
        server.add_request_handler("tasks/get", _TaskParams, self.get_task)
        server.add_request_handler("tasks/update", _UpdateParams, self.update_task)
        server.add_request_handler("tasks/cancel", _TaskParams, self.cancel_task)
        server.extensions = {TASKS_EXTENSION: {}}
        return server

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """List the tools, then the agents."""
        return types.ListToolsResult(tools=self._declared)

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> HandlerResult:
        """Run a tool or an agent, through the front door the client speaks."""
        modern = _modern(ctx)
        if modern and params.request_state is not None:
            return await self._resumed(ctx, params)
        call = self._started(ctx, params)
        if modern and params.name in self.agents and _declares(ctx, TASKS_EXTENSION):
            self.calls.keep(call)
            return {**snapshot(call), "resultType": "task"}
        if modern:
            return await rounds(call, ctx.session, self.calls)
        return await inline(call, ctx.session, ctx.request_id)

    def _started(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> ServedCall:
        name, args = params.name, dict(params.arguments or {})
        agent = self.agents.get(name)
        if agent is not None:
            work = functools.partial(agent.run, args, owner=_owner(ctx))
            asker = f"Agent {name!r}"
        else:
            work = functools.partial(self.tools.run, name, args)
            asker = "The MCP client"
        return ServedCall(name, args, asker, work, can_ask=_can_elicit(ctx))

    async def _resumed(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> HandlerResult:
        """Go on with the call a retry answers: the one its ``requestState`` names, same call."""
        call = self.calls.get(params.request_state or "")
        if call is None or call.name != params.name or call.args != (params.arguments or {}):
            return error_result(
                f"This answer belongs to no call of {params.name!r} waiting here (it finished, "
                "expired, or was another call); call the tool again."
            )
        deliver(call, params.input_responses)
        return await rounds(call, ctx.session, self.calls)

    async def get_task(
        self, ctx: ServerRequestContext[Any, Any], params: _TaskParams
    ) -> HandlerResult:
        """``tasks/get``: the task's status, its open question, or its result."""
        return snapshot(self._task(ctx, params.task_id))

    async def update_task(
        self, ctx: ServerRequestContext[Any, Any], params: _UpdateParams
    ) -> HandlerResult:
        """``tasks/update``: answer the task's open question."""
        deliver(self._task(ctx, params.task_id), params.input_responses)
        return {}

    async def cancel_task(
        self, ctx: ServerRequestContext[Any, Any], params: _TaskParams
    ) -> HandlerResult:
        """``tasks/cancel``: stop the task's run."""
        self._task(ctx, params.task_id).task.cancel()
        return {}

    def _task(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> ServedCall:
        """Return the task ``task_id`` of a client that may ask for tasks.

        Raises:
            MCPError: Not a 2026-07-28 client (no such method), the client did not declare
                the extension, or no such task.
        """
        if not _modern(ctx):
            raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found", data=ctx.method)
        if not _declares(ctx, TASKS_EXTENSION):
            required: dict[str, Any] = {
                "requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}
            }
            raise MCPError(
                code=_MISSING_CAPABILITY,
                message="Missing required client capability",
                data=required,
            )
        call = self.calls.get(task_id)
        if call is None:
            raise MCPError(
                code=types.INVALID_PARAMS, message="Failed to retrieve task: Task not found"
            )
        return call


class _TaskParams(types.RequestParams):
    """``tasks/get`` and ``tasks/cancel`` params."""

    task_id: str


class _UpdateParams(types.RequestParams):
    """``tasks/update`` params: the responses, each read as an elicitation result."""

    task_id: str
    input_responses: dict[str, Any]


def _modern(ctx: ServerRequestContext[Any, Any]) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _declares(ctx: ServerRequestContext[Any, Any], extension: str) -> bool:
    """Whether this request's client declared ``extension`` in its capabilities."""
    capabilities = ctx.session.client_capabilities
    return capabilities is not None and extension in (capabilities.extensions or {})


def _can_elicit(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the client answers form elicitations (an empty capability means form)."""
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None:
        return False
    return elicitation.form is not None or elicitation.url is None


def _owner(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """Return the connection asking: its streamable HTTP session, when it has one."""
    headers = getattr(ctx.request, "headers", None)
    owner = headers.get("mcp-session-id") if headers is not None else None
    return owner if isinstance(owner, str) else None
