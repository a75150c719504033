"""Half-price tool loops: three agent tasks whose model calls go in Gemini Batch API jobs.

Run it from the repository root (offline: a scripted fake Gemini plays the model and
serves the Batch API, its jobs done at the first look)::

    python examples/gemini_batch.py

Each task asks for the weather of a city: one tool turn, then the answer. All three wait
for their first response together, so they go in one job; the tools run here; their second
turns go in the next job. The same tasks run again with the same state file cost nothing:
the engine replays what it recorded.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import toolnexus as tn
from agent import Agent, ClientSettings
from agent.batch import GeminiBatch, JobNote
from agent.testing import FakeGemini, function_call, reply

USAGE = {"promptTokenCount": 2_000, "candidatesTokenCount": 200, "totalTokenCount": 2_200}


@tn.define_tool
def get_weather(city: str) -> str:
    """Today's forecast for a city."""
    return {"Paris": "sunny, 24 C", "Oslo": "rain, 12 C"}.get(city, "cloudy, 18 C")


def model(body: dict) -> object:
    """Plays the model: ask for the weather, then report it."""
    last = body["contents"][-1]["parts"][0]
    if "functionResponse" in last:
        forecast = last["functionResponse"]["response"]["output"]
        return reply(f"It is {forecast}.", usage=USAGE)
    city = last["text"].removeprefix("Weather in ").rstrip("?")
    return reply(function_call("get_weather", {"city": city}), usage=USAGE)


def show(job: JobNote) -> None:
    if job.kind == "created":
        print(f"{job.job}: {job.requests} requests sent ({job.source})")
    elif job.kind == "ended":
        print(f"{job.job}: {job.state}")


async def main() -> None:
    fake = FakeGemini(model)
    fake.batches.progression = ()  # the fake's jobs end at the first look
    agent = Agent(
        toolkit=tn.toolkit([get_weather]),
        client=ClientSettings(api_key="offline", http_client=fake.http_client()),
    )
    prompts = {city.lower(): f"Weather in {city}?" for city in ("Paris", "Oslo", "Lima")}
    with tempfile.TemporaryDirectory() as folder:
        state = Path(folder) / "weather.gemini-batch.jsonl"
        batch = GeminiBatch(state=state, poll_interval=0, on_job=show)
        results = await batch.run(agent, prompts)
        for task, result in results.items():
            print(f"{task}: {result.text} (${result.cost.usd:.5f}, {result.turns} turns)")
        direct = await agent.run("Weather in Paris?")
        print(f"the same task, direct: ${direct.cost.usd:.5f}")
        again = await GeminiBatch(state=state, poll_interval=0, on_job=show).run(agent, prompts)
        print(f"run again: {again['oslo'].text} with {fake.batches.created} jobs in all")


if __name__ == "__main__":
    asyncio.run(main())
