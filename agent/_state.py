"""The state of one run, apart from the loop that advances it.

`RunState` holds what a run has done so far (its transcript, turns, usage, tool calls,
retries) and the one `Outbox` its events leave through: the loop's own events, those of
capabilities (a compaction, a grounding) and those of sub-agents started by its tool calls.

A run started inside another run's tool call (a sub-agent) is that run's child: every model
call and tool call it makes is counted in its own `Tally` and in each ancestor's, so the
parent's usage limits see the whole tree as it runs, and its result's usage and cost
include the children's.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent._contents import to_dict
from agent._cost import Cost, call_usd, run_cost, with_storage, with_subagents
from agent._decide import Streaks
from agent._result import RunResult, Usage
from agent.events import Event, UsageEvent

if TYPE_CHECKING:
    from agent._calls import WaitFor
    from agent._contents import Content
    from agent._limits import Spent, UsageLimits
    from agent._model import Model
    from agent._options import RunLimits
    from agent._response import ModelResponse
    from agent._result import Limit, Status, ToolCallRecord
    from agent.events import RetryEvent
    from agent.hooks import ModelRequest
    from agent.recording import Recording
    from agent.steps import Steps
    from toolnexus import Request, Toolkit

__all__ = ["RECORDING", "Outbox", "RunState", "Tally", "current_run"]

_CURRENT: contextvars.ContextVar[RunState | None] = contextvars.ContextVar(
    "agent_run", default=None
)

RECORDING: contextvars.ContextVar[Recording | None] = contextvars.ContextVar(
    "agent_recording", default=None
)
"""The recording of the `agent.recording.record` block code runs in, if any (that module
sets it; every run reads it, so it lives here, where reading it loads nothing)."""


def current_run() -> RunState | None:
    """Return the run whose tool call is running here (the parent of a sub-agent), if any."""
    return _CURRENT.get()


@dataclass(slots=True)
class Tally:
    """What a run and its sub-agents have spent so far, as usage limits count it."""

    requests: int = 0
    """Model calls made (turns and other calls such as compaction summaries)."""
    usage: Usage = field(default_factory=Usage)
    """Tokens over those calls."""
    tool_calls: int = 0
    """Function calls run."""
    usd: float | None = 0.0
    """Dollars by the price table; ``None`` once a call's model had no price."""

    def spent(self) -> Spent:
        """Return the tally as the limit checks read it."""
        from agent._limits import Spent

        return Spent(self.requests, self.usage, self.tool_calls, self.usd)


class Outbox:
    """The events of a run waiting to be yielded, from the loop, capabilities and sub-agents."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._arrival: asyncio.Future[None] | None = None
        """Resolved by the next event delivered while the loop `wait`s on tool calls."""

    def put(self, event: Event) -> None:
        """Deliver one event (the loop yields it at its next chance)."""
        self.events.append(event)
        if self._arrival is not None and not self._arrival.done():
            self._arrival.set_result(None)

    def drain(self) -> list[Event]:
        """Return and forget the events delivered so far."""
        events, self.events = self.events, []
        return events

    async def wait(
        self, futures: set[asyncio.Future[Any]]
    ) -> tuple[set[asyncio.Future[Any]], set[asyncio.Future[Any]]]:
        """Wait until one of ``futures`` is done or an event arrives; return (done, waiting)."""
        if self.events:
            return set(), futures
        if self._arrival is None or self._arrival.done():
            self._arrival = asyncio.get_running_loop().create_future()
        arrival = self._arrival  # still pending after a wait the calls ended: used again
        done, waiting = await asyncio.wait({*futures, arrival}, return_when=asyncio.FIRST_COMPLETED)
        done.discard(arrival)
        waiting.discard(arrival)
        return done, waiting


@dataclass(eq=False)
class RunState:
    """Everything one run has done so far, and what it runs with."""

    model: Model
    """The model seam every call goes through."""
    toolkit: Toolkit
    """The tools the model may call."""
    limits: RunLimits
    """Turn and retry policy."""
    steps: Steps
    """Where side effects happen (in process, or durable)."""
    contents: list[Content]
    """The transcript: history, then every turn of this run, as sent to the model."""
    deps: Any = None
    """The run's data, handed to every tool as ``context.deps``."""
    wait_for: WaitFor | None = None
    """Answers a suspended tool inline; ``None`` ends the run ``"pending"`` instead."""
    usage_limits: UsageLimits | None = None
    """This run's budgets; its ancestors' apply too (see `limit_chain`)."""
    streaming: bool = False
    """Whether the model is called over the streaming endpoint."""
    parent: RunState | None = None
    """The run whose tool call started this one (a sub-agent's parent), or ``None``."""
    session: str | None = None
    """The session the run loads and saves, if any."""
    name: str | None = None
    """The name the run reports under in its parent's stream (a sub-agent's tool name)."""
    depth: int = field(init=False)
    """How deep this run is nested in sub-agent calls (0: a top-level run)."""
    turns: int = field(default=0, init=False)
    """Model responses received (and billed), vetoed ones included."""
    usage: Usage = field(default_factory=Usage, init=False)
    """Tokens over all calls of the run, its sub-agents' included."""
    turn_usage: list[Usage] = field(default_factory=list, init=False)
    """Tokens per turn (this run's own)."""
    extra_usage: list[Usage] = field(default_factory=list, init=False)
    """Tokens of this run's model calls that are not turns (compaction summaries)."""
    turn_tiers: list[str | None] = field(default_factory=list, init=False)
    """The service tier that served each turn (``None``: the server did not say)."""
    extra_tiers: list[str | None] = field(default_factory=list, init=False)
    """The same for `extra_usage`."""
    turn_models: list[str] = field(default_factory=list, init=False)
    """The model that answered each turn (a fallback or a per-turn choice shows here)."""
    extra_models: list[str] = field(default_factory=list, init=False)
    """The same for `extra_usage`."""
    tool_calls: list[ToolCallRecord] = field(default_factory=list, init=False)
    """Every tool call run, with the arguments it ran with and its result."""
    retries: list[RetryEvent] = field(default_factory=list, init=False)
    """Every retried model-call failure."""
    finish_reason: str | None = field(default=None, init=False)
    """The last response's finish reason."""
    model_version: str | None = field(default=None, init=False)
    """The model version that last answered."""
    streaks: Streaks = field(default_factory=Streaks, init=False)
    """What `decide` remembers between turns."""
    sent: tuple[int, int] = field(default=(0, 0), init=False)
    """``(promptTokenCount, transcript length)`` of the last model turn, for estimates."""
    tally: Tally = field(default_factory=Tally, init=False)
    """What this run and its sub-agents spent, live."""
    subagent_costs: list[Cost] = field(default_factory=list, init=False)
    """The costs of the sub-agents that finished."""
    outbox: Outbox = field(default_factory=Outbox, init=False)
    """The events waiting to be yielded."""
    archive: list[dict[str, Any]] = field(default_factory=list, init=False)
    """Contents compaction replaced, in the form they had then (the session keeps them)."""
    session_metadata: dict[str, Any] = field(default_factory=dict, init=False)
    """Metadata capabilities keep with the session (a context cache's name and expiry),
    loaded with it and saved with every turn; empty without a session."""
    cache_storage: float = field(default=0.0, init=False)
    """Dollars of context-cache storage this run paid for (see `bill_storage`)."""
    call_model: Callable[[ModelRequest], Awaitable[ModelResponse]] | None = field(
        default=None, init=False
    )
    """Makes one extra model call (retries, steps, spans) and counts it; the loop sets it."""
    result_fields: Callable[[RunState, dict[str, Any]], None] = field(
        default=lambda run, fields: None, init=False
    )
    """Lets the capabilities add result fields to this state's result; the plan sets it."""
    dumped: list[tuple[Content, dict[str, Any]]] = field(default_factory=list, init=False)
    """The transcript's Contents with their JSON-ready dicts, each dumped once (see
    `transcript`); seeded with a session's saved dicts."""

    def __post_init__(self) -> None:
        self.depth = self.parent.depth + 1 if self.parent is not None else 0

    # -- what capabilities use ----------------------------------------------------------------

    def emit(self, event: Event) -> None:
        """Hand an event to the run's stream."""
        self.outbox.put(event)

    def request(self) -> ModelRequest:
        """Return the request of the next model turn over the current transcript."""
        return self.model.request(list(self.contents), self.turns + 1)

    def transcript(self) -> list[dict[str, Any]]:
        """Return the transcript as JSON-ready Content dicts (camelCase wire keys).

        Each Content is dumped once: a later call hands back the same dict for it, so a save
        after each turn dumps what the turn added, not the whole transcript. The dicts are
        shared, never to be changed (compaction builds new ones).
        """
        dumped, contents = self.dumped, self.contents
        for index, content in enumerate(contents):
            if index < len(dumped) and dumped[index][0] is content:
                continue
            del dumped[index:]
            dumped.append((content, to_dict(content)))
        del dumped[len(contents) :]
        return [as_dict for _, as_dict in dumped]

    def limit_chain(self) -> Iterator[tuple[UsageLimits, Tally]]:
        """Yield the usage limits that bind this run, each with the tally it is checked on."""
        run: RunState | None = self
        while run is not None:
            if run.usage_limits is not None:
                yield run.usage_limits, run.tally
            run = run.parent

    def over_before_call(self) -> Limit | None:
        """Return the usage limit a new model call would start past, if any (tree-wide)."""
        from agent._limits import over_before_call

        for limits, tally in self.limit_chain():
            over = over_before_call(limits, tally.spent())
            if over is not None:
                return over
        return None

    def over_after_turn(self, new_calls: int) -> Limit | None:
        """Return the usage limit the last turn went past, or its ``new_calls`` would."""
        from agent._limits import over_after_turn

        for limits, tally in self.limit_chain():
            over = over_after_turn(limits, tally.spent(), new_calls)
            if over is not None:
                return over
        return None

    # -- counting -------------------------------------------------------------------------------

    def count_turn(self, response: ModelResponse) -> UsageEvent:
        """Count a response as a turn (the model was called and billed)."""
        self.turns += 1
        self.sent = (response.usage.prompt, len(self.contents))
        self.turn_usage.append(response.usage)
        self.turn_tiers.append(response.service_tier)
        model = response.model or self.model.name
        self.turn_models.append(model)
        self.finish_reason = response.finish_reason
        self.model_version = response.model_version or model
        self._bill(response.usage, response.service_tier, model)
        return UsageEvent(self.turns, response.usage, self.usage)

    def count_extra(
        self, usage: Usage, service_tier: str | None = None, model: str | None = None
    ) -> None:
        """Count a model call that is not a turn (a compaction summary)."""
        self.extra_usage.append(usage)
        self.extra_tiers.append(service_tier)
        self.extra_models.append(model or self.model.name)
        self._bill(usage, service_tier, model or self.model.name)

    def count_tool_calls(self, records: list[ToolCallRecord]) -> None:
        """Record tool calls run, in this run and in every ancestor's tally."""
        self.tool_calls.extend(records)
        run: RunState | None = self
        while run is not None:
            run.tally.tool_calls += len(records)
            run = run.parent

    def adopt(self, child: RunResult) -> None:
        """Take a finished sub-agent's usage and cost into this run's result."""
        self.usage = self.usage + child.usage
        self.subagent_costs.append(child.cost)

    def _bill(self, usage: Usage, service_tier: str | None, model: str) -> None:
        self.usage = self.usage + usage
        usd = call_usd(model, usage, service_tier)
        run: RunState | None = self
        while run is not None:
            tally = run.tally
            tally.requests += 1
            tally.usage = tally.usage + usage
            tally.usd = None if usd is None or tally.usd is None else tally.usd + usd
            run = run.parent

    def bill_storage(self, usd: float) -> None:
        """Count dollars of context-cache storage, in this run's cost and every tally."""
        self.cache_storage += usd
        run: RunState | None = self
        while run is not None:
            tally = run.tally
            tally.usd = None if tally.usd is None else tally.usd + usd
            run = run.parent

    def cost(self) -> Cost:
        """Return the run's cost so far, its finished sub-agents' included."""
        own = run_cost(
            self.model.name,
            self.turn_usage,
            self.extra_usage,
            tiers=self.turn_tiers,
            extra_tiers=self.extra_tiers,
            models=self.turn_models,
            extra_models=self.extra_models,
        )
        return with_subagents(with_storage(own, self.cache_storage), self.subagent_costs)

    # -- the result -----------------------------------------------------------------------------

    def result(
        self,
        status: Status,
        *,
        text: str = "",
        reason: str | None = None,
        limit: Limit | None = None,
        pending: Request | None = None,
        output: Any = None,
    ) -> RunResult:
        """Snapshot the run as a `RunResult` (capabilities add their fields)."""
        fields: dict[str, Any] = {"output": output}
        self.result_fields(self, fields)
        return RunResult(
            status=status,
            text=text,
            reason=reason,
            limit=limit,
            turns=self.turns,
            tool_calls=tuple(self.tool_calls),
            usage=self.usage,
            turn_usage=tuple(self.turn_usage),
            turn_models=tuple(self.turn_models),
            contents=self.transcript(),
            finish_reason=self.finish_reason,
            model=self.model_version or self.model.name,
            pending=pending,
            retries=tuple(self.retries),
            cost=self.cost(),
            **fields,
        )

    @contextlib.contextmanager
    def as_parent(self) -> Iterator[None]:
        """Make this run the parent of runs started inside the block (its tool calls)."""
        token = _CURRENT.set(self)
        try:
            yield
        finally:
            _CURRENT.reset(token)
