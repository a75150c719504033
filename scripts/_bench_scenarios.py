"""Scenarios of ``scripts/bench.py``: the fake model's decisions and the plain tool functions.

Imported by the parent (the fake's model function) and by both kinds of worker. It must not
import ``toolnexus`` or ``agent``: the floor worker loads it too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

SCENARIOS = ("pair", "fanout", "wide", "long")
MODEL = "gemini-3-flash-preview"
WIDE_TOOLS = 200
LONG_TURNS = 60
FANOUT_CALLS = 8
FANOUT_SLEEP = 0.1


def prompt(scenario: str) -> str:
    """The user prompt that tells the fake model which scenario it plays."""
    return f"bench:{scenario} please use the tools, then answer."


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def mul(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


async def nap(i: int) -> str:
    """Wait 100 ms, then return the index."""
    await asyncio.sleep(FANOUT_SLEEP)
    return f"nap {i} done"


def echo(n: int) -> int:
    """Return the number given."""
    return n


def wide_function(i: int) -> Callable[[int, str], str]:
    """Return the ``i``-th of the 200 small tools of the ``wide`` scenario."""

    def tool(x: int, note: str = "") -> str:
        return f"tool {i}: {x}{note}"

    tool.__name__ = wide_name(i)
    tool.__doc__ = f"Tool number {i}: return its input tagged with its number."
    return tool


def wide_name(i: int) -> str:
    """The name of the ``i``-th wide tool."""
    return f"tool_{i:03d}"


def functions(scenario: str) -> dict[str, Callable[..., Any]]:
    """The Python functions of a scenario, by tool name."""
    if scenario == "pair":
        return {"add": add, "mul": mul}
    if scenario == "fanout":
        return {"nap": nap}
    if scenario == "wide":
        return {wide_name(i): wide_function(i) for i in range(WIDE_TOOLS)}
    if scenario == "long":
        return {"echo": echo}
    raise ValueError(f"unknown scenario {scenario!r}; choose from {', '.join(SCENARIOS)}")


def _scenario_of(body: dict[str, Any]) -> str:
    for content in body.get("contents", []):
        for part in content.get("parts", []):
            text = part.get("text")
            if isinstance(text, str) and text.startswith("bench:"):
                return text[6:].split(" ", 1)[0]
    raise AssertionError("the first user turn names no bench scenario")


def decide(body: dict[str, Any]) -> Any:
    """Play the model: return the next reply for a request body (camelCase keys).

    The reply is the fake's builder value: a list of function-call parts or the final text.
    """
    from agent.testing import function_call, reply

    scenario = _scenario_of(body)
    steps = sum(1 for c in body.get("contents", []) if c.get("role") == "model")
    if scenario == "pair" and steps == 0:
        return reply(function_call("add", {"a": 1, "b": 2}), function_call("mul", {"a": 3, "b": 4}))
    if scenario == "fanout" and steps == 0:
        return reply(*(function_call("nap", {"i": i}) for i in range(FANOUT_CALLS)))
    if scenario == "wide" and steps == 0:
        return reply(function_call(wide_name(137), {"x": 5}))
    if scenario == "long" and steps < LONG_TURNS:
        return reply(function_call("echo", {"n": steps}))
    return f"Done with {scenario} after {steps} tool steps."
