"""Context caching: a support agent with many tools, its prefix kept in a Gemini cache.

Run it from the repository root::

    python examples/context_cache.py

The agent has a long system prompt and 120 tools, the prefix every request repeats. Three
runs of one session share one cache (made by the first request), and the same runs without
the cache are shown beside them: the bytes each request sent, and what each way cost.

With GEMINI_API_KEY (or GOOGLE_API_KEY) set, it talks to the real Gemini API. Without a key
it runs offline against the fake Gemini of ``agent.testing``, which plays the model.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import toolnexus as tn
from agent import Agent, ClientSettings, MemoryStore
from agent.capabilities import ContextCache
from agent.events import CacheEvent, DoneEvent

MODEL = "gemini-2.5-flash"
RULES = (
    "You are the support desk of a hardware shop. Look things up before you answer, quote "
    "the order or product you used, and answer in two sentences at most. "
) * 40
QUESTIONS = ["Where is order 17?", "And order 18?", "Is product 5 in stock?"]


def catalog() -> tn.Toolkit:
    """120 look-up tools, as a shop's back office would offer them."""

    def make(kind: str, number: int) -> tn.Tool:
        def run(args: dict[str, Any], context: Any) -> str:
            return f"{kind} {args.get('id')}: fine (from desk {number})"

        schema = {
            "type": "object",
            "properties": {"id": {"type": "string", "description": f"The {kind} id."}},
            "required": ["id"],
        }
        description = f"Look up a {kind} in back-office system {number}: status and history."
        return tn.Tool(f"{kind}_desk_{number:03d}", run, description, schema)

    kinds = ("order", "product", "customer")
    return tn.toolkit([make(kind, n) for kind in kinds for n in range(40)])


def offline_client() -> tuple[ClientSettings, Any]:
    from agent.testing import FakeGemini, function_call

    def model(body: dict[str, Any]) -> Any:
        last = body["contents"][-1]["parts"][0]
        if "functionResponse" in last:
            return "Found it: " + last["functionResponse"]["response"]["output"]
        question = last["text"]
        tool = "product_desk_005" if "product" in question else "order_desk_017"
        return function_call(tool, {"id": "".join(c for c in question if c.isdigit())})

    fake = FakeGemini(model)
    return ClientSettings(api_key="offline-demo", http_client=fake.http_client()), fake


async def session(client: ClientSettings, cache: ContextCache | None) -> tuple[float, int]:
    """Run the three questions in one session; return the dollars and the requests made."""
    agent = Agent(
        MODEL,
        catalog(),
        system_prompt=RULES,
        capabilities=[cache] if cache is not None else [],
        store=MemoryStore(),
        client=client,
    )
    usd, requests = 0.0, 0
    for question in QUESTIONS:
        async for event in agent.stream(question, session="desk"):
            if isinstance(event, CacheEvent):
                print(f"  cache {event.action}: {event.name} ({event.tokens:,} tokens)")
            elif isinstance(event, DoneEvent):
                result = event.result
                print(f"  {question} -> {result.text}")
        usd += result.cost.usd or 0.0
        requests += result.turns
    return usd, requests


async def main() -> None:
    online = bool(os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"))
    if not online:
        print("No API key found: running against the offline fake Gemini.")
    for label, cache in (("with ContextCache", ContextCache(ttl=600)), ("without", None)):
        client, fake = (ClientSettings(), None) if online else offline_client()
        print(f"{label}:")
        usd, requests = await session(client, cache)
        line = f"  {requests} requests, ${usd:.6f}"
        if fake is not None:
            sent = sum(len(str(r.body)) for r in fake.requests)
            line += f", {sent:,} characters of request bodies"
        print(line)


if __name__ == "__main__":
    asyncio.run(main())
