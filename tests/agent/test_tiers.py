"""Service tiers: the field on every request, the price, the timeout, the fallback, the header."""

from __future__ import annotations

import httpx
import pytest

from agent import Agent, ClientSettings, ModelSettings, RetryPolicy, RunLimits, Usage
from agent._cost import run_cost
from agent._tiers import FLEX_TIMEOUT, client_for_tier
from agent.errors import ConfigurationError, ModelError
from agent.events import RetryEvent, TierFallbackEvent
from agent.testing import FakeGemini, error, function_call, reply
from tests.agent._loop_support import KEY, echo_toolkit

USAGE = {"promptTokenCount": 1_000_000, "candidatesTokenCount": 1_000_000, "totalTokenCount": 2}


class _Waits:
    """A retry sleep that records the waits instead of spending them."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def _agent(fake: FakeGemini, settings: ModelSettings, waits: _Waits | None = None) -> Agent:
    """The one place these tests build an agent."""
    retry = RetryPolicy(attempts=3, sleep=waits or _Waits())
    return Agent(
        "gemini-2.5-flash",
        echo_toolkit(),
        settings=settings,
        limits=RunLimits(retry=retry),
        client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
    )


@pytest.mark.parametrize("stream", [False, True])
async def test_the_tier_goes_on_every_request_and_the_header_on_the_result(stream: bool):
    fake = FakeGemini([function_call("echo", {"text": "a"}), "done"], api_key=KEY)
    agent = _agent(fake, ModelSettings(service_tier="flex"))
    if stream:
        result = None
        async for event in agent.stream("go"):
            result = getattr(event, "result", result)
        assert result is not None
    else:
        result = await agent.run("go")
    assert [r.body["serviceTier"] for r in fake.requests] == ["flex", "flex"]
    assert result.service_tier == "flex"
    assert result.to_dict()["service_tier"] == "flex"
    fake.assert_consumed()


async def test_no_tier_sends_no_field_and_records_none():
    fake = FakeGemini(["done"], api_key=KEY)
    result = await _agent(fake, ModelSettings()).run("go")
    assert "serviceTier" not in fake.requests[0].body
    assert result.service_tier is None


async def test_flex_costs_half_and_priority_its_surcharge():
    def run(tier: str | None) -> float:
        return (
            run_cost(
                "gemini-2.5-flash", [Usage(prompt=1_000_000, candidates=1_000_000)], tiers=[tier]
            ).usd
            or 0.0
        )

    standard = run(None)
    assert standard == pytest.approx(0.3 + 2.5)
    assert run("flex") == pytest.approx(standard / 2)
    assert run("priority") == pytest.approx(standard * 2)
    derived = run_cost("gemini-2.5-flash", [Usage(prompt=10)], tiers=["flex"])
    assert derived.estimated  # the flex rows are derived, not read off the pricing page


async def test_result_cost_is_priced_at_the_tier_that_served_each_turn():
    fake = FakeGemini([reply("done", usage=USAGE)], api_key=KEY)
    result = await _agent(fake, ModelSettings(service_tier="flex")).run("go")
    assert result.cost.usd == pytest.approx((0.3 + 2.5) / 2)


def test_flex_raises_a_default_timeout_to_fifteen_minutes_and_keeps_a_chosen_one():
    flex = ModelSettings(service_tier="flex")
    assert client_for_tier(ClientSettings(), flex).timeout == FLEX_TIMEOUT >= 900
    assert client_for_tier(ClientSettings(timeout=30.0), flex).timeout == 30.0
    assert client_for_tier(ClientSettings(timeout=None), flex).timeout is None
    assert client_for_tier(ClientSettings(), ModelSettings()).timeout == 120.0


async def test_a_shed_flex_request_retries_per_retry_info_then_falls_back_once():
    fake = FakeGemini(["done"], api_key=KEY, shed_flex=3, shed_retry_delay=7.0)
    waits = _Waits()
    agent = _agent(fake, ModelSettings(service_tier="flex", fallback_tier="standard"), waits)
    events = [event async for event in agent.stream("go")]
    result = events[-1].result  # type: ignore[union-attr]
    assert [r.body.get("serviceTier") for r in fake.requests] == ["flex"] * 3 + ["standard"]
    assert waits.waits == [7.0, 7.0]  # the server's RetryInfo delay, twice
    fallbacks = [e for e in events if isinstance(e, TierFallbackEvent)]
    assert fallbacks == [TierFallbackEvent("flex", "standard", 503, "UNAVAILABLE", 1)]
    assert len([e for e in events if isinstance(e, RetryEvent)]) == 2
    assert result.status == "completed"
    assert result.service_tier == "standard"
    fake.assert_consumed()


async def test_without_a_fallback_a_shed_flex_request_fails_the_run():
    fake = FakeGemini(["never"], api_key=KEY, shed_flex=3)
    with pytest.raises(ModelError) as caught:
        await _agent(fake, ModelSettings(service_tier="flex")).run("go")
    assert caught.value.code == 503
    assert len(fake.requests) == 3


async def test_the_fallback_tier_may_be_priority():
    fake = FakeGemini(["done"], api_key=KEY, shed_flex=3)
    agent = _agent(fake, ModelSettings(service_tier="flex", fallback_tier="priority"))
    result = await agent.run("go")
    assert result.service_tier == "priority"
    assert [r.body.get("serviceTier") for r in fake.requests][-1] == "priority"


async def test_a_fallback_request_that_fails_is_not_fallen_back_again():
    fake = FakeGemini([error(503)] * 3, api_key=KEY, shed_flex=3)
    agent = _agent(fake, ModelSettings(service_tier="flex", fallback_tier="standard"))
    with pytest.raises(ModelError):
        await agent.run("go")
    assert [r.body.get("serviceTier") for r in fake.requests] == ["flex"] * 3 + ["standard"] * 3
    fake.assert_consumed()


def test_bad_tiers_are_refused():
    with pytest.raises(ConfigurationError, match="service_tier must be"):
        ModelSettings(service_tier="fast")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="already sent at"):
        ModelSettings(service_tier="flex", fallback_tier="flex")


async def test_the_fake_refuses_a_tier_that_does_not_exist():
    fake = FakeGemini(["never"], api_key=KEY)
    async with httpx.AsyncClient(transport=fake.async_transport()) as http:
        response = await http.post(
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
            headers={"x-goog-api-key": KEY},
            json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "serviceTier": "fast"},
        )
    assert response.status_code == 400
    assert "service_tier" in response.json()["error"]["message"]


@pytest.mark.parametrize("stream", [False, True])
async def test_the_tier_in_the_response_header_is_recorded_and_priced(stream: bool):
    # Gemini serves a priority request over its limit at standard, and says so in the header.
    fake = FakeGemini(
        [reply("done", usage=USAGE)], api_key=KEY, served_tiers={"priority": "standard"}
    )
    agent = _agent(fake, ModelSettings(service_tier="priority"))
    if stream:
        events = [event async for event in agent.stream("go")]
        result = events[-1].result  # type: ignore[union-attr]
    else:
        result = await agent.run("go")
    assert fake.requests[0].body["serviceTier"] == "priority"
    assert result.service_tier == "standard"
    assert result.cost.usd == pytest.approx(0.3 + 2.5)  # standard, not the surcharge


def test_a_tier_set_both_ways_is_refused():
    fake = FakeGemini([], api_key=KEY)
    with pytest.raises(ConfigurationError, match="sets service_tier"):
        _agent(fake, ModelSettings(service_tier="flex", config={"service_tier": "priority"}))
