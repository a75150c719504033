"""The ``toolnexus-agent`` command line: ``run``, ``chat``, ``tools``, ``batch``, ``demo``.

Each subcommand has an ``add_<name>`` function that declares its parser and sets
``command`` (a function of the parsed arguments returning the exit code); ``build_parser``
calls every adder listed in ``_SUBCOMMANDS``, and ``main`` parses and dispatches. The
subcommands live in ``agent.cli`` modules and import the SDK only when they run.

Example::

    $ toolnexus-agent demo          # or: python -m agent demo
    $ toolnexus-agent run "How many Python files are here?"
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from agent.cli.batch import add_batch
from agent.cli.chat import add_chat
from agent.cli._options import (
    EXIT_BLOCKED,
    EXIT_CODES_HELP,
    EXIT_FAILED,
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PENDING,
    EXIT_USAGE,
    CliError,
)
from agent.cli.run import add_run
from agent.cli.tools import add_tools

__all__ = [
    "EXIT_BLOCKED",
    "EXIT_FAILED",
    "EXIT_INCOMPLETE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PENDING",
    "EXIT_USAGE",
    "build_parser",
    "main",
]

_EPILOG = f"""\
Start with `toolnexus-agent demo` (no API key needed), then set GEMINI_API_KEY and try
`toolnexus-agent run "..."`. Every command has its own --help.

{EXIT_CODES_HELP}"""

Command = Callable[[argparse.Namespace], int]


def _demo(args: argparse.Namespace) -> int:
    from agent.cli.demo import run_demo

    return run_demo(transport=args.transport, keep=args.keep, scenario=args.scenario)


def _add_demo(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "demo",
        help="run the offline demo (no API key, no network)",
        description=(
            "Run the agent loop with the real built-in tools and the hello-world skill in a "
            "scratch workspace, against a scripted Gemini. Needs no API key and no network."
        ),
    )
    parser.add_argument(
        "--transport",
        choices=("inprocess", "http"),
        default="inprocess",
        help="reach the fake Gemini in process (default) or over HTTP on 127.0.0.1",
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch workspace")
    parser.add_argument(
        "--scenario",
        metavar="YAML",
        help="play this scenario file instead of the built-in one (see examples/scenarios/)",
    )
    parser.set_defaults(command=_demo)


_SUBCOMMANDS: tuple[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None], ...] = (
    add_run,
    add_chat,
    add_tools,
    add_batch,
    _add_demo,
)


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="toolnexus-agent",
        description="Gemini agents with toolnexus tools.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add in _SUBCOMMANDS:
        add(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code.

    Example::

        raise SystemExit(main(["demo"]))
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    command: Command | None = getattr(args, "command", None)
    if command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return command(args)
    except CliError as exc:
        sys.stderr.write(f"{exc}\n")
        return exc.code
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted\n")
        return EXIT_INTERRUPTED
