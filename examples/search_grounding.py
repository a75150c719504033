"""Search grounding with citations: Google Search beside a Python tool, sources printed.

Run it from the repository root::

    python examples/search_grounding.py

With GEMINI_API_KEY (or GOOGLE_API_KEY) set, it talks to the real Gemini API (built-in
tools beside function tools need Gemini 3). Without a key it runs offline against the fake
Gemini of ``agent.testing``, which plays a model that searches, calls the tool and answers.
"""

from __future__ import annotations

import asyncio
import os

import toolnexus as tn
from agent import Agent, ClientSettings

MODEL = "gemini-3-flash-preview"


@tn.define_tool
def forecast(city: str) -> str:
    """Return today's weather for a city."""
    return f"{city}: sunny, 21 C"


def offline_agent(tk: tn.Toolkit) -> Agent:
    from agent.testing import FakeGemini, function_call, grounding, reply, server_tool_call

    search = server_tool_call("GOOGLE_SEARCH_WEB", {"queries": ["paris events today"]}, {})
    sources = [
        ("https://example.org/paris-jazz", "example.org"),
        ("https://news.example/paris", "news.example"),
    ]
    fake = FakeGemini(
        [
            reply(*search, function_call("forecast", {"city": "Paris"})),
            reply(
                "It is sunny (21 C) and there is a jazz festival by the Seine.",
                grounding=grounding(["paris events today"], sources),
            ),
        ]
    )
    return Agent(
        MODEL,
        tk,
        builtin_tools=["google_search"],
        client=ClientSettings(api_key="offline-demo", http_client=fake.http_client()),
    )


async def main() -> None:
    tk = tn.toolkit([forecast])
    if os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"):
        agent = Agent(MODEL, tk, builtin_tools=["google_search"])
    else:
        agent = offline_agent(tk)
        print("No API key found: running against the offline fake Gemini.")
    async with agent:
        result = await agent.run("What's on in Paris today, and will it rain?")
    print(result.text)
    if result.grounding is not None:
        print("searched:", ", ".join(result.grounding.queries))
        for number, source in enumerate(result.grounding.sources, 1):
            print(f"[{number}] {source.title} <{source.uri}>")


if __name__ == "__main__":
    asyncio.run(main())
