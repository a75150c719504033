"""Hooks (model and tool, sync and async) and suspension: inline answers and resume."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import toolnexus as tn
from agent import ConfigurationError, Hooks, ModelRequest, Veto
from agent.errors import HookError
from agent.events import DoneEvent, PendingEvent, UsageEvent
from tests.agent._loop_support import (
    Script,
    call,
    echo_toolkit,
    make_agent,
    reply,
    text,
    usage,
)
from toolnexus import ToolResult


def response_of(script: Script, turn: int, index: int = 0) -> dict[str, Any]:
    part = script.contents(turn)[-1]["parts"][index]
    response: dict[str, Any] = part["functionResponse"]
    return response


async def test_a_before_tool_guard_keeps_bash_from_running(http, mock, tmp_path):
    marker = tmp_path / "ran.txt"
    tk = tn.build(root=tmp_path)

    def guard(call):
        if call.name == "bash":
            return ToolResult("Denied: bash is not allowed in this session.", is_error=True)
        return None

    script = Script(
        mock,
        [reply(call("bash", {"command": f"touch {marker}"}, id="b1")), reply(text("ok"))],
    )
    result = await make_agent(http, tk, capabilities=[Hooks(before_tool=guard)]).run("go")
    assert result.status == "completed"
    assert not marker.exists()
    assert response_of(script, 1) == {
        "id": "b1",
        "name": "bash",
        "response": {"output": "Denied: bash is not allowed in this session.", "isError": True},
    }


async def test_before_tool_may_rewrite_args_and_after_tool_replace_results(http, mock):
    async def shout(call):
        return {"text": call.args["text"].upper()}

    def tag(call, result):
        return ToolResult(result.output + " [checked]")

    script = Script(mock, [reply(call("echo", {"text": "hi"})), reply(text("ok"))])
    hooks = Hooks(before_tool=shout, after_tool=tag)
    result = await make_agent(http, echo_toolkit(), capabilities=[hooks]).run("go")
    assert response_of(script, 1)["response"] == {"output": "echo:HI [checked]", "isError": False}
    assert result.tool_calls[0].args == {"text": "HI"}
    # The model's own call stays verbatim in the transcript.
    assert script.contents(1)[1]["parts"][0]["functionCall"]["args"] == {"text": "hi"}


async def test_before_model_may_rewrite_the_request_for_one_call(http, mock):
    seen: list[int] = []

    def trim(request: ModelRequest) -> ModelRequest:
        seen.append(request.turn)
        return ModelRequest(request.model, request.contents[-1:], request.config, request.turn)

    script = Script(mock, [reply(text("one")), reply(text("two"))])
    agent = make_agent(http, capabilities=[Hooks(before_model=trim)])
    first = await agent.run("a")
    second = await agent.run("b", history=first.contents)
    assert seen == [1, 1]
    assert script.contents(1) == [{"role": "user", "parts": [{"text": "b"}]}]
    assert len(second.contents) == 4  # the transcript itself is untouched


async def test_before_model_veto_blocks_the_run(http, mock):
    script = Script(mock, [])
    agent = make_agent(
        http, capabilities=[Hooks(before_model=lambda request: Veto("budget spent"))]
    )
    result = await agent.run("go")
    assert (result.status, result.reason) == ("blocked", "budget spent")
    assert script.bodies == []


async def test_after_model_may_veto_or_replace(http, mock):
    Script(mock, [reply(text("secret stuff"))])

    async def censor(request, response):
        if "secret" in (response.text or ""):
            return Veto("leak detected")
        return None

    result = await make_agent(http, capabilities=[Hooks(after_model=censor)]).run("go")
    assert (result.status, result.reason) == ("blocked", "leak detected")
    assert result.contents == [{"role": "user", "parts": [{"text": "go"}]}]


async def test_an_after_model_veto_still_counts_the_billed_turn(http, mock):
    Script(mock, [reply(text("fine"), meta=usage(10, 5, 15))])
    hooks = Hooks(after_model=lambda request, response: Veto("post"))
    events = [event async for event in make_agent(http, capabilities=[hooks]).stream("go")]
    result = events[-1].result
    assert (result.status, result.reason, result.turns) == ("blocked", "post", 1)
    assert (result.usage.prompt, result.usage.candidates, result.usage.total) == (10, 5, 15)
    assert result.turn_usage == (result.usage,)
    # Streamed text was shown as it came; then the turn is counted and the run ends.
    assert [type(event) for event in events[-2:]] == [UsageEvent, DoneEvent]
    assert events[-2].total == result.usage
    assert result.text == ""  # the vetoed reply is not kept
    assert len(result.contents) == 1


QUESTION = {"questions": [{"question": "Deploy now?", "options": ["yes", "no"]}]}


async def test_question_with_wait_for_feeds_the_answer_back(http, mock, tmp_path):
    asked = []

    async def wait_for(request):
        asked.append(request)
        return {"id": request["id"], "ok": True, "data": {"answers": ["yes"]}}

    script = Script(mock, [reply(call("question", QUESTION, id="q1")), reply(text("Deploying."))])
    agent = make_agent(http, tn.build(root=tmp_path), wait_for=wait_for)
    result = await agent.run("deploy?")
    assert result.status == "completed"
    assert asked[0]["kind"] == "question"
    assert "Deploy now?" in asked[0]["prompt"]
    response = response_of(script, 1)
    assert response["id"] == "q1"
    assert json.loads(response["response"]["output"]) == {"answers": ["yes"]}
    assert response["response"]["isError"] is False


async def test_a_declined_answer_is_an_error_result(http, mock, tmp_path):
    def wait_for(request):
        return {"id": request["id"], "ok": False}

    script = Script(mock, [reply(call("question", QUESTION)), reply(text("ok"))])
    await make_agent(http, tn.build(root=tmp_path), wait_for=wait_for).run("go")
    assert response_of(script, 1)["response"]["isError"] is True


async def test_without_wait_for_the_run_suspends_and_resumes_in_a_fresh_agent(http, mock, tmp_path):
    script = Script(
        mock,
        [
            reply(
                call("question", QUESTION, id="q1"),
                call("echo", {"text": "side"}, id="e1"),
            ),
            reply(text("Deploying.")),
        ],
    )
    tk = tn.build(root=tmp_path, tools=list(echo_toolkit()))
    events = [e async for e in make_agent(http, tk).stream("deploy?")]
    pending_events = [e for e in events if isinstance(e, PendingEvent)]
    assert len(pending_events) == 1
    first = events[-1].result if isinstance(events[-1], DoneEvent) else None
    assert first is not None
    assert first.status == "pending"
    assert first.pending is not None and first.pending["kind"] == "question"
    assert len(script.bodies) == 1

    # The transcript survives a trip through JSON: a new process could resume it.
    saved = json.loads(json.dumps(first.to_dict()))
    answer = {"id": saved["pending"]["id"], "ok": True, "data": {"answers": ["yes"]}}
    resumed = await make_agent(http, tk).run(history=saved["contents"], answer=answer)
    assert resumed.status == "completed"
    assert resumed.text == "Deploying."
    sent = script.contents(1)
    assert [p["functionResponse"]["id"] for p in sent[-1]["parts"]] == ["q1", "e1"]
    question, echo = (p["functionResponse"]["response"] for p in sent[-1]["parts"])
    assert json.loads(question["output"]) == {"answers": ["yes"]}
    assert "pending" not in question
    assert echo == {"output": "echo:side", "isError": False}  # not run again
    assert [c.name for c in resumed.tool_calls] == ["question"]


async def test_resuming_needs_a_matching_answer(http, mock, tmp_path):
    Script(mock, [reply(call("question", QUESTION, id="q1"))])
    tk = tn.build(root=tmp_path)
    first = await make_agent(http, tk).run("go")
    assert first.status == "pending"
    with pytest.raises(ConfigurationError, match="does not match"):
        await make_agent(http, tk).run(history=first.contents, answer={"id": "other", "ok": True})
    again = await make_agent(http, tk).run(history=first.contents)
    assert again.status == "pending"
    assert again.pending == first.pending


async def test_an_answer_without_a_pending_request_is_refused(http, mock):
    with pytest.raises(ConfigurationError, match="does not wait"):
        await make_agent(http).run("go", answer={"id": "x", "ok": True})


class PolicyBug(Exception):
    pass


def boom(*args: Any) -> None:
    raise PolicyBug("bad policy")


async def test_a_raising_before_model_hook_becomes_a_hook_error(http, mock):
    script = Script(mock, [])
    with pytest.raises(HookError) as info:
        await make_agent(http, capabilities=[Hooks(before_model=boom)]).run("go")
    error = info.value
    assert error.hook == "before_model"
    assert isinstance(error.__cause__, PolicyBug)
    assert "PolicyBug: bad policy" in str(error)
    assert error.result.turns == 0
    assert error.result.contents == [{"role": "user", "parts": [{"text": "go"}]}]
    assert script.bodies == []


async def test_a_raising_after_tool_hook_keeps_the_completed_turns(http, mock):
    Script(mock, [reply(call("echo", {"text": "a"})), reply(call("echo", {"text": "b"}))])
    seen = []

    async def after_tool(call_event, result):
        seen.append(call_event.turn)
        if call_event.turn == 2:
            raise PolicyBug("second turn")
        return None

    agent = make_agent(http, echo_toolkit(), capabilities=[Hooks(after_tool=after_tool)])
    with pytest.raises(HookError) as info:
        await agent.run("go")
    error = info.value
    assert (error.hook, seen) == ("after_tool", [1, 2])
    assert isinstance(error.__cause__, PolicyBug)
    assert error.result.turns == 2
    assert [record.args for record in error.result.tool_calls] == [{"text": "a"}]
    json.dumps(error.result.to_dict())


async def test_a_raising_wait_for_becomes_a_hook_error_in_a_stream(http, mock, tmp_path):
    Script(mock, [reply(call("question", QUESTION, id="q1"))])
    agent = make_agent(http, tn.build(root=tmp_path), wait_for=boom)
    seen = []
    with pytest.raises(HookError) as info:
        async for event in agent.stream("deploy?"):
            seen.append(event)
    assert info.value.hook == "wait_for"
    assert isinstance(info.value.__cause__, PolicyBug)
    assert info.value.result.turns == 1
    assert not any(isinstance(event, DoneEvent) for event in seen)


async def test_cancellation_inside_a_hook_is_not_wrapped(http, mock):
    Script(mock, [reply(text("hi"))])

    async def cancelled(request):
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await make_agent(http, capabilities=[Hooks(before_model=cancelled)]).run("go")
