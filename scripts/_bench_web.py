"""One probe of ``scripts/bench.py``: what the web page adds to each event of a run.

The same run twice over, alternating, in one fresh process against the strict fake Gemini
on its in-process transport:

- **stream** (the floor): a new agent, and ``Agent.stream`` consumed to its end;
- **page**: ``toolnexus-agent web``'s app (`agent.web.create_app`) served by uvicorn on
  127.0.0.1, a new conversation started with ``POST /api/runs`` and its server-sent events
  read over HTTP until the run is idle: the agent made for the conversation, the run driven
  in its task, each event turned into JSON, logged, framed and sent.

A run is 5 turns of 10 parallel calls and a streamed answer: about 110 events. The figures
are the medians of wall and CPU time per run, their ratio, and the page's extra time per
event. Prints one JSON line.
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import sys
import time
from typing import Any

import httpx
import uvicorn

import toolnexus as tn
from agent import Agent, ClientSettings, MemoryStore
from agent.testing import FakeGemini, function_call, reply
from agent.web import AgentOptions, Conversations, PageSettings, create_app

MODEL = "gemini-3-flash-preview"
TURNS, CALLS = 5, 10
TOKEN = "bench-token"


def _script() -> list[Any]:
    turns: list[Any] = [
        reply(*(function_call("echo", {"text": f"{t}-{c}"}) for c in range(CALLS)))
        for t in range(TURNS)
    ]
    return [*turns, "All echoed; the run ends here with a short answer in a few pieces."]


def _echo(text: str) -> str:
    """Echo the text."""
    return text


TOOLKIT = tn.toolkit([tn.define_tool(_echo, name="echo", inline=True)])


def _agent(store: MemoryStore) -> Agent:
    fake = FakeGemini(_script())
    client = ClientSettings(api_key="bench", http_client=fake.http_client())
    return Agent(MODEL, TOOLKIT, store=store, client=client)


async def _floor(store: MemoryStore, number: int) -> int:
    events = 0
    async for _ in _agent(store).stream("echo them", session=f"floor-{number}"):
        events += 1
    return events


async def _page(client: httpx.AsyncClient) -> int:
    started = await client.post("/api/runs", json={"text": "echo them"})
    run = started.json()["id"]
    events = 0
    async with client.stream("GET", f"/api/runs/{run}/events") as response:
        async for line in response.aiter_lines():
            if line == "event: agent":
                events += 1
    return events


async def _timed(work: Any) -> tuple[float, float, int]:
    wall, cpu = time.perf_counter(), time.process_time()
    events = await work
    return time.perf_counter() - wall, time.process_time() - cpu, events


async def main(runs: int) -> dict[str, Any]:
    store = MemoryStore()

    async def make(options: AgentOptions) -> Agent:
        return _agent(store)

    app = create_app(Conversations(store, make), PageSettings(token=TOKEN, model=MODEL))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    ready = asyncio.Event()

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            ready.set()

    server = Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    await ready.wait()
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    headers = {"Authorization": f"Bearer {TOKEN}"}
    floor: list[tuple[float, float, int]] = []
    page: list[tuple[float, float, int]] = []
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
        for number in range(runs + 3):  # 3 warm-up runs a side
            one = await _timed(_floor(store, number))
            two = await _timed(_page(client))
            if number >= 3:
                floor.append(one)
                page.append(two)
    server.should_exit = True
    await serving
    sock.close()
    events = page[0][2]
    assert events == floor[0][2], (events, floor[0][2])
    wall = {"stream": _ms([f[0] for f in floor]), "page": _ms([p[0] for p in page])}
    cpu = {"stream": _ms([f[1] for f in floor]), "page": _ms([p[1] for p in page])}
    return {
        "runs": runs,
        "events": events,
        "wall_ms": wall,
        "cpu_ms": cpu,
        "ratio": wall["page"] / wall["stream"],
        "cpu_ratio": cpu["page"] / cpu["stream"],
        "per_event_us": (wall["page"] - wall["stream"]) * 1000 / events,
        "cpu_per_event_us": (cpu["page"] - cpu["stream"]) * 1000 / events,
    }


def _ms(seconds: list[float]) -> float:
    return statistics.median(seconds) * 1000


if __name__ == "__main__":
    import json

    print(json.dumps(asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20))))
