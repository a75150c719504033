"""The ``toolnexus-agent`` command line: one module per subcommand (``run``, ``eval``, ...).

Each subcommand is a module of this package with an ``add_parser`` function that declares
its flags and a ``command`` function of the parsed arguments that returns the exit code.
The subcommands import the Gemini SDK and the agent loop only when they run, so
``toolnexus-agent --help`` starts at once.

Example::

    $ toolnexus-agent demo          # or: python -m agent demo
    $ toolnexus-agent run "How many Python files are here?"
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from agent.cli import batch, batch_status, chat, demo, eval, run, tools, worker
from agent.cli._exits import (
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

__all__ = [
    "EXIT_BLOCKED",
    "EXIT_FAILED",
    "EXIT_INCOMPLETE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PENDING",
    "EXIT_USAGE",
    "CliError",
    "build_parser",
    "main",
]

_EPILOG = f"""\
Start with `toolnexus-agent demo` (no API key needed), then set GEMINI_API_KEY and try
`toolnexus-agent run "..."`. Every command has its own --help.

{EXIT_CODES_HELP}"""

_SUBCOMMANDS = (run, chat, tools, batch, eval, demo, worker, batch_status)

Command = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of ``toolnexus-agent`` with every subcommand.

    Returns:
        The parser; a parsed namespace's ``command`` runs the chosen subcommand.
    """
    parser = argparse.ArgumentParser(
        prog="toolnexus-agent",
        description="Gemini agents with toolnexus tools.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for subcommand in _SUBCOMMANDS:
        subcommand.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``toolnexus-agent`` command line and return its exit code.

    A usage error (a `CliError`) is printed as one line on stderr, and Ctrl-C prints
    ``interrupted``; neither shows a traceback.

    Args:
        argv: The arguments after the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit code: one of the ``EXIT_*`` constants of this module.

    Raises:
        SystemExit: From argparse, for ``--help`` (code 0) or unparsable flags (code 2).

    Example::

        from agent.cli import main

        raise SystemExit(main(["demo"]))
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    command: Command | None = getattr(args, "command", None)
    if command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    from agent.cli._otel import export_from_env

    shutdown = export_from_env()
    try:
        return command(args)
    except CliError as exc:
        sys.stderr.write(f"{exc}\n")
        return exc.code
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted\n")
        return EXIT_INTERRUPTED
    finally:
        if shutdown is not None:
            shutdown()  # flush the spans of this command
