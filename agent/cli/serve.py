"""``toolnexus-agent serve``: offer the toolkit and the agent files as an MCP server.

``tools/list`` is the toolkit the flags build — each tool's name, description and the same
JSON Schema Gemini receives as ``parametersJsonSchema`` — plus one tool per agent file of
``--agents``, taking ``{"task": string, "session_id"?: string}``. ``tools/call`` runs a tool
through `toolnexus.execute_async` (a failure is an ``isError`` result carrying the message
the model would read) or an agent through its run plan.

Approval: a call the ``--approval`` policy would ask about is refused, never run (asking
the client by MCP elicitation is not implemented yet), both when the client calls the tool
and when a served agent's model does.

Transports: ``stdio`` (the default; stdout carries nothing but the protocol, logs go to
stderr) and ``http`` (streamable HTTP at ``/mcp``, bound to 127.0.0.1 unless ``--host``
says otherwise, refusing requests whose ``Host`` or ``Origin`` header names another host:
the DNS-rebinding guard).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import socket
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agent.cli._approval import MODES, cli_policy
from agent.cli._exits import EXIT_OK, CliError
from agent.cli._logs import agent_log
from agent.cli._options import add_toolkit_flags
from agent.cli._secrets import scrub_text
from agent.cli._toolkit import build_toolkit, check_toolkit_flags

if TYPE_CHECKING:
    import mcp_types
    from mcp.server.lowlevel.server import Server

    from agent import Agent, ApprovalPolicy, RunResult
    from toolnexus import Tool, Toolkit, ToolResult

__all__ = ["NO_ELICITATION", "add_parser", "agent_schema", "command", "served_policy"]

NO_ELICITATION = (
    "this MCP server cannot ask its client for approval yet; start it with "
    "--approval edits or --approval never-ask to let the call run"
)
"""Why a call the approval policy would ask about is refused."""

_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
"""The hosts a loopback server answers to (``Host``/``Origin``)."""

_EPILOG = """\
examples:
  toolnexus-agent serve                              # stdio, the built-in tools
  toolnexus-agent serve --skills ./skills --agents ./agents
  toolnexus-agent serve --transport http --port 8765 # http://127.0.0.1:8765/mcp
  toolnexus-agent serve --no-builtins --tools mytools:forecast

approval: with --approval ask (the default) the calls to bash and the file-changing tools
are refused (so are tools made with requires_approval); --approval edits lets file changes
run, --approval never-ask runs everything. The client cannot be asked yet.

exit code: 0 when the client closes the connection (stdio) or on Ctrl-C (http); 2 for a
usage error."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``serve`` and its flags."""
    parser = commands.add_parser(
        "serve",
        help="serve the tools and the agent files to MCP clients (stdio or HTTP)",
        description=(
            "Offer the toolkit the flags build (the same flags as `run`) as an MCP server:\n"
            "every tool with the JSON Schema Gemini receives, and each agent file of\n"
            "--agents as a tool that runs that agent on a task."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    group = parser.add_argument_group("server")
    group.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (the default: the client starts this command) or streamable HTTP",
    )
    group.add_argument(
        "--port",
        type=_port,
        default=8000,
        metavar="N",
        help="with --transport http: the port (default 8000; 0 picks a free one)",
    )
    group.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="HOST",
        help="with --transport http: the address to bind (default 127.0.0.1, this machine "
        "only); requests must name it (or localhost) in Host and Origin",
    )
    group.add_argument(
        "--approval",
        choices=MODES,
        default="ask",
        help="which calls need approval and are therefore refused: bash, file changes and "
        "tools that require approval (ask, the default); bash and those tools (edits); "
        "none (never-ask)",
    )
    add_toolkit_flags(parser)
    model = parser.add_argument_group("agents")
    model.add_argument(
        "--model",
        metavar="NAME",
        type=_one_model,
        help="the Gemini model of the --agents files that name none (default: agent.DEFAULT_MODEL)",
    )
    model.add_argument(
        "-v", "--verbose", action="store_true", help="also log the agents' retries on stderr"
    )
    parser.set_defaults(command=command, fake=None, builtin_tools=[])


def _one_model(text: str) -> str:
    if "," in text:
        raise argparse.ArgumentTypeError(
            f"serve takes one model, got {text!r}: the agents it serves do not fall back to "
            "another (run, chat, batch and eval take a list)"
        )
    return text


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be between 0 and 65535, got {value}")
    return value


def command(args: argparse.Namespace) -> int:
    """Run ``serve`` until the client disconnects (stdio) or Ctrl-C (http)."""
    import mcp.server.lowlevel.server  # noqa: F401  (a missing extra is a usage error now)

    own = check_toolkit_flags(args)
    with agent_log(args.verbose):
        asyncio.run(_serve(args, own))
    return EXIT_OK


async def _serve(args: argparse.Namespace, own: list[Tool]) -> None:
    async with contextlib.AsyncExitStack() as stack:
        toolkit = await stack.enter_async_context(await build_toolkit(args, own))
        policy = served_policy(args.approval, toolkit)
        agents = await _agents(args, toolkit, policy, stack)
        server = _Served(toolkit, agents, policy).server()
        if args.transport == "stdio":
            await _stdio(server)
        else:
            await _http(server, args.host, args.port)


async def _agents(
    args: argparse.Namespace,
    toolkit: Toolkit,
    policy: ApprovalPolicy,
    stack: contextlib.AsyncExitStack,
) -> dict[str, tuple[str, Agent]]:
    """Load the ``--agents`` files as agents on one client: ``{name: (description, agent)}``.

    Raises:
        CliError: No API key, or an agent file is invalid (with ``--strict``) or clashes.
    """
    if args.agents is None:
        return {}
    from agent import ClientSettings, load_named_agents_async
    from agent.cli._model import open_factory
    from agent.errors import ConfigurationError

    factory = await stack.enter_async_context(open_factory(args))
    try:
        named = await load_named_agents_async(
            args.agents,
            toolkit=toolkit,
            model=factory.model,
            strict=args.strict,
            client=ClientSettings(api_key=factory.api_key, http_client=factory.http),
            approval=policy,
        )
    except ConfigurationError as exc:
        raise CliError(f"--agents: {exc}") from None
    return {name: (description, agent) for name, description, agent in named}


def served_policy(mode: str, toolkit: Toolkit) -> ApprovalPolicy:
    """Return the ``--approval MODE`` policy with every call that would ask refused.

    Nobody can be asked yet (no elicitation), so the documented default applies: deny,
    never run. The same policy judges direct calls and the calls of served agents.
    """
    from agent import ApprovalPolicy, Deny

    policy = cli_policy(mode, toolkit)
    asking = {tool.name: Deny(NO_ELICITATION) for tool in toolkit if policy.rule_for(tool) == "ask"}
    return ApprovalPolicy(tools={**policy.tools, **asking})


def agent_schema() -> dict[str, Any]:
    """Return the input schema of an agent tool: a task, and a session to continue."""
    return {
        "type": "object",
        "properties": {
            "task": {
                "type": "string",
                "description": "The task, with everything the agent needs to know.",
            },
            "session_id": {
                "type": "string",
                "description": "Continue this conversation with the agent (omit for a new one).",
            },
        },
        "required": ["task"],
    }


class _Served:
    """The MCP handlers over one toolkit and its agents."""

    def __init__(
        self, toolkit: Toolkit, agents: dict[str, tuple[str, Agent]], policy: ApprovalPolicy
    ) -> None:
        self.toolkit = toolkit
        self.agents = agents
        self.policy = policy

    def server(self) -> Server[Any]:
        from importlib.metadata import version

        from mcp.server.lowlevel.server import Server

        return Server(
            "toolnexus-agent",
            version=version("toolnexus-gemini"),
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
        )

    def declared(self) -> list[mcp_types.Tool]:
        """Return the tools as MCP declares them: the Gemini declarations, then the agents."""
        import mcp_types as types

        from toolnexus.adapter import json_schema_parameters

        tools = [
            types.Tool(
                name=tool.name,
                description=tool.description or "",
                input_schema=json_schema_parameters(tool.input_schema),
            )
            for tool in self.toolkit
        ]
        tools += [
            types.Tool(name=name, description=description, input_schema=agent_schema())
            for name, (description, _) in self.agents.items()
        ]
        return tools

    async def list_tools(
        self, ctx: Any, params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        import mcp_types as types

        return types.ListToolsResult(tools=self.declared())

    async def call_tool(
        self, ctx: Any, params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult:
        args = params.arguments
        if params.name in self.agents:
            return await self._run_agent(params.name, args)
        refusal = self._refusal(params.name)
        if refusal is not None:
            return _error(refusal)
        import toolnexus as tn

        return _converted(params.name, await tn.execute_async(self.toolkit, params.name, args))

    def _refusal(self, name: str) -> str | None:
        """Why the policy refuses a direct call to ``name`` (``None``: it may run)."""
        from agent import Deny

        tool = self.toolkit.get(name)
        if tool is None:
            return None  # execute_async names the tools there are
        rule = self.policy.rule_for(tool)
        if rule == "allow":
            return None
        # A rule function cannot be judged without a model's call; refusing is the safe side.
        if isinstance(rule, Deny):
            reason = rule.reason
        elif rule == "deny":
            reason = "the approval policy refuses it"
        else:
            reason = NO_ELICITATION
        return f"The call to {name!r} needs approval and was not run: {reason}."

    async def _run_agent(
        self, name: str, args: Mapping[str, Any] | None
    ) -> mcp_types.CallToolResult:
        from agent import SessionError
        from agent.errors import ConfigurationError, RunError

        task = (args or {}).get("task")
        session = (args or {}).get("session_id")
        if not isinstance(task, str) or not task.strip():
            return _error(f"Agent {name!r} needs a `task`: a non-empty string.")
        if session is not None and not isinstance(session, str):
            return _error(f"Agent {name!r}: `session_id` must be a string.")
        _, agent = self.agents[name]
        try:
            result = await agent.plan(task, session=session, name=name).result()
        except RunError as exc:
            return _error(f"Agent {name!r} failed: {scrub_text(str(exc))}")
        except (ConfigurationError, SessionError) as exc:
            return _error(f"Agent {name!r} could not run: {scrub_text(str(exc))}")
        return _agent_outcome(name, result)


def _agent_outcome(name: str, result: RunResult) -> mcp_types.CallToolResult:
    """Return a completed run's final text (and typed output), else why it stopped."""
    import mcp_types as types

    if result.status == "completed":
        structured = _structured(result.output)
        text = result.text if structured is None else json.dumps(structured, ensure_ascii=False)
        return types.CallToolResult(
            content=[types.TextContent(text=text)], structured_content=structured
        )
    if result.status == "pending" and result.pending is not None:
        return _error(
            f"Agent {name!r} stopped to ask {result.pending['prompt']!r}; this server cannot "
            "pass questions on yet."
        )
    detail = result.limit or result.reason or ""
    partial = f" Its last text: {result.text}" if result.text else ""
    return _error(f"Agent {name!r} did not finish ({result.status}: {detail}).{partial}")


def _structured(output: Any) -> dict[str, Any] | None:
    """Return the typed output as a JSON object (as ``structuredContent`` is), if any."""
    if output is None or isinstance(output, str):
        return None
    dump = getattr(output, "model_dump", None)
    value = dump(mode="json") if callable(dump) else output
    if isinstance(value, dict):
        return value
    return {"result": value}


def _converted(name: str, result: ToolResult) -> mcp_types.CallToolResult:
    """Return a tool's result as MCP content: its text, then its images and audio."""
    import mcp_types as types

    if result.pending is not None:
        return _error(
            f"Tool {name!r} waits for an answer ({result.pending['prompt']!r}); this server "
            "cannot pass questions on yet."
        )
    content: list[mcp_types.ContentBlock] = [types.TextContent(text=result.output)]
    for attachment in result.attachments:
        if attachment.data is None:
            continue
        data = base64.b64encode(attachment.data).decode("ascii")
        if attachment.mime_type.startswith("image/"):
            content.append(types.ImageContent(data=data, mime_type=attachment.mime_type))
        elif attachment.mime_type.startswith("audio/"):
            content.append(types.AudioContent(data=data, mime_type=attachment.mime_type))
    return types.CallToolResult(content=content, is_error=result.is_error)


def _error(message: str) -> mcp_types.CallToolResult:
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


async def _stdio(server: Server[Any]) -> None:
    """Serve one client over stdin/stdout (the SDK points fd 1 at stderr meanwhile)."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def security(host: str) -> Any:
    """Return the DNS-rebinding guard: the ``Host`` and ``Origin`` values answered."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = list(dict.fromkeys([*_LOOPBACK, _bracketed(host)]))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:*" for name in hosts],
        allowed_origins=[f"{scheme}://{name}:*" for name in hosts for scheme in ("http", "https")],
    )


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


async def _http(server: Server[Any], host: str, port: int) -> None:
    """Serve streamable HTTP at ``/mcp`` until interrupted; say the URL on stderr."""
    import uvicorn

    app = server.streamable_http_app(host=host, transport_security=security(host))
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise CliError(f"--port: cannot listen on {host}:{port}: {exc.strerror}") from None
    url = f"http://{_bracketed(host)}:{sock.getsockname()[1]}/mcp"

    class _Announced(uvicorn.Server):
        """Says the URL on stderr once the socket accepts connections (a test waits for it)."""

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            sys.stderr.write(f"toolnexus-agent serve: MCP (streamable HTTP) at {url}\n")
            sys.stderr.flush()

    web = _Announced(uvicorn.Config(app, log_level="warning", lifespan="on"))
    try:
        await web.serve(sockets=[sock])
    finally:
        sock.close()
