"""The offline demo: the real agent loop and real tools against a scripted Gemini.

No API key and no network: a scratch workspace gets a copy of the hello-world skill, the
toolkit is built with the real built-in tools, and a `FakeGemini` plays the scenario shipped
with the package (the same file as ``examples/scenarios/demo.yaml``). The model loads the
skill, reads and runs its script, writes ``greeting.txt`` and answers; every turn, tool call
and result is printed.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Literal, TextIO

import toolnexus as tn
from agent._agent import Agent
from agent._result import RunResult
from agent._retry import RetryPolicy
from agent.errors import RunError
from agent.events import DoneEvent, RetryEvent, TextEvent, ThoughtEvent, ToolCallEvent, ToolResultEvent
from agent.testing import FakeGemini, read_scenario

__all__ = ["demo_data", "run_demo"]

_DEMO_KEY = "demo-key-not-a-secret"
_RESULT_LINES = 6
# Short waits: a retried failure of the scripted model is worth showing, not waiting for.
_RETRY = RetryPolicy(attempts=3, initial_backoff=0.2, jitter=0.1)


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
    """Run the offline demo and print its transcript; return the exit code (0 = success).

    ``transport="http"`` serves the fake on 127.0.0.1 and talks to it over real HTTP
    instead of the in-process transport. ``keep`` leaves the scratch workspace on disk.
    ``scenario`` plays another scenario file with the same workspace and tools; its
    top-level ``files`` lists what the run must leave in the workspace.

    Success means: the run completed, the scripted model used every turn and saw every
    expectation met, and the scenario's ``files`` exist.

    Example::

        from agent.cli.demo import run_demo
        raise SystemExit(run_demo())
    """
    import sys

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
    with demo_data() as data:
        scenario = read_scenario(data / "demo.yaml" if source is None else Path(source))
        shutil.copytree(data / "skills", workspace / "skills")
    toolkit = tn.build(skills=str(workspace / "skills"), root=str(workspace))
    fake = scenario.fake()
    model = str(scenario.extra.get("model") or "gemini-3-flash-preview")
    prompt = scenario.prompt or "Say hello."
    say = _Printer(out)
    say.line("toolnexus-agent demo: the real agent loop and tools, a scripted Gemini.")
    say.line("No API key and no network are used.")
    say.line(f"workspace: {workspace}")
    say.line(f"tools:     {', '.join(sorted(tool.name for tool in toolkit))}")
    say.line(f"model:     {model} (scripted by FakeGemini, via {transport})")
    say.line("")
    say.line(f"user> {prompt}")
    if transport == "http":
        with fake.serve() as server:
            agent = Agent(model, toolkit, base_url=server.base_url, api_key=_DEMO_KEY, retry=_RETRY)
            result = await _play(agent, prompt, say)
            await agent.aclose()
    else:
        http = fake.http_client()
        async with http:
            agent = Agent(model, toolkit, http_client=http, api_key=_DEMO_KEY, retry=_RETRY)
            result = await _play(agent, prompt, say)
    files = [str(name) for name in scenario.extra.get("files") or []]
    return _verdict(result, fake, workspace, files, say)


async def _play(agent: Agent, prompt: str, say: _Printer) -> RunResult | None:
    try:
        return await _events(agent, prompt, say)
    except RunError as exc:
        say.line(f"the run failed: {exc}")
        return exc.result


async def _events(agent: Agent, prompt: str, say: _Printer) -> RunResult | None:
    result: RunResult | None = None
    turn = 0
    # Streamed text and thoughts arrive in pieces: print each run of them whole, and label
    # the last turn's text as the answer.
    kind: list[str] = [""]
    pieces: list[str] = []

    def flush(label: str | None = None) -> None:
        if pieces:
            say.block(label or kind[0], "".join(pieces))
            pieces.clear()

    def collect(label: str, piece: str) -> None:
        if kind[0] != label:
            flush()
            kind[0] = label
        pieces.append(piece)

    async for event in agent.stream(prompt):
        if isinstance(event, TextEvent | ThoughtEvent | ToolCallEvent) and event.turn != turn:
            flush()
            turn = event.turn
            say.line(f"\n--- turn {turn} ---")
        if isinstance(event, TextEvent):
            collect("model> ", event.text)
        elif isinstance(event, ThoughtEvent):
            collect("model (thinking)> ", event.text)
        elif isinstance(event, ToolCallEvent):
            flush()
            say.line(f"tool call> {event.call.name} {json.dumps(event.call.args, ensure_ascii=False)}")
        elif isinstance(event, ToolResultEvent):
            flush()
            label = "tool error" if event.result.is_error else "tool result"
            say.block(f"{label} ({event.call.name})> ", _clip(event.result.output))
        elif isinstance(event, RetryEvent):
            flush()
            say.line(f"(retrying the model call: {event.status}, after {event.delay:.1f} s)")
        elif isinstance(event, DoneEvent):
            result = event.result
    answered = result is not None and result.status == "completed" and kind[0] == "model> "
    flush("answer> " if answered else None)
    return result


def _verdict(
    result: RunResult | None, fake: FakeGemini, workspace: Path, files: list[str], say: _Printer
) -> int:
    say.line("")
    problems: list[str] = []
    if result is None or result.status != "completed":
        status = (
            "no result" if result is None else f"{result.status} ({result.limit or result.reason})"
        )
        problems.append(f"the run did not complete: {status}")
    problems.extend(f"{name} was not written" for name in files if not (workspace / name).is_file())
    problems.extend(fake.failures)
    if fake.remaining:
        problems.append(f"{fake.remaining} scripted model turns were not used")
    if problems:
        for problem in problems:
            say.line(f"demo failed: {problem}")
        return 1
    assert result is not None
    summary = f"done: {result.status} in {result.turns} model turns and "
    summary += f"{len(result.tool_calls)} tool calls"
    for name in files:
        summary += f"; {name} holds {(workspace / name).read_text(encoding='utf-8').strip()!r}"
    say.line(summary)
    return 0


def _clip(text: str) -> str:
    lines = text.rstrip("\n").splitlines() or [""]
    if len(lines) <= _RESULT_LINES:
        return "\n".join(lines)
    hidden = len(lines) - _RESULT_LINES
    more = f"... ({hidden} more line{'s' if hidden > 1 else ''})"
    return "\n".join([*lines[:_RESULT_LINES], more])


class _Printer:
    """Write transcript lines, indenting continuation lines under their label."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def line(self, text: str) -> None:
        self._out.write(text + "\n")
        self._out.flush()

    def block(self, label: str, text: str) -> None:
        first, *rest = text.splitlines() or [""]
        pad = " " * len(label)
        self.line(label + first + "".join(f"\n{pad}{line}" for line in rest))
