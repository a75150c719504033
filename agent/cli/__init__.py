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
import difflib
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from agent.cli import batch, batch_status, chat, demo, eval, run, serve, tools, web, worker
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

_SUBCOMMANDS = (run, chat, tools, serve, web, batch, eval, demo, worker, batch_status)

Command = Callable[[argparse.Namespace], int]

_EXTRAS = {
    "dbos": "dbos",
    "sqlalchemy": "dbos",
    "opentelemetry": "otel",
    "mcp": "mcp",
    "starlette": "web",
    "uvicorn": "web",
}
"""The optional libraries, by top-level module, and the extra that installs each."""


class _CommandParser(argparse.ArgumentParser):
    """A subcommand's parser: a flag it does not know is its own usage error.

    Left to argparse, the top-level parser reports it, with the top-level usage and no hint
    of the flags the subcommand has.
    """

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self._unrecognized(extras)
        return parsed, extras

    def _unrecognized(self, extras: list[str]) -> NoReturn:
        flags = [flag for action in self._actions for flag in action.option_strings]
        shown = []
        for extra in extras:
            name = extra.split("=", 1)[0]
            close = difflib.get_close_matches(name, flags, n=1) if name.startswith("-") else []
            shown.append(f"{extra} (did you mean {close[0]}?)" if close else extra)
        self.error(f"unrecognized arguments: {' '.join(shown)}")


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
    commands = parser.add_subparsers(
        title="commands", metavar="COMMAND", parser_class=_CommandParser
    )
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
        return _dispatch(command, args)
    except CliError as exc:
        sys.stderr.write(f"{exc}\n")
        return exc.code
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted\n")
        return EXIT_INTERRUPTED
    finally:
        if shutdown is not None:
            shutdown()  # flush the spans of this command


def _dispatch(command: Command, args: argparse.Namespace) -> int:
    """Run ``command``; a missing optional library is a usage error naming its extra."""
    try:
        return command(args)
    except ModuleNotFoundError as exc:
        extra = _EXTRAS.get((exc.name or "").partition(".")[0])
        if extra is None:
            raise
        raise CliError(
            f"toolnexus-agent {_command_name(command)}: needs the `{extra}` extra "
            f"({exc.name} is not installed): pip install '.[{extra}]' from a clone of "
            "toolnexus-gemini"
        ) from None


def _command_name(command: Command) -> str:
    return command.__module__.rpartition(".")[2].replace("_", "-")
