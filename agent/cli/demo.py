"""``toolnexus-agent demo``: the real agent loop and real tools against a scripted Gemini.

No API key and no network: a scratch workspace gets a copy of the hello-world skill, the
toolkit is built with the real built-in tools, and a `FakeGemini` plays the scenario shipped
with the package (the same file as ``examples/scenarios/demo.yaml``). The model loads the
skill, reads and runs its script, writes ``greeting.txt`` and answers; every turn, tool call
and result is shown the way ``run`` shows them.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TextIO

from agent.cli._exits import EXIT_FAILED, EXIT_OK
from agent.cli._printer import EventPrinter, stream_run
from agent.errors import RunError

if TYPE_CHECKING:
    from agent import Agent, RunResult
    from agent.testing import FakeGemini

__all__ = ["add_parser", "command", "demo_data", "run_demo"]

_DEMO_KEY = "demo-key-not-a-secret"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``demo`` and its flags."""
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
    parser.set_defaults(command=command)


def command(args: argparse.Namespace) -> int:
    """Run ``demo`` and return its exit code."""
    return run_demo(transport=args.transport, keep=args.keep, scenario=args.scenario)


@contextmanager
def demo_data() -> Iterator[Path]:
    """Yield the directory of the demo's shipped files (``demo.yaml``, ``skills/``)."""
    with resources.as_file(resources.files("agent.cli") / "_demo_data") as path:
        yield Path(path)


def run_demo(
    out: TextIO | None = None,
    *,
    transport: Literal["inprocess", "http"] = "inprocess",
    keep: bool = False,
    scenario: str | Path | None = None,
) -> int:
    """Run the offline demo and print its transcript.

    Success means: the run completed, the scripted model used every turn and saw every
    expectation met, and the scenario's ``files`` exist.

    Args:
        out: Where the transcript goes (default: stdout).
        transport: ``"http"`` serves the fake on 127.0.0.1 and talks to it over real HTTP
            instead of in process.
        keep: Leave the scratch workspace on disk.
        scenario: Play this scenario file with the same workspace and tools; its
            top-level ``files`` lists what the run must leave in the workspace.

    Returns:
        The exit code: 0 on success, 1 otherwise.

    Example::

        from agent.cli.demo import run_demo

        raise SystemExit(run_demo())
    """
    stream = out if out is not None else sys.stdout
    workspace = Path(tempfile.mkdtemp(prefix="toolnexus-demo-"))
    try:
        return asyncio.run(_demo(stream, workspace, transport, scenario))
    finally:
        if keep:
            stream.write(f"(workspace kept: {workspace})\n")
        else:
            shutil.rmtree(workspace, ignore_errors=True)


async def _demo(out: TextIO, workspace: Path, transport: str, source: str | Path | None) -> int:
    import toolnexus as tn
    from agent import Agent, RetryPolicy
    from agent.testing import read_scenario

    with demo_data() as data:
        scenario = read_scenario(data / "demo.yaml" if source is None else Path(source))
        shutil.copytree(data / "skills", workspace / "skills")
    toolkit = tn.build(skills=str(workspace / "skills"), root=str(workspace))
    fake = scenario.fake()
    model = str(scenario.extra.get("model") or "gemini-3-flash-preview")
    prompt = scenario.prompt or "Say hello."
    out.write(
        "toolnexus-agent demo: the real agent loop and tools, a scripted Gemini.\n"
        "No API key and no network are used.\n"
        f"workspace: {workspace}\n"
        f"tools:     {', '.join(sorted(tool.name for tool in toolkit))}\n"
        f"model:     {model} (scripted by FakeGemini, via {transport})\n"
        f"\nuser> {prompt}\n"
    )
    # A retried failure of the scripted model is worth showing, not waiting for.
    retry = RetryPolicy(attempts=3, initial_backoff=0.2, jitter=0.1)
    if transport == "http":
        with fake.serve() as server:
            agent = Agent(model, toolkit, base_url=server.base_url, api_key=_DEMO_KEY, retry=retry)
            result, failed = await _play(agent, prompt, out)
            await agent.aclose()
    else:
        async with fake.http_client() as http:
            agent = Agent(model, toolkit, http_client=http, api_key=_DEMO_KEY, retry=retry)
            result, failed = await _play(agent, prompt, out)
    files = [str(name) for name in scenario.extra.get("files") or []]
    return _verdict(result, failed, fake, workspace, files, out)


async def _play(agent: Agent, prompt: str, out: TextIO) -> tuple[RunResult, str | None]:
    try:
        return await stream_run(agent, prompt, EventPrinter(out, out, turns=True)), None
    except RunError as exc:
        out.write(f"the run failed: {exc}\n")
        return exc.result, str(exc)


def _verdict(
    result: RunResult,
    failed: str | None,
    fake: FakeGemini,
    workspace: Path,
    files: list[str],
    out: TextIO,
) -> int:
    problems: list[str] = []
    if failed is not None:
        problems.append(f"the run failed: {failed}")
    elif result.status != "completed":
        problems.append(
            f"the run did not complete: {result.status} ({result.limit or result.reason})"
        )
    problems.extend(f"{name} was not written" for name in files if not (workspace / name).is_file())
    problems.extend(fake.failures)
    if fake.remaining:
        problems.append(f"{fake.remaining} scripted model turns were not used")
    out.write("\n")
    if problems:
        out.writelines(f"demo failed: {problem}\n" for problem in problems)
        return EXIT_FAILED
    summary = (
        f"done: {result.status} in {result.turns} model turns and "
        f"{len(result.tool_calls)} tool calls"
    )
    for name in files:
        summary += f"; {name} holds {(workspace / name).read_text(encoding='utf-8').strip()!r}"
    out.write(summary + "\n")
    return EXIT_OK
