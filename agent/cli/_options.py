"""What the ``toolnexus-agent`` subcommands share: exit codes, flags, toolkit and agent setup.

Parsers only declare flags here; everything heavy (``toolnexus`` built-ins, the SDK) is
imported inside the functions a subcommand calls, so ``toolnexus-agent --help`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import httpx

    from agent._agent import Agent
    from agent._loop import WaitFor
    from agent._result import RunResult
    from agent._store import Store
    from agent.events import RetryEvent
    from agent.testing import FakeGemini
    from toolnexus import Tool, Toolkit

__all__ = [
    "EXIT_BLOCKED",
    "EXIT_FAILED",
    "EXIT_INCOMPLETE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PENDING",
    "EXIT_USAGE",
    "EXIT_CODES_HELP",
    "AgentFactory",
    "CliError",
    "add_agent_flags",
    "agent_log",
    "add_toolkit_flags",
    "build_toolkit",
    "check_toolkit_flags",
    "exit_code",
    "open_agents",
    "open_factory",
    "plain_warnings",
    "read_system",
    "report_fake",
    "retry_note",
]

EXIT_OK = 0
"""The run completed (every task of a batch completed)."""
EXIT_FAILED = 1
"""The model call failed for good, or a batch task did not complete."""
EXIT_USAGE = 2
"""A usage or configuration error: bad flags, no API key, unreadable skills or mcp.json."""
EXIT_PENDING = 3
"""The run is waiting on a human (the ``question`` tool) and no answer was available."""
EXIT_INCOMPLETE = 4
"""A limit ended the run (max turns, repeated calls, max tokens, ...)."""
EXIT_BLOCKED = 5
"""The prompt or the answer was blocked (safety) or a hook vetoed the run."""
EXIT_INTERRUPTED = 130
"""Stopped with Ctrl-C."""

EXIT_CODES_HELP = """\
exit codes:
  0  completed            3  pending (a question is waiting for an answer)
  1  failed (model error) 4  incomplete (a limit such as --max-turns ended the run)
  2  usage/config error   5  blocked (safety block or a hook veto)
  130 interrupted (Ctrl-C)"""

NO_KEY = (
    "toolnexus-agent: no Gemini API key. Set GEMINI_API_KEY (or GOOGLE_API_KEY) in the "
    "environment, for example `export GEMINI_API_KEY=...` with a key from "
    "https://aistudio.google.com/apikey. To try the agent without a key or network, run "
    "`toolnexus-agent demo`, or add `--fake SCENARIO.yaml` to play a scripted model."
)

DEFAULT_MODEL_NAME = "gemini-2.5-flash"
"""``agent.DEFAULT_MODEL``, spelled out so ``--help`` does not import the SDK (a test pins it)."""

_STATUS_CODES = {"completed": EXIT_OK, "pending": EXIT_PENDING, "incomplete": EXIT_INCOMPLETE}


class CliError(Exception):
    """A problem the user fixes on the command line; printed as one message, no traceback."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


def exit_code(result: RunResult) -> int:
    """Return the documented exit code of a run's status."""
    return _STATUS_CODES.get(result.status, EXIT_BLOCKED)


# --------------------------------------------------------------------------- flags


def add_toolkit_flags(parser: argparse.ArgumentParser) -> None:
    """Declare the flags that choose the tools: skills, MCP, built-ins, Python tools."""
    group = parser.add_argument_group("tools")
    group.add_argument(
        "--skills",
        action="append",
        default=[],
        metavar="DIR",
        help="a skills directory (every **/SKILL.md is a skill); repeatable",
    )
    group.add_argument("--mcp", metavar="MCP_JSON", help="connect the MCP servers of this file")
    group.add_argument(
        "--no-builtins", action="store_true", help="leave out the ten built-in tools"
    )
    group.add_argument(
        "--disable",
        action="append",
        default=[],
        metavar="NAME",
        help="leave out the tool NAME (built-in, skill, MCP or --tools); repeatable",
    )
    group.add_argument(
        "--tools",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help=(
            "load Python tools: ATTR is a Tool, a list of them, or a plain function "
            "(wrapped with define_tool); MODULE is importable from the current dir; repeatable"
        ),
    )
    group.add_argument(
        "--root",
        metavar="DIR",
        help="the workspace the file and shell tools are confined to (default: current dir)",
    )


def add_agent_flags(parser: argparse.ArgumentParser, *, fake: bool = True) -> None:
    """Declare the flags of the model and the loop: model, system prompt, turns, fake."""
    group = parser.add_argument_group("model")
    group.add_argument(
        "--model", metavar="NAME", help=f"the Gemini model (default: {DEFAULT_MODEL_NAME})"
    )
    group.add_argument(
        "--system",
        metavar="TEXT|@FILE",
        help="the system prompt, or @FILE to read it from a file",
    )
    group.add_argument(
        "--max-turns",
        type=_positive,
        metavar="N",
        help="stop after N model responses (default: 50)",
    )
    group.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also show the agent's log (retries, session locks) on stderr",
    )
    if fake:
        group.add_argument(
            "--fake",
            metavar="SCENARIO",
            help="play a scripted model from a YAML scenario instead of Gemini (no key, "
            "no network; see examples/scenarios/)",
        )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def read_system(value: str | None) -> str | None:
    """Return the system prompt of ``--system``: the text, or the file named after ``@``."""
    if value is None or not value.startswith("@"):
        return value
    path = Path(value[1:])
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"--system: cannot read {path}: {_reason(exc)}") from None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


# --------------------------------------------------------------------------- toolkit


def _check_skill_dir(path: str) -> None:
    try:
        with os.scandir(path):
            pass
    except OSError as exc:
        raise CliError(
            f"--skills: cannot read the skills directory {path}: {_reason(exc)}"
        ) from None


def load_tools(spec: str) -> list[Tool]:
    """Import ``module:attr`` and return its tools (a Tool, a list, or plain functions)."""
    from toolnexus import Tool, define_tool

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise CliError(f"--tools {spec}: expected MODULE:ATTR, e.g. mytools:forecast")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # the user's module: any error is theirs to see
        raise CliError(f"--tools {spec}: cannot import {module_name}: {exc!r}") from None
    try:
        value: Any = getattr(module, attr)
    except AttributeError:
        raise CliError(f"--tools {spec}: module {module_name} has no attribute {attr!r}") from None
    items = list(value) if isinstance(value, list | tuple) else [value]
    tools: list[Tool] = []
    for item in items:
        if isinstance(item, Tool):
            tools.append(item)
        elif callable(item):
            try:
                tools.append(define_tool(item))
            except Exception as exc:  # a signature define_tool cannot describe
                raise CliError(f"--tools {spec}: cannot make a tool of {item!r}: {exc}") from None
        else:
            raise CliError(f"--tools {spec}: {type(item).__name__} is not a Tool or a function")
    return tools


def _builtins_option(args: argparse.Namespace) -> bool | dict[str, Any]:
    from toolnexus.builtins import BUILTIN_NAMES

    if args.no_builtins:
        return False
    off = {name: False for name in args.disable if name in BUILTIN_NAMES}
    return {"tools": off} if off else True


def _filtered(toolkit: Toolkit, disabled: list[str]) -> Toolkit:
    from toolnexus import Toolkit

    if not any(name in toolkit for name in disabled):
        return toolkit
    keep = [tool for tool in toolkit if tool.name not in disabled]
    skills = toolkit.skills if "skill" not in disabled else ()
    return Toolkit(keep, skills=skills, resources=toolkit.resources)


def _check_disabled(toolkit: Toolkit, disabled: list[str]) -> None:
    from toolnexus.builtins import BUILTIN_NAMES

    unknown = [n for n in disabled if n not in toolkit and n not in BUILTIN_NAMES]
    if unknown:
        raise CliError(
            f"--disable: no tool named {', '.join(map(repr, unknown))}; the tools are "
            f"{', '.join(sorted(set(toolkit.names) | set(BUILTIN_NAMES)))}"
        )


def check_toolkit_flags(args: argparse.Namespace) -> list[Tool]:
    """Check the paths of the toolkit flags and load the ``--tools``; return those tools.

    Call it before the event loop starts (it reads the disk and imports modules).
    """
    for path in args.skills:
        _check_skill_dir(path)
    if args.root is not None and not Path(args.root).is_dir():
        raise CliError(f"--root: {args.root} is not a directory")
    return [tool for spec in args.tools for tool in load_tools(spec)]


async def build_toolkit(args: argparse.Namespace, own: list[Tool]) -> Toolkit:
    """Build the toolkit the flags describe, with ``own`` from `check_toolkit_flags`.

    A bad ``mcp.json`` or an unknown ``--disable`` name becomes a `CliError`.
    """
    import toolnexus as tn

    try:
        toolkit = await tn.build_async(
            skills=args.skills or None,
            builtins=_builtins_option(args),
            tools=own,
            mcp=args.mcp,
            root=args.root,
        )
    except ImportError as exc:
        raise CliError(f"--mcp: {exc}") from None
    except ValueError as exc:  # McpConfigError is a ValueError naming the path and reason
        raise CliError(f"--mcp: {exc}" if args.mcp else str(exc)) from None
    _check_disabled(toolkit, args.disable)
    return _filtered(toolkit, args.disable)


# --------------------------------------------------------------------------- agents


@dataclass
class AgentFactory:
    """Makes agents that share one HTTP client (the real Gemini, or a fake in process)."""

    model: str
    """The model of ``--model`` (or the scenario's, or the default)."""
    http: httpx.AsyncClient
    """The client every agent sends its requests through."""
    api_key: str | None
    """``None`` with the real Gemini (the SDK reads the environment); a dummy for a fake."""
    fake: FakeGemini | None = None
    """The scripted model of ``--fake``."""
    quick_retries: bool = False
    """Retry failed model calls after fractions of a second (a scripted model's errors)."""

    def make(
        self,
        toolkit: Toolkit,
        *,
        model: str | None = None,
        system: str | None = None,
        max_turns: int | None = None,
        wait_for: WaitFor | None = None,
        store: Store | None = None,
    ) -> Agent:
        """Return an `Agent` on the shared client; `ConfigurationError` becomes `CliError`."""
        from agent._agent import Agent
        from agent._retry import RetryPolicy
        from agent.errors import ConfigurationError

        retry = (
            RetryPolicy(attempts=3, initial_backoff=0.1, jitter=0.1) if self.quick_retries else None
        )
        try:
            return Agent(
                model or self.model,
                toolkit,
                system_prompt=system,
                max_turns=max_turns or 50,
                wait_for=wait_for,
                http_client=self.http,
                api_key=self.api_key,
                store=store,
                retry=retry,
            )
        except ConfigurationError as exc:
            raise CliError(f"toolnexus-agent: {exc}") from None


def _has_key() -> bool:
    if os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"):
        return True
    return os.environ.get("GOOGLE_GENAI_USE_VERTEXAI", "").lower() in ("1", "true")


@contextlib.asynccontextmanager
async def open_factory(args: argparse.Namespace) -> AsyncIterator[AgentFactory]:
    """Yield an `AgentFactory` for the model flags; close the HTTP client afterwards."""
    import httpx

    scenario_path: str | None = getattr(args, "fake", None)
    if scenario_path is None:
        if not _has_key():
            raise CliError(NO_KEY)
        async with httpx.AsyncClient() as http:
            yield AgentFactory(args.model or DEFAULT_MODEL_NAME, http, None)
        return
    import yaml

    from agent.testing import ScenarioError, read_scenario

    try:
        scenario = read_scenario(Path(scenario_path))
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"--fake: cannot read {scenario_path}: {_reason(exc)}") from None
    except (ScenarioError, ValueError, yaml.YAMLError) as exc:
        raise CliError(f"--fake: {scenario_path} is not a valid scenario: {exc}") from None
    fake = scenario.fake()
    model = args.model or str(scenario.extra.get("model") or DEFAULT_MODEL_NAME)
    async with fake.http_client() as http:
        yield AgentFactory(model, http, "fake-key-not-a-secret", fake, quick_retries=True)


@contextlib.asynccontextmanager
async def open_agents(
    args: argparse.Namespace, own: list[Tool]
) -> AsyncIterator[tuple[AgentFactory, Toolkit]]:
    """Yield the `AgentFactory` and the toolkit the flags describe; close both afterwards.

    ``own`` are the tools `check_toolkit_flags` loaded. The toolkit (its MCP servers) is
    closed before the factory's HTTP client.
    """
    async with open_factory(args) as factory, await build_toolkit(args, own) as toolkit:
        yield factory, toolkit


def retry_note(retry: RetryEvent, *, waited: bool = False) -> str:
    """Return the line the commands show for a model-call retry (a `RetryEvent`).

    ``waited`` tells it after the fact (a finished batch task) instead of before the wait.
    """
    when = "retried after" if waited else "retrying in"
    return f"(model call failed: {retry.status}; {when} {retry.delay:.1f} s)"


@contextlib.contextmanager
def agent_log(verbose: bool) -> Iterator[None]:
    """Show the ``agent`` logger on stderr at INFO with ``verbose``, else only its errors.

    The commands print their own line for each retry, so the library's warnings would
    say it twice. The logger's level and handlers are restored afterwards.
    """
    import logging

    log = logging.getLogger("agent")
    level = log.level
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    log.setLevel(logging.INFO if verbose else logging.ERROR)
    log.addHandler(handler)
    try:
        with plain_warnings():
            yield
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


@contextlib.contextmanager
def plain_warnings() -> Iterator[None]:
    """Show warnings (a tool left out, a tool name clash) as ``warning: ...`` lines.

    A command-line user needs the message, not the file and line of the library code
    that issued it.
    """
    import warnings

    original = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        (file or sys.stderr).write(f"warning: {message}\n")

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = original


def report_fake(factory: AgentFactory, err: TextIO) -> None:
    """Tell on stderr what a ``--fake`` scenario found wrong (failed expectations, ...)."""
    if factory.fake is not None:
        for failure in factory.fake.failures:
            err.write(f"fake model: {failure}\n")
