"""``toolnexus-agent demo``: a two-minute tour of the agent loop against a scripted Gemini.

No API key and no network: a scratch workspace gets a copy of the hello-world skill, the
toolkit is built with the real built-in tools, and a `FakeGemini` plays the scenario shipped
with the package (the same file as ``examples/scenarios/demo.yaml``). The tour shows, as
each happens: the model loads the skill and runs its script, an approval prompt (answered
yes by the demo) before ``bash`` and ``write``, a sub-agent (``reviewer``, an `Agent` given
to the lead as a tool) reading the file, the final answer checked against a JSON Schema
(typed output), what the run would have cost, and what to try next.

Colour on a terminal, plain text when piped or when ``NO_COLOR`` is set.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from agent.cli._exits import EXIT_FAILED, EXIT_OK, CliError
from agent.cli._printer import EventPrinter, describe_cost, stream_run
from agent.cli._style import Style
from agent.errors import RunError

if TYPE_CHECKING:
    from agent import Agent, RunResult
    from agent.testing import FakeGemini, Scenario
    from toolnexus import Answer, Request, Toolkit

__all__ = [
    "REVIEWER_PROMPT",
    "REVIEWER_TOOLS",
    "add_parser",
    "command",
    "demo_data",
    "run_demo",
]

_DEMO_KEY = "demo-key-not-a-secret"
_PACE = 0.03
"""Seconds between streamed chunks on a terminal, so the events visibly arrive one by one."""
REVIEWER_TOOLS = ("read", "grep", "glob")
"""The tools of the tour's ``reviewer`` sub-agent."""
REVIEWER_PROMPT = (
    "You review short texts before they are sent. Read the file you are given and answer "
    "in one line: is it fit to send?"
)
"""The system prompt of the tour's ``reviewer`` sub-agent (``web --demo`` makes it too)."""
_NEXT = (
    'next: export GEMINI_API_KEY=... and try  toolnexus-agent run "Which files here mention '
    'TODO?"\n'
    "      the guide is docs/ (start at docs/index.md); this tour's script: "
    "examples/scenarios/demo.yaml"
)


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``demo`` and its flags."""
    parser = commands.add_parser(
        "demo",
        help="a two-minute offline tour of the agent loop (no API key, no network)",
        description=(
            "Tour the agent loop offline: the real built-in tools and the hello-world skill "
            "in a scratch workspace, a scripted Gemini, an approval prompt answered for you, "
            "a sub-agent, a typed answer and the cost line. Needs no API key and no network. "
            "Coloured on a terminal; NO_COLOR=1 turns colour off."
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
    colour: bool | None = None,
) -> int:
    """Run the offline tour and print its transcript.

    Success means: the run completed, the scripted model used every turn and saw every
    expectation met, and the scenario's ``files`` exist.

    Args:
        out: Where the transcript goes (default: stdout).
        transport: ``"http"`` serves the fake on 127.0.0.1 and talks to it over real HTTP
            instead of in process.
        keep: Leave the scratch workspace on disk.
        scenario: Play this scenario file with the same workspace and tools; its
            top-level ``files`` lists what the run must leave in the workspace, and an
            ``output_schema`` (a JSON Schema) makes the final answer typed.
        colour: Colour the transcript; by default, when ``out`` is a terminal and
            ``NO_COLOR`` is not set. On a terminal the replies also stream at a readable
            pace.

    Returns:
        The exit code: 0 on success, 1 otherwise.

    Raises:
        CliError: ``scenario`` cannot be read or is not a valid scenario.

    Example::

        from agent.cli.demo import run_demo

        raise SystemExit(run_demo())
    """
    stream = out if out is not None else sys.stdout
    style = Style.for_stream(stream) if colour is None else Style(colour)
    tour = _read_scenario(scenario)
    workspace = Path(tempfile.mkdtemp(prefix="toolnexus-demo-"))
    try:
        return asyncio.run(_demo(stream, style, workspace, transport, tour))
    finally:
        if keep:
            stream.write(f"(workspace kept: {workspace})\n")
        else:
            shutil.rmtree(workspace, ignore_errors=True)


def _read_scenario(source: str | Path | None) -> Scenario:
    import yaml

    from agent.cli._options import reason, yaml_problem
    from agent.testing import ScenarioError, read_scenario

    if source is None:
        with demo_data() as data:
            return read_scenario(data / "demo.yaml")
    try:
        return read_scenario(Path(source))
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"--scenario: cannot read {source}: {reason(exc)}") from None
    except (yaml.YAMLError, RecursionError) as exc:
        raise CliError(f"--scenario: {yaml_problem(source, exc)}") from None
    except (ScenarioError, ValueError) as exc:
        raise CliError(f"--scenario: {source} is not a valid scenario: {exc}") from None


async def _demo(
    out: TextIO, style: Style, workspace: Path, transport: str, scenario: Scenario
) -> int:
    import toolnexus as tn

    with demo_data() as data:
        shutil.copytree(data / "skills", workspace / "skills")
    # The commands run here are the scenario's own, in a throwaway folder, not a model's:
    # the shell's isolation (and its warning where bubblewrap is missing) is not needed.
    toolkit = tn.build(skills=str(workspace / "skills"), root=str(workspace), isolate_shell=False)
    fake = scenario.fake(chunk_delay=_PACE if style.colour else 0.0)
    model = str(scenario.extra.get("model") or "gemini-3-flash-preview")
    prompt = scenario.prompt or "Say hello."
    schema = scenario.extra.get("output_schema")
    async with _connection(fake, transport) as connection:
        agents = _agents(model, toolkit, schema, _Approver(out, style), connection)
        _intro(out, style, agents[0], model, transport, prompt)
        try:
            result, failed = await _play(agents[0], prompt, out, style)
        finally:
            for agent in agents:
                await agent.aclose()
    return _verdict(result, failed, fake, workspace, scenario, out, style)


@asynccontextmanager
async def _connection(fake: FakeGemini, transport: str) -> AsyncIterator[dict[str, Any]]:
    """Yield the `ClientSettings` fields that reach ``fake``: over HTTP, or in process."""
    if transport == "http":
        with fake.serve() as server:
            yield {"base_url": server.base_url}
    else:
        async with fake.http_client() as http:
            yield {"http_client": http}


def _agents(
    model: str,
    toolkit: Toolkit,
    output_schema: Any,
    wait_for: _Approver,
    connection: Mapping[str, Any],
) -> tuple[Agent, Agent]:
    """Build the tour's agents: the lead, and the reviewer it calls as a tool.

    Every `Agent` of the demo is made here, so a change to its keywords is made once.
    The lead asks before ``bash`` and file changes as ``toolnexus-agent run`` does; the
    demo's ``wait_for`` answers yes.
    """
    import toolnexus as tn
    from agent import Agent, ClientSettings, RetryPolicy, RunLimits
    from agent.cli._approval import cli_policy

    # A retried failure of the scripted model is worth showing, not waiting for.
    retry = RetryPolicy(attempts=3, initial_backoff=0.2, jitter=0.1)
    shared: dict[str, Any] = {
        "client": ClientSettings(api_key=_DEMO_KEY, **connection),
        "limits": RunLimits(retry=retry),
    }
    reading = tn.toolkit(tool for tool in toolkit if tool.name in REVIEWER_TOOLS)
    reviewer = Agent(model, reading, system_prompt=REVIEWER_PROMPT, **shared)
    review = reviewer.as_tool(
        name="reviewer", description="Reviews a file before it is sent; give it the file's path."
    )
    tools = tn.toolkit([*toolkit, review])
    lead = Agent(
        model,
        tools,
        approval=cli_policy("ask", tools),
        wait_for=wait_for,
        output_type=output_schema,
        **shared,
    )
    return lead, reviewer


def _intro(out: TextIO, style: Style, lead: Agent, model: str, transport: str, prompt: str) -> None:
    names = sorted(tool.name for tool in lead.toolkit or ())
    lines = [
        style.paint("toolnexus-agent demo: a two-minute tour of the agent loop, offline", "title"),
        "The real loop and the real tools run in a scratch folder; FakeGemini plays",
        f"{model} ({transport}). No API key and no network are used.",
        "",
        f"tools:    {', '.join(names)}",
    ]
    if "reviewer" in names:
        lines.append("          reviewer is a sub-agent: another Agent, given as a tool (as_tool)")
    lines.append("approval: bash and file changes ask first, as in `run`; the demo answers yes")
    if lead.output is not None:
        fields = ", ".join(lead.output.schema.get("properties", {})) or "a JSON value"
        lines.append(f"output:   typed, checked against a JSON Schema ({fields})")
    lines.append("")
    lines.append(style.paint("user> ", "title") + prompt)
    out.write("\n".join(lines) + "\n")


class _Approver:
    """The demo's ``wait_for``: shows each approval prompt as ``run`` would, answers yes.

    Any other request (a ``question`` in a scenario of your own) is declined: nobody is
    there to answer it.
    """

    def __init__(self, out: TextIO, style: Style) -> None:
        self._out = out
        self._style = style

    async def __call__(self, request: Request) -> Answer:
        from agent.cli._approval import answer_approval

        if request.get("kind") != "approval":
            return {"id": request["id"], "ok": False, "data": "nobody answers in the demo"}
        return await answer_approval(request, self._ask, self._tell, None)

    async def _ask(self, question: str) -> str:
        self._out.write(self._style.paint(f"? {question}", "ask") + "\n")
        self._out.write(self._style.paint("> y  (answered by the demo; `run` asks you)", "note"))
        self._out.write("\n")
        return "y"

    def _tell(self, text: str) -> None:
        self._out.write(f"  {text}\n")


async def _play(
    agent: Agent, prompt: str, out: TextIO, style: Style
) -> tuple[RunResult, str | None]:
    """Run the tour; return its result and, when the run failed, why."""
    try:
        printer = EventPrinter(out, out, turns=True, style=style)
        return await stream_run(agent, prompt, printer), None
    except RunError as exc:
        out.write(style.paint(f"the run failed: {exc}", "error") + "\n")
        return exc.result, str(exc)


def _verdict(
    result: RunResult,
    failed: str | None,
    fake: FakeGemini,
    workspace: Path,
    scenario: Scenario,
    out: TextIO,
    style: Style,
) -> int:
    files = [str(name) for name in scenario.extra.get("files") or []]
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
        out.writelines(
            style.paint(f"demo failed: {problem}", "error") + "\n" for problem in problems
        )
        return EXIT_FAILED
    out.write(_summary(result, workspace, files, style))
    return EXIT_OK


def _summary(result: RunResult, workspace: Path, files: list[str], style: Style) -> str:
    lines = []
    if isinstance(result.output, Mapping):
        lines.append(
            style.paint("result.output, the typed answer (checked, then parsed):", "title")
        )
        width = max(len(str(key)) for key in result.output) if result.output else 0
        lines += [f"  {key:<{width}}  {value}" for key, value in result.output.items()]
    elif result.output is not None:
        lines.append(
            style.paint("result.output, the typed answer: ", "title") + repr(result.output)
        )
    lines.append(
        f"done: {result.status} in {_count(result.turns, 'model turn')} and "
        f"{_count(len(result.tool_calls), 'tool call')}"
    )
    lines += [
        f"{name} holds {(workspace / name).read_text(encoding='utf-8').strip()!r}" for name in files
    ]
    lines.append(f"usage: {result.usage.total:,} tokens, the reviewer's included")
    cost = describe_cost(result.cost)
    if cost is not None:
        lines.append(f"{cost}, had these been real calls")
    lines += ["", style.paint(_NEXT, "title")]
    return "\n".join(lines) + "\n"


def _count(number: int, thing: str) -> str:
    return f"{number} {thing}" + ("" if number == 1 else "s")
