"""Suspension and resumption: a run that waits for a human's answer, and the answer.

A tool call suspends by returning a result whose ``metadata["pending"]`` is a `Request` (the
``question`` tool, an approval, a sub-agent that asks). The run then ends ``"pending"``,
its transcript ending with the function responses that carry the request, unless
``wait_for`` answers it inline or the durable steps wait for an answer (`Steps.wait`).

Resuming takes the transcript back with the `Answer`: each waiting call is re-run once with
the answer bound to its request (the answer's ``id`` must be the request's), through the
same tool wrappers as any call, and its function response is replaced by the new result.
A new prompt without an answer declines what still waits, so the conversation moves on.

A run stopped inside a tool (its deadline, a raising hook, a crash) leaves a transcript
that ends with the model's calls and no responses, which Gemini refuses as history. The
next run answers each such call with an error response carrying its id (`UNFINISHED`)
before it sends anything, so a history or a session is always usable again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from agent._approval import APPROVAL, MalformedAnswer, read_answer
from agent._calls import call_hook, function_response
from agent._contents import pending_requests, replace_response
from agent._response import calls_of
from agent._result import ToolCallRecord
from agent.errors import ConfigurationError
from agent.events import ToolCall, ToolResultEvent
from toolnexus import Answer, Request

if TYPE_CHECKING:
    from agent._loop import Run

__all__ = ["UNFINISHED", "resume", "wait"]

UNFINISHED = "not run: the previous run stopped before this call finished"
"""The error response of a call a history left unanswered."""


async def wait(run: Run, pending: Request) -> Request | None:
    """Wait through `Steps.wait` for the answers a turn's tools asked for.

    Returns:
        The request still unanswered (the run ends ``"pending"`` on it), or ``None``
        when every answer came and the tools were re-run with them.
    """
    while True:
        answer = await run.state.steps.wait(pending)
        if answer is None:
            return pending
        run.answer = answer
        # Nobody is there to refuse a malformed answer to (a durable send): it denies.
        still = await resume(run, refuse_malformed=False)
        if still is None:
            return None
        pending = still[0]


async def resume(run: Run, *, refuse_malformed: bool = True) -> tuple[Request, ToolCall] | None:
    """Answer what a suspended transcript waits on; return what still waits, if any.

    Each waiting request is answered by ``run.answer`` (matching id), else by ``wait_for``,
    else declined when a new prompt moves the conversation on; otherwise it still waits.

    Args:
        run: The run whose transcript is settled.
        refuse_malformed: Refuse an approval answer in no known shape (the caller's
            ``answer=``) instead of letting it deny the call.

    Raises:
        ConfigurationError: An answer that names no request the transcript waits on, or
            (with ``refuse_malformed``) neither approves nor refuses the approval it names.
    """
    state = run.state
    waiting = pending_requests(state.contents[-1]) if state.contents else []
    answer = run.answer
    if answer is not None:
        _check_bound(answer, [request for _, request in waiting], refuse_malformed)
    _answer_unfinished(run)
    calls = calls_of(state.contents[-2]) if waiting and len(state.contents) > 1 else []
    still: tuple[Request, ToolCall] | None = None
    answered = False
    for index, request in waiting:
        if index >= len(calls):
            raise ConfigurationError("the history's pending function response has no call")
        source = calls[index]
        call = ToolCall(source.name, source.args, source.id, state.turns, index)
        reply = await _reply(run, request, answer)
        if reply is None:
            still = still or (request, call)
            continue
        with state.as_parent():  # a sub-agent resumed here is this run's child
            args, result = await run.invoke(call, (request, reply))
        _record(run, ToolCallRecord(call.name, args, call.id, result, call.turn), request["id"])
        state.emit(ToolResultEvent(call, result))  # a stream sees the answered call's result
        state.contents[-1] = replace_response(
            state.contents[-1], index, function_response(result, pending=result.pending)
        )
        if result.pending is not None:  # answered, and now it asks something else
            still = still or (result.pending, call)
        answered = True
    run.answer = None  # used up: a later wait needs a new one
    if answered and still is None:
        await run.checkpoint(None)  # the answered tool ran: keep its result
    return still


def _answer_unfinished(run: Run) -> None:
    """Answer the calls a stopped run left without responses, each with `UNFINISHED`."""
    contents = run.state.contents
    if contents and contents[-1].role == "model":
        calls = calls_of(contents[-1])
        if calls:
            run.refuse(calls, UNFINISHED)


async def _reply(run: Run, request: Request, answer: Answer | None) -> Answer | None:
    """Return the answer to ``request``: the given one, ``wait_for``'s, a decline, or none."""
    if answer is not None and answer.get("id") == request["id"]:
        return answer
    if run.state.wait_for is not None:
        reply: Answer = await call_hook(run.state, "wait_for", run.state.wait_for, request)
        return reply
    if run.prompt is not None:
        return Answer(id=request["id"], ok=False)
    return None


def _check_bound(answer: Answer, waiting: list[Request], refuse_malformed: bool) -> None:
    """Refuse an answer bound to no request the transcript waits on, or malformed for its own.

    Checked before anything runs, so a refused answer leaves the history (or the session)
    as it was and the request still waiting.
    """
    if not isinstance(answer, Mapping):
        raise ConfigurationError(
            f"answer= must be a mapping {{'id': ..., 'ok': ..., 'data'?: ...}}, "
            f"not {type(answer).__name__}"
        )
    bound = next((request for request in waiting if request["id"] == answer.get("id")), None)
    if bound is not None:
        if refuse_malformed:
            _check_shape(answer, bound)
        return
    if not waiting:
        raise ConfigurationError(
            f"answer={{'id': {answer.get('id')!r}, ...}} was given but the history "
            "does not wait for an answer"
        )
    ids = ", ".join(repr(request["id"]) for request in waiting)
    raise ConfigurationError(
        f"answer id {answer.get('id')!r} does not match the pending request(s) {ids}"
    )


def _check_shape(answer: Answer, request: Request) -> None:
    """Refuse an answer to an approval that neither approves nor refuses in a known shape."""
    if request.get("kind") != APPROVAL:
        return
    try:
        read_answer(answer)
    except MalformedAnswer as exc:
        raise ConfigurationError(
            f"answer to the approval request {request['id']!r} was refused and nothing ran: {exc}"
        ) from None


def _record(run: Run, record: ToolCallRecord, request_id: str) -> None:
    """Record an answered call, in place of its suspended record when this run made it."""
    calls = run.state.tool_calls
    for i, old in enumerate(calls):
        pending = old.result.pending
        if pending is not None and pending["id"] == request_id:
            calls[i] = record
            return
    run.state.count_tool_calls([record])
