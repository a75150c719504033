"""Capabilities: how a feature plugs into a run without a branch in the loop.

A `Capability` belongs to an agent. It may shape the agent's request once (`shape`: function
declarations, generation config, system text, Gemini's built-in tools) and, for each run,
return a `RunCapability` holding that run's state. The loop calls the run capabilities at
fixed points, each a no-op unless overridden:

- `RunCapability.before_call`: before each model call (budgets stop the run, compaction
  rewrites the transcript, hooks rewrite or veto the request);
- `RunCapability.sending`: around each attempt of a model call as it goes out, after every
  capability shaped the request (a rate limit waits for room first, and counts the call
  once it came back);
- `RunCapability.attempt`: around each attempt of a model call (tracing spans);
- `RunCapability.failed`: a model call failed for good (after its retries); return another
  request to send once instead (service tiers fall back from a shed ``flex`` request; the
  context cache makes its expired cache again), directly or from a coroutine;
- `RunCapability.received`: each response as it arrives, before it is classified (hooks
  replace or veto it; built-in tools report what they did);
- `RunCapability.review`: the step `decide` chose for a response (typed output accepts or
  re-asks, budgets stop before calls run);
- `RunCapability.tool`: around each tool call (tracing, hooks, approval);
- `RunCapability.ran`: a turn's calls have all run (a stop tool ends the run there);
- `RunCapability.finish`: fields added to the result (output, grounding);
- `RunCapability.close`: the run ended (with its result, or the error that ended it).

The order in which capabilities apply is the list `agent._plan.capabilities_of` builds. The
protocol is private while the features written against it live in this package.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

if TYPE_CHECKING:
    from agent._decide import Step, Stop
    from agent._response import ModelResponse
    from agent._result import RunResult
    from agent._retry import ErrorInfo
    from agent._state import RunState
    from agent.events import ToolCall
    from agent.hooks import ModelRequest
    from agent.steps import ToolStep
    from toolnexus import Answer, Request, Toolkit, ToolResult

__all__ = [
    "AttemptSpan",
    "Capability",
    "Chain",
    "Invocation",
    "Proceed",
    "RequestShape",
    "RunCapability",
    "Vetoed",
]


@dataclass
class RequestShape:
    """The parts of an agent's request that capabilities shape once, before any run."""

    model: str
    """The model name."""
    toolkit: Toolkit
    """The tools the model may call."""
    declarations: list[dict[str, Any]]
    """Function declarations sent with every request (``parametersJsonSchema`` form)."""
    options: dict[str, Any] = field(default_factory=dict)
    """``GenerateContentConfig`` fields (snake_case)."""
    system: list[str] = field(default_factory=list)
    """Parts of the fixed system instruction, joined by a blank line."""
    builtin: list[Any] = field(default_factory=list)
    """Gemini's built-in tools (SDK ``Tool`` objects), sent before the declarations."""


@dataclass(frozen=True, slots=True)
class Vetoed:
    """Returned by `RunCapability.received` to drop the response and end the run blocked."""

    reason: str
    """Why; the run ends ``"blocked"`` with it."""


@dataclass(slots=True)
class Invocation:
    """One execution of a tool call, as the tool wrappers see it."""

    call: ToolCall
    """The call the model asked for."""
    args: dict[str, Any]
    """The arguments the tool will run with (a before-tool hook may change them)."""
    step: ToolStep
    """Runs the execution as a durable step (see `Steps.tool`)."""
    answered: tuple[Request, Answer] | None = None
    """``(request, answer)`` when a call that suspended earlier is re-run with its answer."""


Proceed = Callable[[Invocation], Awaitable["ToolResult"]]
"""Runs the rest of the chain: the next wrapper, and at the end the tool itself."""


class AttemptSpan(Protocol):
    """What `RunCapability.attempt` yields: shown each item of the attempt as it arrives."""

    def saw(self, item: object) -> None:
        """Note one item: a text or thought piece, or the `ModelResponse` that ends it."""


class _NoSpan:
    def saw(self, item: object) -> None:
        """Note nothing."""


_NO_SPAN = _NoSpan()


_POINTS = (
    "before_call",
    "sending",
    "attempt",
    "failed",
    "received",
    "review",
    "tool",
    "ran",
    "finish",
    "close",
)
"""The plug-in points, in the order a turn reaches them."""


class RunCapability:
    """A capability's state for one run; every plug-in point is a no-op by default."""

    points: ClassVar[frozenset[str]] = frozenset()
    """The plug-in points this class implements (not the no-ops), read once when the class
    is defined: a run's `Chain` calls each capability only where it does something."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.points = frozenset(
            name for name in _POINTS if getattr(cls, name) is not getattr(RunCapability, name)
        )

    async def before_call(self, run: RunState, request: ModelRequest) -> ModelRequest | Step:
        """Return the request to send, or a `Stop` that ends the run before the call.

        Called before each model turn, in capability order; each gets the request the one
        before it returned. A capability that changes ``run.contents`` returns
        ``run.request()`` to rebuild the request over the new transcript.
        """
        return request

    @contextlib.asynccontextmanager
    async def sending(self, run: RunState, request: ModelRequest) -> AsyncIterator[None]:
        """Wrap one attempt of a model call as it goes out: it may wait before the attempt.

        Every attempt passes here (each turn's, each retry, compaction's summary calls, a
        tier fallback), outside `attempt`; the request is final (the ``before_call``
        capabilities shaped it). A failed attempt ends the block normally or raises through
        it.
        """
        yield

    @contextlib.contextmanager
    def attempt(self, run: RunState, request: ModelRequest, stream: bool) -> Iterator[AttemptSpan]:
        """Wrap one attempt of a model call (a failed attempt raises through the block)."""
        yield _NO_SPAN

    def failed(
        self, run: RunState, request: ModelRequest, info: ErrorInfo
    ) -> ModelRequest | Awaitable[ModelRequest | None] | None:
        """Return a request to send instead of failing the run, or ``None`` to let it fail.

        Called when a model call failed for good (not retryable, or out of retries). The
        request returned is sent as a new call (under the retry policy); if that fails too,
        the capabilities are asked again, so return ``None`` for a request you made. An
        ``async def failed`` may do I/O first (make a resource again).
        """
        return None

    async def received(
        self, run: RunState, request: ModelRequest, response: ModelResponse
    ) -> ModelResponse | Vetoed:
        """Return the response to classify (maybe replaced), or `Vetoed` to drop it."""
        return response

    async def review(self, run: RunState, response: ModelResponse, step: Step) -> Step:
        """Return the step the loop takes after ``response`` (``decide``'s, or another)."""
        return step

    async def tool(self, run: RunState, invocation: Invocation, proceed: Proceed) -> ToolResult:
        """Run one tool call: change ``invocation.args``, answer it, or ``proceed``."""
        return await proceed(invocation)

    def ran(self, run: RunState) -> Stop | None:
        """Return a `Stop` to end the run now that a turn's calls have all run, or ``None``."""
        return None

    def finish(self, run: RunState, fields: dict[str, Any]) -> None:
        """Add fields of the `RunResult` being built (``output``, ``grounding``, ...)."""

    def close(self, run: RunState, result: RunResult | None, error: BaseException | None) -> None:
        """Take note that the run ended with ``result``, or raised ``error`` (called once)."""


class Capability:
    """A feature of an agent: shapes the request once, and plugs into each run."""

    place: ClassVar[Literal["rate", "cache"] | None] = None
    """The place of its own this kind takes in `agent._plan.capabilities_of`'s order
    (``"rate"``: a token rate, ``"cache"``: a context cache); ``None`` for a kind that
    applies with the user's own, in the order given."""

    def shape(self, shape: RequestShape) -> None:
        """Add to or change the agent's request (called once, when the agent is built)."""

    def start(self, run: RunState) -> RunCapability | None:
        """Return this capability's state for a new run, or ``None`` to stay out of it."""
        return None


class Chain:
    """The run capabilities of one run, called at each plug-in point in their order.

    Each point calls only the capabilities that implement it: a point nobody implements
    costs nothing.
    """

    def __init__(self, runs: list[RunCapability]) -> None:
        self.runs = runs

        def at(name: str) -> list[RunCapability]:
            return [run for run in runs if name in run.points]

        self._before = at("before_call")
        self._sending = at("sending")
        self._attempt = at("attempt")
        self._failed = at("failed")
        self._received = at("received")
        self._review = at("review")
        self._tool = at("tool")
        self._ran = at("ran")
        self._finish = at("finish")
        self._close = at("close")

    async def before_call(self, run: RunState, request: ModelRequest) -> ModelRequest | Step:
        """Return the request to send, or the `Stop` a capability ended the run with."""
        from agent._decide import Stop

        for capability in self._before:
            outcome = await capability.before_call(run, request)
            if isinstance(outcome, Stop):
                return outcome
            request = outcome  # type: ignore[assignment]
        return request

    def sending(
        self, run: RunState, request: ModelRequest
    ) -> contextlib.AbstractAsyncContextManager[None]:
        """Wrap one attempt as it goes out in every capability's `sending`, first outermost."""
        if not self._sending:
            return contextlib.nullcontext()
        if len(self._sending) == 1:
            return self._sending[0].sending(run, request)
        return self._all_sending(run, request)

    @contextlib.asynccontextmanager
    async def _all_sending(self, run: RunState, request: ModelRequest) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for capability in self._sending:
                await stack.enter_async_context(capability.sending(run, request))
            yield

    def attempt(
        self, run: RunState, request: ModelRequest, stream: bool
    ) -> contextlib.AbstractContextManager[list[AttemptSpan]]:
        """Wrap one attempt of a model call in every capability's `attempt`."""
        if not self._attempt:
            return contextlib.nullcontext([])
        return self._all_attempts(run, request, stream)

    @contextlib.contextmanager
    def _all_attempts(
        self, run: RunState, request: ModelRequest, stream: bool
    ) -> Iterator[list[AttemptSpan]]:
        with contextlib.ExitStack() as stack:
            yield [stack.enter_context(c.attempt(run, request, stream)) for c in self._attempt]

    async def failed(
        self, run: RunState, request: ModelRequest, info: ErrorInfo
    ) -> ModelRequest | None:
        """Return the first request a capability would send instead of failing, if any."""
        for capability in self._failed:
            again = capability.failed(run, request, info)
            if inspect.isawaitable(again):
                again = await again
            if again is not None:
                return again
        return None

    async def received(
        self, run: RunState, request: ModelRequest, response: ModelResponse
    ) -> ModelResponse | Vetoed:
        """Return the response as the capabilities leave it, or the first veto."""
        for capability in self._received:
            outcome = await capability.received(run, request, response)
            if isinstance(outcome, Vetoed):
                return outcome
            response = outcome
        return response

    async def review(self, run: RunState, response: ModelResponse, step: Step) -> Step:
        """Return the step after every capability reviewed it."""
        for capability in self._review:
            step = await capability.review(run, response, step)
        return step

    def tool(self, run: RunState, invocation: Invocation, end: Proceed) -> Awaitable[ToolResult]:
        """Run ``invocation`` through the tool wrappers, outermost first, ``end`` last."""
        proceed = end
        for capability in reversed(self._tool):
            proceed = _wrapped(capability, run, proceed)
        return proceed(invocation)

    def ran(self, run: RunState) -> Stop | None:
        """Return the first `Stop` a capability ends the run with after a turn's calls."""
        for capability in self._ran:
            stop = capability.ran(run)
            if stop is not None:
                return stop
        return None

    def finish(self, run: RunState, fields: dict[str, Any]) -> None:
        """Let every capability add its result fields."""
        for capability in self._finish:
            capability.finish(run, fields)

    def close(self, run: RunState, result: RunResult | None, error: BaseException | None) -> None:
        """Tell every capability the run ended."""
        for capability in self._close:
            capability.close(run, result, error)


def _wrapped(capability: RunCapability, run: RunState, proceed: Proceed) -> Proceed:
    def call(invocation: Invocation) -> Awaitable[ToolResult]:
        return capability.tool(run, invocation, proceed)

    return call
