"""The `Hooks` of an agent as a capability: callbacks around model calls and tool calls.

``before_model`` may rewrite the request of one call or veto it (the run ends ``"blocked"``
and nothing is sent); ``after_model`` may replace the response or veto it (it was billed,
so it is counted, then dropped); ``before_tool`` may rewrite the arguments or answer the
call itself; ``after_tool`` may replace the result. See `agent.hooks` for the contract.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from agent._calls import call_hook
from agent._capability import Capability, Invocation, Proceed, RunCapability, Vetoed
from agent._decide import Stop
from agent.hooks import Hooks, Veto
from toolnexus import ToolResult

if TYPE_CHECKING:
    from agent._decide import Step
    from agent._response import ModelResponse
    from agent._state import RunState
    from agent.hooks import ModelRequest

__all__ = ["HookCalls"]


class HookCalls(Capability):
    """Calls the agent's hooks at their points of each run."""

    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks

    def start(self, run: RunState) -> RunCapability | None:
        hooks = self.hooks
        model_hooks = hooks.before_model is not None or hooks.after_model is not None
        tool_hooks = hooks.before_tool is not None or hooks.after_tool is not None
        if model_hooks and tool_hooks:
            return _AllHooks(hooks)
        if model_hooks:
            return _ModelHooks(hooks)
        if tool_hooks:
            return _ToolHooks(hooks)
        return None


class _ModelHooks(RunCapability):
    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks

    async def before_call(self, run: RunState, request: ModelRequest) -> ModelRequest | Step:
        hook = self.hooks.before_model
        if hook is None:
            return request
        changed = await call_hook(run, "before_model", hook, request)
        if isinstance(changed, Veto):
            return Stop("blocked", keep=False, reason=changed.reason)
        return changed or request

    async def received(
        self, run: RunState, request: ModelRequest, response: ModelResponse
    ) -> ModelResponse | Vetoed:
        hook = self.hooks.after_model
        if hook is None:
            return response
        changed = await call_hook(run, "after_model", hook, request, response.raw)
        if isinstance(changed, Veto):
            return Vetoed(changed.reason)
        if changed is None:
            return response
        # The replacement stands for the same call: it keeps the model that answered it.
        return dataclasses.replace(run.model.parse(changed), model=response.model)


class _ToolHooks(RunCapability):
    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks

    async def tool(self, run: RunState, invocation: Invocation, proceed: Proceed) -> ToolResult:
        hooks = self.hooks
        result: ToolResult | None = None
        if hooks.before_tool is not None:
            changed = await call_hook(run, "before_tool", hooks.before_tool, invocation.call)
            if isinstance(changed, ToolResult):
                result = changed
            elif changed is not None:
                invocation.args = dict(changed)
        if result is None:
            result = await proceed(invocation)
        if hooks.after_tool is not None:
            replaced = await call_hook(run, "after_tool", hooks.after_tool, invocation.call, result)
            if replaced is not None:
                result = replaced
        return result


class _AllHooks(_ModelHooks, _ToolHooks):
    """Model hooks and tool hooks both."""
