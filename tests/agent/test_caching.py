"""`ContextCache` over the real SDK against the fake: bodies checked, caches counted at the fake.

Every test ends with `_wire_ok`: no request carried a cache beside a system instruction,
tools or a tool config (the pair Gemini refuses), and the fake refused none for it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from agent import (
    Agent,
    ClientSettings,
    Compaction,
    MemoryStore,
    ModelSettings,
    RetryPolicy,
    RunLimits,
    SqliteStore,
    Usage,
    UsageLimits,
)
from agent._capability import Capability, RunCapability
from agent.capabilities import ContextCache, Hooks
from agent.errors import ConfigurationError
from agent.events import CacheEvent, DoneEvent, Event
from agent.hooks import ModelRequest
from agent.testing import FakeGemini, error, function_call, reply
from agent.testing._caches import CONFLICT_MESSAGE
from tests.agent._loop_support import KEY, echo_toolkit
from toolnexus import Tool

MODEL = "gemini-2.5-flash"
BIG = "Answer as the house style guide says, section by section. " * 260  # ~3,800 tokens
SMALL = "Be brief."
PREFIX_KEYS = ("systemInstruction", "tools", "toolConfig")


def _agent(
    fake: FakeGemini,
    cache: ContextCache,
    *,
    system: Any = BIG,
    extra: tuple[Tool, ...] = (),
    model: str = MODEL,
    **options: Any,
) -> Agent:
    return Agent(
        model,
        echo_toolkit(*extra),
        system_prompt=system,
        capabilities=[cache, *options.pop("capabilities", ())],
        client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
        **options,
    )


def _turns(count: int, text: str = "Done.") -> list[Any]:
    """A run of ``count`` model turns: ``count - 1`` echo calls, then the answer."""
    return [function_call("echo", {"text": f"t{i}"}) for i in range(count - 1)] + [text]


def _wire_ok(fake: FakeGemini) -> None:
    for request in fake.requests:
        body = request.body or {}
        if "cachedContent" in body:
            assert not any(key in body for key in PREFIX_KEYS), body
        assert request.error != CONFLICT_MESSAGE


def _cached(fake: FakeGemini) -> list[str | None]:
    return [(r.body or {}).get("cachedContent") for r in fake.requests]


def _posts(fake: FakeGemini) -> int:
    return sum(1 for method, _ in fake.caches.requests if method == "POST")


async def _events(agent: Agent, prompt: str, **options: Any) -> list[Event]:
    return [event async for event in agent.stream(prompt, **options)]


def _cache_events(events: list[Event]) -> list[tuple[str, str | None]]:
    return [(e.action, e.name) for e in events if isinstance(e, CacheEvent)]


# -- the first request, and the body ---------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_the_first_request_of_a_run_already_names_the_cache(stream: bool):
    fake = FakeGemini(_turns(2))
    agent = _agent(fake, ContextCache(ttl=300, mode="always"))
    if stream:
        events = await _events(agent, "Go.")
        done = events[-1]
        assert isinstance(done, DoneEvent)
        result = done.result
        assert _cache_events(events) == [("created", "cachedContents/fakecache0001")]
    else:
        result = await agent.run("Go.")
    assert result.status == "completed"
    assert _cached(fake) == ["cachedContents/fakecache0001"] * 2
    first = fake.requests[0].body
    assert set(first) == {"contents", "cachedContent", "generationConfig"}
    assert first["contents"] == [{"role": "user", "parts": [{"text": "Go."}]}]
    # The cache holds what the request would have carried.
    cache = fake.caches.caches["fakecache0001"]
    assert cache.parts["systemInstruction"]["parts"] == [{"text": BIG.strip()}]
    declared = [d["name"] for t in cache.parts["tools"] for d in t["functionDeclarations"]]
    assert declared == ["echo"]
    assert cache.display_name is not None and cache.display_name.startswith("toolnexus:")
    _wire_ok(fake)
    fake.assert_consumed()


async def test_usage_cached_is_what_gemini_reports():
    fake = FakeGemini(_turns(3))
    result = await _agent(fake, ContextCache(ttl=300, mode="always")).run("Go.")
    tokens = fake.caches.caches["fakecache0001"].tokens
    assert [usage.cached for usage in result.turn_usage] == [tokens] * 3
    assert result.usage.cached == 3 * tokens
    assert all(usage.prompt > usage.cached for usage in result.turn_usage)


async def test_the_tool_config_moves_into_the_cache_too():
    fake = FakeGemini(_turns(2))
    settings = ModelSettings(tool_choice="any")
    agent = _agent(fake, ContextCache(ttl=300, mode="always"), settings=settings)
    await agent.run("Go.")
    cache = fake.caches.caches["fakecache0001"]
    assert cache.parts["toolConfig"]["functionCallingConfig"]["mode"] == "ANY"
    assert all("toolConfig" not in r.body for r in fake.requests)
    _wire_ok(fake)


async def test_below_the_minimum_nothing_is_created_and_requests_are_unchanged():
    plain_fake, cached_fake = FakeGemini(_turns(2)), FakeGemini(_turns(2))
    plain = Agent(
        MODEL,
        echo_toolkit(),
        system_prompt=SMALL,
        client=ClientSettings(api_key=KEY, http_client=plain_fake.http_client()),
    )
    await plain.run("Go.")
    await _agent(cached_fake, ContextCache(ttl=300, mode="always"), system=SMALL).run("Go.")
    assert cached_fake.caches.requests == []
    assert [r.body for r in cached_fake.requests] == [r.body for r in plain_fake.requests]
    assert [r.path for r in cached_fake.requests] == [r.path for r in plain_fake.requests]


async def test_min_tokens_sets_the_floor():
    fake = FakeGemini(_turns(1))
    await _agent(fake, ContextCache(ttl=300, mode="always", min_tokens=100_000)).run("Go.")
    assert fake.caches.requests == []
    assert "systemInstruction" in fake.requests[0].body


# -- reuse: turns, runs, sub-agents, processes ------------------------------------------------


async def test_one_cache_for_ten_turns_over_three_runs_and_one_more_when_a_tool_is_added():
    fake = FakeGemini([*_turns(4), *_turns(3), *_turns(3), *_turns(2)])
    store = MemoryStore()
    cache = ContextCache(ttl=600, mode="always")
    agent = _agent(fake, cache, store=store)
    for prompt in ("one", "two", "three"):
        result = await agent.run(prompt, session="s")
        assert result.status == "completed"
    assert len(fake.requests) == 10
    assert _cached(fake) == ["cachedContents/fakecache0001"] * 10
    assert fake.caches.created == ["cachedContents/fakecache0001"]
    saved = await store.get("s")
    assert saved is not None
    assert saved.metadata["context_cache"]["name"] == "cachedContents/fakecache0001"

    def stamp(args: dict[str, Any], ctx: Any) -> str:
        return "stamped"

    added = Tool("stamp", stamp, "Stamp it.", {"type": "object"})
    events = await _events(_agent(fake, cache, store=store, extra=(added,)), "four", session="s")
    assert _cache_events(events) == [
        ("deleted", "cachedContents/fakecache0001"),
        ("created", "cachedContents/fakecache0002"),
    ]
    assert fake.caches.created == ["cachedContents/fakecache0001", "cachedContents/fakecache0002"]
    assert fake.caches.deleted == ["cachedContents/fakecache0001"]
    assert _cached(fake)[10:] == ["cachedContents/fakecache0002"] * 2
    _wire_ok(fake)
    fake.assert_consumed()


async def test_runs_without_a_session_share_the_cache_and_leave_an_old_one_to_expire():
    fake = FakeGemini([*_turns(2), *_turns(2), *_turns(1)])
    cache = ContextCache(ttl=600, mode="always")
    agent = _agent(fake, cache)
    await agent.run("one")
    await agent.run("two")
    assert fake.caches.created == ["cachedContents/fakecache0001"]

    def stamp(args: dict[str, Any], ctx: Any) -> str:
        return "stamped"

    grown = _agent(fake, cache, extra=(Tool("stamp", stamp, "Stamp it.", {"type": "object"}),))
    await grown.run("three")
    assert len(fake.caches.created) == 2
    assert fake.caches.deleted == []  # another agent may still send that prefix
    _wire_ok(fake)


async def test_concurrent_runs_make_one_cache():
    fake = FakeGemini(lambda body: "Done.")
    agent = _agent(fake, ContextCache(ttl=600, mode="always"))
    results = await asyncio.gather(*(agent.run(f"q{i}") for i in range(5)))
    assert {r.status for r in results} == {"completed"}
    assert len(fake.caches.created) == 1
    assert set(_cached(fake)) == {"cachedContents/fakecache0001"}


async def test_sub_agents_with_one_prefix_share_one_cache():
    def model(body: dict[str, Any]) -> Any:
        system = body["systemInstruction"]["parts"][0]["text"]
        last = body["contents"][-1]["parts"][0]
        if system.startswith("Reviewer"):
            return "Looks right."
        if "functionResponse" in last:
            return "Both reviewed."
        return [
            function_call("reviewer", {"task": "Review part one."}),
            function_call("reviewer", {"task": "Review part two."}),
        ]

    fake = FakeGemini(model)
    cache = ContextCache(ttl=600, mode="always")
    reviewer = _agent(fake, cache, system="Reviewer. " + BIG)
    lead = Agent(
        MODEL,
        echo_toolkit(reviewer.as_tool(name="reviewer", description="Reviews a part.")),
        system_prompt="Lead. " + BIG,
        capabilities=[cache],
        client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
    )
    result = await lead.run("Review both parts.")
    assert result.text == "Both reviewed."
    assert len(fake.requests) == 4  # lead, two reviewers, lead
    assert len(fake.caches.created) == 2  # the lead's prefix and the reviewer's
    reviewers = {name for name in _cached(fake)[1:3]}
    assert len(reviewers) == 1 and None not in reviewers
    # The sub-agents' storage is in the lead's cost.
    assert result.cost.cache_storage > 0
    _wire_ok(fake)


async def test_another_process_finds_the_cache_in_the_session(tmp_path: Path):
    fake = FakeGemini([*_turns(2), *_turns(1)])
    async with SqliteStore(tmp_path / "sessions.db") as store:
        first = _agent(fake, ContextCache(ttl=600, mode="always"), store=store)
        await first.run("one", session="s")
    # A new process: a new agent, a new ContextCache, the same database.
    async with SqliteStore(tmp_path / "sessions.db") as store:
        second = _agent(fake, ContextCache(ttl=600, mode="always"), store=store)
        events = await _events(second, "two", session="s")
    assert _cache_events(events) == [("found", "cachedContents/fakecache0001")]
    assert fake.caches.created == ["cachedContents/fakecache0001"]
    assert _cached(fake) == ["cachedContents/fakecache0001"] * 3
    assert [m for m, _ in fake.caches.requests] == ["GET", "POST"]  # the second: no call
    _wire_ok(fake)


async def test_another_process_without_a_session_finds_the_cache_on_the_server():
    fake = FakeGemini([*_turns(1), *_turns(1)])
    await _agent(fake, ContextCache(ttl=600, mode="always")).run("one")
    events = await _events(_agent(fake, ContextCache(ttl=600, mode="always")), "two")
    assert _cache_events(events) == [("found", "cachedContents/fakecache0001")]
    assert len(fake.caches.created) == 1
    assert [m for m, _ in fake.caches.requests] == ["GET", "POST", "GET"]


async def test_a_session_saved_before_caching_is_read_and_gets_its_cache():
    store = MemoryStore()
    fake = FakeGemini([*_turns(1), *_turns(1)])
    plain = Agent(
        MODEL,
        echo_toolkit(),
        system_prompt=BIG,
        store=store,
        client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
    )
    await plain.run("one", session="s")
    old = await store.get("s")
    assert old is not None and "context_cache" not in old.metadata
    result = await _agent(fake, ContextCache(ttl=600, mode="always"), store=store).run(
        "two", session="s"
    )
    assert result.status == "completed"
    assert len(result.contents) == 4
    saved = await store.get("s")
    assert saved is not None and saved.metadata["context_cache"]["tokens"] > 0
    assert saved.metadata["model"] == MODEL


async def test_a_per_run_system_prompt_gets_its_own_cache_and_the_session_drops_the_old():
    fake = FakeGemini([*_turns(1), *_turns(1), *_turns(1)])
    store = MemoryStore()

    def prompt(deps: str) -> str:
        return f"You serve {deps}. " + BIG

    agent = _agent(fake, ContextCache(ttl=600, mode="always"), system=prompt, store=store)
    await agent.run("one", session="s", deps="alice")
    await agent.run("two", session="s", deps="alice")
    events = await _events(agent, "three", session="s", deps="bob")
    assert _cache_events(events) == [
        ("deleted", "cachedContents/fakecache0001"),
        ("created", "cachedContents/fakecache0002"),
    ]
    assert (
        fake.caches.caches["fakecache0002"]
        .parts["systemInstruction"]["parts"][0]["text"]
        .startswith("You serve bob.")
    )
    _wire_ok(fake)


async def test_a_hook_that_rewrites_the_system_gets_a_cache_for_what_it_wrote():
    """The prefix moves into the cache after the hooks: what they send is what is cached."""

    def shorter_rules(request: ModelRequest) -> ModelRequest:
        config = request.config.model_copy(update={"system_instruction": "Hooked. " + BIG})
        return ModelRequest(request.model, request.contents, config, request.turn)

    fake = FakeGemini(_turns(2))
    hooks = Hooks(before_model=shorter_rules)
    agent = _agent(fake, ContextCache(ttl=600, mode="always"), capabilities=[hooks])
    await agent.run("Go.")
    system = fake.caches.caches["fakecache0001"].parts["systemInstruction"]
    assert system["parts"][0]["text"].startswith("Hooked.")
    assert all("systemInstruction" not in r.body for r in fake.requests)
    _wire_ok(fake)


# -- a cache that is gone --------------------------------------------------------------------


@pytest.mark.parametrize("how", ["expired", "deleted"])
async def test_a_cache_gone_mid_run_is_made_again_once_and_the_turn_sent_again(how: str):
    fake = FakeGemini([])

    def first(body: dict[str, Any]) -> Any:
        name = body["cachedContent"]
        if how == "expired":
            fake.caches.advance(601)  # the server's clock passes the TTL
        else:
            fake.caches.expire(name)
        return function_call("echo", {"text": "a"})

    fake = FakeGemini([first, function_call("echo", {"text": "b"}), "Done."])
    events = await _events(_agent(fake, ContextCache(ttl=600, mode="always")), "Go.")
    result = events[-1].result  # type: ignore[attr-defined]
    assert result.status == "completed" and result.turns == 3
    assert [r.status for r in fake.requests] == [200, 403, 200, 200]
    assert fake.requests[1].error == "CachedContent not found (or permission denied)"
    recreated = [e for e in events if isinstance(e, CacheEvent) and e.action == "recreated"]
    assert len(recreated) == 1 and recreated[0].turn == 2
    assert "CachedContent not found" in (recreated[0].reason or "")
    assert _cached(fake) == [
        "cachedContents/fakecache0001",
        "cachedContents/fakecache0001",
        "cachedContents/fakecache0002",
        "cachedContents/fakecache0002",
    ]
    # Storage of both caches is billed to the run.
    tokens = fake.caches.caches["fakecache0002"].tokens
    assert result.cost.cache_storage == pytest.approx(2 * tokens * 1.0 * 600 / 3600 / 1e6)
    _wire_ok(fake)
    fake.assert_consumed()


async def test_a_cache_that_cannot_be_made_again_sends_the_turn_without_one():
    fake = FakeGemini([])

    def first(body: dict[str, Any]) -> Any:
        fake.caches.expire(body["cachedContent"])
        fake.caches.min_tokens = 1_000_000  # the next create is refused: too small
        return function_call("echo", {"text": "a"})

    fake = FakeGemini([first, "Done."])
    events = await _events(_agent(fake, ContextCache(ttl=600, mode="always")), "Go.")
    assert [r.status for r in fake.requests] == [200, 403, 200]
    again = fake.requests[2].body
    assert "cachedContent" not in again and "systemInstruction" in again and "tools" in again
    failed = [e for e in events if isinstance(e, CacheEvent) and e.action == "failed"]
    assert len(failed) == 1 and "too small" in (failed[0].reason or "")
    _wire_ok(fake)


async def test_a_prefix_the_server_finds_too_small_goes_uncached_and_is_not_tried_again():
    fake = FakeGemini(_turns(3))
    fake.caches.min_tokens = 1_000_000
    events = await _events(_agent(fake, ContextCache(ttl=600, mode="always")), "Go.")
    assert [e.action for e in events if isinstance(e, CacheEvent)] == ["failed"]
    assert _posts(fake) == 1
    assert _cached(fake) == [None, None, None]
    assert all("systemInstruction" in r.body for r in fake.requests)


async def test_a_cache_about_to_run_out_is_extended_before_a_request_names_it():
    fake = FakeGemini([*_turns(1), *_turns(1)])
    cache = ContextCache(ttl=600, mode="always")
    agent = _agent(fake, cache)
    await agent.run("one")
    # 580 seconds later, on both clocks: 20 seconds left, less than a minute.
    entry = next(iter(cache.registry.entries.values()))
    entry.expires -= 580
    fake.caches.caches["fakecache0001"].expires -= 580
    events = await _events(agent, "two")
    assert _cache_events(events) == [("extended", "cachedContents/fakecache0001")]
    assert [m for m, _ in fake.caches.requests] == ["GET", "POST", "PATCH"]
    assert _cached(fake) == ["cachedContents/fakecache0001"] * 2
    done = events[-1]
    assert isinstance(done, DoneEvent)
    tokens = fake.caches.caches["fakecache0001"].tokens
    # The extension pays for the 580 seconds it added.
    assert done.result.cost.cache_storage == pytest.approx(tokens * 580 / 3600 / 1e6, rel=1e-3)


# -- mode="auto": the break-even ---------------------------------------------------------------


async def test_auto_creates_a_cache_once_the_uses_pay_for_its_storage():
    # gemini-2.5-flash: storage $1.00 per 1M tokens per hour, input $0.30, cached $0.03:
    # an hour-long cache pays after 1.0 / 0.27 = 3.7 uses within the hour.
    fake = FakeGemini(_turns(6))
    events = await _events(_agent(fake, ContextCache(ttl=3600, mode="auto")), "Go.")
    assert _cached(fake) == [None, None, None, *["cachedContents/fakecache0001"] * 3]
    created = [e for e in events if isinstance(e, CacheEvent)]
    assert [(e.action, e.turn) for e in created] == [("created", 4)]
    assert all("systemInstruction" in r.body for r in fake.requests[:3])
    _wire_ok(fake)


async def test_auto_with_a_short_ttl_caches_the_first_request():
    # Ten minutes: 600 / 3600 * 1.0 / 0.27 = 0.62 uses pay for it.
    fake = FakeGemini(_turns(2))
    await _agent(fake, ContextCache(ttl=600)).run("Go.")
    assert _cached(fake) == ["cachedContents/fakecache0001"] * 2


def test_auto_needs_the_models_cache_prices():
    fake = FakeGemini([])
    with pytest.raises(ConfigurationError, match="mode='always'"):
        _agent(fake, ContextCache(), model="gemini-flash-latest")  # served, not priced
    _agent(fake, ContextCache(mode="always"), model="gemini-flash-latest")  # fine


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"ttl": 0}, "ttl"),
        ({"min_tokens": 0}, "min_tokens"),
        ({"mode": "sometimes"}, "mode"),
    ],
)
def test_bad_options_are_refused(options: dict[str, Any], match: str):
    with pytest.raises(ConfigurationError, match=match):
        ContextCache(**options)


def test_one_context_cache_per_agent():
    fake = FakeGemini([])
    with pytest.raises(ConfigurationError, match="two ContextCache"):
        _agent(fake, ContextCache(), capabilities=[ContextCache()])


# -- cost ------------------------------------------------------------------------------------


async def test_cost_and_saving_match_a_hand_computation_from_the_price_table():
    usage = [
        {
            "promptTokenCount": 5_000,
            "cachedContentTokenCount": 4_000,
            "candidatesTokenCount": 100,
            "totalTokenCount": 5_100,
        },
        {
            "promptTokenCount": 5_200,
            "cachedContentTokenCount": 4_000,
            "candidatesTokenCount": 50,
            "totalTokenCount": 5_250,
        },
    ]
    fake = FakeGemini(
        [
            reply(function_call("echo", {"text": "a"}), usage=usage[0]),
            reply("Done.", usage=usage[1]),
        ]
    )
    result = await _agent(fake, ContextCache(ttl=3600, mode="always")).run("Go.")
    tokens = fake.caches.caches["fakecache0001"].tokens
    # gemini-2.5-flash per 1M tokens: input 0.30, cached input 0.03, output 2.50, cache
    # storage 1.00 per hour; the cache lives one hour.
    turn_one = (1_000 * 0.30 + 4_000 * 0.03 + 100 * 2.50) / 1e6
    turn_two = (1_200 * 0.30 + 4_000 * 0.03 + 50 * 2.50) / 1e6
    storage = tokens * 1.00 * 1 / 1e6
    assert result.cost.turns == pytest.approx((turn_one, turn_two))
    assert result.cost.cache_storage == pytest.approx(storage)
    assert result.cost.usd == pytest.approx(turn_one + turn_two + storage)
    assert result.cost.cache_saving == pytest.approx(8_000 * (0.30 - 0.03) / 1e6 - storage)
    assert result.usage == Usage(10_200, 150, 0, 8_000, 0, 10_350)
    assert result.to_dict()["cost"]["cache_storage"] == round(storage, 8)


async def test_a_cost_budget_counts_the_storage():
    fake = FakeGemini(_turns(3))
    # An hour of a ~3,800-token cache is about $0.0038: the budget is gone after turn one.
    limits = UsageLimits(cost_usd=0.002)
    agent = _agent(fake, ContextCache(ttl=3600, mode="always"), usage_limits=limits)
    result = await agent.run("Go.")
    assert result.status == "incomplete" and result.limit == "usage:cost_usd"
    assert len(fake.requests) == 1


# -- compaction, documents -------------------------------------------------------------------


async def test_compaction_keeps_the_cache_and_its_summary_request_names_none():
    fake = FakeGemini([*_turns(2), *_turns(1), "Summary of the earlier talk.", *_turns(1)])
    store = MemoryStore()
    cache = ContextCache(ttl=600, mode="always")
    agent = _agent(fake, cache, store=store, compaction=Compaction(keep_recent_turns=1))
    await agent.run("one", session="s")
    await agent.run("two", session="s")
    compacted = await agent.compact(session="s")
    assert compacted.status == "completed"
    await agent.run("three", session="s")
    summary = fake.requests[3].body
    assert not any(key in summary for key in (*PREFIX_KEYS, "cachedContent"))
    assert "Summary of the earlier" in str(fake.requests[4].body["contents"][0])
    assert _cached(fake) == [
        *["cachedContents/fakecache0001"] * 3,
        None,
        "cachedContents/fakecache0001",
    ]
    assert len(fake.caches.created) == 1
    _wire_ok(fake)


async def test_documents_are_cached_before_the_conversation(tmp_path: Path):
    manual = "The manual: " + "Chapter 1. Turn it off and on again. " * 300
    errata = tmp_path / "errata.txt"
    errata.write_text("Chapter 1 is wrong.", encoding="utf-8")
    fake = FakeGemini(_turns(2))
    cache = ContextCache(ttl=600, mode="always", documents=[manual, errata])
    result = await _agent(fake, cache, system=SMALL).run("How do I fix it?")
    parts = fake.caches.caches["fakecache0001"].parts["contents"][0]["parts"]
    assert parts[0] == {"text": manual}
    assert parts[1]["inlineData"]["mimeType"] == "text/plain"
    assert fake.requests[0].body["contents"] == [
        {"role": "user", "parts": [{"text": "How do I fix it?"}]}
    ]
    assert len(result.contents) == 4  # the documents are the agent's, not the transcript's
    _wire_ok(fake)


async def test_documents_below_the_minimum_go_first_in_every_request():
    fake = FakeGemini(_turns(2))
    cache = ContextCache(ttl=600, mode="always", documents=["A short note."])
    await _agent(fake, cache, system=SMALL).run("Go.")
    assert fake.caches.requests == []
    for request in fake.requests:
        assert request.body["contents"][0] == {"role": "user", "parts": [{"text": "A short note."}]}


def test_run_sync_runs_share_the_cache_across_event_loops():
    fake = FakeGemini([*_turns(1), *_turns(1)])
    agent = _agent(fake, ContextCache(ttl=600, mode="always"))
    assert agent.run_sync("one").status == "completed"
    assert agent.run_sync("two").status == "completed"
    assert fake.caches.created == ["cachedContents/fakecache0001"]
    assert _cached(fake) == ["cachedContents/fakecache0001"] * 2


async def test_a_cache_gone_again_in_a_later_turn_is_made_again_again():
    fake = FakeGemini([])

    def expiring(body: dict[str, Any]) -> Any:
        fake.caches.expire(body["cachedContent"])
        return function_call("echo", {"text": "a"})

    fake = FakeGemini([expiring, expiring, "Done."])
    events = await _events(_agent(fake, ContextCache(ttl=600, mode="always")), "Go.")
    assert [r.status for r in fake.requests] == [200, 403, 200, 403, 200]
    assert [(e.action, e.turn) for e in events if isinstance(e, CacheEvent)] == [
        ("created", 1),
        ("recreated", 2),
        ("recreated", 3),
    ]
    assert len(fake.caches.created) == 3
    _wire_ok(fake)


class _ToPro(Capability):
    """Sends a turn that failed for good to gemini-2.5-pro, as a model fallback would."""

    def start(self, run: Any) -> RunCapability:
        class Run(RunCapability):
            sent = False

            def failed(self, run: Any, request: ModelRequest, info: Any) -> ModelRequest | None:
                if self.sent or info.code != 503:
                    return None
                self.sent = True
                return dataclasses.replace(request, model="gemini-2.5-pro")

        return Run()


async def test_a_turn_sent_to_another_model_goes_without_the_first_models_cache():
    fake = FakeGemini([error(503), "Done on pro."])
    agent = _agent(
        fake,
        ContextCache(ttl=600, mode="always"),
        capabilities=[_ToPro()],
        limits=RunLimits(retry=RetryPolicy(attempts=1)),
    )
    result = await agent.run("Go.")
    assert result.text == "Done on pro."
    assert [(r.model, r.status) for r in fake.requests] == [
        ("gemini-2.5-flash", 503),
        ("gemini-2.5-pro", 400),  # the flash cache named in a pro request: refused
        ("gemini-2.5-pro", 200),
    ]
    assert "has to be the same" in (fake.requests[1].error or "")
    last = fake.requests[2].body
    assert "cachedContent" not in last and "systemInstruction" in last and "tools" in last


async def test_the_prefix_is_read_again_when_a_hook_changes_it_in_place():
    def more_tools(request: ModelRequest) -> None:
        if request.turn == 2:  # in place, on the config every request shares
            tools = request.config.tools
            extra = tools[0].function_declarations[0].model_copy(update={"name": "echo_two"})
            tools.append(tools[0].model_copy(update={"function_declarations": [extra]}))

    fake = FakeGemini(_turns(2))
    hooks = Hooks(before_model=more_tools)
    await _agent(fake, ContextCache(ttl=600, mode="always"), capabilities=[hooks]).run("Go.")
    assert len(fake.caches.created) == 2
    assert fake.caches.deleted == fake.caches.created[:1]  # the run left the first prefix
    (live,) = fake.caches.caches.values()
    assert [d["name"] for t in live.parts["tools"] for d in t["functionDeclarations"]] == [
        "echo",
        "echo_two",
    ]


async def test_the_gemini_batch_engine_refuses_a_context_cache():
    """A batch job runs hours after it is sent, past a cache's life: refused, not dropped."""
    from agent.batch import GeminiBatch

    fake = FakeGemini(["Done."])
    agent = _agent(fake, ContextCache(ttl=600, mode="always"))
    with pytest.raises(ConfigurationError, match="does not take an agent with a ContextCache"):
        await GeminiBatch(poll_interval=0).run(agent, {"t1": "Go."})
    assert fake.caches.requests == [] and fake.batches.created == 0


# -- with a fallback model -------------------------------------------------------------------


async def _no_wait(seconds: float) -> None:
    return None


async def test_a_turn_that_falls_back_to_another_model_is_sent_there_without_the_cache():
    pro, flash = "gemini-2.5-pro", "gemini-2.5-flash"
    overloaded = error(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")
    fake = FakeGemini(
        [function_call("echo", {"text": "one"}), overloaded, function_call("echo", {}), "Done."]
    )
    agent = _agent(
        fake,
        ContextCache(ttl=300, mode="always"),
        model=[pro, flash],  # type: ignore[arg-type]
        limits=RunLimits(retry=RetryPolicy(attempts=1, sleep=_no_wait, jitter=0.0)),
    )
    result = await agent.run("Go.")
    assert result.status == "completed" and result.turn_models == (pro, flash, flash)
    answered = [r for r in fake.requests if r.status == 200]
    assert [r.model for r in answered] == [pro, flash, flash]
    names = [(r.body or {}).get("cachedContent") for r in answered]
    # The fallback turn itself goes with its prefix (pro's cache is pro's alone: Gemini
    # refuses it for flash, and the turn is sent again uncached); the next turn on flash
    # reads the prefix from a cache made for flash.
    assert names[0] is not None and names[1] is None
    assert names[2] is not None and names[2] != names[0]
    assert "systemInstruction" in (answered[1].body or {})
    assert _posts(fake) == 2
    _wire_ok(fake)
