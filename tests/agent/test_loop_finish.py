"""Finish reasons, blocks and limits: every way a run ends names why."""

from __future__ import annotations

import pytest

from agent import RunLimits
from tests.agent._loop_support import Script, call, echo_toolkit, make_agent, reply, text

MALFORMED = {"candidates": [{"content": {}, "finishReason": "MALFORMED_FUNCTION_CALL"}]}


async def test_malformed_call_then_a_good_turn_completes(http, mock):
    script = Script(mock, [MALFORMED, reply(text("fine"))])
    result = await make_agent(http, echo_toolkit()).run("go")
    assert result.status == "completed"
    assert result.text == "fine"
    assert result.turns == 2
    # The malformed turn is not executed and not echoed: the same request is sent again.
    assert script.bodies[1] == script.bodies[0]
    assert result.tool_calls == ()


async def test_three_malformed_in_a_row_end_incomplete(http, mock):
    script = Script(mock, [MALFORMED, MALFORMED, MALFORMED])
    result = await make_agent(http, echo_toolkit()).run("go")
    assert result.status == "incomplete"
    assert result.limit == "malformed_function_call"
    assert result.reason == "MALFORMED_FUNCTION_CALL"
    assert len(script.bodies) == 3


async def test_unexpected_tool_call_is_not_executed(http, mock):
    ran = []

    def spy(args, ctx):
        ran.append(args)
        return "ran"

    from toolnexus import Tool, toolkit

    tk = toolkit([Tool("spy", spy, "Spy.", {"type": "object"})])
    unexpected = reply(call("spy", {"a": 1}), finish="UNEXPECTED_TOOL_CALL")
    Script(mock, [unexpected, reply(text("ok"))])
    result = await make_agent(http, tk).run("go")
    assert result.status == "completed"
    assert ran == []


async def test_malformed_retries_are_configurable(http, mock):
    Script(mock, [MALFORMED])
    result = await make_agent(http, limits=RunLimits(malformed_retries=0)).run("go")
    assert (result.status, result.limit) == ("incomplete", "malformed_function_call")


@pytest.mark.parametrize("reason", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT", "SPII"])
async def test_withheld_output_is_blocked_with_the_reason(http, mock, reason):
    Script(mock, [{"candidates": [{"finishReason": reason}]}])
    result = await make_agent(http).run("go")
    assert result.status == "blocked"
    assert result.reason == reason
    assert result.finish_reason == reason


async def test_calls_in_a_safety_stopped_turn_are_not_run(http, mock):
    Script(mock, [reply(call("echo", {"text": "x"}, id="c"), finish="SAFETY")])
    result = await make_agent(http, echo_toolkit()).run("go")
    assert (result.status, result.reason) == ("blocked", "SAFETY")
    assert result.tool_calls == ()
    # The turn is kept and answered, so the transcript stays usable as history.
    assert result.contents[-1]["parts"][0]["functionResponse"] == {
        "id": "c",
        "name": "echo",
        "response": {"output": "Not run: the turn ended with SAFETY.", "isError": True},
    }


async def test_prompt_block_reason_is_blocked(http, mock):
    Script(mock, [{"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}])
    result = await make_agent(http).run("go")
    assert result.status == "blocked"
    assert result.reason == "PROHIBITED_CONTENT"
    assert result.contents == [{"role": "user", "parts": [{"text": "go"}]}]


async def test_max_tokens_is_reported_not_passed_off(http, mock):
    Script(mock, [reply(text("The answer is a very long"), finish="MAX_TOKENS")])
    result = await make_agent(http).run("go")
    assert result.status == "incomplete"
    assert result.limit == "max_tokens"
    assert result.text == "The answer is a very long"
    assert result.finish_reason == "MAX_TOKENS"


async def test_empty_stop_after_tool_results_is_retried_once(http, mock):
    empty = reply(finish="STOP")
    script = Script(mock, [reply(call("echo", {"text": "a"})), empty, reply(text("done"))])
    result = await make_agent(http, echo_toolkit()).run("go")
    assert result.status == "completed"
    assert result.text == "done"
    assert script.bodies[2] == script.bodies[1]


async def test_empty_twice_ends_incomplete(http, mock):
    empty = {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}}]}
    Script(mock, [reply(call("echo", {"text": "a"})), empty, empty])
    result = await make_agent(http, echo_toolkit()).run("go")
    assert (result.status, result.limit) == ("incomplete", "empty_response")


async def test_max_turns_ends_incomplete_naming_the_limit(http, mock):
    script = Script(
        mock,
        [reply(call("echo", {"text": str(n)})) for n in range(3)],
    )
    result = await make_agent(http, echo_toolkit(), limits=RunLimits(max_turns=3)).run("go")
    assert result.status == "incomplete"
    assert result.limit == "max_turns"
    assert result.turns == 3
    assert len(script.bodies) == 3
    # The last calls were run, so the transcript ends with their answers: valid history.
    assert result.contents[-1]["role"] == "user"
    assert "functionResponse" in result.contents[-1]["parts"][0]


async def test_the_same_call_repeated_trips_the_breaker(http, mock):
    same = reply(call("echo", {"text": "again"}))
    script = Script(mock, [same, same, same])
    result = await make_agent(http, echo_toolkit()).run("go")
    assert result.status == "incomplete"
    assert result.limit == "repeated_call"
    assert len(script.bodies) == 3
    assert len(result.tool_calls) == 2  # the third repetition is not run
    last = result.contents[-1]["parts"][0]["functionResponse"]["response"]
    assert last["isError"] is True
    assert "3 turns in a row" in last["output"]


async def test_changing_arguments_do_not_trip_the_breaker(http, mock):
    Script(
        mock,
        [
            reply(call("echo", {"text": "a"})),
            reply(call("echo", {"text": "b"})),
            reply(call("echo", {"text": "a"})),
            reply(text("done")),
        ],
    )
    result = await make_agent(http, echo_toolkit()).run("go")
    assert result.status == "completed"


async def test_thought_only_answer_counts_as_empty(http, mock):
    thought_only = reply(text("thinking...", thought=True))
    Script(mock, [thought_only, reply(text("answer"))])
    result = await make_agent(http).run("go")
    assert result.text == "answer"


async def test_a_finished_run_is_freed_without_the_cycle_collector(http, mock):
    # Nothing in a run's state points back at the loop or the chain once it is over, so the
    # state goes when its last user lets go (a cycle would keep it until the collector runs).
    import gc

    from agent._state import RunState

    Script(mock, [reply(call("echo", {"text": "a"})), reply(text("done"))])
    agent = make_agent(http, echo_toolkit())
    gc.collect()
    gc.disable()
    try:
        result = await agent.run("go")
        alive = [o for o in gc.get_objects() if isinstance(o, RunState)]
    finally:
        gc.enable()
    assert result.text == "done"
    assert alive == []
