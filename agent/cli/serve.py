"""``toolnexus-agent serve``: offer the toolkit and the agent files as an MCP server.

``tools/list`` is the toolkit the flags build — each tool's name, description and the same
JSON Schema Gemini receives as ``parametersJsonSchema`` — plus one tool per agent file of
``--agents``, taking ``{"task": string, "session_id"?: string}``. The server itself is
`agent.mcp_server.serve_mcp` (see there, and docs/serve.md, for approval by elicitation,
progress and tasks, and conversations); this module turns the flags into its arguments.

Approval: the ``--approval`` policy judges the client's direct calls and the calls of the
served agents' models alike; a call it would ask about is put to the client as a form
(elicitation), and refused when the client cannot be asked.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from typing import TYPE_CHECKING

from agent.cli._approval import MODES, cli_policy
from agent.cli._exits import EXIT_OK, CliError
from agent.cli._logs import agent_log
from agent.cli._options import add_toolkit_flags, port
from agent.cli._toolkit import build_toolkit, check_toolkit_flags

if TYPE_CHECKING:
    from agent import ApprovalPolicy, Store
    from agent.mcp_server import ServedAgent
    from toolnexus import Tool, Toolkit

__all__ = ["add_parser", "command"]

_EPILOG = """\
examples:
  toolnexus-agent serve                              # stdio, the built-in tools
  toolnexus-agent serve --skills ./skills --agents ./agents
  toolnexus-agent serve --agents ./agents --store chats.db   # conversations kept on disk
  toolnexus-agent serve --transport http --port 8765 # http://127.0.0.1:8765/mcp
  toolnexus-agent serve --no-builtins --tools mytools:forecast

approval: with --approval ask (the default) the calls to bash and the file-changing tools
(and tools made with requires_approval) are put to the client as a form: approve, deny, or
edit the arguments; --approval edits lets file changes run, --approval never-ask runs
everything. A client that cannot show forms (no MCP elicitation) gets such calls refused.

agents: a call without session_id starts a conversation, and the result says its
session_id; pass it back to continue. Without --store conversations live in memory, each
with the connection that started it; with --store they are kept in the SQLite file.

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
        type=port,
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
        help="which calls the client is asked to approve: bash, file changes and tools that "
        "require approval (ask, the default); bash and those tools (edits); none (never-ask)",
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
        "--store",
        metavar="PATH",
        help="keep the agents' conversations in this SQLite file (session_id then names a "
        "stored conversation, from any connection); without it they live in memory",
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


def command(args: argparse.Namespace) -> int:
    """Run ``serve`` until the client disconnects (stdio) or Ctrl-C (http)."""
    import mcp.server.lowlevel.server  # noqa: F401  (a missing extra is a usage error now)

    own = check_toolkit_flags(args)
    with agent_log(args.verbose):
        asyncio.run(_serve(args, own))
    return EXIT_OK


async def _serve(args: argparse.Namespace, own: list[Tool]) -> None:
    from agent import SqliteStore
    from agent.errors import ConfigurationError
    from agent.mcp_server import serve_mcp

    async with contextlib.AsyncExitStack() as stack:
        toolkit = await stack.enter_async_context(await build_toolkit(args, own))
        policy = cli_policy(args.approval, toolkit)
        store = SqliteStore(args.store) if args.store else None
        if store is not None:
            stack.push_async_callback(store.close)
        agents = await _agents(args, toolkit, policy, store, stack)
        try:
            await serve_mcp(
                toolkit,
                agents=agents,
                approval=policy,
                transport=args.transport,
                host=args.host,
                port=args.port,
                on_ready=_announce,
            )
        except ConfigurationError as exc:
            raise CliError(f"toolnexus-agent serve: {exc}") from None


def _announce(url: str) -> None:
    """Say the URL on stderr once the server accepts connections (a test waits for it)."""
    sys.stderr.write(f"toolnexus-agent serve: MCP (streamable HTTP) at {url}\n")
    sys.stderr.flush()


async def _agents(
    args: argparse.Namespace,
    toolkit: Toolkit,
    policy: ApprovalPolicy,
    store: Store | None,
    stack: contextlib.AsyncExitStack,
) -> list[ServedAgent]:
    """Load the ``--agents`` files as agents on one client.

    Raises:
        CliError: No API key, or an agent file is invalid (with ``--strict``) or clashes.
    """
    if args.agents is None:
        return []
    from agent import ClientSettings, load_named_agents_async
    from agent.cli._model import open_factory
    from agent.errors import ConfigurationError
    from agent.mcp_server import ServedAgent

    factory = await stack.enter_async_context(open_factory(args))
    try:
        named = await load_named_agents_async(
            args.agents,
            toolkit=toolkit,
            model=factory.model,
            strict=args.strict,
            client=ClientSettings(api_key=factory.api_key, http_client=factory.http),
            approval=policy,
            store=store,
        )
    except ConfigurationError as exc:
        raise CliError(f"--agents: {exc}") from None
    return [ServedAgent(name, agent, description) for name, description, agent in named]
