"""One probe of ``scripts/bench.py``: the MCP server's overhead per call.

Two servers offer the same toolkit (one quick tool) over stdio, each in a process of its
own: **bare**, the ``mcp`` SDK's low-level server whose ``tools/call`` runs the tool with
``toolnexus.execute_async`` and returns its text (the least any server built on the SDK
does), and **ours**, `agent.mcp_server.serve_mcp` (every call judged by the approval
policy, run as a call of its own, watched by the front door its client speaks). The
official client calls each in turn, interleaved (ABAB), with the handshake protocol
(2025-11-25, what hosts speak today) and with 2026-07-28. Two figures per server: the CPU
time the server process spends per call (read from the server itself before and after the
calls: robust on a busy machine), and the median time of one ``tools/call`` round trip as
the client sees it; each with the ratio ours / bare.

Prints one JSON line. ``python _bench_mcp.py --serve bare|ours`` runs one server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import toolnexus as tn


@tn.define_tool(inline=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tn.define_tool(inline=True)
def cpu() -> float:
    """CPU seconds this server process has used."""
    return time.process_time()


TOOLKIT = tn.toolkit([add, cpu])


async def _serve_bare() -> None:
    import mcp_types as types
    from mcp.server.lowlevel.server import Server
    from mcp.server.stdio import stdio_server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tools = [types.Tool(name=t.name, input_schema=dict(t.input_schema)) for t in TOOLKIT]
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        result = await tn.execute_async(TOOLKIT, params.name, params.arguments)
        content = [types.TextContent(text=result.output)]
        return types.CallToolResult(content=content, is_error=result.is_error)

    server: Server[Any] = Server("bare", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def _serve_ours() -> None:
    from agent.mcp_server import serve_mcp

    await serve_mcp(TOOLKIT)


@contextlib.asynccontextmanager
async def _client(kind: str, era: str) -> AsyncIterator[Any]:
    from mcp.client.client import Client
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=[__file__, "--serve", kind])
    if era == "modern":
        async with Client(params) as client:
            yield client
        return
    async with stdio_client(params) as streams, ClientSession(*streams) as session:
        await session.initialize()
        yield session


async def _measure(era: str, calls: int, warmup: int) -> dict[str, Any]:
    times: dict[str, list[float]] = {"bare": [], "ours": []}
    cpu: dict[str, float] = {}
    async with _client("bare", era) as bare, _client("ours", era) as ours:
        sides = {"bare": bare, "ours": ours}
        for i in range(warmup + calls):
            if i == warmup:
                for kind, side in sides.items():
                    cpu[kind] = -await _cpu(side)
            order = ("bare", "ours") if i % 2 == 0 else ("ours", "bare")
            for kind in order:
                began = time.perf_counter()
                result = await sides[kind].call_tool("add", {"a": 1, "b": 2})
                elapsed = time.perf_counter() - began
                assert not result.is_error and result.content[0].text == "3", result
                if i >= warmup:
                    times[kind].append(elapsed * 1000)
        for kind, side in sides.items():
            cpu[kind] = (cpu[kind] + await _cpu(side)) * 1000 / calls
    bare_ms, ours_ms = statistics.median(times["bare"]), statistics.median(times["ours"])
    return {
        "cpu_ms": cpu,
        "cpu_ratio": cpu["ours"] / cpu["bare"],
        "round_trip_ms": {"bare": bare_ms, "ours": ours_ms},
        "round_trip_ratio": ours_ms / bare_ms,
        "calls": calls,
    }


async def _cpu(side: Any) -> float:
    result = await side.call_tool("cpu", {})
    return float(result.content[0].text)


async def _main(calls: int) -> dict[str, Any]:
    warmup = max(5, calls // 10)
    return {era: await _measure(era, calls, warmup) for era in ("legacy", "modern")}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        asyncio.run(_serve_bare() if sys.argv[2] == "bare" else _serve_ours())
    else:
        print(json.dumps(asyncio.run(_main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))))
