"""One probe of ``scripts/bench.py``: how the cost of a run grows with the work in it.

Run in a fresh process against the strict fake Gemini on its in-process transport (no
sockets, the fake answers inside the request), so the figures are the client's own:

- **tools**: a run of one call and an answer with 1, 10, 100 and 500 tools, ours and the
  raw-SDK floor; ours' overhead (ours - floor) per run at each size;
- **turns**: runs of 1, 10 and 100 turns (one call each), ours and the floor; ours'
  overhead per turn at each length;
- **session**: a 300-run chat on a `SqliteStore` under a compaction that never triggers:
  the time of each save (the transcript handed over and written), the bytes of Contents
  it writes, and the time of compaction's check before each model call, as the history
  grows.

Prints one JSON line.
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from google import genai
from google.genai import types

import agent._compaction as compaction_module
import toolnexus as tn
from agent import Agent, ClientSettings, Compaction, RunLimits, SqliteStore
from agent._loop import Run  # where a run hands its transcript to the session
from agent.testing import FakeGemini, function_call

MODEL = "gemini-3-flash-preview"
TOOL_COUNTS = (1, 10, 100, 500)
TURN_COUNTS = (1, 10, 100)
CHAT_RUNS = 300
EARLY, LATE = slice(10, 60), slice(-50, None)
"""The saves and checks compared: runs 10 to 59 against the last 50."""
TEXT = "lorem ipsum dolor sit amet " * 40  # about 1,000 characters a message

Runner = Callable[[], Awaitable[None]]


def _tool(i: int) -> tn.Tool:
    def tool(x: int) -> str:
        return f"tool {i}: {x}"

    tool.__name__ = f"tool_{i:03d}"
    tool.__doc__ = f"Tool number {i}: return its input tagged with its number."
    return tn.define_tool(tool, inline=True)


def _calls_then_answer(turns: int) -> Callable[[dict[str, Any]], Any]:
    """The model: ``turns`` turns of one call to the first tool, then an answer."""

    def model(body: dict[str, Any]) -> Any:
        done = sum(1 for c in body["contents"] if c["role"] == "model")
        return function_call("tool_000", {"x": done}) if done < turns else "Done."

    return model


def _agent(fake: FakeGemini, toolkit: tn.Toolkit, **options: Any) -> Agent:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Agent(
            MODEL,
            toolkit,
            client=ClientSettings(api_key="bench", http_client=fake.http_client()),
            limits=RunLimits(max_turns=1_000, repeat_limit=10_000),
            **options,
        )


def _floor(fake: FakeGemini, agent: Agent, toolkit: tn.Toolkit) -> Runner:
    """The hand loop on the raw SDK, with the agent's declarations."""
    client = genai.Client(
        api_key="bench", http_options=types.HttpOptions(httpx_async_client=fake.http_client())
    )
    declarations = [
        types.FunctionDeclaration(
            name=d["name"],
            description=d["description"],
            parameters_json_schema=d["parametersJsonSchema"],
        )
        for d in agent.declarations
    ]
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=declarations)],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )

    async def run() -> None:
        contents = [types.Content(role="user", parts=[types.Part(text="go")])]
        while True:
            response = await client.aio.models.generate_content(
                model=MODEL, contents=contents, config=config
            )
            if not response.function_calls:
                return
            assert response.candidates and response.candidates[0].content
            contents.append(response.candidates[0].content)
            parts = [
                types.Part(
                    function_response=types.FunctionResponse(
                        id=fc.id,
                        name=fc.name,
                        response={"result": toolkit[fc.name or ""].handler(fc.args or {}, None)},
                    )
                )
                for fc in response.function_calls
            ]
            contents.append(types.Content(role="user", parts=parts))

    return run


class _SdkClock:
    """Time spent inside the SDK's ``generate_content`` (the fake answers in there too)."""

    def __init__(self) -> None:
        self.ms = 0.0
        call = genai.models.AsyncModels.generate_content

        async def timed(models: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await call(models, **kwargs)
            finally:
                self.ms += (time.perf_counter() - start) * 1000

        genai.models.AsyncModels.generate_content = timed  # type: ignore[method-assign]


_SDK = _SdkClock()


async def _pair_of(tools: int, turns: int) -> tuple[Runner, Runner]:
    toolkit = tn.toolkit([_tool(i) for i in range(tools)])
    fake = FakeGemini(_calls_then_answer(turns))
    agent = _agent(fake, toolkit)

    async def ours() -> None:
        result = await agent.run("go")
        assert result.text == "Done.", result.text

    return _floor(fake, agent, toolkit), ours


async def _outside_sdk_ms(pair: tuple[Runner, Runner], runs: int) -> tuple[float, float]:
    """Median time per run outside the SDK call of (floor, ours), interleaved, one warm-up.

    What happens inside the call (building the request, the fake's answer, parsing) is
    the same work for both, so what is left is each loop's own. The garbage collector runs
    between runs, not during them: a collection's pause would otherwise land on one side's
    figure at random.
    """
    floor, ours = pair
    times: tuple[list[float], list[float]] = ([], [])
    for index in range(runs + 1):
        for side, run in enumerate((floor, ours) if index % 2 else (ours, floor)):
            gc.collect()
            gc.disable()
            sdk = _SDK.ms
            start = time.perf_counter()
            try:
                await run()
            finally:
                gc.enable()
            if index:
                times[side].append((time.perf_counter() - start) * 1000 - (_SDK.ms - sdk))
    return statistics.median(times[0]), statistics.median(times[1])


async def grow_tools(runs: int) -> dict[str, Any]:
    """Ours' own time per run, over the floor's, with 1 to 500 tools."""
    out: dict[str, Any] = {}
    for count in TOOL_COUNTS:
        floor, ours = await _outside_sdk_ms(await _pair_of(count, 1), runs)
        out[str(count)] = {"floor_ms": floor, "ours_ms": ours, "overhead_ms": ours - floor}
    return out


async def grow_turns(runs: int) -> dict[str, Any]:
    """Ours' own time per turn, over the floor's, in runs of 1 to 100 turns."""
    out: dict[str, Any] = {}
    for turns in TURN_COUNTS:
        floor, ours = await _outside_sdk_ms(await _pair_of(1, turns), max(3, runs // turns))
        out[str(turns)] = {
            "floor_ms": floor / turns,
            "ours_ms": ours / turns,
            "overhead_per_turn_ms": (ours - floor) / turns,
        }
    return out


async def chat(folder: Path) -> dict[str, Any]:
    """A 300-run chat on SQLite: each save and each compaction check, early and late."""
    saves: list[float] = []
    written: list[int] = []
    checks: list[float] = []
    checkpoint = Run.checkpoint
    save_appended = SqliteStore.save_appended
    check = compaction_module.compact

    async def timed_checkpoint(self: Run, pending: Any) -> None:
        start = time.perf_counter()
        await checkpoint(self, pending)
        saves.append((time.perf_counter() - start) * 1000)

    async def counted_save(self: SqliteStore, session_id: str, transcript: Any, kept: int) -> None:
        await save_appended(self, session_id, transcript, kept)
        written.append(sum(len(json.dumps(c)) for c in transcript.contents[kept:]))

    async def timed_check(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        outcome = await check(*args, **kwargs)
        checks.append((time.perf_counter() - start) * 1000)
        return outcome

    Run.checkpoint = timed_checkpoint  # type: ignore[method-assign]
    SqliteStore.save_appended = counted_save  # type: ignore[method-assign]
    compaction_module.compact = timed_check
    fake = FakeGemini(lambda body: "noted: " + TEXT, strict=True)
    async with SqliteStore(folder / "chat.db") as store:
        agent = _agent(fake, tn.toolkit(), store=store, compaction=Compaction(trigger_tokens=10**9))
        for turn in range(CHAT_RUNS):
            await agent.run(f"turn {turn}: {TEXT}", session="chat")
    saved = await SqliteStore(folder / "chat.db").get("chat")
    assert saved is not None and len(saved.contents) == 2 * CHAT_RUNS
    early_save, late_save = statistics.median(saves[EARLY]), statistics.median(saves[LATE])
    early_check, late_check = statistics.median(checks[EARLY]), statistics.median(checks[LATE])
    return {
        "runs": CHAT_RUNS,
        "contents": len(saved.contents),
        "save_ms": {"early": early_save, "late": late_save},
        "save_ratio": late_save / early_save,
        "save_bytes": {"early": statistics.median(written[EARLY]), "late": written[-1]},
        "check_ms": {"early": early_check, "late": late_check},
        "check_ratio": late_check / early_check,
    }


async def main(runs: int) -> dict[str, Any]:
    """Run the three probes."""
    with tempfile.TemporaryDirectory(prefix="toolnexus-growth-") as folder:
        return {
            "tools": await grow_tools(runs),
            "turns": await grow_turns(runs),
            "session": await chat(Path(folder)),
        }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20))))
