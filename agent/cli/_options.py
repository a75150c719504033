"""The flags the subcommands share: which tools, which model, which system prompt.

Declaring a flag imports nothing heavy, so ``toolnexus-agent --help`` stays fast.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from agent.cli._exits import CliError

__all__ = [
    "add_agent_flags",
    "add_toolkit_flags",
    "duration",
    "port",
    "read_system",
    "reason",
]


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
        "--agents",
        metavar="DIR",
        help="load the Markdown agent files (*.md) of DIR as sub-agents the model can call "
        "(gemini-cli and Claude Code files too); a file that cannot be used is skipped with "
        "a warning",
    )
    group.add_argument(
        "--strict",
        action="store_true",
        help="with --agents: refuse to start when an agent file cannot be used",
    )
    group.add_argument(
        "--root",
        metavar="DIR",
        help="the workspace the file and shell tools are confined to (default: current dir)",
    )


class _Models(argparse.Action):
    """``--model NAME[,NAME...]``, repeatable: ``model`` is the first name, ``models`` all."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        names = [name.strip() for name in str(values).split(",")]
        if not all(names):
            raise argparse.ArgumentError(self, f"an empty model name in {values!r}")
        models = (*getattr(namespace, "models", ()), *names)
        if len(set(models)) != len(models):
            raise argparse.ArgumentError(self, f"a model named twice in {', '.join(models)}")
        namespace.models = models
        namespace.model = models[0]


def add_agent_flags(parser: argparse.ArgumentParser) -> None:
    """Declare the flags of the model and the loop: model, system prompt, turns, fake."""
    group = parser.add_argument_group("model")
    group.add_argument(
        "--model",
        metavar="NAME[,NAME...]",
        action=_Models,
        help=(
            "the Gemini model (default: agent.DEFAULT_MODEL); more names, comma-separated or "
            "in more --model flags, are the models a turn falls back to, in order, when a "
            "call fails for good (overloaded, out of quota)"
        ),
    )
    parser.set_defaults(models=())
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
        "--builtin-tool",
        dest="builtin_tools",
        action="append",
        default=[],
        metavar="NAME",
        help="offer one of Gemini's own tools beside the function tools, e.g. google_search, "
        "url_context, code_execution (repeatable)",
    )
    group.add_argument(
        "--service-tier",
        choices=("standard", "flex", "priority"),
        help="the inference tier of every request: flex is half price but best effort "
        "(minutes of latency, may be shed), priority costs more and answers fastest",
    )
    group.add_argument(
        "--fallback-tier",
        choices=("standard", "priority"),
        help="with --service-tier flex: send a request flex shed (after its retries) once "
        "more at this tier instead of failing",
    )
    group.add_argument(
        "--cache",
        type=duration,
        metavar="TTL",
        help="keep the system prompt and tools in a Gemini context cache that lives TTL "
        "(600, 90s, 10m, 1h) and is extended while in use; cached input costs a tenth, "
        "storage is billed per hour (see --cache-mode)",
    )
    group.add_argument(
        "--cache-mode",
        choices=("auto", "always"),
        help="with --cache: auto (the default) makes a cache once its uses within TTL pay "
        "for its storage; always whenever the prefix is large enough",
    )
    group.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also show the agent's log (retries, session locks) on stderr",
    )
    group.add_argument(
        "--fake",
        metavar="SCENARIO",
        help="play a scripted model from a YAML scenario instead of Gemini (no key, "
        "no network; see examples/scenarios/)",
    )


def add_session_flags(parser: argparse.ArgumentParser, session_help: str, store_help: str) -> None:
    """Declare ``--session ID`` and ``--store PATH`` (check them with `check_session_flags`)."""
    parser.add_argument("--session", metavar="ID", help=session_help)
    parser.add_argument("--store", metavar="PATH", help=store_help)


def check_session_flags(args: argparse.Namespace, *, store_needs_session: bool = False) -> None:
    """Refuse ``--session`` without ``--store``: an in-memory session ends with the process.

    Args:
        args: The parsed flags.
        store_needs_session: Also refuse ``--store`` without ``--session`` (for ``run``,
            which would otherwise keep nothing in the store; ``chat`` starts a new
            conversation there).

    Raises:
        CliError: ``--session`` was given without ``--store`` (or the other way round).
    """
    if args.session is not None and args.store is None:
        raise CliError("--session needs --store PATH (the SQLite file that keeps the session)")
    if store_needs_session and args.store is not None and args.session is None:
        raise CliError(
            "--store needs --session ID (the conversation to keep in it); without --session "
            "nothing would be stored"
        )


_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(s|m|min|h)?")
_UNIT = {None: 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def duration(text: str) -> float:
    """Read a duration: seconds (``600``, ``90s``), minutes (``10m``) or hours (``1h``)."""
    found = _DURATION.fullmatch(text.strip().lower())
    seconds = float(found[1]) * _UNIT[found[2]] if found else 0.0
    if seconds <= 0:
        raise argparse.ArgumentTypeError(
            f"expected a duration such as 600, 90s, 10m or 1h, got {text!r}"
        )
    return seconds


def port(text: str) -> int:
    """Read a TCP port number (0 to 65535)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be between 0 and 65535, got {value}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def read_system(value: str | None) -> str | None:
    """Return the system prompt of ``--system``: the text, or the file named after ``@``.

    Raises:
        CliError: The ``@FILE`` cannot be read.
    """
    if value is None or not value.startswith("@"):
        return value
    path = Path(value[1:])
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"--system: cannot read {path}: {reason(exc)}") from None


def reason(exc: BaseException) -> str:
    """Return why ``exc`` happened in a few words (``No such file or directory``)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def yaml_problem(path: str | Path, exc: BaseException) -> str:
    """Say in one line where and why a YAML file could not be read.

    ``path:LINE:COLUMN: problem`` for a syntax error (lines and columns from 1), or
    ``path: nested too deeply`` when the parser ran out of stack.

    Args:
        path: The file, as the user named it.
        exc: What ``yaml.safe_load`` raised (a ``yaml.YAMLError`` or a ``RecursionError``).
    """
    if isinstance(exc, RecursionError):
        return f"{path}: nested too deeply to read (lists or mappings inside each other)"
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    return f"{where}: {problem}" + (f" ({context})" if context else "")
