"""The page in process for the HTTP-level tests: the ASGI app over agents on a FakeGemini.

Each conversation gets its own fake playing ``script`` (a fork at turn k plays it from
reply k + 1, as ``toolnexus-agent web --fake`` does); requests go through httpx's ASGI
transport, with the launch token.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from agent import Agent, ApprovalPolicy, ClientSettings, MemoryStore, RetryPolicy, RunLimits
from agent.testing import FakeGemini
from agent.web import AgentOptions, Conversations, PageSettings, create_app
from toolnexus import Toolkit

TOKEN = "test-launch-token-0123456789"
BASE = "http://127.0.0.1:8765"


@dataclass
class Page:
    """An app, its store, the fakes its conversations made, and a client for it."""

    script: Sequence[Any]
    toolkit: Toolkit
    approval: ApprovalPolicy | None = None
    model: str = "gemini-3-flash-preview"
    store: MemoryStore = field(default_factory=MemoryStore)
    fakes: list[FakeGemini] = field(default_factory=list)
    made: list[AgentOptions] = field(default_factory=list)
    extra: Callable[[PageSettings], PageSettings] | None = None

    async def make(self, options: AgentOptions) -> Agent:
        fake = FakeGemini(list(self.script)[options.turns_kept :])
        self.fakes.append(fake)
        self.made.append(options)
        return self.agent(fake, options.model or self.model)

    def agent(self, fake: FakeGemini, model: str | None = None) -> Agent:
        return Agent(
            model or self.model,
            self.toolkit,
            approval=self.approval,
            store=self.store,
            limits=RunLimits(retry=RetryPolicy(attempts=1)),
            client=ClientSettings(api_key="k", http_client=fake.http_client()),
        )

    def client(self, **settings: Any) -> httpx.AsyncClient:
        conversations = Conversations(self.store, self.make)
        page = PageSettings(token=TOKEN, model=self.model, **settings)
        app = create_app(conversations, page)
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url=BASE,
            headers={"Authorization": f"Bearer {TOKEN}"},
        )


def parse_sse(text: str) -> list[tuple[int, str, dict[str, Any]]]:
    """Return the ``(id, event, data)`` of each server-sent event of a stream."""
    found = []
    for frame in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in frame.splitlines():
            if line.startswith(":"):
                continue
            key, _, value = line.partition(": ")
            fields[key] = fields.get(key, "") + value
        if "data" in fields:
            found.append((int(fields["id"]), fields["event"], json.loads(fields["data"])))
    return found


async def follow(
    client: httpx.AsyncClient, run: str, after: int = 0
) -> list[tuple[int, str, dict[str, Any]]]:
    """Read a conversation's events from entry ``after + 1`` until its run is idle."""
    response = await client.get(f"/api/runs/{run}/events", params={"after": after})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return parse_sse(response.text)


def agent_events(entries: list[tuple[int, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [data for _, kind, data in entries if kind == "agent"]


def roundtrip(value: Any) -> Any:
    return json.loads(json.dumps(value))
