"""``toolnexus-agent run``: one prompt, the answer streamed to stdout, tool activity to stderr.

The answer text goes to stdout and everything else (tool calls, results, retries, the final
status) to stderr, so ``toolnexus-agent run "..." > answer.txt`` keeps just the answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from agent.cli._approval import add_approval_flag, cli_policy
from agent.cli._exits import EXIT_CODES_HELP, EXIT_FAILED, CliError, exit_code, status_of
from agent.cli._logs import agent_log
from agent.cli._model import open_agents
from agent.cli._options import (
    add_agent_flags,
    add_session_flags,
    add_toolkit_flags,
    check_session_flags,
    read_system,
)
from agent.cli._printer import EventPrinter, describe_cost, stream_run
from agent.cli._questions import Asker, parse_answer
from agent.cli._rate import add_rate_flags
from agent.cli._secrets import scrub_data, scrub_text
from agent.cli._toolkit import check_tool_mix_flags, check_toolkit_flags, import_attr
from agent.errors import AgentError, ConfigurationError, RunError

if TYPE_CHECKING:
    from agent import Prompt, RunResult
    from toolnexus import Tool

__all__ = ["add_parser", "command"]

_EPILOG = f"""\
examples:
  toolnexus-agent run "How many Python files are in this folder?"
  toolnexus-agent run --skills ./skills --disable bash "Greet me with the hello skill"
  toolnexus-agent run --json "Summarise README.md" > result.json
  toolnexus-agent run --fake examples/scenarios/weather.yaml \\
      --tools examples.weather_tools:TOOLS "What is the weather in Paris?"
  toolnexus-agent run --session s1 --store chats.db "Remember: my name is Ada"
  echo "a long prompt" | toolnexus-agent run -

questions: when the model calls the `question` tool, the question is asked on the
terminal. Without a terminal, give the answers with --answer (one per question, in
order); with neither, the run ends `pending` (exit code 3). A pending --session run is
resumed by running it again with --answer and no prompt:
  toolnexus-agent run --session s1 --store chats.db --answer yes

approval: before bash and file changes (--approval ask, the default) the call is shown and
you answer y, n [reason] or e (type the edited arguments as JSON); --approval edits lets
file changes through, --approval never-ask asks nothing. Without a terminal, give the
reply as --answer approval=REPLY ("approval=y", "approval=n not now",
'approval=e {{"path": "x.txt", ...}}'); a plain --answer answers questions only, never an
approval. Bind an answer to one request with its id: --answer approval:ID=y,
--answer question:ID=TEXT. With no answer for it, an approval is refused (or, with no
--answer at all, the run ends `pending`).

{EXIT_CODES_HELP}"""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``run`` and its flags."""
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
        help="an answer for the `question` tool, used in order; approval=REPLY answers an "
        "approval (y, n [reason], e JSON); KIND:ID=TEXT answers only request ID; repeatable",
    )
    add_session_flags(
        parser,
        "continue the conversation ID (needs --store)",
        "the SQLite file that keeps --session conversations (needs --session)",
    )
    parser.add_argument(
        "--file",
        action="append",
        default=[],
        metavar="PATH",
        help="send this file (an image, a PDF, audio...) with the prompt; repeatable",
    )
    parser.add_argument(
        "--output-schema",
        metavar="FILE|MODULE:MODEL",
        help="ask for a typed answer: a JSON Schema file, or a pydantic model (or dataclass, "
        "TypedDict) importable from the current dir; --json then carries it as `output`",
    )
    add_toolkit_flags(parser)
    add_agent_flags(parser)
    add_rate_flags(parser)
    add_approval_flag(parser)
    parser.set_defaults(command=command)


def command(args: argparse.Namespace) -> int:
    """Run ``run`` and return its exit code."""
    check_session_flags(args, store_needs_session=True)
    if args.prompt is None and args.session is None:
        raise CliError("run: give a PROMPT (or '-' to read it from stdin)")
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    if prompt is not None and not prompt.strip():
        raise CliError("run: the prompt is empty")
    for value in args.answer:
        parse_answer(value)  # a malformed binding is a usage error before anything starts
    own = check_toolkit_flags(args)
    system = read_system(args.system)
    args.output_type = load_output_type(args.output_schema)
    with agent_log(args.verbose):
        return asyncio.run(_run(args, with_files(prompt, args.file), own, system))


def with_files(prompt: str | None, files: list[str]) -> Prompt | None:
    """Return the prompt with ``--file`` paths after its text (the text alone without files).

    Raises:
        CliError: A file does not exist, or files are given without a prompt.
    """
    if not files:
        return prompt
    if prompt is None:
        raise CliError("--file goes with a PROMPT")
    for name in files:
        if not Path(name).is_file():
            raise CliError(f"--file: no such file: {name}")
    return [prompt, *(Path(name) for name in files)]


async def _run(
    args: argparse.Namespace, prompt: Prompt | None, own: list[Tool], system: str | None
) -> int:
    from agent import SessionError, SqliteStore

    store = SqliteStore(args.store) if args.store else None
    out, err = sys.stdout, sys.stderr
    async with open_agents(args, own) as (factory, toolkit):
        check_tool_mix_flags(factory, [factory.model], toolkit)
        asker = Asker(args.answer, err, toolkit=toolkit)
        agent = factory.make(
            toolkit,
            system=system,
            max_turns=args.max_turns,
            wait_for=asker if asker.available() else None,
            store=store,
            output_type=args.output_type,
            approval=cli_policy(args.approval, toolkit),
        )
        failed: str | None = None
        try:
            if args.json:
                result = await agent.run(prompt, session=args.session)
            else:
                printer = EventPrinter(out, err)
                result = await stream_run(agent, prompt, printer, session=args.session)
        except RunError as exc:
            failed, result = str(exc), exc.result
        except (ConfigurationError, SessionError) as exc:
            raise CliError(f"run: {exc}") from None
        except AgentError as exc:  # a --file upload to the Files API failed (key scrubbed)
            raise CliError(f"run: {exc}", EXIT_FAILED) from None
        finally:
            if store is not None:
                await store.close()
        factory.report(err)
    if args.json:
        data = result.to_dict()
        data["status"] = status_of(result, failed)
        if failed is not None:
            data["error"] = failed
        out.write(json.dumps(scrub_data(data), ensure_ascii=False, indent=2) + "\n")
    else:
        _report_end(result, failed, err, args.session)
    return EXIT_FAILED if failed is not None else exit_code(result)


def load_output_type(spec: str | None) -> Any:
    """Return the output type of ``--output-schema``: a JSON Schema file's dict, or an import.

    Raises:
        CliError: The file is not a JSON object, or the import fails.
    """
    if spec is None:
        return None
    path = Path(spec)
    if not path.is_file():
        return import_attr("--output-schema", spec, "models:Weather")
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CliError(f"--output-schema: cannot read {spec}: {exc}") from None
    if not isinstance(schema, dict):
        raise CliError(f"--output-schema: {spec} must hold a JSON Schema object")
    return schema


def _report_end(result: RunResult, failed: str | None, err: TextIO, session: str | None) -> None:
    if failed is not None:
        err.write(f"error: {scrub_text(failed)}\n")
    elif result.status == "pending" and result.pending is not None:
        pending = result.pending
        err.write(f"pending: the model asks:\n{scrub_text(pending['prompt'])}\n")
        reply = f"approval:{pending['id']}=y" if pending.get("kind") == "approval" else "TEXT"
        if session is not None:
            err.write(
                f"answer with: toolnexus-agent run --session {session} --store ... "
                f"--answer {scrub_text(reply)}\n"
            )
        else:
            err.write(f"(no terminal to ask on: give answers with --answer {scrub_text(reply)})\n")
    elif result.status != "completed":
        detail = result.limit or result.reason or ""
        err.write(f"{result.status}: {detail}\n")
    cost = describe_cost(result.cost)
    if cost is not None:
        err.write(cost + "\n")
