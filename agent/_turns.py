"""Per-turn control: ``prepare_turn``, stop tools, the forced final turn, the ``"any"`` reset.

- ``Hooks(prepare_turn=...)`` returns a `TurnSettings` for one turn (its model, tool choice,
  allowed tools, thinking); `apply_turn` makes that turn's request from it.
- `TurnPolicy` (from the agent's settings) changes the request of some turns:
  - a ``tool_choice`` of ``"any"`` (or a list of names) forces a call on the first turn;
    once the model made it, later turns of the run are ``"auto"``, so a model that always
    calls cannot loop until ``max_turns``;
  - the last allowed turn (`RunLimits.final_turn`; by default when typed output is asked
    for) offers only the output function (typed output in tool mode) or no functions at
    all, so the run ends with an answer instead of ``limit="max_turns"``.
- `StopAtTools` (`RunLimits.stop_at_tools`) ends the run once a stop tool answered
  without error: the result's text is that tool's output, and no model request follows.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from agent._capability import Capability, Invocation, Proceed, RunCapability
from agent._contents import (
    calling_mode,
    declared_functions,
    with_calling,
    with_functions,
    with_thinking,
)
from agent._decide import Stop
from agent._settings import thinking_fields, tool_config
from agent.errors import ConfigurationError
from agent.hooks import TurnState

if TYPE_CHECKING:
    from agent._decide import Step
    from agent._options import ModelSettings, RunLimits
    from agent._output import TypedOutput
    from agent._response import ModelResponse
    from agent._state import RunState
    from agent.hooks import ModelRequest, TurnSettings
    from toolnexus import ToolResult

__all__ = ["StopAtTools", "TurnPolicy", "apply_turn", "turn_state"]


def turn_state(run: RunState, request: ModelRequest) -> TurnState:
    """Return what ``prepare_turn`` is shown before the turn ``request`` fetches."""
    models = getattr(run.model, "models", (run.model.name,))
    return TurnState(
        turn=request.turn,
        max_turns=run.limits.max_turns,
        model=request.model,
        models=tuple(models),
        tool_calls=tuple(run.tool_calls),
        usage=run.usage,
        contents=run.transcript(),
        deps=run.deps,
    )


def apply_turn(request: ModelRequest, settings: TurnSettings) -> ModelRequest:
    """Return ``request`` changed by ``settings`` (for this turn only).

    Raises:
        ConfigurationError: A tool name the request does not declare, or an invalid tool
            choice or thinking setting.
    """
    config = request.config
    model = settings.model or request.model
    if settings.allowed_tools is not None:
        declared = declared_functions(config)
        unknown = [name for name in settings.allowed_tools if name not in declared]
        if unknown:
            raise ConfigurationError(
                f"allowed_tools names no tool of the agent: {', '.join(map(repr, unknown))} "
                f"(the tools are {', '.join(declared) or 'none'})"
            )
        config = with_functions(config, frozenset(settings.allowed_tools))
    if settings.tool_choice is not None:
        calling = tool_config(settings.tool_choice, declared_functions(config))
        config = with_calling(config, calling["function_calling_config"] if calling else None)
    if settings.thinking is not None:
        config = with_thinking(config, thinking_fields(model, settings.thinking))
    return dataclasses.replace(request, model=model, config=config)


class TurnPolicy(Capability):
    """Resets a forced tool choice after the forced call; forces the last turn's answer."""

    def __init__(self, forced: bool, final: bool, output: TypedOutput | None) -> None:
        self.forced = forced
        self.final = final
        self.output = output

    @classmethod
    def of(
        cls, settings: ModelSettings, limits: RunLimits, output: TypedOutput | None
    ) -> TurnPolicy | None:
        """Return the policy the agent's settings call for, or ``None`` when there is none."""
        choice = settings.tool_choice
        forced = choice is not None and choice not in ("auto", "none")
        final = limits.final_turn if limits.final_turn is not None else output is not None
        return cls(forced, final, output) if forced or final else None

    def start(self, run: RunState) -> RunCapability:
        """Return the run's per-turn state."""
        spec = self.output.spec if self.output is not None else None
        only = spec.tool_name if spec is not None and spec.mode == "tool" else None
        return _TurnPolicyRun(self.forced, self.final, only)


class _TurnPolicyRun(RunCapability):
    def __init__(self, forced: bool, final: bool, output_tool: str | None) -> None:
        self.forced = forced
        """The agent's tool choice forces a call, and the model has not made it yet."""
        self.final = final
        self.output_tool = output_tool

    async def before_call(self, run: RunState, request: ModelRequest) -> ModelRequest | Step:
        config = request.config
        if not self.forced and calling_mode(config) == "ANY":
            config = with_calling(config, {"mode": "AUTO"})
        if self.final and request.turn >= run.limits.max_turns:
            config = self._final(config)
        return request if config is request.config else dataclasses.replace(request, config=config)

    def _final(self, config: Any) -> Any:
        """Offer only the output function (forced), or no function at all."""
        if self.output_tool is None:
            return with_functions(config, frozenset())
        config = with_functions(config, frozenset({self.output_tool}))
        return with_calling(config, {"mode": "ANY", "allowed_function_names": [self.output_tool]})

    async def received(
        self, run: RunState, request: ModelRequest, response: ModelResponse
    ) -> ModelResponse:
        if self.forced and response.calls and calling_mode(request.config) == "ANY":
            self.forced = False
        return response


class StopAtTools(Capability):
    """Ends the run with a stop tool's result (`RunLimits.stop_at_tools`)."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    @classmethod
    def of(cls, limits: RunLimits) -> StopAtTools | None:
        """Return the capability for ``limits``, or ``None`` when it names no tool."""
        return cls(frozenset(limits.stop_at_tools)) if limits.stop_at_tools else None

    def start(self, run: RunState) -> RunCapability:
        """Return the run's stop state."""
        return _StopRun(self.names)


class _StopRun(RunCapability):
    def __init__(self, names: frozenset[str]) -> None:
        self.names = names
        self.result: ToolResult | None = None
        """The first stop tool's successful result, once one ran."""

    async def tool(self, run: RunState, invocation: Invocation, proceed: Proceed) -> ToolResult:
        result = await proceed(invocation)
        stops = invocation.call.name in self.names and not result.is_error
        if stops and result.pending is None and self.result is None:
            self.result = result
        return result

    def ran(self, run: RunState) -> Stop | None:
        return self._stop()

    async def before_call(self, run: RunState, request: ModelRequest) -> ModelRequest | Step:
        # A stop tool answered while resuming a suspended call: still no model request.
        return self._stop() or request

    def _stop(self) -> Stop | None:
        if self.result is None:
            return None
        return Stop("completed", text=self.result.output)
