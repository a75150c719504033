"""The web page's API from a program: start a run, approve its gated call, replay it.

Offline (a scripted fake Gemini plays the model), from the repository root::

    python examples/web_page.py            # drives the page's API in process, prints what happened
    python examples/web_page.py --serve    # serves the same page; open the URL it prints

Needs the ``web`` extra (``pip install -e '.[web]'``). The ``deploy`` tool asks before it
runs, so the run waits for a decision: here the program approves it through the API, as
the page's Approve button does.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
from typing import Any

import httpx

import toolnexus as tn
from agent import Agent, ClientSettings, MemoryStore
from agent.testing import FakeGemini, function_call, reply, thought
from agent.web import AgentOptions, Conversations, PageSettings, create_app

STORE = MemoryStore()


@tn.define_tool(requires_approval=True)
def deploy(target: str) -> str:
    """Deploy the current build to a target environment."""
    return f"deployed to {target}"


async def make(options: AgentOptions) -> Agent:
    """Each conversation's agent: on its own scripted model."""
    fake = FakeGemini(
        [
            reply(thought("Staging first."), function_call("deploy", {"target": "staging"})),
            "Deployed to staging; prod can follow once it looks good.",
        ]
    )
    return Agent(
        "gemini-2.5-flash",
        tn.toolkit([deploy]),
        store=STORE,
        client=ClientSettings(api_key="offline", http_client=fake.http_client()),
    )


def app(token: str) -> Any:
    settings = PageSettings(
        token=token, model="gemini-2.5-flash", tools=("deploy",), prompt="Deploy the build"
    )
    return create_app(Conversations(STORE, make), settings)


def agent_events(text: str) -> list[dict[str, Any]]:
    """The agent events of a server-sent event stream."""
    events, kind = [], ""
    for line in text.splitlines():
        if line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("data: ") and kind == "agent":
            events.append(json.loads(line[6:]))
    return events


async def drive() -> None:
    token = secrets.token_urlsafe(16)
    transport = httpx.ASGITransport(app=app(token))
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(
        transport=transport, base_url="http://127.0.0.1:8765", headers=headers
    ) as page:
        run = (await page.post("/api/runs", json={"text": "Deploy the build"})).json()["id"]
        first = agent_events((await page.get(f"/api/runs/{run}/events")).text)
        print("first run:", [event["type"] for event in first])
        request = (await page.get(f"/api/runs/{run}")).json()["pending"]
        print("waits on:", request["prompt"])
        decision = {"request_id": request["id"], "action": "approve"}
        print("approve:", (await page.post(f"/api/runs/{run}/decision", json=decision)).status_code)
        print("again:", (await page.post(f"/api/runs/{run}/decision", json=decision)).status_code)
        rest = agent_events((await page.get(f"/api/runs/{run}/events")).text)
        done = rest[-1]["result"]
        print("result:", done["tool_calls"][0]["result"]["output"], "|", done["text"])
        replay = (await page.post(f"/api/runs/{run}/replay")).json()
        print("replay identical:", replay["identical"])
        trace = (await page.get(f"/api/runs/{run}/trace")).json()
        print("trace:", [node["name"] for node in trace["runs"][0]["children"][0]["children"]])


def serve() -> None:
    import uvicorn

    token = secrets.token_urlsafe(24)
    print(f"open http://127.0.0.1:8765/#token={token}", flush=True)
    uvicorn.run(app(token), host="127.0.0.1", port=8765, log_level="warning")


if __name__ == "__main__":
    if "--serve" in sys.argv:
        serve()
    else:
        asyncio.run(drive())
