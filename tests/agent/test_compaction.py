"""Context compaction against the strict FakeGemini: long chats stay small and valid."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent import (
    Agent,
    ClientSettings,
    Compaction,
    ConfigurationError,
    MemoryStore,
    RetryPolicy,
    RunLimits,
)
from agent._compaction import SUMMARY_PROMPT, estimate_tokens, exchange_starts, prune
from agent.events import Compacted
from agent.testing import FakeGemini, error, function_call, reply
from tests.agent._loop_support import KEY
from toolnexus import Attachment, Tool, ToolContext, ToolResult, define_tool, toolkit

BIG = "x" * 2_500


@define_tool
def fetch(n: int) -> str:
    """Fetch page n."""
    return f"page {n}: {BIG}"


def text_of(body: dict[str, Any]) -> str:
    return json.dumps(body["contents"])


class ChatModel:
    """Plays the model: a tool call per prompt, then an answer; writes summaries."""

    def __init__(self) -> None:
        self.summaries = 0

    def __call__(self, body: dict[str, Any]) -> Any:
        first = body["contents"][0]["parts"][0].get("text", "")
        if first.startswith(SUMMARY_PROMPT):
            assert "tools" not in body
            self.summaries += 1
            fact = "the code word is PAPAYA" if "PAPAYA" in first else "no code word"
            return f"Notes: {fact}."
        last = body["contents"][-1]
        if "functionResponse" in last["parts"][0]:
            return "noted"
        prompt = last["parts"][-1]["text"]
        if prompt == "What is the code word?":
            text = text_of(body)
            assert "Remember: the code word" not in text  # turn 1 itself is gone...
            assert "the code word is PAPAYA" in text  # ...only the summary carries it
            return "The code word is PAPAYA."
        return function_call("fetch", {"n": len(body["contents"])})


async def test_a_300_turn_chat_stays_small_and_keeps_a_fact_from_turn_1() -> None:
    model = ChatModel()
    fake = FakeGemini(model, api_key=KEY, sign_text=True)
    policy = Compaction(trigger_tokens=6_000, keep_recent_turns=3)
    store = MemoryStore()
    agent = Agent(
        toolkit=toolkit([fetch]),
        compaction=policy,
        store=store,
        client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
    )
    compactions: list[Compacted] = []
    prompts = ["Remember: the code word is PAPAYA."] + [f"turn {i}" for i in range(2, 300)]
    for prompt in prompts:
        async for event in agent.stream(prompt, session="chat"):
            if isinstance(event, Compacted):
                compactions.append(event)
    result = await agent.run("What is the code word?", session="chat")
    assert result.text == "The code word is PAPAYA.", [r.error for r in fake.requests[-2:]]
    assert all(r.status == 200 for r in fake.requests), [r.error for r in fake.requests][:3]
    assert compactions and model.summaries > 0
    assert all(c.tokens_after < c.tokens_before for c in compactions)
    # Every request stayed near the limit (the trigger plus one exchange).
    sizes = [len(json.dumps(r.body["contents"])) // 4 for r in fake.requests]
    assert max(sizes) < 6_000 + 2 * len(BIG)
    # The archive holds every replaced turn: each prompt is in the transcript or the archive.
    saved = await store.get("chat")
    assert saved is not None
    assert "archive" not in saved.metadata  # kept apart by the store, append-only
    archived = json.dumps(await store.archive("chat"))
    kept = json.dumps(saved.contents)
    for prompt in prompts:
        assert json.dumps(prompt) in archived or json.dumps(prompt) in kept, prompt
    assert f"page 1: {BIG}" in archived  # the full results, from before they were pruned


async def test_compact_a_history_by_hand() -> None:
    exchange = [
        {"role": "user", "parts": [{"text": "hello"}]},
        {"role": "model", "parts": [{"text": "hi"}]},
    ]
    history = exchange * 5
    fake = FakeGemini(["Notes: greetings."], api_key=KEY)
    agent = Agent(client=ClientSettings(api_key=KEY, http_client=fake.http_client()))
    result = await agent.compact(history)
    assert result.contents[0]["parts"][0]["text"].endswith("Notes: greetings.")
    assert len(result.contents) == 2 * 4  # keep_recent_turns exchanges verbatim
    assert result.usage.total > 0
    with pytest.raises(ConfigurationError):
        await agent.compact()


def test_prune_keeps_ids_names_and_signatures() -> None:
    contents = [
        {"role": "user", "parts": [{"text": "go"}]},
        {
            "role": "model",
            "parts": [
                {"functionCall": {"id": "c1", "name": "f", "args": {}}, "thoughtSignature": "c2ln"}
            ],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"id": "c1", "name": "f", "response": {"output": BIG}}}],
        },
        {"role": "user", "parts": [{"text": "next"}]},
    ]
    pruned, count = prune(contents, 3, 100)
    assert count == 1
    assert pruned[1] is contents[1]  # the signed part is untouched
    response = pruned[2]["parts"][0]["functionResponse"]
    assert (response["id"], response["name"]) == ("c1", "f")
    assert "pruned" in response["response"]["output"]
    assert exchange_starts(contents) == [0, 3]


def test_compaction_settings_are_checked() -> None:
    with pytest.raises(ConfigurationError):
        Compaction(trigger_fraction=0)
    with pytest.raises(ConfigurationError):
        Compaction(keep_recent_turns=0)


PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000") + b"\x00" * 16


def _render(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    size = int(args.get("size", 0))
    data = PNG + b"\x00" * size
    return ToolResult("Rendered.", attachments=(Attachment("image/png", data=data, name="p.png"),))


RENDER = Tool("render", _render, "Render a plot.", {"type": "object"})


def _agent(fake: FakeGemini, model: str = "gemini-2.5-flash", **kw: Any) -> Agent:
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    return Agent(
        model,
        toolkit([RENDER, fetch]),
        limits=RunLimits(retry=RetryPolicy(sleep=sleep, jitter=0.0)),
        client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
        **kw,
    )


def _is_summary(body: dict[str, Any]) -> bool:
    return body["contents"][0]["parts"][0].get("text", "").startswith(SUMMARY_PROMPT)


async def test_on_2x_attachments_stay_with_their_call_when_older_turns_are_summarised() -> None:
    # Gemini 2.x: the tool's file follows the function response in the same user Content,
    # so that Content is not where an exchange starts.
    fake = FakeGemini(["Hello.", function_call("render", id=None), "A plot.", "Notes: hi.", "3."])
    agent = _agent(fake, compaction=Compaction(keep_recent_turns=1))
    history = (await agent.run("Hi")).contents
    history = (await agent.run("Plot it", history=history)).contents
    assert len(history[4]["parts"]) == 3  # the response, "This is file p.png:", the file
    assert exchange_starts(history) == [0, 2]
    compacted = await agent.compact(history)
    assert compacted.contents[1:] == history[3:]  # "Plot it" with its call and file kept
    assert compacted.contents[0]["parts"][1:] == history[2]["parts"]
    result = await agent.run("And now?", history=compacted.contents)
    assert result.text == "3."
    assert all(request.status == 200 for request in fake.requests), fake.requests[-1].error
    fake.assert_consumed()


async def test_a_summary_longer_than_what_it_replaces_is_refused() -> None:
    history = [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"text": "hello"}]},
    ] * 3
    fake = FakeGemini(["Notes: " + "a very long summary " * 50])
    agent = _agent(fake, compaction=Compaction(keep_recent_turns=1))
    result = await agent.compact(history)
    assert result.contents == history  # kept as it was
    assert result.usage.total > 0  # the summary call is paid for all the same
    assert len(fake.requests) == 1


async def test_one_503_on_the_summary_call_is_retried() -> None:
    history = [
        {"role": "user", "parts": [{"text": f"question {i} " + "x" * 200}]}
        if j == 0
        else {"role": "model", "parts": [{"text": f"answer {i}"}]}
        for i in range(3)
        for j in range(2)
    ]
    fake = FakeGemini([error(503, "UNAVAILABLE"), "Notes: three questions."])
    agent = _agent(fake, compaction=Compaction(keep_recent_turns=1))
    result = await agent.compact(history)
    assert [r.status for r in fake.requests] == [503, 200]
    assert all(_is_summary(r.body) for r in fake.requests)
    assert [retry.code for retry in result.retries] == [503]
    assert result.contents[0]["parts"][0]["text"].endswith("Notes: three questions.")
    assert len(result.contents) == 2


async def test_the_exchange_in_progress_is_pruned_except_its_latest_results() -> None:
    # One prompt, many tool calls: the only exchange is the one in progress.
    calls = [function_call("fetch", {"n": n}) for n in range(1, 7)]
    fake = FakeGemini([*calls, "Read them all."])
    agent = _agent(
        fake,
        "gemini-3-flash-preview",
        compaction=Compaction(trigger_tokens=2_500, keep_recent_turns=2),
    )
    compactions: list[Compacted] = []
    async for event in agent.stream("Read pages 1 to 6"):
        if isinstance(event, Compacted):
            compactions.append(event)
    assert all(request.status == 200 for request in fake.requests), fake.requests[-1].error
    assert compactions and all(c.turns_summarised == 0 and c.pruned for c in compactions)
    (compacted,) = compactions
    assert (compacted.pruned, compacted.tokens_after < 2_500) == (3, True)
    sent = fake.requests[4].contents  # the request the compaction shrank
    results = [c["parts"][0]["functionResponse"]["response"]["output"] for c in sent[2::2]]
    assert [r.startswith("[pruned to save context: fetch returned") for r in results] == [
        True,
        True,
        True,
        False,
    ]
    assert results[-1] == f"page 4: {BIG}"  # the latest: the model has not read it yet
    assert not any(_is_summary(r.body) for r in fake.requests)  # nothing older to summarise


async def test_an_inline_file_counts_as_tokens_not_as_its_base64() -> None:
    # 300 KB of image is some hundreds of tokens to Gemini, not 100,000 characters of JSON.
    fake = FakeGemini([function_call("render", {"size": 300_000}, id=None), "A plot.", "Yes."])
    store = MemoryStore()
    policy = Compaction(trigger_tokens=20_000, keep_recent_turns=1)
    agent = _agent(fake, compaction=policy, store=store)
    await agent.run("Plot it", session="s")
    result = await agent.run("Is it nice?", session="s")
    assert result.text == "Yes."
    assert not any(_is_summary(r.body) for r in fake.requests)
    assert estimate_tokens(result.contents) < 5_000


async def test_a_sessions_next_run_checks_its_size_from_the_last_request_not_the_whole_chat():
    # Gemini counted 5,000 prompt tokens for run 1's request; its characters would say far
    # fewer. Run 2's check starts from that count plus what was added since (the long
    # answer and the new prompt), as a second turn of run 1 would: the session keeps the
    # size of its last request instead of measuring the whole chat again.
    counted = {"promptTokenCount": 5_000, "candidatesTokenCount": 2, "totalTokenCount": 5_002}
    answer = "long answer " * 500
    fake = FakeGemini(
        [reply(answer, usage=counted), "Notes: a greeting.", "hello again"], api_key=KEY
    )
    store = MemoryStore()
    agent = Agent(
        compaction=Compaction(trigger_tokens=1_000, keep_recent_turns=1),
        store=store,
        client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
    )
    await agent.run("hello", session="s")
    saved = await store.get("s")
    assert saved is not None
    assert saved.metadata["last_request"] == {"prompt_tokens": 5_000, "contents": 1}
    events = [event async for event in agent.stream("and again", session="s")]
    compacted = [event for event in events if isinstance(event, Compacted)]
    assert len(compacted) == 1
    assert compacted[0].tokens_before > 5_000 + len(answer) // 4
    summary_call = fake.requests[1].body["contents"][0]["parts"][0]["text"]
    assert summary_call.startswith(SUMMARY_PROMPT)
