"""One probe of ``scripts/bench.py``: what a context cache changes in a long run with many tools.

Run in a fresh process against the strict fake Gemini on its in-process transport. The same
run (200 tools, 30 turns: 29 calls, one per turn, then the answer) is made twice on
gemini-2.5-flash, without and with ``ContextCache(ttl=600)``; for each turn it records the
bytes of the request on the wire (its ``content-length``), the prompt and cached tokens the
fake reports, and the turn's cost by the price table; and for the run the storage billed and
the cache calls made. The fake estimates tokens at four characters each, so the tokens and
dollars are those of requests of this size, not of any real tokenizer.

Prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import toolnexus as tn
from agent import Agent, ClientSettings, RunLimits
from agent.capabilities import ContextCache
from agent.testing import FakeGemini, function_call

MODEL = "gemini-2.5-flash"
TOOLS = 200
TURNS = 30
SYSTEM = (
    "You are the operations agent of a warehouse. Use the tools to check each system in "
    "turn, note what you find, and finish with a short report. "
) * 10


def _tool(i: int) -> tn.Tool:
    def run(args: dict[str, Any], context: Any) -> str:
        return f"system {i}: {args.get('check', 'status')} ok"

    schema = {
        "type": "object",
        "properties": {
            "check": {
                "type": "string",
                "enum": ["status", "stock", "alarms"],
                "description": "What to check on the system.",
            },
            "verbose": {"type": "boolean", "description": "Include the details."},
        },
        "required": ["check"],
    }
    description = (
        f"Check warehouse system number {i}: its status, its stock counters or its alarms, "
        "as the operations handbook describes them."
    )
    return tn.Tool(f"system_{i:03d}", run, description, schema)


async def _run(toolkit: tn.Toolkit, cached: bool) -> dict[str, Any]:
    script: list[Any] = [function_call(f"system_{t:03d}", {"check": "status"}) for t in range(29)]
    fake = FakeGemini([*script, "All systems checked: nothing to report."])
    agent = Agent(
        MODEL,
        toolkit,
        system_prompt=SYSTEM,
        limits=RunLimits(max_turns=TURNS + 5),
        capabilities=[ContextCache(ttl=600)] if cached else [],
        client=ClientSettings(api_key="bench-not-a-secret", http_client=fake.http_client()),
    )
    started = time.perf_counter()
    result = await agent.run("Check every system.")
    seconds = time.perf_counter() - started
    assert result.status == "completed" and result.turns == TURNS, result.status
    fake.assert_consumed()
    return {
        "bytes": [int(r.headers["content-length"]) for r in fake.requests],
        "prompt_tokens": [usage.prompt for usage in result.turn_usage],
        "cached_tokens": [usage.cached for usage in result.turn_usage],
        "turn_usd": list(result.cost.turns),
        "usd": result.cost.usd,
        "storage_usd": result.cost.cache_storage,
        "saving_usd": result.cost.cache_saving,
        "cache_calls": [method for method, _ in fake.caches.requests],
        "cache_tokens": [cache.tokens for cache in fake.caches.caches.values()],
        "seconds": seconds,
    }


async def main() -> None:
    toolkit = tn.toolkit([_tool(i) for i in range(TOOLS)])
    plain = await _run(toolkit, cached=False)
    cached = await _run(toolkit, cached=True)
    out = {
        "model": MODEL,
        "tools": TOOLS,
        "turns": TURNS,
        "without": plain,
        "with": cached,
        "bytes_ratio": sum(cached["bytes"]) / sum(plain["bytes"]),
        "usd_ratio": cached["usd"] / plain["usd"],
    }
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
