"""Typed output with a tool: the agent calls a Python tool, then answers as a pydantic model.

Run it from the repository root::

    python examples/typed_output.py

With GEMINI_API_KEY (or GOOGLE_API_KEY) set, it talks to the real Gemini API (Gemini 3
takes the JSON schema and the tools in one request). Without a key it runs offline against
the fake Gemini of ``agent.testing``, which plays the model.
"""

from __future__ import annotations

import asyncio
import os

import pydantic

import toolnexus as tn
from agent import Agent, ClientSettings

MODEL = "gemini-3-flash-preview"


class Forecast(pydantic.BaseModel):
    city: str
    temp_c: int
    advice: str


@tn.define_tool
def weather(city: str) -> str:
    """Return today's weather for a city."""
    return f"{city}: sunny, 21 C"


def offline_agent(tk: tn.Toolkit) -> Agent:
    from agent.testing import FakeGemini, function_call, json_output

    fake = FakeGemini(
        [
            function_call("weather", {"city": "Paris"}),
            json_output({"city": "Paris", "temp_c": 21, "advice": "Sunglasses."}),
        ]
    )
    return Agent(
        MODEL,
        tk,
        output_type=Forecast,
        client=ClientSettings(api_key="offline-demo", http_client=fake.http_client()),
    )


async def main() -> None:
    tk = tn.toolkit([weather])
    if os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"):
        agent = Agent(MODEL, tk, output_type=Forecast)
    else:
        agent = offline_agent(tk)
        print("No API key found: running against the offline fake Gemini.")
    async with agent:
        result = await agent.run("What should I wear in Paris today?")
    print(f"[{result.status}] mode={agent.output.mode if agent.output else None}")
    print(repr(result.output))


if __name__ == "__main__":
    asyncio.run(main())
