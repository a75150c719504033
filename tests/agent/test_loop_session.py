"""Memory: ``run(prompt, session=...)`` loads and saves transcripts through a store."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import httpx
import pytest

import toolnexus as tn
from agent import ConfigurationError, Hooks, MemoryStore, ModelError, SessionBusyError, SqliteStore
from agent._transcript import Transcript
from agent.errors import HookError
from agent.events import PendingEvent, ToolResultEvent
from tests.agent._loop_support import Script, api_error, call, echo_toolkit, make_agent, reply, text


class RecordingStore(MemoryStore):
    """A memory store that keeps a copy of every save."""

    def __init__(self) -> None:
        super().__init__()
        self.saves: list[Transcript] = []

    async def save(self, session_id: str, transcript: Transcript) -> None:
        self.saves.append(Transcript.from_json(transcript.to_json()))
        await super().save(session_id, transcript)


def roles(contents: list[dict[str, Any]]) -> list[str]:
    return [c["role"] for c in contents]


async def test_a_session_remembers_the_conversation(http, mock):
    script = Script(mock, [reply(text("Hi Ann.")), reply(text("You are Ann."))])
    agent = make_agent(http)
    await agent.run("I am Ann.", session="ann")
    result = await agent.run("Who am I?", session="ann")
    assert result.text == "You are Ann."
    assert script.contents(1) == [
        {"role": "user", "parts": [{"text": "I am Ann."}]},
        {"role": "model", "parts": [{"text": "Hi Ann."}]},
        {"role": "user", "parts": [{"text": "Who am I?"}]},
    ]
    saved = await agent.store.get("ann")
    assert saved is not None
    assert saved.contents == result.contents
    assert saved.metadata["model"] == agent.model


async def test_saved_after_every_completed_turn_as_valid_history(http, mock):
    store = RecordingStore()
    Script(
        mock,
        [
            reply(call("echo", {"text": "1"})),
            reply(call("echo", {"text": "2"})),
            reply(text("done")),
        ],
    )
    await make_agent(http, echo_toolkit(), store=store).run("go", session="s")
    assert [roles(t.contents) for t in store.saves] == [
        ["user", "model", "user"],
        ["user", "model", "user", "model", "user"],
        ["user", "model", "user", "model", "user", "model"],
    ]


async def test_a_failure_keeps_the_completed_turns(http, mock):
    store = RecordingStore()
    Script(mock, [reply(call("echo", {"text": "1"})), api_error(400, "INVALID_ARGUMENT", "no")])
    agent = make_agent(http, echo_toolkit(), store=store)
    with pytest.raises(ModelError):
        await agent.run("go", session="s")
    saved = await store.get("s")
    assert saved is not None
    assert roles(saved.contents) == ["user", "model", "user"]


async def test_a_suspended_session_resumes_with_the_answer(http, mock, tmp_path):
    question = {"questions": [{"question": "Ship?"}]}
    script = Script(mock, [reply(call("question", question, id="q")), reply(text("Shipped."))])
    tk = tn.build(root=tmp_path)
    store = MemoryStore()
    first = await make_agent(http, tk, store=store).run("ship it", session="s")
    assert first.status == "pending"
    saved = await store.get("s")
    assert saved is not None and saved.pending is not None
    assert saved.pending["request"]["id"] == first.pending["id"]  # type: ignore[index]
    answer = {"id": first.pending["id"], "ok": True, "data": "yes"}  # type: ignore[index]
    done = await make_agent(http, tk, store=store).run(session="s", answer=answer)
    assert done.status == "completed"
    assert json.loads(script.contents(1)[-1]["parts"][0]["functionResponse"]["response"]["output"])
    saved = await store.get("s")
    assert saved is not None and saved.pending is None


async def test_a_new_prompt_moves_on_from_an_unanswered_question(http, mock, tmp_path):
    question = {"questions": [{"question": "Ship?"}]}
    script = Script(mock, [reply(call("question", question)), reply(text("OK, not shipping."))])
    agent = make_agent(http, tn.build(root=tmp_path))
    first = await agent.run("ship it", session="s")
    assert first.status == "pending"
    result = await agent.run("Never mind.", session="s")
    assert result.status == "completed"
    sent = script.contents(1)
    response = sent[-2]["parts"][0]["functionResponse"]["response"]
    assert response["isError"] is True
    assert "pending" not in response
    assert sent[-1] == {"role": "user", "parts": [{"text": "Never mind."}]}


async def test_sqlite_sessions_survive_a_new_agent(http, mock, tmp_path):
    path = tmp_path / "sessions.db"
    script = Script(mock, [reply(text("one")), reply(text("two"))])
    async with SqliteStore(path) as store:
        await make_agent(http, store=store).run("first", session="x")
    async with SqliteStore(path) as store:
        result = await make_agent(http, store=store).run("second", session="x")
    assert result.text == "two"
    assert roles(script.contents(1)) == ["user", "model", "user"]


async def test_two_runs_on_one_session_are_refused(http, mock):
    gate = asyncio.Event()
    entered = asyncio.Event()

    async def slow(request: httpx.Request) -> httpx.Response:
        entered.set()
        await gate.wait()
        return httpx.Response(200, json=reply(text("ok")))

    mock.post(url__regex=r".*:generateContent$").mock(side_effect=slow)
    agent = make_agent(http)
    first = asyncio.ensure_future(agent.run("a", session="busy"))
    await entered.wait()
    with pytest.raises(SessionBusyError):
        await agent.run("b", session="busy")
    gate.set()
    assert (await first).text == "ok"


async def test_history_and_session_together_are_refused(http):
    with pytest.raises(ConfigurationError, match="either history= or session="):
        await make_agent(http).run("x", history=[], session="s")


async def test_a_model_error_on_turn_3_keeps_turns_1_and_2(http, mock):
    store = RecordingStore()
    Script(
        mock,
        [
            reply(call("echo", {"text": "1"})),
            reply(call("echo", {"text": "2"})),
            api_error(400, "INVALID_ARGUMENT", "no"),
        ],
    )
    with pytest.raises(ModelError) as info:
        await make_agent(http, echo_toolkit(), store=store).run("go", session="s")
    saved = await store.get("s")
    assert saved is not None
    assert roles(saved.contents) == ["user", "model", "user", "model", "user"]
    assert saved.contents == info.value.result.contents
    assert info.value.result.turns == 2
    # The session carries on from the saved turns.
    Script(mock, [reply(text("back"))])
    again = await make_agent(http, echo_toolkit(), store=store).run("retry", session="s")
    assert again.text == "back"
    assert roles(again.contents) == ["user", "model", "user", "model", "user", "user", "model"]


async def test_a_hook_error_keeps_the_completed_turns_and_frees_the_session(http, mock):
    store = RecordingStore()
    Script(mock, [reply(call("echo", {"text": "1"})), reply(call("echo", {"text": "2"}))])

    def after_tool(call_event, result):
        if call_event.turn == 2:
            raise RuntimeError("policy bug")
        return None

    agent = make_agent(
        http, echo_toolkit(), store=store, capabilities=[Hooks(after_tool=after_tool)]
    )
    with pytest.raises(HookError):
        await agent.run("go", session="s")
    saved = await store.get("s")
    assert saved is not None
    assert roles(saved.contents) == ["user", "model", "user"]
    Script(mock, [reply(text("ok"))])
    assert (await agent.run("next", session="s")).text == "ok"  # not left busy


async def test_closing_a_session_stream_mid_tools_keeps_turn_1_and_frees_it(http, mock):
    store = RecordingStore()
    started = asyncio.Event()
    cancelled = []

    async def block(args, ctx):
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    tk = echo_toolkit(tn.Tool("block", block, "Blocks.", {"type": "object"}))
    turn_2 = reply(call("echo", {"text": "2"}), call("block", {}))
    Script(mock, [reply(call("echo", {"text": "1"})), turn_2])
    agent = make_agent(http, tk, store=store)
    async with contextlib.aclosing(agent.stream("go", session="s")) as events:
        async for event in events:
            if isinstance(event, ToolResultEvent) and event.call.turn == 2:
                assert started.is_set()  # "block" runs while "echo" has finished
                break
    assert cancelled == [True]  # the running tool was stopped, not left behind
    saved = await store.get("s")
    assert saved is not None
    assert roles(saved.contents) == ["user", "model", "user"]
    Script(mock, [reply(text("ok"))])
    assert (await agent.run("next", session="s")).text == "ok"


async def test_a_stream_stopped_at_a_turns_last_event_has_saved_that_turn(http, mock, tmp_path):
    question = {"questions": [{"question": "Ship?"}]}
    Script(
        mock,
        [reply(call("echo", {"text": "1"})), reply(call("question", question, id="q"))],
    )
    store = MemoryStore()
    agent = make_agent(http, echo_toolkit(*tn.build(root=tmp_path)), store=store)
    stops = []
    for stop_at in (ToolResultEvent, PendingEvent):
        async with contextlib.aclosing(agent.stream("go", session=stop_at.__name__)) as events:
            async for event in events:
                if isinstance(event, stop_at):
                    stops.append(event)
                    break
        saved = await store.get(stop_at.__name__)
        assert saved is not None
        assert roles(saved.contents) == ["user", "model", "user"]
        if stop_at is PendingEvent:  # the consumer left at the question: it still waits, saved
            assert saved.pending is not None
            assert saved.pending["request"]["id"] == stops[-1].request["id"]
    assert len(stops) == 2


async def test_an_answered_request_is_saved_before_the_next_model_call(http, mock, tmp_path):
    question = {"questions": [{"question": "Ship?"}]}
    Script(
        mock,
        [reply(call("question", question, id="q")), api_error(400, "INVALID_ARGUMENT", "no")],
    )
    store = MemoryStore()
    agent = make_agent(http, tn.build(root=tmp_path), store=store)
    first = await agent.run("ship it", session="s")
    answer = {"id": first.pending["id"], "ok": True, "data": "yes"}  # type: ignore[index]
    with pytest.raises(ModelError) as info:
        await agent.run(session="s", answer=answer)
    saved = await store.get("s")
    assert saved is not None
    assert saved.pending is None  # the answer was used; it is not asked for again
    assert saved.contents == info.value.result.contents
    response = saved.contents[-1]["parts"][0]["functionResponse"]["response"]
    assert "pending" not in response and response["isError"] is False
