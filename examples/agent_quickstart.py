"""Quick start: a toolkit with a Python-function tool and skills, driven by a Gemini agent.

Run it from the repository root::

    python examples/agent_quickstart.py

With GEMINI_API_KEY (or GOOGLE_API_KEY) set, it talks to the real Gemini API. Without a key
it runs offline against the fake Gemini of ``agent.testing``, which plays a scripted model:
it loads the hello-world skill, calls the Python tool, then answers.

A failed model call is retried (`agent.RetryPolicy`: 5 attempts, backing off 1, 2, 4, 8 s);
each retry is shown as it starts, and a call that still fails ends the script with one line
saying what failed and what to check (exit code 1).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Literal

import toolnexus as tn
from agent import Agent, ClientSettings, ModelError
from agent.events import DoneEvent, RetryEvent, TextEvent, ToolCallEvent, ToolResultEvent

HERE = Path(__file__).resolve().parent


@tn.define_tool
def forecast(city: str, unit: Literal["C", "F"] = "C") -> str:
    """Return today's weather forecast for a city.

    Args:
        city: The city name, e.g. "Paris".
        unit: Temperature unit.
    """
    return f"Sunny in {city}, 21 {unit}"


def build_toolkit() -> tn.Toolkit:
    # The skills of examples/skills, your own function tool, and no built-in tools
    # (add builtins=True to give the model files and a shell in the current directory).
    return tn.build(skills=HERE / "skills", builtins=False, tools=[forecast])


def offline_agent(tk: tn.Toolkit) -> Agent:
    from agent.testing import FakeGemini, function_call, reply

    fake = FakeGemini(
        [
            reply(function_call("skill", {"name": "hello-world"})),
            reply(function_call("forecast", {"city": "Paris"})),
            reply("Hello, world! The hello-world skill is loaded, and Paris is sunny at 21 C."),
        ]
    )
    return Agent(
        toolkit=tk, client=ClientSettings(api_key="offline-demo", http_client=fake.http_client())
    )


def choose_agent() -> Agent:
    tk = build_toolkit()
    if os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"):
        print("Using the real Gemini API.")
        return Agent(model="gemini-2.5-flash", toolkit=tk, system_prompt="Be brief.")
    print("No API key found: running against the offline fake Gemini.")
    return offline_agent(tk)


async def main(agent: Agent | None = None) -> int:
    agent = agent or choose_agent()

    prompt = "Use the hello-world skill, then tell me the weather in Paris."
    try:
        await show(agent, prompt)
    except ModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        await agent.aclose()
    return 0


async def show(agent: Agent, prompt: str) -> None:
    async for event in agent.stream(prompt):
        if isinstance(event, RetryEvent):
            print(f"(model call failed: {event.status}; retrying in {event.delay:.1f} s)")
        elif isinstance(event, ToolCallEvent):
            print(f"-> {event.call.name}({event.call.args})")
        elif isinstance(event, ToolResultEvent):
            first_line = event.result.output.splitlines()[0] if event.result.output else ""
            print(f"<- {event.call.name}: {first_line}")
        elif isinstance(event, TextEvent):
            print(event.text, end="")
        elif isinstance(event, DoneEvent):
            result = event.result
            print(f"\n[{result.status}] {result.turns} turns, {result.usage.total} tokens")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
