"""The toolkit the tool flags describe (``--skills``, ``--mcp``, ``--tools``, ``--disable``)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.cli._exits import CliError
from agent.cli._options import reason

if TYPE_CHECKING:
    from agent.cli._model import AgentFactory
    from toolnexus import Tool, Toolkit

__all__ = [
    "build_toolkit",
    "check_agent_files",
    "check_tool_mix_flags",
    "check_toolkit_flags",
    "import_attr",
    "load_tools",
]


def check_toolkit_flags(args: argparse.Namespace) -> list[Tool]:
    """Check the paths of the tool flags and load the ``--tools``; return those tools.

    Call it before the event loop starts: it reads the disk and imports modules.

    Raises:
        CliError: A skills directory or ``--root`` is unusable, a ``--tools`` is bad, the
            ``--agents`` folder is missing, or (with ``--strict``) one of its files cannot
            be used.
    """
    check_agent_files(args)
    for path in args.skills:
        try:
            with os.scandir(path):
                pass
        except OSError as exc:
            raise CliError(
                f"--skills: cannot read the skills directory {path}: {reason(exc)}"
            ) from None
    if args.root is not None and not Path(args.root).is_dir():
        raise CliError(f"--root: {args.root} is not a directory")
    return [tool for spec in args.tools for tool in load_tools(spec)]


def check_agent_files(args: argparse.Namespace) -> None:
    """Read the ``--agents`` files before the event loop starts; refuse a bad one with --strict.

    Without ``--strict`` a file that cannot be used is skipped with a warning when the
    agents are loaded.

    Raises:
        CliError: The folder is missing, or ``--strict`` and a file cannot be used.
    """
    directory = getattr(args, "agents", None)
    if directory is None:
        return
    from agent import list_agent_files
    from agent.errors import ConfigurationError

    try:
        _, problems = list_agent_files(directory)
    except ConfigurationError as exc:
        raise CliError(f"--agents: {exc}") from None
    if problems and getattr(args, "strict", False):
        raise CliError(f"--agents: {problems[0]} (--strict refuses it)")


def import_attr(flag: str, spec: str, example: str) -> Any:
    """Import ``module:attr`` (the module importable from the current dir); return the value.

    Raises:
        CliError: The spec is malformed, the module cannot be imported or lacks the name.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise CliError(f"{flag} {spec}: expected MODULE:ATTR, e.g. {example}")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # the user's module: any error is theirs to see
        raise CliError(f"{flag} {spec}: cannot import {module_name}: {exc!r}") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise CliError(f"{flag} {spec}: module {module_name} has no attribute {attr!r}") from None


def load_tools(spec: str) -> list[Tool]:
    """Import ``module:attr`` and return its tools (a Tool, a list, or plain functions).

    Raises:
        CliError: The spec is malformed, the module cannot be imported, or a value is
            neither a Tool nor a function ``define_tool`` can describe.
    """
    from toolnexus import as_tool

    value = import_attr("--tools", spec, "mytools:forecast")
    tools: list[Tool] = []
    for item in value if isinstance(value, list | tuple) else [value]:
        try:
            tools.append(as_tool(item))
        except TypeError:
            raise CliError(
                f"--tools {spec}: {type(item).__name__} is not a Tool or a function"
            ) from None
        except Exception as exc:  # a signature define_tool cannot describe
            raise CliError(f"--tools {spec}: cannot make a tool of {item!r}: {exc}") from None
    return tools


async def build_toolkit(args: argparse.Namespace, own: list[Tool]) -> Toolkit:
    """Build the toolkit the flags describe, with ``own`` from `check_toolkit_flags`.

    Raises:
        CliError: The ``--mcp`` file is bad, or ``--disable`` names no tool.
    """
    import toolnexus as tn
    from toolnexus.builtins import BUILTIN_NAMES

    disabled: list[str] = args.disable
    if args.no_builtins:
        builtins: bool | dict[str, Any] = False
    else:
        off = {name: False for name in disabled if name in BUILTIN_NAMES}
        builtins = {"tools": off} if off else True
    try:
        toolkit = await tn.build_async(
            skills=args.skills or None, builtins=builtins, tools=own, mcp=args.mcp, root=args.root
        )
    except ImportError as exc:
        raise CliError(f"--mcp: {exc}") from None
    except (tn.McpConfigError, ValueError) as exc:  # each names the path and the reason
        raise CliError(f"--mcp: {exc}" if args.mcp else str(exc)) from None
    unknown = [name for name in disabled if name not in toolkit and name not in BUILTIN_NAMES]
    if unknown:
        known = sorted(set(toolkit.names) | set(BUILTIN_NAMES))
        raise CliError(
            f"--disable: no tool named {', '.join(map(repr, unknown))}; "
            f"the tools are {', '.join(known)}"
        )
    if not any(name in toolkit for name in disabled):
        return toolkit
    keep = [tool for tool in toolkit if tool.name not in disabled]
    skills = toolkit.skills if "skill" not in disabled else ()
    return tn.Toolkit(keep, skills=skills, resources=toolkit.resources)


def check_tool_mix_flags(factory: AgentFactory, models: Iterable[str], toolkit: Toolkit) -> None:
    """Refuse, before the first request, the agents the command could not run.

    Builds the agent of each model the command will call (cheap: they share one client),
    so what an agent refuses when it is made — ``--builtin-tool`` beside function tools on
    a model older than Gemini 3 — is a usage error at once, not a failure per task.

    Args:
        factory: Makes the command's agents.
        models: Every model the command will call.
        toolkit: The function tools of the flags.

    Raises:
        CliError: An agent of one of the models cannot be made.
    """
    for model in dict.fromkeys(models):
        factory.make(toolkit, model=model)
