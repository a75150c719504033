"""``toolnexus-agent run``: one prompt, the answer streamed to stdout, tool activity to stderr.

The answer text goes to stdout and everything else (tool calls, results, retries, the final
status) to stderr, so ``toolnexus-agent run "..." > answer.txt`` keeps just the answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from agent.cli._options import (
    EXIT_CODES_HELP,
    EXIT_FAILED,
    EXIT_USAGE,
    CliError,
    add_agent_flags,
    add_toolkit_flags,
    agent_log,
    check_toolkit_flags,
    exit_code,
    open_agents,
    read_system,
    report_fake,
    retry_note,
)

if TYPE_CHECKING:
    from agent._agent import Agent
    from agent._result import RunResult
    from toolnexus import Answer, Request, Tool

__all__ = ["Asker", "add_run", "stream_run"]

_EPILOG = f"""\
examples:
  toolnexus-agent run "How many Python files are in this folder?"
  toolnexus-agent run --skills ./skills --disable bash "Greet me with the hello skill"
  toolnexus-agent run --json "Summarise README.md" > result.json
  toolnexus-agent run --fake examples/scenarios/weather.yaml "Weather in Paris?"
  toolnexus-agent run --session s1 --store chats.db "Remember: my name is Ada"
  echo "a long prompt" | toolnexus-agent run -

questions: when the model calls the `question` tool, the question is asked on the
terminal. Without a terminal, give the answers with --answer (one per question, in
order); with neither, the run ends `pending` (exit code 3). A pending --session run is
resumed by running it again with --answer and no prompt:
  toolnexus-agent run --session s1 --store chats.db --answer yes

{EXIT_CODES_HELP}"""

_RESULT_WIDTH = 100


def add_run(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``run``."""
    parser = commands.add_parser(
        "run",
        help="run one prompt and stream the answer",
        description=(
            "Send PROMPT to Gemini with the chosen tools, run every tool call the model asks\n"
            "for, and stream the answer to stdout; tool calls and results go to stderr."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "prompt",
        nargs="?",
        metavar="PROMPT",
        help="what to ask; '-' reads it from stdin; omit it to resume a pending --session",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the whole RunResult as JSON instead"
    )
    parser.add_argument(
        "--answer",
        action="append",
        default=[],
        metavar="TEXT",
        help="an answer for the `question` tool, used in order; repeatable",
    )
    parser.add_argument(
        "--session", metavar="ID", help="continue the conversation ID (needs --store)"
    )
    parser.add_argument(
        "--store", metavar="PATH", help="the SQLite file that keeps --session conversations"
    )
    add_toolkit_flags(parser)
    add_agent_flags(parser)
    parser.set_defaults(command=run_command)


def run_command(args: argparse.Namespace) -> int:
    """Run ``run`` and return its exit code."""
    if args.session is not None and args.store is None:
        raise CliError("--session needs --store PATH (the SQLite file that keeps the session)")
    if args.prompt is None and args.session is None:
        raise CliError("run: give a PROMPT (or '-' to read it from stdin)")
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    if prompt is not None and not prompt.strip():
        raise CliError("run: the prompt is empty")
    own = check_toolkit_flags(args)
    system = read_system(args.system)
    with agent_log(args.verbose):
        return asyncio.run(_run(args, prompt, own, system))


async def _run(
    args: argparse.Namespace, prompt: str | None, own: list[Tool], system: str | None
) -> int:
    from agent._store import SessionBusyError, SqliteStore
    from agent.errors import ConfigurationError, RunError

    store: SqliteStore | None = SqliteStore(args.store) if args.store else None
    out, err = sys.stdout, sys.stderr
    asker = Asker(args.answer, err)
    async with open_agents(args, own) as (factory, toolkit):
        agent = factory.make(
            toolkit,
            system=system,
            max_turns=args.max_turns,
            wait_for=asker if asker.available() else None,
            store=store,
        )
        failed: str | None = None
        try:
            if args.json:
                result = await agent.run(prompt, session=args.session)
            else:
                result = await stream_run(agent, prompt, out, err, session=args.session)
        except RunError as exc:
            failed, result = str(exc), exc.result
        except SessionBusyError as exc:
            raise CliError(f"run: {exc}", EXIT_USAGE) from None
        except ConfigurationError as exc:
            raise CliError(f"run: {exc}") from None
        finally:
            if store is not None:
                await store.close()
        report_fake(factory, err)
    if args.json:
        data = result.to_dict()
        if failed is not None:
            data["error"] = failed
        out.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        _report_end(result, failed, err, args.session)
    return EXIT_FAILED if failed is not None else exit_code(result)


def _report_end(result: RunResult, failed: str | None, err: TextIO, session: str | None) -> None:
    if failed is not None:
        err.write(f"error: {failed}\n")
    elif result.status == "pending" and result.pending is not None:
        err.write(f"pending: the model asks:\n{result.pending['prompt']}\n")
        if session is not None:
            err.write(
                f"answer with: toolnexus-agent run --session {session} --store ... --answer TEXT\n"
            )
        else:
            err.write("(no terminal to ask on: give answers with --answer TEXT)\n")
    elif result.status != "completed":
        detail = result.limit or result.reason or ""
        err.write(f"{result.status}: {detail}\n")


async def stream_run(
    agent: Agent,
    prompt: str | None,
    out: TextIO,
    err: TextIO,
    *,
    session: str | None = None,
) -> RunResult:
    """Stream one run: text to ``out`` as it arrives, tool activity to ``err``; return it."""
    from agent.events import DoneEvent, RetryEvent, TextEvent, ThoughtEvent, ToolCallEvent, ToolResultEvent

    result: RunResult | None = None
    at_line_start = True
    thinking: list[str] = []

    def newline() -> None:
        nonlocal at_line_start
        if thinking:
            err.write(f"(thinking) {' '.join(''.join(thinking).split())}\n")
            thinking.clear()
        if not at_line_start:
            out.write("\n")
            out.flush()
            at_line_start = True

    async for event in agent.stream(prompt, session=session):
        if isinstance(event, ThoughtEvent):
            thinking.append(event.text)
            continue
        if isinstance(event, TextEvent):
            if thinking:
                newline()
            out.write(event.text)
            out.flush()
            at_line_start = event.text.endswith("\n")
        elif isinstance(event, ToolCallEvent):
            newline()
            args = json.dumps(event.call.args, ensure_ascii=False)
            err.write(f"-> {event.call.name} {_shorten(args)}\n")
        elif isinstance(event, ToolResultEvent):
            if event.result.pending is not None:
                err.write(f"<- {event.call.name}: (waiting for an answer)\n")
            else:
                mark = "x " if event.result.is_error else "<- "
                err.write(f"{mark}{event.call.name}: {_summary(event.result.output)}\n")
        elif isinstance(event, RetryEvent):
            newline()
            err.write(retry_note(event) + "\n")
        elif isinstance(event, DoneEvent):
            result = event.result
        err.flush()
    newline()
    assert result is not None
    return result


def _summary(output: str) -> str:
    lines = output.strip().splitlines()
    if not lines:
        return "(empty)"
    more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    return _shorten(lines[0]) + more


def _shorten(text: str) -> str:
    return text if len(text) <= _RESULT_WIDTH else text[: _RESULT_WIDTH - 3] + "..."


class Asker:
    """The ``wait_for`` of the CLI: answers ``question`` requests from --answer, else the terminal.

    Each question of a request takes the next ``--answer`` value; when they run out, it
    reads a line of stdin if stdin is a terminal (or ``tty=True``), else declines (the model
    is told nobody answered). End of input declines too.
    """

    def __init__(self, answers: Sequence[str], err: TextIO, *, tty: bool | None = None) -> None:
        self._answers = list(answers)
        self._err = err
        self._tty = sys.stdin.isatty() if tty is None else tty

    def available(self) -> bool:
        """Whether any answer source exists (given answers or a terminal)."""
        return bool(self._answers) or self._tty

    async def __call__(self, request: Request) -> Answer:
        """Answer ``request``: one answer per question, from --answer or the terminal."""
        questions = _questions(request)
        replies: dict[str, str] = {}
        for key, shown in questions:
            reply = await self._one(shown)
            if reply is None:
                return {"id": request["id"], "ok": False, "data": "no answer was given"}
            replies[key] = reply
        data: Any = replies[questions[0][0]] if len(questions) == 1 else replies
        return {"id": request["id"], "ok": True, "data": data}

    async def _one(self, question: str) -> str | None:
        if self._answers:
            reply = self._answers.pop(0)
            self._err.write(f"? {question}\n  (answered from --answer: {reply})\n")
            return reply
        if not self._tty:
            return None
        self._err.write(f"? {question}\n> ")
        self._err.flush()
        line = await asyncio.to_thread(sys.stdin.readline)
        return line.rstrip("\n") if line else None


def _questions(request: Request) -> list[tuple[str, str]]:
    """Return (question, question as shown with its options) for each question asked."""
    data = request.get("data")
    items = data.get("questions") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        return [(request["prompt"], request["prompt"])]
    pairs = []
    for item in items:
        fields = item if isinstance(item, dict) else {"question": item}
        text = str(fields.get("question", ""))
        options = fields.get("options")
        shown = f"{text} (options: {', '.join(map(str, options))})" if options else text
        pairs.append((text, shown))
    return pairs
