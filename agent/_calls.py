"""How one function call is run: before-tool hook, approval, the tool, after-tool hook.

The loop runs the calls of a turn concurrently, each through `run_call`; a call that
suspended in an earlier run is re-run here once with its answer. Results go back to the
model as `function_response` objects.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agent._approval import (
    APPROVAL,
    Deny,
    approval_request,
    check_edit,
    decide_call,
    denied,
    read_answer,
    waiting,
)
from toolnexus import Answer, Request, ToolContext, ToolResult, execute_async

if TYPE_CHECKING:
    from agent._loop import Settings
    from agent._steps import ToolStep
    from agent.events import ToolCall

__all__ = ["HookCaller", "WaitFor", "function_response", "run_call"]

WaitFor = Callable[[Request], "Answer | Awaitable[Answer]"]
"""Answers a suspended tool's `Request` inline (sync or async)."""

_MAX_QUESTIONS = 20
"""Requests one call may put to ``wait_for`` in a row (a sub-agent asks one per question)."""

HookCaller = Callable[..., Awaitable[Any]]
"""``call_hook(name, hook, *args)``: calls a hook (sync or async) and turns what it raises
into a `HookError` carrying the run's partial result."""


def function_response(result: ToolResult, *, pending: Request | None = None) -> dict[str, Any]:
    """Return the ``response`` object sent back to the model for one call's result."""
    response: dict[str, Any] = {"output": result.output, "isError": result.is_error}
    if pending is not None:
        response["pending"] = dict(pending)
    return response


async def run_call(
    settings: Settings,
    call_hook: HookCaller,
    call: ToolCall,
    answered: tuple[Request, Answer] | None = None,
) -> tuple[dict[str, Any], ToolResult]:
    """Run one call with its hooks; return the arguments it ran with and its result.

    Args:
        settings: The run's settings (toolkit, hooks, ``wait_for``, tool timeout).
        call_hook: How hooks and ``wait_for`` are called.
        call: The call the model asked for.
        answered: ``(request, answer)`` to re-run a call that suspended in an earlier run.

    Returns:
        The arguments the tool ran with (a before-tool hook may change them) and the
        result (a hook may replace it).

    Raises:
        HookError: A hook or ``wait_for`` raised.
    """
    step = settings.steps.tool(call)  # first, so steps are numbered in call order
    hooks = settings.hooks
    args: dict[str, Any] = call.args
    result: ToolResult | None = None
    if hooks.before_tool is not None:
        changed = await call_hook("before_tool", hooks.before_tool, call)
        if isinstance(changed, ToolResult):
            result = changed
        elif changed is not None:
            args = dict(changed)
    if result is None and answered is not None and _asks_approval(answered[0]):
        args, result = await _after_approval(settings, step, call_hook, call, args, *answered)
    elif result is None and answered is not None:
        result = await _answered(settings, step, call, args, *answered)
    elif result is None:
        args, result = await _approved_run(settings, step, call_hook, call, args)
    if hooks.after_tool is not None:
        changed = await call_hook("after_tool", hooks.after_tool, call, result)
        if changed is not None:
            result = changed
    return args, result


def _asks_approval(request: Request) -> bool:
    """Whether ``request`` asked to approve this very call (not one inside a sub-agent)."""
    return request.get("kind") == APPROVAL and "state" not in request


async def _approved_run(
    settings: Settings,
    step: ToolStep,
    call_hook: HookCaller,
    call: ToolCall,
    args: dict[str, Any],
) -> tuple[dict[str, Any], ToolResult]:
    """Ask the approval policy about the call, then run it (or refuse it, or suspend)."""
    tool = settings.toolkit.get(call.name)
    decision = await decide_call(settings.approval, tool, call, call_hook)
    if isinstance(decision, Deny):
        return args, denied(call.name, decision.reason, by="the approval policy")
    if decision == "deny":
        return args, denied(call.name, None, by="the approval policy")
    if decision == "allow":
        return args, await _run(settings, step, call_hook, call, args)
    request = approval_request(call, args)
    if settings.wait_for is None:
        return args, waiting(request)
    reply = await call_hook("wait_for", settings.wait_for, request)
    return await _after_approval(settings, step, call_hook, call, args, request, reply)


async def _after_approval(
    settings: Settings,
    step: ToolStep,
    call_hook: HookCaller,
    call: ToolCall,
    args: dict[str, Any],
    request: Request,
    answer: Answer,
) -> tuple[dict[str, Any], ToolResult]:
    """Apply a human's answer to an approval request: run (maybe with edits) or refuse."""
    approved, reason, edited = read_answer(answer)
    if not approved:
        return args, denied(call.name, reason)
    if edited is not None:
        problem = check_edit(settings.toolkit.get(call.name), edited)
        if problem is not None:
            message = f"The approved call to {call.name!r} was edited, but {problem}"
            return args, ToolResult(
                message.rstrip(".") + ". The tool was not run.",
                is_error=True,
                metadata={"approval": "invalid-edit"},
            )
        args = dict(edited)
    return args, await _run(settings, step, call_hook, call, args)


async def _run(
    settings: Settings,
    step: ToolStep,
    call_hook: HookCaller,
    call: ToolCall,
    args: dict[str, Any],
) -> ToolResult:
    """Run the tool; a suspension it asks for is answered inline when ``wait_for`` can."""
    result = await _tool(settings, step, call, args, None)
    for _ in range(_MAX_QUESTIONS):
        request = result.pending
        if request is None or settings.wait_for is None:
            break
        reply = await call_hook("wait_for", settings.wait_for, request)
        result = await _answered(settings, step, call, args, request, reply)
    return result


async def _tool(
    settings: Settings,
    step: ToolStep,
    call: ToolCall,
    args: dict[str, Any],
    answer: Answer | None,
    request: Request | None = None,
) -> ToolResult:
    context = ToolContext(
        timeout=settings.tool_timeout,
        call_id=call.id,
        answer=answer,
        deps=settings.deps,
        request=request,
    )
    return await step(lambda: execute_async(settings.toolkit, call.name, args, context))


async def _answered(
    settings: Settings,
    step: ToolStep,
    call: ToolCall,
    args: dict[str, Any],
    request: Request,
    answer: Answer,
) -> ToolResult:
    """Re-run a suspended tool once with its answer.

    A refusal fails the call, and so does asking the same request again; a new request
    (a sub-agent that asks its next question) suspends again.
    """
    if not answer.get("ok"):
        return ToolResult(
            f"The request was declined or expired: {request.get('prompt', '')}".rstrip(": "),
            is_error=True,
        )
    result = await _tool(settings, step, call, args, answer, request)
    if result.pending is not None and result.pending["id"] == request["id"]:
        return ToolResult(
            f"Tool {call.name!r} asked again after its request {request['id']!r} was "
            "answered; giving up on this call.",
            is_error=True,
        )
    return result
