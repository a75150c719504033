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
from agent.errors import ConfigurationError, HookError
from agent.hooks import Hooks, TurnSettings, Veto
from toolnexus import ToolResult

if TYPE_CHECKING:
    from agent._decide import Step
    from agent._response import ModelResponse
    from agent._state import RunState
    from agent.hooks import ModelRequest, PrepareTurnHook

__all__ = ["HookCalls"]


class HookCalls(Capability):
    """Calls the agent's hooks at their points of each run."""

    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks

    def start(self, run: RunState) -> RunCapability | None:
        hooks = self.hooks
        model_hooks = any(
            hook is not None for hook in (hooks.before_model, hooks.after_model, hooks.prepare_turn)
        )
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
        if self.hooks.prepare_turn is not None:
            request = await self._prepared(run, request, self.hooks.prepare_turn)
        hook = self.hooks.before_model
        if hook is None:
            return request
        changed = await call_hook(run, "before_model", hook, request)
        if isinstance(changed, Veto):
            return Stop("blocked", keep=False, reason=changed.reason)
        return changed or request

    @staticmethod
    async def _prepared(
        run: RunState, request: ModelRequest, hook: PrepareTurnHook
    ) -> ModelRequest:
        """Return the request as ``prepare_turn``'s `TurnSettings` change it (if it does)."""
        from agent._turns import apply_turn, turn_state

        settings = await call_hook(run, "prepare_turn", hook, turn_state(run, request))
        if settings is None:
            return request
        try:
            if not isinstance(settings, TurnSettings):
                raise ConfigurationError(
                    f"it must return TurnSettings or None, not {type(settings).__name__}"
                )
            return apply_turn(request, settings)
        except ConfigurationError as exc:
            raise HookError(
                f"the prepare_turn hook returned settings that cannot apply: {exc}",
                hook="prepare_turn",
                result=run.result("incomplete", reason="prepare_turn hook failed"),
            ) from None

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
