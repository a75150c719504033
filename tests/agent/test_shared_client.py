"""One SDK client per client configuration in a process, shared by the agents built with it."""

from __future__ import annotations

import asyncio
import ssl
import threading
from pathlib import Path
from typing import Any

import pytest

import toolnexus as tn
from agent import Agent, ClientSettings, RetryPolicy, RunLimits, load_agents
from agent._client import api_key_of, build_client
from agent.testing import FakeGemini, delay, function_call


def test_the_same_settings_give_the_same_sdk_client() -> None:
    first = build_client(ClientSettings(api_key="key-one", timeout=30.0))
    again = build_client(ClientSettings(api_key="key-one", timeout=30.0))
    assert again.genai is first.genai
    assert build_client(ClientSettings(api_key="key-two", timeout=30.0)).genai is not first.genai
    assert build_client(ClientSettings(api_key="key-one", timeout=31.0)).genai is not first.genai


def test_a_supplied_http_client_is_part_of_the_configuration() -> None:
    fake = FakeGemini([])
    http, other = fake.http_client(), fake.http_client()
    one = build_client(ClientSettings(api_key="k", http_client=http))
    assert build_client(ClientSettings(api_key="k", http_client=http)).genai is one.genai
    assert build_client(ClientSettings(api_key="k", http_client=other)).genai is not one.genai
    assert one.http is None  # the caller's client stays the caller's to close


def test_the_key_read_from_the_environment_is_part_of_the_configuration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "env-key-one")
    one = build_client(ClientSettings())
    monkeypatch.setenv("GEMINI_API_KEY", "env-key-two")
    two = build_client(ClientSettings())
    assert (api_key_of(one.genai), api_key_of(two.genai)) == ("env-key-one", "env-key-two")


def count_certificate_loads(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Record each time a TLS context loads a certificate bundle (the costly part)."""
    loads: list[object] = []
    real = ssl.SSLContext.load_verify_locations

    def counted(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        loads.append(self)
        real(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    return loads


def test_a_client_the_agent_builds_loads_the_certificates_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loads = count_certificate_loads(monkeypatch)
    clients = build_client(ClientSettings(api_key="k", base_url="http://127.0.0.1:9/one-tls"))
    assert len(loads) == 1  # the SDK's own sync client and websocket context share ours
    api = clients.genai._api_client
    assert api._httpx_client._transport._pool._ssl_context is loads[0]
    assert api._websocket_ssl_ctx["ssl"] is loads[0]


def test_vertex_ai_keeps_the_sdks_own_tls_contexts(monkeypatch: pytest.MonkeyPatch) -> None:
    # The SDK may load a client certificate (mTLS) into the contexts it makes for Vertex AI.
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    loads = count_certificate_loads(monkeypatch)
    build_client(ClientSettings(api_key="k", base_url="http://127.0.0.1:9/vertex-tls"))
    assert len(loads) == 3


LEAD_AND_HELPER = "---\nname: helper\ndescription: Helps.\ntools: []\n---\nYou help.\n"


def helper_play(body: dict[str, Any]) -> Any:
    part = body["contents"][-1]["parts"][0]
    if "You help." in str(body.get("systemInstruction", "")):
        return "helped"
    if "functionResponse" in part:
        return f"lead: {part['functionResponse']['response']['output']}"
    return function_call("helper", {"task": "help"})


def test_a_lead_and_its_agent_files_share_a_client_across_two_run_syncs(tmp_path: Path) -> None:
    (tmp_path / "helper.md").write_text(LEAD_AND_HELPER, encoding="utf-8")
    fake = FakeGemini(helper_play)
    with fake.serve() as server:
        client = ClientSettings(api_key="shared-key", base_url=server.base_url)
        helpers = load_agents(tmp_path, client=client)
        lead = Agent(toolkit=tn.toolkit(helpers), client=client)
        try:
            # Each run_sync is a new event loop: the pooled connections of the first must
            # not be reused by (or break) the second.
            assert lead.run_sync("one").text == "lead: helped"
            assert lead.run_sync("two").text == "lead: helped"
        finally:
            asyncio.run(lead.aclose())
    assert len(fake.requests) == 6


def test_closing_one_agent_leaves_the_shared_client_to_the_others() -> None:
    fake = FakeGemini(["first", "second"])
    with fake.serve() as server:
        first = Agent(client=ClientSettings(api_key="close-key", base_url=server.base_url))
        second = Agent(client=ClientSettings(api_key="close-key", base_url=server.base_url))
        asyncio.run(first.aclose())
        assert second.run_sync("hi").text == "first"
        settings = ClientSettings(api_key="close-key", base_url=server.base_url, timeout=120.0)
        shared = build_client(settings)
        asyncio.run(second.aclose())
        assert second.run_sync("hi").text == "second"  # the client is still held by `shared`
        asyncio.run(shared.http.aclose())  # type: ignore[union-attr]
        fresh = build_client(settings)
        assert fresh.genai is not shared.genai  # the last one closed it: a new one is built
        asyncio.run(fresh.http.aclose())  # type: ignore[union-attr]


def test_one_run_sync_ending_does_not_close_a_call_in_flight_on_another_loop() -> None:
    """Two loops on one shared client: the pools are per loop, so releasing is too."""
    slow_sent = threading.Event()

    def model(body: dict[str, Any]) -> Any:
        if body["contents"][0]["parts"][0]["text"] == "quick":
            return "quick done"
        slow_sent.set()
        # Answered after the quick run below has ended and released its connections (a
        # quick run takes a fraction of this; were it slower, the test would pass anyway).
        return delay(3.0, "slow done")

    fake = FakeGemini(model)
    once = RetryPolicy(attempts=1)  # a broken connection must fail, not be retried away
    with fake.serve() as server:
        slow = Agent(
            limits=RunLimits(retry=once),
            client=ClientSettings(api_key="loop-key", base_url=server.base_url),
        )
        quick = Agent(
            limits=RunLimits(retry=once),
            client=ClientSettings(api_key="loop-key", base_url=server.base_url),
        )
        results: dict[str, Any] = {}

        def run_slow() -> None:
            try:
                results["slow"] = slow.run_sync("slow").text
            except Exception as exc:  # reported by the assertion below
                results["slow"] = exc

        thread = threading.Thread(target=run_slow)
        thread.start()
        try:
            assert slow_sent.wait(30)
            assert quick.run_sync("quick").text == "quick done"
        finally:
            thread.join(30)
        asyncio.run(slow.aclose())
        asyncio.run(quick.aclose())
    assert results["slow"] == "slow done"
