"""Pure decision of what the loop does after a classified model response.

`decide` reads the response, its `Classification`, the `Streaks` of earlier turns and the
run's `RunLimits` (its re-ask and repeat budgets), and returns the next `Step` with the
renewed streaks. It changes nothing: the loop applies the step (keeps the response, runs
the calls, ends the run).

- A malformed or empty response is dropped and the model asked again (`AskAgain`) until its
  budget is spent; then the run stops ``"incomplete"``.
- A blocked or cut (``MAX_TOKENS``) response is kept and stops the run; its calls are never
  run but answered with an error, so the transcript stays valid history.
- A final answer stops the run ``"completed"``.
- Function calls are run (`RunCalls`), unless the very same calls already ran
  ``repeat_limit - 1`` turns in a row with the very same results: then they are answered
  with an error and the run stops. A call that returns something new each time (a clock, a
  random topic, a job's progress) is progress, not a loop; after running a turn's calls the
  loop hands their results to `record_results`, which keeps that count.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from agent._classify import Classification, Kind

if TYPE_CHECKING:
    from agent._options import RunLimits
    from agent._response import Call, ModelResponse
    from agent._result import Limit, Status
    from toolnexus import ToolResult

__all__ = [
    "AskAgain",
    "RunCalls",
    "Step",
    "Stop",
    "Streaks",
    "call_signature",
    "decide",
    "record_results",
]

CallSignature: TypeAlias = frozenset[tuple[str, str]]
"""A turn's calls: the set of (name, canonical arguments)."""
ResultSignature: TypeAlias = frozenset[tuple[str, str, str, bool]]
"""A turn's calls with their results: the set of (name, canonical arguments, output, error)."""


@dataclass(frozen=True, slots=True)
class Streaks:
    """What `decide` remembers from earlier turns of a run."""

    malformed: int = 0
    """Malformed responses in a row (reset by a usable one)."""
    empty: int = 0
    """Empty responses in a row (reset by a usable one)."""
    repeats: int = 0
    """Call turns in a row, ending with the last one run, with the same calls and results."""
    last_calls: CallSignature | None = None
    """The `call_signature` of the last call turn run."""
    last_results: ResultSignature | None = None
    """The calls of the last call turn run, each with its result (see `record_results`)."""


@dataclass(frozen=True, slots=True)
class AskAgain:
    """Call the model again: after dropping the response, or keeping it with feedback."""

    feedback: str | None = None
    """When set, keep the response and send this user message after it (a typed answer
    that did not fit its schema); otherwise the response is dropped."""


@dataclass(frozen=True, slots=True)
class RunCalls:
    """Keep the response and run its function calls."""

    calls: list[Call]
    """The calls, in the order the model gave them."""
    answered: Mapping[int, ToolResult] = field(default_factory=dict)
    """Calls (by position) answered with this result instead of being run (the typed
    output's ``final_result``)."""
    then: Stop | None = None
    """When set, the run ends with this once the calls have run."""


@dataclass(frozen=True, slots=True)
class Stop:
    """End the run."""

    status: Status
    """The run's status."""
    keep: bool = True
    """Append the response to the transcript first."""
    text: str = ""
    """The result's text."""
    reason: str | None = None
    """The finish or block reason."""
    limit: Limit | None = None
    """The limit that ended the run, for ``"incomplete"``."""
    refusal: str | None = None
    """When set, answer the response's calls with this error instead of running them."""
    output: Any = None
    """The typed result of a completed run."""


Step: TypeAlias = AskAgain | RunCalls | Stop
"""What the loop does next."""


def decide(
    response: ModelResponse, classified: Classification, streaks: Streaks, limits: RunLimits
) -> tuple[Step, Streaks]:
    """Return the next step after ``response`` and the streaks to remember for the next turn.

    Args:
        response: The model response.
        classified: What `classify` made of it.
        streaks: What earlier turns of the run left.
        limits: The run's limits; `decide` keeps to its budgets for re-asks
            (``malformed_retries``, ``empty_retries``) and repeated calls (``repeat_limit``).

    Returns:
        The step to take and the renewed streaks.
    """
    kind, reason = classified
    if kind is Kind.MALFORMED:
        streaks = dataclasses.replace(streaks, malformed=streaks.malformed + 1)
        if streaks.malformed > limits.malformed_retries:
            spent = Stop("incomplete", keep=False, limit="malformed_function_call", reason=reason)
            return spent, streaks
        return AskAgain(), streaks
    if kind is Kind.EMPTY:
        streaks = dataclasses.replace(streaks, empty=streaks.empty + 1)
        if streaks.empty > limits.empty_retries:
            return Stop("incomplete", keep=False, limit="empty_response"), streaks
        return AskAgain(), streaks
    if streaks.malformed or streaks.empty:
        streaks = dataclasses.replace(streaks, malformed=0, empty=0)
    if kind is Kind.FINAL:
        return Stop("completed", text=response.text), streaks
    if kind is not Kind.CALLS:  # BLOCKED or MAX_TOKENS
        refusal = f"Not run: the turn ended with {reason}." if response.calls else None
        if kind is Kind.BLOCKED:
            return Stop("blocked", text=response.text, reason=reason, refusal=refusal), streaks
        cut = Stop(
            "incomplete", text=response.text, reason=reason, limit="max_tokens", refusal=refusal
        )
        return cut, streaks
    same = streaks.last_calls is not None and call_signature(response.calls) == streaks.last_calls
    if same and streaks.repeats + 1 >= limits.repeat_limit:
        refusal = (
            f"Not run: this exact call was made {limits.repeat_limit} turns in a row "
            "and kept returning the same result, so the run was stopped."
        )
        return Stop("incomplete", limit="repeated_call", refusal=refusal), streaks
    return RunCalls(response.calls), streaks


def record_results(
    streaks: Streaks, calls: Sequence[Call], results: Sequence[ToolResult]
) -> Streaks:
    """Return the streaks after a turn's ``calls`` ran and gave ``results`` (in call order).

    The repeat count grows only when both the calls and their results are those of the
    previous turn; anything new starts it again at one.
    """
    args = [_canonical(call.args) for call in calls]
    with_results = frozenset(
        (call.name, canonical, result.output, result.is_error)
        for call, canonical, result in zip(calls, args, results, strict=True)
    )
    repeats = streaks.repeats + 1 if with_results == streaks.last_results else 1
    last_calls = frozenset(
        (call.name, canonical) for call, canonical in zip(calls, args, strict=True)
    )
    return dataclasses.replace(
        streaks, repeats=repeats, last_calls=last_calls, last_results=with_results
    )


def call_signature(calls: Iterable[Call]) -> CallSignature:
    """Return a hashable identity of a turn's calls: the set of (name, canonical args)."""
    return frozenset((call.name, _canonical(call.args)) for call in calls)


def _canonical(args: Any) -> str:
    try:
        return json.dumps(args, sort_keys=True, separators=(",", ":"), default=repr)
    except (TypeError, ValueError):
        return repr(args)
