"""``toolnexus-agent chat``: a conversation on the terminal, remembered turn to turn.

The conversation is one session of the agent's store (in memory, or a SQLite file with
``--store``), so every turn sees the earlier ones. Ctrl-C cancels the turn in progress
(the conversation keeps its completed turns); Ctrl-D or ``/exit`` ends the chat.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from typing import TYPE_CHECKING

from agent.cli._approval import add_approval_flag, cli_policy
from agent.cli._exits import (
    EXIT_CODES_HELP,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    CliError,
    exit_code,
)
from agent.cli._logs import agent_log
from agent.cli._model import open_agents
from agent.cli._options import (
    add_agent_flags,
    add_session_flags,
    add_toolkit_flags,
    check_session_flags,
    read_system,
)
from agent.cli._printer import EventPrinter, stream_run
from agent.cli._questions import Asker
from agent.cli._secrets import scrub_text
from agent.cli._toolkit import check_tool_mix_flags, check_toolkit_flags
from agent.errors import ConfigurationError, RunError

if TYPE_CHECKING:
    from agent import Agent, RunResult

__all__ = ["add_parser", "command"]

_EPILOG = f"""\
examples:
  toolnexus-agent chat
  toolnexus-agent chat --skills ./skills --system "You are a terse assistant."
  toolnexus-agent chat --session work --store chats.db    # continue it another day
  toolnexus-agent chat --fake examples/scenarios/chat.yaml  # say your name, then ask it

keys: Enter sends a line; Ctrl-C cancels the answer in progress (the conversation so far
is kept); Ctrl-D (or /exit) ends the chat. /new starts a fresh conversation; /compact
summarises the older part of this one now (it is also done by itself when it grows long).

The exit code is that of the last turn (0 when no turn ran), so a script that pipes lines
into chat sees whether its last question was answered.

{EXIT_CODES_HELP}"""

_HELP_LINE = "Ctrl-C cancels a turn, Ctrl-D or /exit quits, /new starts over."


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``chat`` and its flags."""
    parser = commands.add_parser(
        "chat",
        help="talk with the agent; it remembers the conversation",
        description=(
            "An interactive conversation with the chosen tools. Each answer is streamed;\n"
            "tool calls and results are shown as they happen. The conversation is kept in\n"
            "memory, or in a SQLite file with --session and --store."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_session_flags(
        parser,
        "the conversation to continue (needs --store; default: a new one in memory)",
        "a SQLite file that keeps conversations between chats",
    )
    add_toolkit_flags(parser)
    add_agent_flags(parser)
    add_approval_flag(parser)
    parser.set_defaults(command=command)


def command(args: argparse.Namespace) -> int:
    """Run ``chat`` until Ctrl-D or ``/exit``; return the last turn's exit code."""
    from agent import SqliteStore

    check_session_flags(args)
    own = check_toolkit_flags(args)
    system = read_system(args.system)
    with agent_log(args.verbose), asyncio.Runner() as runner:
        stack = contextlib.AsyncExitStack()
        try:
            factory, toolkit = runner.run(stack.enter_async_context(open_agents(args, own)))
            check_tool_mix_flags(factory, [factory.model], toolkit)
            store = SqliteStore(args.store) if args.store else None
            if store is not None:
                stack.push_async_callback(store.close)
            agent = factory.make(
                toolkit,
                system=system,
                max_turns=args.max_turns,
                # The user is at the keyboard (or feeding lines): questions read the next line.
                wait_for=Asker([], sys.stderr, tty=True, toolkit=toolkit),
                store=store,
                approval=cli_policy(args.approval, toolkit),
            )
            session = args.session or f"chat-{time.time_ns()}"
            sys.stderr.write(f"chat with {agent.model} ({len(toolkit)} tools). {_HELP_LINE}\n")
            code = _loop(runner, agent, session)
            factory.report(sys.stderr)
        finally:
            runner.run(stack.aclose())
    return code


def _loop(runner: asyncio.Runner, agent: Agent, session: str) -> int:
    """Talk until Ctrl-D or ``/exit``; return the exit code of the last turn."""
    from agent import SessionError

    out, err = sys.stdout, sys.stderr
    printer = EventPrinter(out, err)
    code = EXIT_OK
    while True:
        try:
            line = input("you> ")
        except EOFError:
            out.write("\n")
            return code
        except KeyboardInterrupt:
            out.write(f"\n({_HELP_LINE})\n")
            continue
        text = line.strip()
        if text in ("/exit", "/quit"):
            return code
        if text in ("", "/compact", "/new"):
            session = _command(runner, agent, session, text)
            continue
        try:
            result = runner.run(stream_run(agent, line, printer, session=session))
        except KeyboardInterrupt:
            out.flush()
            err.write("\n(turn cancelled)\n")
            code = EXIT_INTERRUPTED
            continue
        except RunError as exc:
            err.write(f"error: {scrub_text(str(exc))}\n")
            code = EXIT_FAILED
            continue
        except (ConfigurationError, SessionError) as exc:
            raise CliError(f"chat: {exc}") from None
        code = _report(result)


def _report(result: RunResult) -> int:
    """Say how a turn ended when it did not simply complete; return its exit code."""
    if result.status == "pending" and result.pending is not None:
        asked = scrub_text(result.pending["prompt"])
        sys.stderr.write(f"(the model asked: {asked} — no answer was given)\n")
    elif result.status != "completed":
        sys.stderr.write(f"({result.status}: {result.limit or result.reason or ''})\n")
    return exit_code(result)


def _command(runner: asyncio.Runner, agent: Agent, session: str, text: str) -> str:
    """Carry out ``/compact`` or ``/new`` (nothing for an empty line); return the session."""
    if text == "/compact":
        _compact(runner, agent, session)
    elif text == "/new":
        sys.stderr.write("(a new conversation)\n")
        return f"chat-{time.time_ns()}"
    return session


def _compact(runner: asyncio.Runner, agent: Agent, session: str) -> None:
    """Compact the conversation now (``/compact``) and say what it did."""
    try:
        result = runner.run(agent.compact(session=session))
    except ConfigurationError:  # a new conversation: no history yet
        sys.stderr.write("(nothing to compact yet)\n")
        return
    except RunError as exc:
        sys.stderr.write(f"(could not compact: {exc})\n")
        return
    if not result.usage.total:  # no summary was written: the conversation is still short
        sys.stderr.write("(nothing to compact yet)\n")
        return
    kept = len(result.contents)
    sys.stderr.write(f"(compacted: the older turns summarised, {kept} messages kept)\n")
