"""The one agent loop, as an async generator of events.

`Run.events` is the only copy of the loop: `agent._plan.RunPlan` builds every run (``run``,
``stream``, ``compact``, a sub-agent call, a durable run) and drains or forwards these
events. A run first settles what a suspended history waits on (`agent._suspend`), then
takes turns until the model answers or a limit ends it. Each turn:

1. **before-call**: the capabilities see the request (budgets may stop the run,
   compaction may shrink the transcript, hooks may rewrite or veto the request);
2. **fetch**: the model call as a step (`Steps.model`) under the retry policy, each
   attempt wrapped by the capabilities (a rate limit, tracing), text pieces yielded as
   they arrive;
3. **classify** and **decide** (pure): ask again, run the calls or stop;
4. **review**: the capabilities may change the step (typed output, budgets);
5. **execute**: the calls run concurrently through the capabilities' tool wrappers
   (tracing, hooks, approval) and their results go back as one ``user`` Content;
6. **record**: the turn is saved as soon as its last call finishes.

The loop knows no feature: everything a feature does happens at those points, through
the run's `Chain` of capabilities. Only the model seam talks to ``google.genai``; the
transcript's Contents are opaque values here.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from agent._calls import function_response, run_tool
from agent._capability import Chain, Invocation, Vetoed
from agent._classify import classify
from agent._contents import function_responses, user_content
from agent._decide import AskAgain, RunCalls, Stop, decide, record_results
from agent._media import function_response_content, multimodal_function_responses
from agent._response import ModelResponse
from agent._result import ToolCallRecord
from agent._retry import CallFailed, ErrorInfo, label, reporter, retrying
from agent._suspend import resume, wait
from agent.errors import ModelError
from agent.events import (
    DoneEvent,
    Event,
    FallbackEvent,
    PendingEvent,
    RetryEvent,
    TierFallbackEvent,
    ToolCall,
    ToolCallEvent,
    ToolResultEvent,
)
from agent.steps import ModelFailure, ModelItem
from toolnexus import ToolResult

if TYPE_CHECKING:
    from agent._contents import Content
    from agent._response import Call
    from agent._result import RunResult
    from agent._state import RunState
    from agent.hooks import ModelRequest
    from toolnexus import Answer, Request

__all__ = ["Checkpoint", "Run"]

Checkpoint = Callable[[list[dict[str, Any]], "Request | None", tuple[int, int]], Awaitable[None]]
"""Saves the transcript, the request it waits on and the size of the last request
(`RunState.sent`) after each completed turn."""

Outcome = tuple[dict[str, Any], "ToolResult"]
"""What one tool call gives: the arguments it ran with and its result."""


class Run:
    """The loop over one run's state."""

    def __init__(
        self,
        state: RunState,
        chain: Chain,
        *,
        prompt: Content | None,
        answer: Answer | None,
        save: Checkpoint | None,
    ) -> None:
        self.state = state
        """What the run has done so far."""
        self.chain = chain
        """The run's capabilities, called at each point of a turn."""
        self.prompt = prompt
        """The new user message, appended once the pending requests are settled."""
        self.answer = answer
        """A human's answer to the request the history waits on, if any."""
        self.save = save
        """Hands the transcript to the session store; ``None`` without a session."""
        state.call_model = self.complete

    # -- the loop -----------------------------------------------------------------------------

    async def events(self) -> AsyncGenerator[Event, None]:
        """Run to the end, yielding every event; the last one is `DoneEvent`."""
        state = self.state
        waiting = await resume(self)
        for event in state.outbox.drain():
            yield event
        if waiting is not None:
            yield PendingEvent(*waiting)
            yield await self.end(state.result("pending", pending=waiting[0]))
            return
        if self.prompt is not None:
            state.contents.append(await state.model.upload_over_limit(self.prompt))
            self.prompt = None
        while state.turns < state.limits.max_turns:
            async with contextlib.aclosing(self._turn()) as turn:
                async for event in turn:
                    yield event
                    if isinstance(event, DoneEvent):
                        return
        yield await self.end(state.result("incomplete", limit="max_turns"))

    async def _turn(self) -> AsyncGenerator[Event, None]:
        """Take one turn: before-call, fetch, classify, decide, review, execute, record."""
        state, chain = self.state, self.chain
        request = await chain.before_call(state, state.request())
        for event in state.outbox.drain():
            yield event
        if isinstance(request, Stop):
            yield await self.end(self._stopped(request))
            return
        assert not isinstance(request, AskAgain | RunCalls)
        response: ModelResponse | None = None
        async with contextlib.aclosing(self._fetch(request, stream=state.streaming)) as items:
            async for item in items:
                if isinstance(item, ModelResponse):
                    response = item
                else:
                    yield item
        assert response is not None
        received = await chain.received(state, request, response)
        for event in state.outbox.drain():
            yield event
        if isinstance(received, Vetoed):
            yield state.count_turn(response)  # dropped, but billed
            yield await self.end(state.result("blocked", reason=received.reason))
            return
        yield state.count_turn(received)
        step, state.streaks = decide(received, classify(received), state.streaks, state.limits)
        step = await chain.review(state, received, step)
        if isinstance(step, AskAgain):
            await self._ask_again(received, step)
        elif isinstance(step, Stop):
            yield await self._stop(received, step)
        else:
            async with contextlib.aclosing(self._run_calls(received, step)) as events:
                async for event in events:
                    yield event

    async def _ask_again(self, response: ModelResponse, step: AskAgain) -> None:
        """Drop the response, or keep it with the feedback the model reads next."""
        if step.feedback is not None:
            self._keep(response)
            self.state.contents.append(user_content(step.feedback))
            await self.checkpoint(None)

    async def _run_calls(
        self, response: ModelResponse, step: RunCalls
    ) -> AsyncGenerator[Event, None]:
        """Keep the turn, run its calls, and end the run if they suspend or the step says so."""
        state = self.state
        self._keep(response)
        pending: Request | None = None
        async with contextlib.aclosing(self._execute(step)) as events:
            async for event in events:
                if isinstance(event, PendingEvent) and pending is None:
                    pending = event.request
                yield event
        # Saved already, with the turn; `wait` gets answers through the steps, if any.
        if pending is not None and (pending := await wait(self, pending)) is not None:
            for event in state.outbox.drain():
                yield event
            yield DoneEvent(state.result("pending", pending=pending))
            return
        for event in state.outbox.drain():
            yield event
        then = step.then or self.chain.ran(state)
        if then is not None:
            yield await self.end(self._stopped(then))
            return
        ran = [record.result for record in state.tool_calls[-len(step.calls) :]]
        state.streaks = record_results(state.streaks, step.calls, ran)

    # -- fetch --------------------------------------------------------------------------------

    async def _fetch(
        self, request: ModelRequest, *, stream: bool
    ) -> AsyncGenerator[Event | ModelResponse, None]:
        """Make one model call as a step; yield its pieces and retries, then the response.

        Raises:
            ModelError: The call failed for good (not retryable, or out of attempts).
        """
        failure: ModelFailure | None = None
        items = self.state.steps.model(request, lambda: self._call_model(request, stream))
        async with contextlib.aclosing(items):
            async for item in items:
                if isinstance(item, ModelFailure):
                    failure = item
                    continue
                if isinstance(item, RetryEvent):
                    self.state.retries.append(item)
                yield item
        if failure is None:
            return
        again = await self.chain.failed(self.state, request, failure.info)
        if again is None:
            raise self._model_error(failure.info, failure.attempts)
        for event in self.state.outbox.drain():
            yield event
        async with contextlib.aclosing(self._fetch(again, stream=stream)) as retried:
            async for piece in retried:
                yield piece

    async def _call_model(
        self, request: ModelRequest, stream: bool
    ) -> AsyncGenerator[ModelItem, None]:
        """Make the call under the retry policy, each attempt wrapped by the capabilities.

        Yields text pieces and `RetryEvent`s as they happen, then one `ModelResponse`, or a
        `ModelFailure` when the call failed for good.
        """
        state = self.state
        retries: list[RetryEvent] = []  # told by the retry policy before each wait
        attempts = 0
        failure: ErrorInfo | None = None
        try:
            report = reporter(state.limits.retry.attempts, request.turn, retries)
            async for attempt in retrying(state.limits.retry, report):
                while retries:
                    yield retries.pop(0)
                async with self.chain.sending(state, request):
                    with attempt, self.chain.attempt(state, request, stream) as spans:
                        attempts += 1
                        call = state.model.call(request, stream=stream)
                        async with contextlib.aclosing(call) as items:
                            async for item in items:
                                for span in spans:
                                    span.saw(item)
                                yield item
        except CallFailed as failed:
            failure = failed.info
        if failure is not None:  # outside the handler: the error chain stays empty
            yield ModelFailure(failure, attempts)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Make one model call that is not a turn (a summary); count it, keep no pieces."""
        response: ModelResponse | None = None
        async with contextlib.aclosing(self._fetch(request, stream=False)) as items:
            async for item in items:
                if isinstance(item, ModelResponse):
                    response = item
                elif isinstance(item, RetryEvent | TierFallbackEvent | FallbackEvent):
                    self.state.emit(item)
        assert response is not None
        self.state.count_extra(response.usage, response.service_tier, response.model)
        return response

    def _model_error(self, info: ErrorInfo, attempts: int) -> ModelError:
        return ModelError(
            code=info.code,
            status=info.status,
            message=info.message,
            attempts=attempts,
            result=self.state.result("incomplete", reason=label(info) or "model error"),
        )

    # -- execute ------------------------------------------------------------------------------

    async def _execute(self, step: RunCalls) -> AsyncGenerator[Event, None]:
        """Run every call of a turn concurrently; append one user Content of the results.

        The turn is saved (see `_complete`) as soon as its last call finishes; a
        `PendingEvent` follows for each call that suspended.
        """
        state = self.state
        calls = [ToolCall(c.name, c.args, c.id, state.turns, i) for i, c in enumerate(step.calls)]
        for call in calls:
            yield ToolCallEvent(call)
        with state.as_parent():  # sub-agents among the calls are this run's children
            futures = [self._start(call, step.answered.get(call.index)) for call in calls]
        index = {future: i for i, future in enumerate(futures)}
        results: list[Outcome] = []
        try:
            waiting: set[asyncio.Future[Any]] = set(futures)
            while waiting:
                done, waiting = await state.outbox.wait(waiting)
                for nested in state.outbox.drain():
                    yield nested
                batch = sorted(index[future] for future in done)
                for i in batch:
                    futures[i].result()  # a HookError ends the turn here
                if not waiting:
                    # Every call has finished: record and save the turn before reporting the
                    # last results, so a consumer that stops at one of them loses nothing.
                    results = [future.result() for future in futures]
                    await self._complete(calls, results)
                for i in batch:
                    yield ToolResultEvent(calls[i], futures[i].result()[1])
        finally:
            await _stop_unfinished(futures)
        for call, (_, result) in zip(calls, results, strict=True):
            if result.pending is not None:
                yield PendingEvent(result.pending, call)

    def _start(self, call: ToolCall, answered: ToolResult | None) -> asyncio.Future[Outcome]:
        """Start one call (in call order: `Steps.tool` numbers its steps now)."""
        if answered is not None:  # answered by a capability, not run
            future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
            future.set_result((call.args, answered))
            return future
        return asyncio.ensure_future(self.invoke(call))

    async def invoke(
        self, call: ToolCall, answered: tuple[Request, Answer] | None = None
    ) -> Outcome:
        """Run one call through the capabilities' tool wrappers; return its args and result."""
        state = self.state
        invocation = Invocation(call, call.args, state.steps.tool(call), answered)
        result = await self.chain.tool(state, invocation, self._run_tool)
        return invocation.args, result

    def _run_tool(self, invocation: Invocation) -> Awaitable[ToolResult]:
        return run_tool(self.state, invocation)

    async def _complete(self, calls: Sequence[ToolCall], results: Sequence[Outcome]) -> None:
        """Record a turn's results, append them as one user Content and save the transcript."""
        state = self.state
        responses = []
        records = []
        pending: Request | None = None
        for call, (args, result) in zip(calls, results, strict=True):
            records.append(ToolCallRecord(call.name, args, call.id, result, call.turn))
            response = function_response(result, pending=result.pending)
            responses.append((call.id, call.name, response, result.attachments))
            pending = pending or result.pending
        state.count_tool_calls(records)
        multimodal = multimodal_function_responses(state.model.name)
        state.contents.append(function_response_content(responses, multimodal=multimodal))
        await self.checkpoint(pending)

    # -- ending -------------------------------------------------------------------------------

    def _keep(self, response: ModelResponse) -> None:
        """Append the model's turn to the transcript, as received."""
        if response.content is not None:
            self.state.contents.append(response.content)

    async def _stop(self, response: ModelResponse, step: Stop) -> DoneEvent:
        """Apply a `Stop`: keep the turn (answering the calls it refuses), save, end the run."""
        if step.keep:
            self._keep(response)
        if step.refusal is not None:
            self.refuse(response.calls, step.refusal)
        return await self.end(self._stopped(step))

    def _stopped(self, step: Stop) -> RunResult:
        return self.state.result(
            step.status, text=step.text, reason=step.reason, limit=step.limit, output=step.output
        )

    def refuse(self, calls: Sequence[Call], note: str) -> None:
        """Answer calls that are not run with an error, so the transcript stays valid history."""
        refused = function_response(ToolResult(note, is_error=True))
        self.state.contents.append(function_responses([(c.id, c.name, refused) for c in calls]))

    async def checkpoint(self, pending: Request | None) -> None:
        """Hand the transcript to the session store, at a point where it is valid history."""
        if self.save is not None:
            await self.save(self.state.transcript(), pending, self.state.sent)

    async def end(self, result: RunResult) -> DoneEvent:
        """Save the run's last state and return its `DoneEvent`."""
        await self.checkpoint(result.pending)
        return DoneEvent(result)


async def _stop_unfinished(futures: Sequence[asyncio.Future[Any]]) -> None:
    """Cancel the calls still running and wait for them, so no tool outlives its run.

    Called when a turn is left early: an error, a closed stream, a cancellation.
    """
    unfinished = [future for future in futures if not future.done()]
    for future in unfinished:
        future.cancel()
    if unfinished:
        await asyncio.wait(unfinished)
