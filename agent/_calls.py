"""How one function call is run once the tool wrappers let it through, and what goes back.

The capabilities' tool wrappers (tracing, hooks, approval) sit around `run_tool`, the end of
the chain: it runs the tool as a durable step with the run's ``deps`` and timeout, answers a
suspension the tool asks for inline when ``wait_for`` can, and re-runs a call that suspended
in an earlier run once with its answer. Results go back to the model as `function_response`
objects.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from agent.errors import HookError
from toolnexus import Answer, Request, ToolContext, ToolResult, execute_async

if TYPE_CHECKING:
    from agent._capability import Invocation
    from agent._state import RunState

__all__ = ["WaitFor", "call_hook", "function_response", "maybe", "run_tool"]

T = TypeVar("T")

WaitFor = Callable[[Request], "Answer | Awaitable[Answer]"]
"""Answers a suspended tool's `Request` inline (sync or async)."""

_MAX_QUESTIONS = 20
"""Requests one call may put to ``wait_for`` in a row (a sub-agent asks one per question)."""


async def maybe(value: T | Awaitable[T]) -> T:
    """Await ``value`` if it is awaitable (a sync or async callback's return)."""
    if inspect.isawaitable(value):
        return await value
    return value


async def call_hook(run: RunState, name: str, hook: Callable[..., Any], *args: Any) -> Any:
    """Call a hook or ``wait_for`` (sync or async); wrap what it raises in `HookError`."""
    try:
        return await maybe(hook(*args))
    except Exception as exc:  # cancellation is a BaseException and passes untouched
        raise HookError(
            f"the {name} hook raised {type(exc).__name__}: {exc}",
            hook=name,
            result=run.result("incomplete", reason=f"{name} hook failed"),
        ) from exc


def function_response(result: ToolResult, *, pending: Request | None = None) -> dict[str, Any]:
    """Return the ``response`` object sent back to the model for one call's result."""
    response: dict[str, Any] = {"output": result.output, "isError": result.is_error}
    if pending is not None:
        response["pending"] = dict(pending)
    return response


async def run_tool(run: RunState, invocation: Invocation) -> ToolResult:
    """Run the tool of ``invocation`` (the end of the wrapper chain).

    A call re-run with its answer (``invocation.answered``) runs once with it; otherwise the
    tool runs, and each request it suspends on is put to ``wait_for`` when the run has one.
    """
    if invocation.answered is not None:
        return await _answered(run, invocation, *invocation.answered)
    result = await _execute(run, invocation, None, None)
    for _ in range(_MAX_QUESTIONS):
        request = result.pending
        if request is None or run.wait_for is None:
            break
        reply = await call_hook(run, "wait_for", run.wait_for, request)
        result = await _answered(run, invocation, request, reply)
    return result


async def _execute(
    run: RunState, invocation: Invocation, answer: Answer | None, request: Request | None
) -> ToolResult:
    context = ToolContext(
        timeout=run.limits.tool_timeout,
        call_id=invocation.call.id,
        answer=answer,
        deps=run.deps,
        request=request,
    )
    name, args = invocation.call.name, invocation.args
    return await invocation.step(lambda: execute_async(run.toolkit, name, args, context))


async def _answered(
    run: RunState, invocation: Invocation, request: Request, answer: Answer
) -> ToolResult:
    """Re-run a suspended tool once with its answer.

    A refusal fails the call, and so does asking the same request again; a new request
    (a sub-agent that asks its next question) suspends again.
    """
    if answer.get("ok") is not True:
        return ToolResult(
            f"The request was declined or expired: {request.get('prompt', '')}".rstrip(": "),
            is_error=True,
        )
    result = await _execute(run, invocation, answer, request)
    if result.pending is not None and result.pending["id"] == request["id"]:
        return ToolResult(
            f"Tool {invocation.call.name!r} asked again after its request {request['id']!r} "
            "was answered; giving up on this call.",
            is_error=True,
        )
    return result
