"""`decide` is pure: a classified response and the streaks in, the next step and streaks out."""

from __future__ import annotations

from agent import RunLimits
from agent._classify import Classification, Kind, classify
from agent._decide import (
    AskAgain,
    RunCalls,
    Stop,
    Streaks,
    call_signature,
    decide,
    record_results,
)
from agent._response import Call, ModelResponse
from toolnexus import ToolResult

LIMITS = RunLimits(malformed_retries=2, empty_retries=1, repeat_limit=3)
CALLS = [Call("read", {"path": "a"}, "1")]


def response(**kw: object) -> ModelResponse:
    return ModelResponse(content=None, **kw)  # type: ignore[arg-type]


FRESH = Streaks()


def step_after(r: ModelResponse, streaks: Streaks = FRESH) -> tuple[object, Streaks]:
    return decide(r, classify(r), streaks, LIMITS)


def test_a_final_answer_completes_the_run_with_its_text():
    step, streaks = step_after(response(text="done", finish_reason="STOP"))
    assert step == Stop("completed", text="done")
    assert streaks == Streaks()


def test_calls_are_run_and_their_results_remembered_for_the_repeat_breaker():
    step, streaks = step_after(response(calls=CALLS, finish_reason="STOP"))
    assert step == RunCalls(CALLS)
    assert streaks == FRESH  # nothing ran yet
    streaks = record_results(streaks, CALLS, [ToolResult("x")])
    assert (streaks.repeats, streaks.last_calls) == (1, call_signature(CALLS))


def run_turns(results: list[str]) -> list[object]:
    """Decide the same call turn after turn, the tool giving ``results`` in order."""
    r = response(calls=CALLS, finish_reason="STOP")
    streaks = Streaks()
    steps = []
    for output in results:
        step, streaks = step_after(r, streaks)
        steps.append(step)
        if not isinstance(step, RunCalls):
            break
        streaks = record_results(streaks, step.calls, [ToolResult(output)])
    return steps


def test_the_same_calls_with_the_same_results_repeat_limit_turns_in_a_row_are_refused():
    steps = run_turns(["same", "same", "same"])
    assert steps[:2] == [RunCalls(CALLS), RunCalls(CALLS)]
    stop = steps[2]
    assert isinstance(stop, Stop)
    assert (stop.status, stop.limit, stop.keep) == ("incomplete", "repeated_call", True)
    assert stop.refusal is not None and "3 turns in a row" in stop.refusal


def test_the_same_call_with_new_results_each_turn_is_progress_not_a_loop():
    # Recorded Gemini 3 traffic: a no-argument generate_topic() called once per turn, a new
    # topic each time, then the answer.
    assert run_turns(["a", "b", "c", "d", "e"]) == [RunCalls(CALLS)] * 5
    # A result seen before, but not on the turn before, starts the count again too.
    assert run_turns(["a", "b", "a", "b", "a"]) == [RunCalls(CALLS)] * 5


def test_different_calls_restart_the_repeat_count():
    first = response(calls=CALLS, finish_reason="STOP")
    other = [Call("read", {"path": "b"}, "2")]
    streaks = record_results(FRESH, CALLS, [ToolResult("x")])
    streaks = record_results(streaks, CALLS, [ToolResult("x")])
    step, _ = step_after(first, streaks)
    assert isinstance(step, Stop)
    step, _ = step_after(response(calls=other, finish_reason="STOP"), streaks)
    assert isinstance(step, RunCalls)
    assert record_results(streaks, other, [ToolResult("x")]).repeats == 1


def test_malformed_responses_are_asked_again_then_stop_without_keeping_the_turn():
    r = response(finish_reason="MALFORMED_FUNCTION_CALL")
    step, streaks = step_after(r)
    assert (step, streaks.malformed) == (AskAgain(), 1)
    step, streaks = step_after(r, streaks)
    assert step == AskAgain()
    step, streaks = step_after(r, streaks)
    assert step == Stop(
        "incomplete", keep=False, limit="malformed_function_call", reason="MALFORMED_FUNCTION_CALL"
    )


def test_empty_responses_have_their_own_budget():
    r = response(finish_reason="STOP")
    step, streaks = step_after(r)
    assert step == AskAgain()
    step, _ = step_after(r, streaks)
    assert step == Stop("incomplete", keep=False, limit="empty_response")


def test_a_usable_response_resets_the_malformed_and_empty_streaks():
    streaks = Streaks(malformed=2, empty=1, repeats=2, last_calls=call_signature(CALLS))
    _, after = step_after(response(text="ok"), streaks)
    assert (after.malformed, after.empty) == (0, 0)
    assert (after.repeats, after.last_calls) == (2, call_signature(CALLS))


def test_blocked_and_cut_turns_stop_and_refuse_their_calls():
    blocked, _ = step_after(response(calls=CALLS, text="x", finish_reason="SAFETY"))
    assert blocked == Stop(
        "blocked", text="x", reason="SAFETY", refusal="Not run: the turn ended with SAFETY."
    )
    cut, _ = step_after(response(text="half", finish_reason="MAX_TOKENS"))
    assert cut == Stop("incomplete", text="half", reason="MAX_TOKENS", limit="max_tokens")


def test_decide_reads_the_classification_it_is_given():
    # The same response decided as another kind: decide trusts its input, it does not reclassify.
    r = response(text="fine", finish_reason="STOP")
    step, _ = decide(r, Classification(Kind.BLOCKED, "PROHIBITED_CONTENT"), Streaks(), LIMITS)
    assert step == Stop("blocked", text="fine", reason="PROHIBITED_CONTENT")


def test_decide_changes_nothing_it_is_given():
    streaks = Streaks(repeats=1, last_calls=call_signature(CALLS))
    r = response(calls=CALLS, finish_reason="STOP")
    decide(r, classify(r), streaks, LIMITS)
    assert streaks == Streaks(repeats=1, last_calls=call_signature(CALLS))
    assert r.calls == CALLS


def test_call_signature_ignores_order_ids_and_key_order():
    a = [Call("read", {"a": 1, "b": 2}, "x"), Call("grep", {"p": "q"}, "y")]
    b = [Call("grep", {"p": "q"}, None), Call("read", {"b": 2, "a": 1}, "z")]
    assert call_signature(a) == call_signature(b)
    assert call_signature(a) != call_signature([Call("read", {"a": 1, "b": 3}, "x")])
