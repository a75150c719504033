"""Serve a toolkit and agents over MCP, with approval asked of the client.

`serve_mcp` offers the tools of a toolkit (with the JSON Schemas Gemini receives) and any
number of agents, each as one tool that runs the agent on a task, to MCP hosts — gemini-cli,
IDEs, desktop assistants, other agents — over stdio or streamable HTTP. It is what
``toolnexus-agent serve`` runs; `Agent.serve_mcp` serves one agent::

    import asyncio
    import toolnexus as tn
    from agent import Agent, ApprovalPolicy
    from agent.mcp_server import ServedAgent, serve_mcp

    helper = Agent(toolkit=tn.build(), system_prompt="Be brief.")
    asyncio.run(
        serve_mcp(
            tn.build(),
            agents=[ServedAgent("helper", helper, "Answers small questions.")],
            approval=ApprovalPolicy(tools={"write": "ask"}),
        )
    )

What the server does for the client:

- **Approval by elicitation.** A call the approval policy would ask about — a direct call
  judged by ``approval``, or a call an agent's model makes, judged by that agent's policy —
  is put to the client as a form (approve, deny, or edit the arguments). Only an explicit
  approve (or an edit whose arguments fit the tool's schema) runs the tool; a decline, a
  cancel, an unreadable answer, or a client without elicitation refuses it, and the caller
  (or the agent's model) reads why. Questions of the ``question`` tool are asked the same way.
- **Long runs.** An agent call reports what it does as progress notifications (on each
  change, and at least every 10 seconds); a client that declares the MCP tasks extension
  gets a task instead and polls ``tasks/get`` for the result, so no request lasts longer
  than a poll, whatever the run's length.
- **Conversations.** An agent call without ``session_id`` starts a conversation and its
  result says the id; passing it back continues it. In memory (the default) a conversation
  belongs to the connection that started it; with a persistent store (``SqliteStore``)
  ``session_id`` names a stored conversation, from any connection.

Importing this module needs nothing optional; serving needs the ``mcp`` extra. Serving a
toolkit alone never loads the Gemini SDK.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from agent.errors import ConfigurationError

if TYPE_CHECKING:
    from mcp.server.lowlevel.server import Server

    from agent._agent import Agent
    from agent._approval import ApprovalPolicy, Rule
    from toolnexus import Toolkit

__all__ = ["INSTALL_HINT", "ServedAgent", "serve_mcp"]

INSTALL_HINT = "pip install '.[mcp]' from a clone of toolnexus-gemini"
"""How to install the ``mcp`` extra that serving needs."""

_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
"""The hosts a loopback server answers to (``Host``/``Origin``)."""


@dataclass(frozen=True, slots=True)
class ServedAgent:
    """An agent offered as one MCP tool.

    Example::

        ServedAgent("reviewer", reviewer_agent, "Reviews a diff and lists the problems.")
    """

    name: str
    """The tool name clients call it by."""
    agent: Agent
    """The agent: its model, tools, approval policy, limits, typed output and store."""
    description: str = ""
    """When a client's model should hand it a task."""


async def serve_mcp(
    toolkit: Toolkit | None = None,
    *,
    agents: Sequence[ServedAgent] = (),
    approval: ApprovalPolicy | Rule | None = None,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    name: str = "toolnexus-agent",
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``toolkit`` and ``agents`` over MCP until the client leaves (stdio) or Ctrl-C (http).

    Over stdio, stdout carries nothing but the protocol while the server runs (whatever a
    tool prints goes to stderr). Over HTTP the server listens at ``http://HOST:PORT/mcp``,
    bound to this machine by default, and refuses requests whose ``Host`` or ``Origin``
    names another host (the DNS-rebinding guard).

    Args:
        toolkit: The tools offered directly (none by default).
        agents: The agents offered, each as one tool taking ``{"task", "session_id"?}``.
        approval: Judges the direct calls of the toolkit's tools (as `Agent`'s
            ``approval``: a policy or one rule); without it only tools made with
            ``requires_approval`` ask. Agents keep their own policies.
        transport: ``"stdio"`` (the host starts this process) or ``"http"`` (streamable HTTP).
        host: With ``"http"``: the address to bind.
        port: With ``"http"``: the port (``0`` picks a free one).
        name: The server's name in the MCP handshake.
        on_ready: With ``"http"``: called with the URL once the server accepts connections.

    Raises:
        ConfigurationError: Two served tools share a name, an unknown transport, or the
            port cannot be bound.
        ImportError: The ``mcp`` extra is not installed (the message says how to install it).
    """
    from importlib.metadata import version

    from agent._approval import ApprovalPolicy

    service = _service(toolkit, agents, ApprovalPolicy.of(approval))
    server = service.server(name, version("toolnexus-gemini"))
    if transport == "stdio":
        await _stdio(server)
    elif transport == "http":
        await _http(server, host, port, on_ready)
    else:
        raise ConfigurationError(f"transport must be 'stdio' or 'http', not {transport!r}")


def _service(toolkit: Toolkit | None, agents: Sequence[ServedAgent], policy: ApprovalPolicy) -> Any:
    """Return the `McpService` of what is served, refusing clashing names."""
    try:
        from agent._mcp_service import McpService
    except ImportError as exc:
        raise ImportError(f"serving over MCP needs the `mcp` extra: {INSTALL_HINT}") from exc
    from toolnexus import Toolkit

    tools = toolkit if toolkit is not None else Toolkit()
    seen = set(tools.names)
    for served in agents:
        if served.name in seen:
            raise ConfigurationError(f"two served tools are named {served.name!r}")
        seen.add(served.name)
    return McpService(tools, [(a.name, a.description, a.agent) for a in agents], policy)


async def _stdio(server: Server[Any]) -> None:
    """Serve one client over stdin/stdout (the SDK points fd 1 at stderr meanwhile)."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def _security(host: str) -> Any:
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


def _bound(host: str, port: int) -> socket.socket:
    """Return a socket bound to ``host:port``.

    Raises:
        ConfigurationError: The address cannot be bound (in use, not this machine's).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    return sock


async def _http(
    server: Server[Any], host: str, port: int, on_ready: Callable[[str], None] | None
) -> None:
    """Serve streamable HTTP at ``/mcp`` until interrupted."""
    import uvicorn

    app = server.streamable_http_app(host=host, transport_security=_security(host))
    sock = _bound(host, port)
    url = f"http://{_bracketed(host)}:{sock.getsockname()[1]}/mcp"

    class _Announced(uvicorn.Server):
        """Calls ``on_ready`` once the socket accepts connections."""

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if on_ready is not None:
                on_ready(url)

    web = _Announced(uvicorn.Config(app, log_level="warning", lifespan="on"))
    with contextlib.closing(sock):
        await web.serve(sockets=[sock])
