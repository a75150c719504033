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
import contextlib
import json
import logging
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import IO, Any, TypeVar

from toolnexus._mcp_config import McpServerStatus, ServerConfig, parse_config
from toolnexus._secrets import LOG_FILTER, redact
from toolnexus.errors import ToolError, describe_failure
from toolnexus.tool import Tool, ToolContext, Toolkit, ToolResult, sanitize

__all__ = [
    "McpServerStatus",
    "McpServers",
    "connect_mcp",
    "connect_mcp_async",
    "mcp_status",
]

logger = logging.getLogger("toolnexus.mcp")

INSTALL_HINT = "pip install 'toolnexus-gemini[mcp]'"
_STOP_GRACE = 10.0
_MAX_PAGES = 1000
_STDERR_TAIL = 800
_CONNECTION_CLOSED = -32000  # the JSON-RPC code the SDK uses for a closed connection
_KILL_WAIT = 2.0

_T = TypeVar("_T")


def require_mcp() -> None:
    """Raise an ImportError that says how to install the ``mcp`` extra when it is missing."""
    try:
        import mcp.client.session
        import mcp.client.sse
        import mcp.client.stdio
        import mcp.client.streamable_http  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"MCP servers need the optional `mcp` package: {INSTALL_HINT}") from exc


def _unwrap(exc: BaseException) -> BaseException:
    """Return the one exception inside (nested) groups of one, as SDK task groups raise it."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    exc = _unwrap(exc)
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    text = str(exc)
    if isinstance(exc, ToolError) or type(exc).__name__ == "MCPError":
        return text or "MCP error"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _content_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind}: {block.mime_type}]"
    if kind == "resource":
        inner = block.resource
        return str(inner.text) if hasattr(inner, "text") else f"[resource: {inner.uri}]"
    if kind == "resource_link":
        return f"[resource: {block.uri}]"
    return f"[{kind or 'unknown'} content]"


def _allowed(allow: Mapping[str, bool], name: str) -> bool:
    if any(allow.values()):
        return allow.get(name, False)
    return allow.get(name, True)


class _Server:
    """One server connection, alive inside one task on its owner loop."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.session: Any = None
        self.listed: list[Any] = []
        self.error: BaseException | None = None
        self.reason = ""
        self.pid: int | None = None
        self._process: Any = None
        self.ever_connected = False
        self.exposed = 0
        self._errlog: IO[str] | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # -- lifecycle (runs on the owner loop) ---------------------------------------------

    async def start(self) -> None:
        """Connect and list tools, each phase bounded by the timeout; never raises."""
        LOG_FILTER.add(self.config.secrets)
        loop = asyncio.get_running_loop()
        connected: asyncio.Future[None] = loop.create_future()
        listed: asyncio.Future[None] = loop.create_future()
        self._task = asyncio.create_task(self._run(connected, listed))
        for phase, waiter in (("connecting", connected), ("listing tools", listed)):
            await asyncio.wait(
                {waiter, self._task},
                timeout=self.config.timeout,
                return_when=asyncio.FIRST_COMPLETED,
            )
            if waiter.done():
                continue
            if self._task.done():
                self.reason = self._failure(f"failed while {phase}")
            else:
                self._task.cancel()
                await asyncio.wait({self._task}, timeout=_STOP_GRACE)
                self.reason = f"timed out after {self.config.timeout:g} s while {phase}"
            self.session = None
            return

    async def stop(self) -> None:
        """Close the connection and stop the server and its processes."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._task is not None and not self._task.done():
            await asyncio.wait({self._task}, timeout=_STOP_GRACE)
            if not self._task.done():
                self._task.cancel()
                await asyncio.wait({self._task}, timeout=_STOP_GRACE)
        self._reap()
        LOG_FILTER.remove(self.config.secrets)

    async def _run(self, connected: asyncio.Future[None], listed: asyncio.Future[None]) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                session = await self._open(stack)
                connected.set_result(None)
                self.listed = await self._list(session)
                self.session = session
                self.ever_connected = True
                listed.set_result(None)
                await self._stop.wait()
        except Exception as exc:
            self.error = exc
            if self.ever_connected:
                self.reason = self._failure("connection lost")
                logger.warning("MCP server %r: %s", self.config.name, self.reason)
        finally:
            self.session = None
            self._reap()

    async def _open(self, stack: contextlib.AsyncExitStack) -> Any:
        if self.config.transport == "stdio":
            return await self._session(stack, await self._open_stdio(stack))
        if self.config.transport == "sse":
            return await self._session(stack, await self._open_sse(stack))
        return await self._open_http(stack)

    async def _session(self, stack: contextlib.AsyncExitStack, streams: Any) -> Any:
        from mcp.client.session import ClientSession

        session = await stack.enter_async_context(ClientSession(*streams))
        await session.initialize()
        return session

    async def _open_stdio(self, stack: contextlib.AsyncExitStack) -> Any:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        command = self.config.command
        params = StdioServerParameters(
            command=command[0], args=command[1:], env=self.config.env, cwd=self.config.cwd
        )
        self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        manager = stdio_client(params, errlog=self._errlog)
        streams = await stack.enter_async_context(manager)
        # The SDK keeps the process in the context manager's frame; its pid lets closing
        # sweep up descendants that outlive the server.
        frame = getattr(getattr(manager, "gen", None), "ag_frame", None)
        process = frame.f_locals.get("process") if frame is not None else None
        self.pid = getattr(process, "pid", None)
        self._process = process
        return streams

    def _http_client(self) -> Any:
        import httpx2

        timeout = httpx2.Timeout(self.config.timeout, read=300.0)
        return httpx2.AsyncClient(headers=self.config.headers, timeout=timeout)

    async def _open_http(self, stack: contextlib.AsyncExitStack) -> Any:
        """Streamable HTTP, falling back to SSE when the server does not speak it."""
        from mcp.client.streamable_http import streamable_http_client

        try:
            async with contextlib.AsyncExitStack() as attempt:
                client = await attempt.enter_async_context(self._http_client())
                streams = await attempt.enter_async_context(
                    streamable_http_client(self.config.url, http_client=client)
                )
                session = await self._session(attempt, streams)
                stack.push_async_exit(attempt.pop_all())
                return session
        except Exception as first:
            logger.debug("MCP server %r: streamable HTTP failed, trying SSE", self.config.name)
            try:
                session = await self._session(stack, await self._open_sse(stack))
            except Exception as second:
                raise ToolError(
                    f"streamable HTTP: {_describe(first)}; SSE fallback: {_describe(second)}"
                ) from None
            self.config.transport = "sse"
            return session

    async def _open_sse(self, stack: contextlib.AsyncExitStack) -> Any:
        from mcp.client.sse import sse_client

        return await stack.enter_async_context(
            sse_client(self.config.url, headers=self.config.headers, timeout=self.config.timeout)
        )

    async def _list(self, session: Any) -> list[Any]:
        from mcp_types import PaginatedRequestParams

        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            result = await session.list_tools(params=params)
            tools += result.tools
            cursor = result.next_cursor
            if not cursor:
                return tools
        raise RuntimeError(f"the tool list did not end after {_MAX_PAGES} pages")

    def _failure(self, what: str) -> str:
        detail = _describe(self.error) if self.error is not None else "the server stopped"
        stderr = self._stderr_tail()
        text = f"{what}: {detail}" + (f"; server stderr: {stderr}" if stderr else "")
        return redact(text, self.config.secrets)

    def _stderr_tail(self) -> str:
        log = self._errlog
        if log is None or log.closed:
            return ""
        with contextlib.suppress(OSError, ValueError):
            log.flush()
            log.seek(0)
            return log.read()[-_STDERR_TAIL:].strip()
        return ""

    def _reap(self) -> None:
        """Kill whatever is left of the server's process session (POSIX)."""
        pid, self.pid = self.pid, None
        if pid is not None and sys.platform != "win32":
            _kill_session(pid)
        if self._errlog is not None and self._task is not None and self._task.done():
            self._errlog.close()

    # -- calls --------------------------------------------------------------------------

    async def call(self, tool: str, args: dict[str, Any], shown_as: str) -> ToolResult:
        """Call ``tool`` on the server and turn its result into a `ToolResult`.

        ``shown_as`` is the tool's name in the toolkit, used in the failure message.
        """
        name = self.config.name
        session = self.session
        if session is None:
            why = f": {self.reason}" if self.reason else ""
            raise ToolError(f"MCP server {name!r} is not connected{why}")
        try:
            result = await session.call_tool(tool, args, read_timeout_seconds=self.config.timeout)
        except Exception as exc:
            if getattr(exc, "code", None) == _CONNECTION_CLOSED:
                self._lost(exc)
            message = describe_failure(shown_as, _unwrap(exc))
            raise ToolError(redact(message, self.config.secrets)) from None
        text = "\n".join(_content_text(block) for block in result.content)
        if result.is_error:
            raise ToolError(redact(text or f"MCP tool {tool!r} failed", self.config.secrets))
        if result.structured_content is not None:
            text = json.dumps(result.structured_content, ensure_ascii=False)
        return ToolResult(redact(text, self.config.secrets), metadata={"mcp_server": name})

    def _lost(self, exc: BaseException) -> None:
        """Mark a connection that broke mid-session (the server died or hung up)."""
        if self.session is not None:
            self.error = exc
            self.session = None
            self.reason = self._failure("connection lost")
            logger.warning("MCP server %r: %s", self.config.name, self.reason)

    @property
    def status(self) -> McpServerStatus:
        """The server's current status."""
        returncode = getattr(self._process, "returncode", None)
        if self.session is not None and returncode is not None and not self._stop.is_set():
            self._lost(ToolError(f"the server process exited with status {returncode}"))
        if self.session is not None:
            return McpServerStatus(
                self.config.name, self.config.transport, "connected", "", self.exposed
            )
        reason = self.reason or ("closed" if self._stop.is_set() else "not connected")
        return McpServerStatus(self.config.name, self.config.transport, "failed", reason)


def _session_members(pid: int) -> list[int]:
    """Pids of live processes in the session ``pid`` led (Linux ``/proc``; else empty)."""
    members: list[int] = []
    proc = Path("/proc")
    if not proc.is_dir():
        return members
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            if fields[0] != "Z" and int(fields[3]) == pid:
                members.append(int(entry.name))
    return members


def _kill_session(pid: int) -> None:
    """SIGKILL the process group and session ``pid`` led; wait (briefly) until they die."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + _KILL_WAIT
    while members := _session_members(pid):
        for member in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(member, signal.SIGKILL)
        if time.monotonic() > deadline:
            logger.warning("processes %s of an MCP server survived SIGKILL", members)
            return
        time.sleep(0.005)


class McpServers:
    """The MCP servers behind a toolkit: their `status` and their shutdown.

    It is the toolkit's resource; ``Toolkit.close()`` / ``aclose()`` (or a ``with`` /
    ``async with`` block) closes it, which stops every server and the processes it
    started. Read the status through `mcp_status`.
    """

    def __init__(
        self,
        servers: list[_Server],
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

    def _tool(self, server: _Server, remote: Any) -> Tool:
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
        )

    async def _on_owner_loop(self, make: Callable[[], Awaitable[_T]], wait: float) -> _T:
        loop = self._loop
        if self._closed or loop is None or loop.is_closed():
            raise ToolError("the MCP servers of this toolkit are closed")
        if asyncio.get_running_loop() is loop:
            return await make()
        future = asyncio.run_coroutine_threadsafe(_call(make), loop)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), wait + _STOP_GRACE)
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
                server._reap()

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


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def _call(make: Callable[[], Awaitable[_T]]) -> _T:
    return await make()


def _wait(future: Future[Any]) -> None:
    future.result(timeout=3 * _STOP_GRACE)


async def _start(configs: list[ServerConfig]) -> list[_Server]:
    servers = [_Server(config) for config in configs]
    await asyncio.gather(*(server.start() for server in servers))
    for server in servers:
        if server.session is None:
            logger.warning("MCP server %r failed: %s", server.config.name, server.reason)
    return servers


def connect_mcp(
    source: str | os.PathLike[str] | Mapping[str, Any],
) -> tuple[list[Tool], McpServers]:
    """Start the servers of an MCP configuration for synchronous use.

    The connections live on a background thread with its own event loop; the tools work
    from `toolnexus.execute`, `toolnexus.execute_async` and any event loop. A server that
    fails is left out of the tools and reported by `mcp_status`; a configuration that
    cannot be read raises `McpConfigError`.

    Example::

        tools, servers = connect_mcp("mcp.json")
        try:
            ...
        finally:
            servers.close()
    """
    configs, skipped = parse_config(source)
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
    configs, skipped = parse_config(source)
    if not configs:
        return [], McpServers([], skipped, None, None)
    require_mcp()
    servers = await _start(configs)
    resource = McpServers(servers, skipped, asyncio.get_running_loop(), None)
    return resource.tools, resource


def mcp_status(tk: Toolkit) -> list[McpServerStatus]:
    """Return the status of every MCP server configured for ``tk`` (empty without MCP).

    Example::

        for status in toolnexus.mcp_status(tk):
            print(status.name, status.state, status.tools, status.reason)
    """
    return [s for r in tk.resources if isinstance(r, McpServers) for s in r.status]
