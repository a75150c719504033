"""A small MCP server for the tests, written with the `mcp` SDK's low-level server API.

Usage: ``python demo_server.py MODE [ARG]`` where MODE is

- ``stdio``: serve over stdin/stdout;
- ``http``: serve on 127.0.0.1 at a free port, streamable HTTP at ``/mcp`` and SSE at
  ``/sse``; the first stdout line is the base URL; the server exits when its stdin closes;
- ``crash``: write a reason to stderr and exit 3 before speaking MCP;
- ``hang``: never answer (reads stdin until it closes, then exits);
- ``stdio-child PIDFILE``: like ``stdio`` but first spawn a long-sleeping child process and
  write its pid to PIDFILE (to check that closing kills the whole tree).

Tools: ``echo`` (text), ``add`` (structured content), ``fail`` (``isError``), ``raise``
(raises in the server), ``env``
(reads an environment variable), ``cwd`` (the working directory), ``pid``, ``sleep``, ``header``
(a header of the HTTP request carrying the call), ``t.0``..``t.4`` (filler).
The tool list is served two tools per page, so clients must follow ``nextCursor``.
"""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

_OBJ: dict[str, Any] = {"type": "object"}

TOOLS = [
    types.Tool(
        name="echo",
        description="Echo the text back.",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    ),
    types.Tool(
        name="add",
        description="Add two numbers.",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    ),
    types.Tool(name="fail", description="Always fails.", input_schema=_OBJ),
    types.Tool(name="raise", description="Raises inside the server.", input_schema=_OBJ),
    types.Tool(
        name="env",
        description="Read an environment variable.",
        input_schema={"type": "object", "properties": {"name": {"type": "string"}}},
    ),
    types.Tool(name="cwd", description="The working directory.", input_schema=_OBJ),
    types.Tool(name="image", description="A tiny PNG and a WAV.", input_schema=_OBJ),
    types.Tool(name="pid", description="The server's process id.", input_schema=_OBJ),
    types.Tool(
        name="sleep",
        description="Sleep, then answer.",
        input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}},
    ),
    types.Tool(
        name="header",
        description="A header of the HTTP request that carried this call.",
        input_schema={"type": "object", "properties": {"name": {"type": "string"}}},
    ),
    *[types.Tool(name=f"t.{i}", description=f"Filler {i}.", input_schema=_OBJ) for i in range(5)],
]
PAGE = 2


def _text(*parts: str) -> list[types.ContentBlock]:
    return [types.TextContent(text=part) for part in parts]


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    start = int(params.cursor) if params is not None and params.cursor else 0
    end = start + PAGE
    next_cursor = str(end) if end < len(TOOLS) else None
    return types.ListToolsResult(tools=TOOLS[start:end], next_cursor=next_cursor)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "echo":
        return types.CallToolResult(content=_text("echo:", str(args.get("text"))))
    if params.name == "add":
        total = args["a"] + args["b"]
        return types.CallToolResult(content=_text(str(total)), structured_content={"sum": total})
    if params.name == "fail":
        return types.CallToolResult(content=_text("it broke", "badly"), is_error=True)
    if params.name == "raise":
        raise ValueError("server-side boom")
    if params.name == "env":
        return types.CallToolResult(content=_text(os.environ.get(args.get("name", ""), "<unset>")))
    if params.name == "image":
        png = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
        wav = base64.b64encode(b"RIFFfake").decode()
        return types.CallToolResult(
            content=[
                types.TextContent(text="a dot"),
                types.ImageContent(data=png, mime_type="image/png"),
                types.AudioContent(data=wav, mime_type="audio/wav"),
            ]
        )
    if params.name == "cwd":
        return types.CallToolResult(content=_text(os.getcwd()))
    if params.name == "sleep":
        await anyio.sleep(float(args.get("seconds", 0)))
        return types.CallToolResult(content=_text("awake"))
    if params.name == "pid":
        return types.CallToolResult(content=_text(str(os.getpid())))
    if params.name == "header":
        request = getattr(ctx, "request", None)
        value = request.headers.get(args.get("name", "")) if request is not None else None
        return types.CallToolResult(content=_text(str(value)))
    return types.CallToolResult(content=_text(f"filler {params.name}"))


def make_server() -> Server[Any]:
    return Server("demo", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio() -> None:
    server = make_server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http() -> None:
    import uvicorn
    from mcp.server.sse import SseServerTransport
    from starlette.responses import PlainTextResponse
    from starlette.routing import Mount, Route

    server = make_server()
    app = server.streamable_http_app()
    sse = SseServerTransport("/messages/")

    class SseEndpoint:
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            if scope["method"] != "GET":
                await PlainTextResponse("SSE endpoint: GET only", 405)(scope, receive, send)
                return
            async with sse.connect_sse(scope, receive, send) as (read, write):
                await server.run(read, write, server.create_initialization_options())

    app.router.routes += [
        Route("/sse", SseEndpoint()),
        Mount("/messages/", sse.handle_post_message),
    ]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning")
    web = uvicorn.Server(config)

    async def stop_when_stdin_closes() -> None:
        await anyio.to_thread.run_sync(sys.stdin.buffer.read)
        web.should_exit = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(stop_when_stdin_closes)

        async def announce() -> None:
            while not web.started:
                await anyio.sleep(0.01)
            print(f"http://127.0.0.1:{port}", flush=True)

        tg.start_soon(announce)
        await web.serve(sockets=[sock])
        tg.cancel_scope.cancel()


def main() -> None:
    mode = sys.argv[1]
    if mode == "crash":
        sys.stderr.write("demo server: configuration missing, giving up\n")
        sys.exit(3)
    if mode == "hang":
        sys.stdin.buffer.read()
        return
    if mode == "stdio-child":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        with open(sys.argv[2], "w") as handle:
            handle.write(str(child.pid))
        anyio.run(serve_stdio)
        return
    anyio.run(serve_http if mode == "http" else serve_stdio)


if __name__ == "__main__":
    main()
