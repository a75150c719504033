"""`TokenRate`: every model call of a run (and its sub-agents) within N tokens per window.

The fake Gemini records when each request arrives; the property checked is the one the
limit promises: no window of ``per`` seconds of the fake's arrivals holds more than
``tokens`` prompt tokens, as the fake reported them. These tests use a window of one second
(``per=1.0``, a documented parameter); the CLI's acceptance tests run the real minute.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

import toolnexus as tn
from agent import Agent, ClientSettings, Compaction, ConfigurationError, RetryPolicy, RunLimits
from agent.capabilities import Admission, InMemoryLedger, TokenRate
from agent.testing import FakeGemini, delay, error, function_call, reply


class Arrivals:
    """Plays the model: answers ``Done.`` after ``latency``, noting when each request came."""

    def __init__(self, latency: float = 0.05) -> None:
        self.latency = latency
        self.times: list[tuple[float, str]] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Any:
        with self.lock:
            self.times.append((time.monotonic(), body["contents"][0]["parts"][0]["text"]))
        return delay(self.latency, "Done.")


class Recording(InMemoryLedger):
    """The default ledger, keeping what it was asked (a `RateLedger` of the test's own)."""

    def __init__(self) -> None:
        super().__init__()
        self.admitted: list[int] = []
        self.settled: list[int] = []

    async def admit(self, tokens: int, rate: TokenRate) -> Admission:
        admission = await super().admit(tokens, rate)
        if admission.entry is not None:
            self.admitted.append(tokens)
        return admission

    async def settle(self, entry: object, tokens: int, rate: TokenRate) -> None:
        self.settled.append(tokens)
        await super().settle(entry, tokens, rate)


def most_in_any_window(arrivals: list[tuple[float, int]], window: float) -> int:
    """The most tokens whose arrivals fall in one half-open window of ``window`` seconds."""
    arrivals = sorted(arrivals)
    return max(
        sum(tokens for when, tokens in arrivals[i:] if when < start + window)
        for i, (start, _) in enumerate(arrivals)
    )


def agent_on(fake: FakeGemini, rate: TokenRate, **options: Any) -> Agent:
    return Agent(
        client=ClientSettings(api_key="test", http_client=fake.http_client()),
        capabilities=[rate],
        **options,
    )


async def test_no_window_of_the_arrivals_holds_more_than_the_limit() -> None:
    model = Arrivals()
    fake = FakeGemini(model)
    rate = TokenRate(5_000, per=1.0)
    agent = agent_on(fake, rate)
    prompts = [f"task {n} " + "word " * 1_600 for n in range(8)]  # about 2,000 tokens each
    began = time.monotonic()
    results = await asyncio.gather(*(agent.run(prompt) for prompt in prompts))
    took = time.monotonic() - began
    assert {r.status for r in results} == {"completed"}
    reported = {prompt: r.usage.prompt for prompt, r in zip(prompts, results, strict=True)}
    assert all(1_900 < tokens < 2_200 for tokens in reported.values())
    arrivals = [(when, reported[text]) for when, text in model.times]
    # Two prompts fit a window, a third does not: the limit held and it was used.
    assert most_in_any_window(arrivals, 1.0) <= 5_000
    assert most_in_any_window(arrivals, 1.0) > 5_000 - 2_200
    assert took >= 3.0  # eight calls, two per window (each counts until a second after it ended)


async def test_the_estimate_is_not_below_what_the_fake_reports_and_is_corrected() -> None:
    @tn.define_tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"{key} = 42 " * 50

    fake = FakeGemini(
        [function_call("lookup", {"key": "a"}), function_call("lookup", {"key": "b"}), "42."]
    )
    ledger = Recording()
    agent = Agent(
        toolkit=tn.toolkit([lookup]),
        system_prompt="Be brief. " * 30,
        client=ClientSettings(api_key="test", http_client=fake.http_client()),
        capabilities=[TokenRate(100_000, ledger=ledger)],
    )
    result = await agent.run("What is the answer? " + "word " * 2_000)
    reported = [usage.prompt for usage in result.turn_usage]
    assert ledger.settled == reported  # each entry holds what usageMetadata said
    assert all(0 <= est - real < 40 for est, real in zip(ledger.admitted, reported, strict=True))


async def test_a_denser_tokenizer_is_learnt_from_the_first_response() -> None:
    # This "server" counts twice the tokens the four-characters rule says.
    def model(body: dict[str, Any]) -> Any:
        chars = len(str(body["contents"]))
        usage = {"promptTokenCount": chars // 2, "candidatesTokenCount": 1}
        return reply("Done.", usage={**usage, "totalTokenCount": chars // 2 + 1})

    fake = FakeGemini(model)
    ledger = Recording()
    agent = agent_on(fake, TokenRate(1_000_000, ledger=ledger))
    await agent.run("word " * 1_000)
    await agent.run("word " * 1_000)
    first, second = ledger.admitted
    assert ledger.settled[0] > 1.8 * first  # the first estimate was low: corrected after
    assert second >= ledger.settled[1]  # the next call is admitted at the learnt size


async def test_a_sub_agents_calls_count_against_its_parents_limit() -> None:
    def model(body: dict[str, Any]) -> Any:
        system = body.get("systemInstruction", {}).get("parts", [{}])[0].get("text", "")
        part = body["contents"][-1]["parts"][0]
        if system == "You research.":
            return "found it"
        if "functionResponse" in part:
            return "All done."
        return reply(function_call("researcher", {"task": "look"}))

    fake = FakeGemini(model)
    http = fake.http_client()
    researcher = Agent(
        system_prompt="You research.", client=ClientSettings(api_key="test", http_client=http)
    )
    ledger = Recording()
    lead = Agent(
        toolkit=tn.toolkit([researcher.as_tool(name="researcher", description="Researches.")]),
        client=ClientSettings(api_key="test", http_client=http),
        capabilities=[TokenRate(100_000, ledger=ledger)],
    )
    result = await lead.run("Research it")
    assert result.text == "All done."
    assert len(fake.requests) == 3  # the lead's two turns and the researcher's one
    assert len(ledger.admitted) == len(ledger.settled) == 3


async def test_a_sub_agents_own_limit_applies_beside_its_parents() -> None:
    def model(body: dict[str, Any]) -> Any:
        part = body["contents"][-1]["parts"][0]
        if part.get("text") == "look":
            return "found it"
        if "functionResponse" in part:
            return "All done."
        return reply(function_call("researcher", {"task": "look"}))

    fake = FakeGemini(model)
    http = fake.http_client()
    own, parents = Recording(), Recording()
    researcher = Agent(
        client=ClientSettings(api_key="test", http_client=http),
        capabilities=[TokenRate(100_000, ledger=own)],
    )
    lead = Agent(
        toolkit=tn.toolkit([researcher.as_tool(name="researcher", description="Researches.")]),
        client=ClientSettings(api_key="test", http_client=http),
        capabilities=[TokenRate(100_000, ledger=parents)],
    )
    await lead.run("Research it")
    assert (len(own.admitted), len(parents.admitted)) == (1, 3)


async def test_one_limit_given_to_a_sub_agent_and_its_parent_counts_each_call_once() -> None:
    def model(body: dict[str, Any]) -> Any:
        part = body["contents"][-1]["parts"][0]
        if part.get("text") == "look":
            return "found it"
        if "functionResponse" in part:
            return "All done."
        return reply(function_call("researcher", {"task": "look"}))

    fake = FakeGemini(model)
    http = fake.http_client()
    ledger = Recording()
    rate = TokenRate(100_000, ledger=ledger)
    researcher = Agent(client=ClientSettings(api_key="test", http_client=http), capabilities=[rate])
    lead = Agent(
        toolkit=tn.toolkit([researcher.as_tool(name="researcher", description="Researches.")]),
        client=ClientSettings(api_key="test", http_client=http),
        capabilities=[rate],
    )
    await lead.run("Research it")
    assert len(ledger.admitted) == len(fake.requests) == 3


async def test_compactions_summary_call_goes_through_the_limit() -> None:
    counted = {"promptTokenCount": 5_000, "candidatesTokenCount": 2, "totalTokenCount": 5_002}
    fake = FakeGemini(
        [reply("long answer " * 500, usage=counted), "Notes: a greeting.", "hello again"]
    )
    ledger = Recording()
    agent = Agent(
        compaction=Compaction(trigger_tokens=1_000, keep_recent_turns=1),
        client=ClientSettings(api_key="test", http_client=fake.http_client()),
        capabilities=[TokenRate(100_000, ledger=ledger)],
    )
    first = await agent.run("hello")
    again = await agent.run("and again", history=first.contents)
    assert again.text == "hello again"
    assert len(fake.requests) == 3  # the second run's summary call, then its turn
    assert fake.requests[1].body["contents"][0]["parts"][0]["text"].startswith("You are compacting")
    assert len(ledger.admitted) == len(ledger.settled) == 3


async def test_stream_and_compact_go_through_the_limit_too() -> None:
    fake = FakeGemini(["one", "two", "Notes: two exchanges.", "three"])
    ledger = Recording()
    agent = Agent(
        compaction=Compaction(keep_recent_turns=1),
        client=ClientSettings(api_key="test", http_client=fake.http_client()),
        capabilities=[TokenRate(100_000, ledger=ledger)],
    )
    first = await agent.run("first " * 50)
    events = [event async for event in agent.stream("second", history=first.contents)]
    compacted = await agent.compact(events[-1].result.contents)  # type: ignore[attr-defined]
    assert compacted.status == "completed"
    assert len(fake.requests) == 3  # a run, a streamed run, compact's summary call
    assert len(ledger.admitted) == len(ledger.settled) == 3


async def test_every_attempt_counts_and_the_retry_waits_the_servers_delay() -> None:
    fake = FakeGemini([error(429, "RESOURCE_EXHAUSTED", retry_delay=0.2), "Done."])
    ledger = Recording()
    agent = agent_on(
        fake,
        TokenRate(100_000, ledger=ledger),
        limits=RunLimits(retry=RetryPolicy(attempts=3, initial_backoff=5.0)),
    )
    result = await agent.run("hello")
    assert result.status == "completed"
    assert [round(r.delay, 2) for r in result.retries] == [0.2]  # RetryInfo, not the backoff
    assert len(ledger.admitted) == 2  # the failed attempt was sent: it counts
    assert ledger.settled[0] == ledger.admitted[0]  # kept at its estimate


async def test_a_request_larger_than_the_limit_ends_the_run_before_it_is_sent() -> None:
    fake = FakeGemini(["never sent"])
    agent = agent_on(fake, TokenRate(1_000))
    result = await agent.run("word " * 2_000)
    assert (result.status, result.limit) == ("incomplete", "token_rate")
    assert fake.requests == []


async def test_a_request_limit_holds_too() -> None:
    model = Arrivals(latency=0.0)
    fake = FakeGemini(model)
    agent = agent_on(fake, TokenRate(requests=3, per=1.0))
    await asyncio.gather(*(agent.run(f"task {n}") for n in range(7)))
    times = sorted(when for when, _ in model.times)
    assert max(sum(1 for t in times[i:] if t < s + 1.0) for i, s in enumerate(times)) <= 3


def test_one_limit_serves_runs_on_several_event_loops() -> None:
    fake = FakeGemini(["one", "two"])
    rate = TokenRate(100_000)
    agent = agent_on(fake, rate)
    assert agent.run_sync("a").text == "one"
    assert agent.run_sync("b").text == "two"  # a new loop: the turn lock is per loop


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "needs tokens=, requests= or both"),
        ({"tokens": 0}, "tokens= must be at least 1"),
        ({"tokens": 1.5}, "tokens= must be a whole number"),
        ({"requests": True}, "requests= must be a whole number"),
        ({"tokens": 10, "per": 0}, "per= must be a positive number"),
    ],
)
def test_bad_limits_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        TokenRate(**options)


def test_two_limits_on_one_agent_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="two TokenRate"):
        Agent(client=ClientSettings(api_key="test"), capabilities=[TokenRate(1), TokenRate(2)])
