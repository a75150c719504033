"""``toolnexus-agent web``: watch, steer, replay and fork runs in a browser, on this machine.

A local page (`agent.web`, on Starlette and uvicorn: the ``web`` extra) over the agents the
flags describe — the same flags as ``run`` — and the conversations of ``--store`` (a
SQLite file; in memory without it). It binds 127.0.0.1 and prints the URL to open: the
URL carries the per-launch token that every API request needs, so keep it to yourself.
From another machine, reach it through an SSH tunnel (see ``docs/web.md``).

``--demo`` plays the offline demo (``toolnexus-agent demo``'s scenario behind a fake Gemini,
the real tools in a scratch workspace): no key, no network. ``--fake SCENARIO`` plays a
scenario of your own; each conversation gets a fresh copy of it (a fork at turn k goes on
from the scenario's reply k + 1).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import ipaddress
import secrets
import shutil
import socket
import sys
import tempfile
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.cli._approval import MODES, cli_policy
from agent.cli._exits import EXIT_OK, CliError
from agent.cli._logs import agent_log
from agent.cli._model import AgentFactory, flag_settings, open_factory, with_subagents
from agent.cli._options import (
    add_agent_flags,
    add_toolkit_flags,
    port,
    read_system,
    reason,
    yaml_problem,
)
from agent.cli._toolkit import build_toolkit, check_toolkit_flags

if TYPE_CHECKING:
    from agent import Agent, ModelSettings, Store
    from agent.testing import Scenario
    from agent.web import AgentOptions
    from toolnexus import Tool, Toolkit

__all__ = ["MODELS", "add_parser", "command"]

MODELS = (
    "gemini-2.5-flash",
    "gemini-2.5-pro",
    "gemini-2.5-flash-lite",
    "gemini-3-flash-preview",
    "gemini-3-pro-preview",
)
"""The models the page offers when forking a conversation (beside the command's)."""

_LOCAL = ("127.0.0.1", "localhost", "::1")
_DEMO_FLAGS = ("skills", "mcp", "tools", "agents", "root", "fake", "disable")

_EPILOG = """\
examples:
  toolnexus-agent web --demo                         # offline: the demo scenario, no key
  toolnexus-agent web --store runs.db --skills ./skills
  cd examples && toolnexus-agent web --fake scenarios/weather.yaml --tools weather_tools:TOOLS
  ssh -L 8765:127.0.0.1:8765 server                  # then open the printed URL here

The page binds 127.0.0.1 (this machine only) and answers only requests that name this
machine in Host (and their own page in Origin); its API needs the token of the printed URL.
--approval ask (the default) makes bash and file changes wait for your decision on the page.

exit code: 0 on Ctrl-C, 2 for a usage error."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``web`` and its flags."""
    parser = commands.add_parser(
        "web",
        help="watch, steer, replay and fork runs in your browser (a local page)",
        description=(
            "Serve a local page to run the agent from a prompt and watch it work: tool calls\n"
            "as they happen, approvals answered from the browser, the trace of every run,\n"
            "replays through the fake Gemini, forks at any turn, and eval reports."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    page = parser.add_argument_group("page")
    page.add_argument(
        "--port",
        type=port,
        default=8765,
        metavar="N",
        help="the port (default 8765; 0 picks a free one)",
    )
    page.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="ADDR",
        help="the address to bind (default 127.0.0.1, this machine only; prefer an SSH "
        "tunnel to reach it from elsewhere)",
    )
    page.add_argument(
        "--store",
        metavar="FILE",
        help="a SQLite file that keeps the conversations (default: in memory, gone at exit)",
    )
    page.add_argument(
        "--demo",
        action="store_true",
        help="play the offline demo: its scenario behind a fake Gemini, the real tools in a "
        "scratch workspace (no key, no network)",
    )
    page.add_argument("--open", action="store_true", help="open the page in a browser")
    add_toolkit_flags(parser)
    add_agent_flags(parser)
    parser.add_argument(
        "--approval",
        choices=MODES,
        default="ask",
        help="ask before bash, file changes and tools that require approval (ask, the "
        "default); let file changes through (edits); or never ask (never-ask); the page "
        "shows each call that asks, to approve, deny or edit",
    )
    parser.set_defaults(command=command)


def command(args: argparse.Namespace) -> int:
    """Serve the page until Ctrl-C."""
    import starlette  # noqa: F401  (a missing extra is a usage error now)
    import uvicorn  # noqa: F401

    if args.demo:
        given = [f"--{name}" for name in _DEMO_FLAGS if getattr(args, name) not in (None, [])]
        if given:
            raise CliError(
                f"web --demo plays its own workspace and scenario; leave out {', '.join(given)}"
            )
    _check_host(args.host)
    own = [] if args.demo else check_toolkit_flags(args)
    system = read_system(args.system)
    with agent_log(args.verbose):
        asyncio.run(_main(args, own, system))
    return EXIT_OK


def _check_host(host: str) -> None:
    """Warn when the page would be reachable from other machines."""
    name = host.strip("[]")
    if name in _LOCAL:
        return
    try:
        loopback = ipaddress.ip_address(name).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        sys.stderr.write(
            f"toolnexus-agent web: warning: binding {host} lets other machines reach the page "
            "(over plain HTTP); an SSH tunnel to 127.0.0.1 is the safe way (docs/web.md)\n"
        )


async def _main(args: argparse.Namespace, own: list[Tool], system: str | None) -> None:
    from agent.web import Conversations, PageSettings, create_app

    async with contextlib.AsyncExitStack() as stack:
        setup = await _Setup.open(args, own, system, stack)
        conversations = Conversations(setup.store, setup.make)
        stack.push_async_callback(conversations.aclose)
        token = secrets.token_urlsafe(24)
        settings = PageSettings(
            token=token,
            model=setup.model,
            tools=tuple(sorted(setup.tool_names)),
            prompt=setup.prompt,
            demo=args.demo,
            scripted=setup.scenario is not None,
            models=MODELS,
            store=args.store or "memory",
            hosts=(*_LOCAL, args.host),
            eval_command=_eval_command(args),
        )
        await _serve(create_app(conversations, settings), args, token)


@dataclasses.dataclass
class _Setup:
    """What every conversation's agent is made from."""

    args: argparse.Namespace
    system: str | None
    store: Store
    toolkit: Toolkit
    model: str
    prompt: str = ""
    scenario: Path | None = None
    output_type: Any = None
    shared: AgentFactory | None = None
    stack: contextlib.AsyncExitStack | None = None
    helpers: dict[int, Toolkit] = dataclasses.field(default_factory=dict)

    @classmethod
    async def open(
        cls,
        args: argparse.Namespace,
        own: list[Tool],
        system: str | None,
        stack: contextlib.AsyncExitStack,
    ) -> _Setup:
        """Set up the store, the toolkit and the model (the demo's, a scenario, or Gemini)."""
        from agent import DEFAULT_MODEL, MemoryStore, SqliteStore

        store: Store = SqliteStore(args.store) if args.store else MemoryStore()
        if isinstance(store, SqliteStore):
            stack.push_async_callback(store.close)
        if args.demo:
            return await cls._demo(args, store, stack)
        toolkit = await stack.enter_async_context(await build_toolkit(args, own))
        if args.fake is not None:
            path = Path(args.fake)
            scenario = _read_scenario(path)
            model = args.model or str(scenario.extra.get("model") or DEFAULT_MODEL)
            setup = cls(args, system, store, toolkit, model, scenario.prompt or "", path)
        else:
            shared = await stack.enter_async_context(open_factory(args))
            setup = cls(args, system, store, toolkit, shared.model, shared=shared)
        setup.stack = stack
        return setup

    @classmethod
    async def _demo(
        cls, args: argparse.Namespace, store: Store, stack: contextlib.AsyncExitStack
    ) -> _Setup:
        import toolnexus as tn
        from agent.cli.demo import demo_data

        workspace = Path(tempfile.mkdtemp(prefix="toolnexus-web-demo-"))
        stack.callback(shutil.rmtree, workspace, ignore_errors=True)
        data = stack.enter_context(demo_data())
        shutil.copytree(data / "skills", workspace / "skills")
        scenario = _read_scenario(data / "demo.yaml")
        # The commands run are the scenario's own, in a throwaway folder (as in `demo`).
        toolkit = tn.build(
            skills=str(workspace / "skills"), root=str(workspace), isolate_shell=False
        )
        model = args.model or str(scenario.extra.get("model") or "gemini-3-flash-preview")
        setup = cls(args, None, store, toolkit, model, scenario.prompt or "", data / "demo.yaml")
        setup.output_type = scenario.extra.get("output_schema")
        setup.stack = stack
        return setup

    @property
    def tool_names(self) -> list[str]:
        names = list(self.toolkit.names)
        return [*names, "reviewer"] if self.args.demo else names

    async def make(self, options: AgentOptions) -> Agent:
        """Make the agent of one conversation (a scripted model gets a fresh fake)."""
        factory = await self._factory(options.turns_kept)
        toolkit = await self._tools(factory)
        settings = _settings(flag_settings(self.args), options.temperature)
        return factory.make(
            toolkit,
            model=options.model or factory.model,
            system=self.system,
            max_turns=self.args.max_turns,
            store=self.store,
            approval=cli_policy(self.args.approval, toolkit),
            output_type=self.output_type,
            settings=settings,
        )

    async def _factory(self, skip: int) -> AgentFactory:
        if self.shared is not None:
            return self.shared
        assert self.scenario is not None and self.stack is not None
        scenario = _read_scenario(self.scenario)
        fake = dataclasses.replace(scenario, turns=scenario.turns[skip:]).fake()
        http = await self.stack.enter_async_context(fake.http_client())
        builtin = tuple(getattr(self.args, "builtin_tools", None) or ())
        settings = flag_settings(self.args)
        return AgentFactory(self.model, http, "fake-key-not-a-secret", fake, builtin, settings)

    async def _tools(self, factory: AgentFactory) -> Toolkit:
        """Return the toolkit with the sub-agents (``--agents``, the demo's reviewer) on it."""
        found = self.helpers.get(id(factory))
        if found is not None:
            return found
        if self.args.demo:
            toolkit = _with_reviewer(self.toolkit, factory)
        else:
            toolkit = await with_subagents(self.args, factory, self.toolkit)
        self.helpers[id(factory)] = toolkit
        return toolkit


def _with_reviewer(toolkit: Toolkit, factory: AgentFactory) -> Toolkit:
    """Return the demo's toolkit with its ``reviewer`` sub-agent, as `demo` builds it."""
    import toolnexus as tn
    from agent.cli.demo import REVIEWER_PROMPT, REVIEWER_TOOLS

    reading = tn.toolkit(tool for tool in toolkit if tool.name in REVIEWER_TOOLS)
    reviewer = factory.make(reading, system=REVIEWER_PROMPT)
    review = reviewer.as_tool(
        name="reviewer", description="Reviews a file before it is sent; give it the file's path."
    )
    return tn.Toolkit([*toolkit, review], skills=toolkit.skills, resources=toolkit.resources)


def _settings(base: ModelSettings | None, temperature: float | None) -> ModelSettings | None:
    if temperature is None:
        return base
    from agent import ModelSettings

    return dataclasses.replace(base or ModelSettings(), temperature=temperature)


def _read_scenario(path: Path) -> Scenario:
    import yaml

    from agent.testing import ScenarioError, read_scenario

    try:
        return read_scenario(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"--fake: cannot read {path}: {reason(exc)}") from None
    except (yaml.YAMLError, RecursionError) as exc:
        raise CliError(f"--fake: {yaml_problem(path, exc)}") from None
    except (ScenarioError, ValueError) as exc:
        raise CliError(f"--fake: {path} is not a valid scenario: {exc}") from None


def _eval_command(args: argparse.Namespace) -> tuple[str, ...]:
    """Return ``toolnexus-agent eval`` with the page's tool flags (the page adds the file)."""
    command = [sys.executable, "-m", "agent", "eval"]
    for flag in ("skills", "tools", "disable"):
        for value in getattr(args, flag) or []:
            command += [f"--{flag}", value]
    for flag in ("mcp", "agents", "root", "model"):
        value = getattr(args, flag)
        if value is not None and not args.demo:
            command += [f"--{flag}", value]
    if args.no_builtins:
        command.append("--no-builtins")
    return tuple(command)


async def _serve(app: Any, args: argparse.Namespace, token: str) -> None:
    """Serve ``app`` until interrupted; say the URL (with its token) on stderr."""
    import uvicorn

    host = args.host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, args.port))
    except OSError as exc:
        sock.close()
        raise CliError(
            f"--port: cannot listen on {args.host}:{args.port}: {exc.strerror}"
        ) from None
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{sock.getsockname()[1]}/#token={token}"
    opening = args.open

    class _Announced(uvicorn.Server):
        """Says the URL once the socket accepts connections (a test waits for the line)."""

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            sys.stderr.write(f"toolnexus-agent web: open {url}\n")
            sys.stderr.write("  (the URL holds this launch's token: keep it to yourself)\n")
            sys.stderr.flush()
            if opening:
                webbrowser.open(url)

    server = _Announced(uvicorn.Config(app, log_level="warning", lifespan="off"))
    try:
        await server.serve(sockets=[sock])
    finally:
        sock.close()
