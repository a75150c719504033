"""One MCP server connection, alive in one task on its owner event loop.

`Server` connects (stdio, streamable HTTP with an SSE fallback, or SSE), lists the
server's tools page by page, forwards calls, reports its status and, when stopped,
kills whatever is left of the process session it started. Every phase is bounded by
the server's timeout and nothing here raises to the caller: a failure becomes the
server's ``reason``. `toolnexus._mcp` puts the servers of a toolkit together.
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
import time
from pathlib import Path
from typing import IO, Any

from toolnexus._mcp_config import McpServerStatus, ServerConfig
from toolnexus._secrets import LOG_FILTER, redact
from toolnexus.errors import ToolError, describe_failure
from toolnexus.tool import ToolResult

__all__ = ["INSTALL_HINT", "STOP_GRACE", "Server", "require_mcp"]

logger = logging.getLogger("toolnexus.mcp")

INSTALL_HINT = "pip install mcp (or, from a clone of toolnexus-gemini: pip install '.[mcp]')"
STOP_GRACE = 10.0
"""Seconds a server gets to stop (and a call past its timeout gets) before it is cut off."""
_MAX_PAGES = 1000
_STDERR_TAIL = 800
_CONNECTION_CLOSED = -32000  # the JSON-RPC code the SDK uses for a closed connection
_KILL_WAIT = 2.0


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


class Server:
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
                await asyncio.wait({self._task}, timeout=STOP_GRACE)
                self.reason = f"timed out after {self.config.timeout:g} s while {phase}"
            self.session = None
            return

    async def stop(self) -> None:
        """Close the connection and stop the server and its processes."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._task is not None and not self._task.done():
            await asyncio.wait({self._task}, timeout=STOP_GRACE)
            if not self._task.done():
                self._task.cancel()
                await asyncio.wait({self._task}, timeout=STOP_GRACE)
        self.reap()
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
            self.reap()

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

    def reap(self) -> None:
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
