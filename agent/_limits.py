"""Budgets for one run: `UsageLimits`, and the checks the loop makes around each model call.

The loop checks the limits at two points:

- **before each model call** (summary calls of compaction included): a call is not made when
  the run has already made ``requests`` calls or has spent its ``input_tokens``,
  ``output_tokens``, ``total_tokens`` or ``cost_usd``;
- **after each model turn**, before its function calls run: a turn that went past a token or
  cost limit, or whose calls would take the run past ``tool_calls``, has its calls answered
  "not run" (the transcript stays valid history) and the run ends.

Either way the run ends ``"incomplete"`` with ``limit="usage:<name>"`` (``"usage:requests"``,
``"usage:cost_usd"``, ...) and its transcript so far. A final answer that went past a limit is
still returned ``"completed"``: nothing more would have been spent.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from agent._capability import Capability, RunCapability
from agent._decide import RunCalls, Stop
from agent.errors import ConfigurationError

if TYPE_CHECKING:
    from agent._decide import Step
    from agent._response import ModelResponse
    from agent._result import Limit, Usage
    from agent._state import RunState
    from agent.hooks import ModelRequest

__all__ = ["Budget", "Spent", "UsageLimits", "over_after_turn", "over_before_call"]


@dataclass(frozen=True, slots=True)
class UsageLimits:
    """The most a run may use; ``None`` (the default) leaves a quantity unlimited.

    Give them to the agent (every run) or to one ``run``/``stream`` call (that run only)::

        agent = Agent(model="gemini-2.5-flash", usage_limits=UsageLimits(cost_usd=0.50))
        result = await agent.run("...", usage_limits=UsageLimits(requests=5))
        if result.limit == "usage:requests":
            ...

    Input tokens are ``promptTokenCount`` plus ``toolUsePromptTokenCount``; output tokens are
    ``candidatesTokenCount`` plus ``thoughtsTokenCount``; the total is ``totalTokenCount``.
    Cost is `RunResult.cost` (``cost_usd`` needs a model the price table knows).
    """

    requests: int | None = None
    """Model calls (each turn, and each compaction summary)."""
    input_tokens: int | None = None
    """Prompt tokens, summed over the calls."""
    output_tokens: int | None = None
    """Output tokens (thinking included), summed over the calls."""
    total_tokens: int | None = None
    """All tokens, summed over the calls."""
    tool_calls: int | None = None
    """Function calls run."""
    cost_usd: float | None = None
    """US dollars, by the price table."""

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            if value is not None and (isinstance(value, bool) or value < 0):
                raise ConfigurationError(
                    f"UsageLimits.{spec.name} must be a non-negative number or None, got {value!r}"
                )


@dataclass(frozen=True, slots=True)
class Spent:
    """What a run has used so far, as the limits count it."""

    requests: int
    """Model calls made."""
    usage: Usage
    """Tokens over those calls."""
    tool_calls: int
    """Function calls run."""
    usd: float | None
    """Dollars, or ``None`` when the model has no price."""


def _tokens(limits: UsageLimits, spent: Spent) -> list[tuple[Limit, float | None, float]]:
    usage = spent.usage
    return [
        ("usage:input_tokens", limits.input_tokens, usage.prompt + usage.tool_use_prompt),
        ("usage:output_tokens", limits.output_tokens, usage.candidates + usage.thoughts),
        ("usage:total_tokens", limits.total_tokens, usage.total),
        ("usage:cost_usd", limits.cost_usd, spent.usd or 0.0),
    ]


def over_before_call(limits: UsageLimits | None, spent: Spent) -> Limit | None:
    """Return the limit a new model call would start past (``"usage:<name>"``), if any."""
    if limits is None:
        return None
    if limits.requests is not None and spent.requests >= limits.requests:
        return "usage:requests"
    for name, limit, used in _tokens(limits, spent):
        if limit is not None and used >= limit:
            return name
    return None


def over_after_turn(limits: UsageLimits | None, spent: Spent, new_calls: int) -> Limit | None:
    """Return the limit a turn went past, or its ``new_calls`` would, if any."""
    if limits is None:
        return None
    for name, limit, used in _tokens(limits, spent):
        if limit is not None and used > limit:
            return name
    if limits.tool_calls is not None and spent.tool_calls + new_calls > limits.tool_calls:
        return "usage:tool_calls"
    return None


class Budget(Capability):
    """Stops a run at its usage limits, and at every limit of the runs it is nested in.

    A sub-agent's calls count against its parent's limits as they happen, so a parent's
    ``UsageLimits(requests=3)`` holds for the whole tree; the sub-agent's own limits bind its
    own run (and its own sub-agents) on top.
    """

    def start(self, run: RunState) -> RunCapability | None:
        return _BudgetRun() if next(run.limit_chain(), None) is not None else None


class _BudgetRun(RunCapability):
    async def before_call(self, run: RunState, request: ModelRequest) -> ModelRequest | Step:
        over = run.over_before_call()
        if over is None:
            return request
        return Stop("incomplete", keep=False, limit=over)  # the call is not made

    async def review(self, run: RunState, response: ModelResponse, step: Step) -> Step:
        if not isinstance(step, RunCalls):
            return step
        over = run.over_after_turn(len(step.calls))
        if over is None:
            return step
        return Stop("incomplete", limit=over, refusal=f"Not run: the run reached its {over} limit.")
