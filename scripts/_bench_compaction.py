"""One probe of ``scripts/bench.py``: a 300-turn session stays flat after compaction.

A chat of 300 prompts, each answered after one tool call returning 2,500 characters, runs
against the strict fake Gemini in process with ``Compaction(trigger_tokens=6000)``. Prints
one JSON line: request size (tokens, by the four-characters rule) and turn latency, median
of the first and the last 50 prompts after the first compaction, and their ratios.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from typing import Any

from agent import Agent, ClientSettings, Compaction
from agent._compaction import SUMMARY_PROMPT
from agent.events import Compacted
from agent.testing import FakeGemini, function_call
from toolnexus import define_tool, toolkit

TURNS = 300


@define_tool
def fetch(n: int) -> str:
    """Fetch page n."""
    return f"page {n}: " + "x" * 2_500


def model(body: dict[str, Any]) -> Any:
    if body["contents"][0]["parts"][0].get("text", "").startswith(SUMMARY_PROMPT):
        return "Notes: pages were fetched."
    if "functionResponse" in body["contents"][-1]["parts"][0]:
        return "noted"
    return function_call("fetch", {"n": len(body["contents"])})


async def main() -> None:
    fake = FakeGemini(model, sign_text=True)
    agent = Agent(
        toolkit=toolkit([fetch]),
        compaction=Compaction(trigger_tokens=6_000, keep_recent_turns=3),
        client=ClientSettings(api_key="bench", http_client=fake.http_client()),
    )
    latency: list[float] = []
    size: list[int] = []
    first_compaction = None
    for turn in range(TURNS):
        seen = len(fake.requests)
        begin = time.perf_counter()
        async for event in agent.stream(f"turn {turn}", session="bench"):
            if isinstance(event, Compacted) and first_compaction is None:
                first_compaction = turn
        latency.append((time.perf_counter() - begin) * 1000)
        size.append(max(len(json.dumps(r.body["contents"])) // 4 for r in fake.requests[seen:]))
    assert first_compaction is not None and all(r.status == 200 for r in fake.requests)
    start = first_compaction + 5
    early, late = slice(start, start + 50), slice(-50, None)
    out = {
        "turns": TURNS,
        "first_compaction_turn": first_compaction,
        "size_tokens": {
            "early": statistics.median(size[early]),
            "late": statistics.median(size[late]),
        },
        "turn_ms": {
            "early": statistics.median(latency[early]),
            "late": statistics.median(latency[late]),
        },
    }
    out["size_ratio"] = out["size_tokens"]["late"] / out["size_tokens"]["early"]
    out["latency_ratio"] = out["turn_ms"]["late"] / out["turn_ms"]["early"]
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
