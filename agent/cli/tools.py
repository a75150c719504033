"""``toolnexus-agent tools``: list the toolkit the flags build, or render it as JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agent.cli._exits import EXIT_OK, CliError
from agent.cli._logs import plain_warnings
from agent.cli._options import add_toolkit_flags
from agent.cli._toolkit import build_toolkit, check_toolkit_flags

if TYPE_CHECKING:
    from toolnexus import Skill, Tool, Toolkit

__all__ = ["add_parser", "command"]

_FIRST_LINE = 90
"""Longest description shown in the list (the JSON formats carry it whole)."""

_GEMINI_FORMS = {
    False: "(Gemini declarations with `parameters`, the OpenAPI subset; --json-schema prints "
    "`parametersJsonSchema`, the full schemas the agent sends)\n",
    True: "(Gemini declarations with `parametersJsonSchema`, the full JSON Schemas the agent "
    "sends)\n",
}
"""The line on stderr that says which form ``--format gemini`` prints."""

_EPILOG = """\
examples:
  toolnexus-agent tools
  toolnexus-agent tools --skills ./skills --disable bash --disable webfetch
  toolnexus-agent tools --skills ./skills -v
  toolnexus-agent tools --format gemini > tools.json
  toolnexus-agent tools --format gemini --json-schema > tools.json
  toolnexus-agent tools --no-builtins --tools mytools:forecast --format openai
  toolnexus-agent tools --agents examples/subagents  # with the sub-agents of those files

exit code: 0, or 2 for a usage error (an unreadable skills dir, a bad mcp.json, ...)."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``tools`` and its flags."""
    parser = commands.add_parser(
        "tools",
        help="list the tools, or print them as Gemini/OpenAI/Anthropic JSON",
        description=(
            "Build the toolkit the flags describe (the same flags as `run`) and list each\n"
            "tool's name, source and the first line of its description (the sub-agents of\n"
            "--agents too, as source `agent`), then the skills the model sees (-v: and the\n"
            "SKILL.md files skipped, with reasons); with --format, print the declarations\n"
            "exactly as they would be sent to that provider."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--format",
        choices=("gemini", "openai", "anthropic"),
        help="print the rendered JSON for this provider instead of the list",
    )
    parser.add_argument(
        "--json-schema",
        action="store_true",
        help="with --format gemini: the full schemas as parametersJsonSchema (what the agent "
        "sends) instead of the `parameters` subset",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also list the SKILL.md files that were skipped, each with its reason",
    )
    add_toolkit_flags(parser)
    parser.set_defaults(command=command)


def command(args: argparse.Namespace) -> int:
    """Run ``tools`` and return its exit code."""
    if args.json_schema and args.format != "gemini":
        raise CliError("--json-schema goes with --format gemini")
    with plain_warnings():
        own = check_toolkit_flags(args)
        return asyncio.run(_tools(args, own))


_LISTING_KEY = "listing-only-never-sent"
"""The key the listed sub-agents are built with: listing them sends no request."""


async def _tools(args: argparse.Namespace, own: list[Tool]) -> int:
    import toolnexus as tn

    async with await build_toolkit(args, own) as built:
        toolkit = await _with_agents(args, built)
        if args.format == "gemini":
            sys.stderr.write(_GEMINI_FORMS[args.json_schema])
            payload = tn.to_gemini(toolkit, json_schema=args.json_schema)
            sys.stdout.write(json.dumps(payload, indent=2) + "\n")
            return EXIT_OK
        if args.format is not None:
            render = {"openai": tn.to_openai, "anthropic": tn.to_anthropic}
            sys.stdout.write(json.dumps(render[args.format](toolkit), indent=2) + "\n")
            return EXIT_OK
        tools = list(toolkit)
        name_width = max((len(tool.name) for tool in tools), default=4)
        source_width = max((len(tool.source) for tool in tools), default=6)
        for tool in tools:
            lines = tool.description.strip().splitlines()
            first = lines[0] if lines else ""
            if len(first) > _FIRST_LINE:
                first = first[: _FIRST_LINE - 3].rstrip() + "..."
            sys.stdout.write(
                f"{tool.name:<{name_width}}  {tool.source:<{source_width}}  {first}\n".rstrip()
                + "\n"
            )
        if not tools:
            sys.stderr.write("(no tools: every source is empty or disabled)\n")
        _skills(toolkit.skills, args.skills if args.verbose else [])
    return EXIT_OK


async def _with_agents(args: argparse.Namespace, toolkit: Toolkit) -> Toolkit:
    """Add the sub-agents of ``--agents`` (as `run` would), so the list shows what the model sees.

    Raises:
        CliError: An agent file cannot be used (with ``--strict``) or clashes with a tool.
    """
    if args.agents is None:
        return toolkit
    from agent import ClientSettings, load_agents_async
    from agent.errors import ConfigurationError
    from toolnexus import Toolkit

    try:
        helpers = await load_agents_async(
            args.agents,
            toolkit=toolkit,
            strict=args.strict,
            client=ClientSettings(api_key=_LISTING_KEY),
        )
    except ConfigurationError as exc:
        raise CliError(f"--agents: {exc}") from None
    return Toolkit([*toolkit, *helpers], skills=toolkit.skills)


def _skills(skills: Sequence[Skill], skills_dirs: list[str]) -> None:
    """List the skills the model sees and, for ``skills_dirs``, the files skipped."""
    import toolnexus as tn

    if skills:
        width = max(len(skill.name) for skill in skills)
        sys.stdout.write(f"\nskills ({len(skills)}):\n")
        for skill in skills:
            about = (
                " ".join((skill.description or "").split())
                or "(no description: not in the catalog)"
            )
            if len(about) > _FIRST_LINE:
                about = about[: _FIRST_LINE - 3].rstrip() + "..."
            sys.stdout.write(f"  {skill.name:<{width}}  {about}\n")
    if not skills_dirs:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # build has already warned about these
        skipped = tn.list_skills(skills_dirs).skipped
    sys.stdout.write(f"\nskipped ({len(skipped)}):\n")
    for item in skipped:
        sys.stdout.write(f"  {item.path}  {item.reason}: {item.detail}\n")
