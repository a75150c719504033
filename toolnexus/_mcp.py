"""MCP servers as tools, on the official ``mcp`` SDK (the optional ``mcp`` extra).

`connect_mcp` (behind the synchronous `toolnexus.build`) runs every server connection on
one background thread with its own event loop; `connect_mcp_async` (behind
`toolnexus.build_async`) keeps them on the caller's running loop. Either way each server
lives in one task for its whole life, its tools are async callables that forward to that
loop when called from another one, and closing the toolkit stops every server together
with any process it started.

Configuration (``mcp.json`` or the same data as a dict)::

    {"mcpServers": {
        "files": {"command": ["python", "files_server.py"], "env": {"ROOT": "/data"}},
        "search": {"url": "https://mcp.example.com/mcp",
                   "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"},
                   "tools": {"search": true}, "timeout": 10},
        "old": {"command": ["legacy-server"], "disabled": true}
    }}
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

from toolnexus._mcp_config import McpServerStatus, ServerConfig, parse_config
from toolnexus._mcp_server import STOP_GRACE, Server, require_mcp
from toolnexus._registry import DEFAULT_HIDDEN_ENV
from toolnexus._schema import schema_validator
from toolnexus.errors import ArgumentError, ToolError
from toolnexus.tool import Tool, ToolContext, Toolkit, ToolResult, Validator, sanitize

__all__ = ["McpServerStatus", "McpServers", "connect_mcp", "connect_mcp_async", "mcp_status"]

logger = logging.getLogger("toolnexus.mcp")

_T = TypeVar("_T")


def _allowed(allow: Mapping[str, bool], name: str) -> bool:
    if any(allow.values()):
        return allow.get(name, False)
    return allow.get(name, True)


class McpServers:
    """The MCP servers behind a toolkit: their `status` and their shutdown.

    It is the toolkit's resource; ``Toolkit.close()`` / ``aclose()`` (or a ``with`` /
    ``async with`` block) closes it, which stops every server and the processes it
    started. Read the status through `mcp_status`.
    """

    def __init__(
        self,
        servers: list[Server],
        skipped: list[McpServerStatus],
        loop: asyncio.AbstractEventLoop | None,
        thread: threading.Thread | None,
    ) -> None:
        self._servers = servers
        self._skipped = skipped
        self._loop = loop
        self._thread = thread
        self._closed = False
        self._closing: asyncio.Task[None] | None = None
        self.tools = self._make_tools()

    @property
    def status(self) -> tuple[McpServerStatus, ...]:
        """One status per configured server: the started ones, then the skipped ones."""
        return (*(server.status for server in self._servers), *self._skipped)

    def _make_tools(self) -> list[Tool]:
        tools = []
        for server in self._servers:
            if server.session is None:
                continue
            allow = server.config.allow
            names = {remote.name for remote in server.listed}
            for unknown in sorted(set(allow) - names):
                logger.warning(
                    "MCP server %r has no tool %r named in its `tools`",
                    server.config.name,
                    unknown,
                )
            for remote in server.listed:
                if _allowed(allow, remote.name):
                    tools.append(self._tool(server, remote))
            server.exposed = sum(1 for r in server.listed if _allowed(allow, r.name))
        return tools

    def _tool(self, server: Server, remote: Any) -> Tool:
        remote_name: str = remote.name
        name = f"{sanitize(server.config.name)}_{sanitize(remote_name)}"
        timeout = server.config.timeout

        async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            return await self._on_owner_loop(
                lambda: server.call(remote_name, args, shown_as=name), timeout
            )

        schema = dict(remote.input_schema or {"type": "object"})
        return Tool(
            name,
            handler,
            remote.description or getattr(remote, "title", None) or "",
            schema,
            source="mcp",
            validate=_checked_against(schema),
        )

    async def _on_owner_loop(self, make: Callable[[], Awaitable[_T]], wait: float) -> _T:
        loop = self._loop
        if self._closed or loop is None or loop.is_closed():
            raise ToolError("the MCP servers of this toolkit are closed")
        if asyncio.get_running_loop() is loop:
            return await make()
        future = asyncio.run_coroutine_threadsafe(_call(make), loop)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), wait + STOP_GRACE)
        except TimeoutError:
            future.cancel()
            raise ToolError(
                "the MCP server did not answer in time; a toolkit from build_async must be "
                "used on the event loop that built it (use execute_async there)"
            ) from None

    async def _stop_all(self) -> None:
        await asyncio.gather(*(server.stop() for server in self._servers))

    def close(self) -> None:
        """Stop every server from synchronous code. Safe to call twice."""
        if self._closed or self._loop is None:
            self._closed = True
            return
        self._closed = True
        loop = self._loop
        if self._thread is not None:
            _wait(asyncio.run_coroutine_threadsafe(self._stop_all(), loop))
            _wait(asyncio.run_coroutine_threadsafe(loop.shutdown_asyncgens(), loop))
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join()
            loop.close()
        elif _running_loop() is loop:
            # Synchronous code on the owner loop (a plain ``with`` in async code) cannot
            # wait for it: the servers stop as soon as that code yields to the loop.
            self._closing = loop.create_task(self._stop_all())
        elif loop.is_running():
            _wait(asyncio.run_coroutine_threadsafe(self._stop_all(), loop))
        elif not loop.is_closed():
            loop.run_until_complete(self._stop_all())
        else:
            for server in self._servers:
                server.reap()

    async def aclose(self) -> None:
        """Stop every server from async code. Safe to call twice."""
        if self._thread is not None or self._loop is None:
            await asyncio.to_thread(self.close)
            return
        if self._closed:
            return
        self._closed = True
        if asyncio.get_running_loop() is self._loop:
            await self._stop_all()
        else:
            future = asyncio.run_coroutine_threadsafe(self._stop_all(), self._loop)
            await asyncio.wrap_future(future)


def _checked_against(schema: dict[str, Any]) -> Validator:
    """Check arguments against a server's schema like any other tool's, before the call.

    A schema too unusual for the checker (a boolean subschema, say) is left to the server.
    """
    check = schema_validator(schema)

    def validate(args: Any) -> dict[str, Any]:
        try:
            return check(args)
        except ArgumentError:
            raise
        except Exception:  # the schema, not the arguments, is beyond the checker
            logger.debug("MCP input schema not checked locally", exc_info=True)
            return dict(args)

    return validate


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def _call(make: Callable[[], Awaitable[_T]]) -> _T:
    return await make()


def _wait(future: Future[Any]) -> None:
    future.result(timeout=3 * STOP_GRACE)


async def _start(configs: list[ServerConfig]) -> list[Server]:
    servers = [Server(config) for config in configs]
    await asyncio.gather(*(server.start() for server in servers))
    for server in servers:
        if server.session is None:
            logger.warning("MCP server %r failed: %s", server.config.name, server.reason)
    return servers


def connect_mcp(
    source: str | os.PathLike[str] | Mapping[str, Any],
    hidden_env: frozenset[str] = DEFAULT_HIDDEN_ENV,
) -> tuple[list[Tool], McpServers]:
    """Start the servers of an MCP configuration for synchronous use.

    The connections live on a background thread with its own event loop; the tools work
    from `toolnexus.execute`, `toolnexus.execute_async` and any event loop. A server that
    fails is left out of the tools and reported by `mcp_status`; a configuration that
    cannot be read raises `McpConfigError`. Stdio servers do not see the variables in
    ``hidden_env`` (the Gemini API keys) unless their ``env`` entry passes them.

    Example::

        tools, servers = connect_mcp("mcp.json")
        try:
            ...
        finally:
            servers.close()
    """
    configs, skipped = parse_config(source, hidden_env)
    if not configs:
        return [], McpServers([], skipped, None, None)
    require_mcp()
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="toolnexus-mcp", daemon=True)
    thread.start()
    servers = asyncio.run_coroutine_threadsafe(_start(configs), loop).result()
    resource = McpServers(servers, skipped, loop, thread)
    return resource.tools, resource


async def connect_mcp_async(
    source: str | os.PathLike[str] | Mapping[str, Any],
    hidden_env: frozenset[str] = DEFAULT_HIDDEN_ENV,
) -> tuple[list[Tool], McpServers]:
    """Start the servers of an MCP configuration on the running event loop.

    Close the result with ``await servers.aclose()`` on the same loop.

    Example::

        tools, servers = await connect_mcp_async({"mcpServers": {...}})
        try:
            ...
        finally:
            await servers.aclose()
    """
    configs, skipped = parse_config(source, hidden_env)
    if not configs:
        return [], McpServers([], skipped, None, None)
    require_mcp()
    servers = await _start(configs)
    resource = McpServers(servers, skipped, asyncio.get_running_loop(), None)
    return resource.tools, resource


def mcp_status(tk: Toolkit) -> list[McpServerStatus]:
    """Return the status of every MCP server configured for ``tk``.

    Args:
        tk: A toolkit from `build` or `build_async`.

    Returns:
        One `McpServerStatus` per configured server (started ones first, then disabled
        or misconfigured ones); empty when the toolkit has no MCP servers.

    Example::

        for status in toolnexus.mcp_status(tk):
            print(status.name, status.state, status.tools, status.reason)
    """
    return [s for r in tk.resources if isinstance(r, McpServers) for s in r.status]
