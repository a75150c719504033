"""Token rate: six runs and their sub-agents share one limit of prompt tokens per window.

Run it from the repository root (offline: a scripted fake Gemini plays the model)::

    python examples/token_rate.py

Gemini's quotas count input tokens per minute. Here the window is two seconds, so the
example ends in a few: each run asks a researcher sub-agent, whose calls count against the
same limit as its parent's. The fake notes when each request arrives; no window of two
seconds holds more than the limit's 6,000 tokens.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import toolnexus as tn
from agent import Agent, ClientSettings
from agent.capabilities import TokenRate
from agent.testing import FakeGemini, function_call

LIMIT, WINDOW = 6_000, 2.0
arrivals: list[tuple[float, str]] = []


def model(body: dict[str, Any]) -> object:
    """Plays both agents: the lead hands the task to the researcher, who answers it."""
    system = body.get("systemInstruction", {}).get("parts", [{}])[0].get("text", "")
    last = body["contents"][-1]["parts"][0]
    who = "researcher" if system.startswith("You research") else "lead"
    turn = "answer" if "functionResponse" in last else "ask"
    arrivals.append((time.monotonic(), f"{who} {turn}"))
    if who == "researcher":
        return "Found: 42."
    if turn == "answer":
        return f"The answer: {last['functionResponse']['response']['output']}"
    return function_call("researcher", {"task": "Look it up. " + "detail " * 300})


async def main() -> None:
    fake = FakeGemini(model)
    client = ClientSettings(api_key="offline", http_client=fake.http_client())
    researcher = Agent(system_prompt="You research.", client=client)
    lead = Agent(
        toolkit=tn.toolkit([researcher.as_tool(name="researcher", description="Finds facts.")]),
        client=client,
        capabilities=[TokenRate(LIMIT, per=WINDOW)],
    )
    began = time.monotonic()
    prompts = [f"Task {n}: what is the answer? " + "context " * 300 for n in range(6)]
    results = await asyncio.gather(*(lead.run(prompt) for prompt in prompts))
    tokens = [result.usage.prompt for result in results]
    print(f"{len(results)} runs, {len(fake.requests)} requests, {sum(tokens):,} prompt tokens")
    for when, what in sorted(arrivals):
        print(f"  +{when - began:4.1f} s  {what}")
    print(f"done in {time.monotonic() - began:.1f} s; at most {LIMIT:,} tokens per {WINDOW:g} s")


if __name__ == "__main__":
    asyncio.run(main())
