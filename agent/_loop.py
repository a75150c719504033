"""The one agent loop: fetch → classify → decide → execute, as an async generator of events.

`Run.events` is the only copy of the loop: `Agent.run` drains it and returns the `DoneEvent`'s
result, `Agent.stream` hands the events to the caller. Each turn:

1. **fetch** (`Run._fetch`): the before-model hook, the model call under the retry policy
   (text pieces and retries reported as they happen), the after-model hook;
2. **classify** (`agent._classify.classify`): what kind of response it is;
3. **decide** (`agent._decide.decide`, pure): ask again, run the calls or stop;
4. **execute** (`Run._execute`): run the calls concurrently (each through
   `agent._calls.run_call`, with its hooks) and append their results as one ``user``
   Content; the transcript is saved as soon as the last call finishes.

Only the model seam (`agent._model` and the modules behind it) talks to ``google.genai``; the
transcript's Contents are opaque values here.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agent._approval import ApprovalPolicy
from agent._builtin_tools import Grounding, code_runs, grounding_of
from agent._calls import WaitFor, function_response, run_call
from agent._classify import classify
from agent._compaction import (
    SUMMARY_HEADER,
    SUMMARY_PROMPT,
    Compaction,
    estimate_tokens,
    exchange_starts,
    input_limit,
    prune,
    summary_text,
)
from agent._contents import (
    Content,
    check_prompt,
    function_responses,
    pending_requests,
    replace_response,
    to_contents,
    to_dict,
    user_content,
)
from agent._cost import Cost, run_cost
from agent._decide import AskAgain, RunCalls, Stop, Streaks, TurnLimits, decide, record_results
from agent._limits import Spent, UsageLimits, over_after_turn, over_before_call
from agent._media import (
    Prompt,
    function_response_content,
    multimodal_function_responses,
    prompt_content,
)
from agent._model import GeminiModel
from agent._output import Accept, OutputSpec, Reject
from agent._response import Call, ModelResponse, calls_of
from agent._result import Limit, RunResult, Status, ToolCallRecord, Usage
from agent._retry import CallFailed, ErrorInfo, RetryPolicy, retrying
from agent._steps import ModelFailure, ModelItem, Steps
from agent._subagent import Inbox, current_inbox, installed
from agent._tracing import RunTrace
from agent.errors import ConfigurationError, HookError, ModelError
from agent.events import (
    CodeExecutionEvent,
    Compacted,
    DoneEvent,
    Event,
    GroundingEvent,
    PendingEvent,
    RetryEvent,
    ToolCall,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from agent.hooks import Hooks, ModelRequest, Veto
from toolnexus import Answer, Request, Toolkit, ToolResult

__all__ = ["Checkpoint", "Run", "Settings", "WaitFor"]

T = TypeVar("T")

logger = logging.getLogger("agent")

Checkpoint = Callable[[list[dict[str, Any]], Request | None], Awaitable[None]]
"""Saves the transcript (and the request it waits on) after each completed turn."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a run needs from its agent; built once per agent."""

    model: GeminiModel
    """The model seam every call goes through."""
    toolkit: Toolkit
    """The tools the model may call."""
    hooks: Hooks
    """Callbacks around model and tool calls."""
    wait_for: WaitFor | None
    """Answers a suspended tool inline; ``None`` ends the run ``"pending"`` instead."""
    max_turns: int
    """Model responses per run, at most."""
    retry: RetryPolicy
    """How a failed model call is retried."""
    limits: TurnLimits
    """The budgets `decide` enforces."""
    tool_timeout: float | None
    """Seconds per tool call, or ``None``."""
    output: OutputSpec | None = None
    """The typed result asked for (``Agent(output_type=...)``), or ``None``."""
    deps: Any = None
    """The run's data, handed to every tool as ``context.deps`` (set per run)."""
    approval: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    """Which calls run, are refused, or wait for a human's approval."""
    usage_limits: UsageLimits | None = None
    """The run's budgets (requests, tokens, tool calls, dollars), or ``None``."""
    compaction: Compaction | None = None
    """When the transcript is compacted before a model call, or ``None`` for never."""
    steps: Steps = field(default_factory=Steps)
    """Where the side effects happen (model and tool calls, human waits): in process by
    default, durable with ``agent.dbos``."""


@dataclass(frozen=True, slots=True)
class Vetoed:
    """The last item `Run._fetch` yields when a model hook vetoed the turn."""

    reason: str
    """The hook's reason; the run ends ``"blocked"`` with it."""
    billed: ModelResponse | None
    """The response an after-model hook dropped: not kept, but counted (it was billed)."""


async def _maybe(value: T | Awaitable[T]) -> T:
    if inspect.isawaitable(value):
        return await value
    return value


class Run:
    """The state of one run and the loop that advances it."""

    def __init__(
        self,
        settings: Settings,
        prompt: Prompt | None,
        history: Sequence[Any] | None,
        answer: Answer | None,
        save: Checkpoint | None = None,
        *,
        streaming: bool = False,
        trace: RunTrace | None = None,
        archive: list[dict[str, Any]] | None = None,
    ) -> None:
        if prompt is None and not history:
            raise ConfigurationError("run() needs a prompt, or a history to continue or resume")
        if prompt is not None:
            check_prompt(prompt)
        self.settings = settings
        """The agent's settings."""
        self.prompt = prompt
        """The new user message, appended once the pending requests are settled."""
        self.answer = answer
        """A human's answer to the request the history waits on, if any."""
        self.streaming = streaming
        """Call ``streamGenerateContent`` (``Agent.stream``) instead of ``generateContent``."""
        self.save = save
        """Hands the transcript to the session store; ``None`` without a session."""
        self.contents: list[Content] = to_contents(history or ())
        """The transcript: history, then every turn of this run, as sent to the model."""
        self.turns = 0
        """Model responses received (and billed), vetoed ones included."""
        self.usage = Usage()
        """Tokens over all turns."""
        self.turn_usage: list[Usage] = []
        """Tokens per turn."""
        self.tool_calls: list[ToolCallRecord] = []
        """Every tool call run, with the arguments it ran with and its result."""
        self.retries: list[RetryEvent] = []
        """Every retried model-call failure."""
        self.finish_reason: str | None = None
        """The last response's finish reason."""
        self.model_version: str | None = None
        """The model version that last answered."""
        self.streaks = Streaks()
        """What `decide` remembers between turns (malformed, empty and repeated turns)."""
        self.output_rejects = 0
        """Invalid typed answers sent back so far."""
        self.grounding: Grounding | None = None
        """What built-in search / URL-context tools grounded, over the run."""
        parent = current_inbox()
        self.depth = parent.depth + 1 if parent is not None else 0
        """How deep this run is nested in sub-agent calls (0: a top-level run)."""
        self.trace = trace or RunTrace(settings.model.name, record=False)
        """The run's OpenTelemetry spans."""
        self.archive = archive if archive is not None else []
        """Contents compaction replaced, in the form they had then (appended to)."""
        self.sent = (0, 0)
        """``(promptTokenCount, transcript length)`` of the last model turn, for estimates."""
        self.extra_usage: list[Usage] = []
        """Tokens of the run's model calls that are not turns (compaction summaries)."""

    # -- the loop ---------------------------------------------------------------------------

    async def events(self) -> AsyncGenerator[Event, None]:
        """Run to the end, yielding every event; the last one is `DoneEvent`."""
        async with contextlib.aclosing(self._resume()) as resumed:
            async for event in resumed:
                yield event
                if isinstance(event, DoneEvent):  # the history still waits
                    return
        async with contextlib.aclosing(self._turns()) as turns:
            async for event in turns:
                yield event

    async def _resume(self) -> AsyncGenerator[Event, None]:
        """Settle what a suspended history waits on; end the run when something still waits.

        Yields the events of sub-agents resumed here, then, if a request is still
        unanswered, its `PendingEvent` and the `DoneEvent`.
        """
        inbox = self._inbox()
        with installed(inbox):
            waiting = await self._resume_pending()
        for nested in inbox.drain():
            yield nested
        if waiting is not None:
            yield PendingEvent(*waiting)
            yield await self._end(self.result("pending", pending=waiting[0]))

    async def _turns(self) -> AsyncGenerator[Event, None]:
        """Run the turns, from the new prompt to the `DoneEvent`."""
        if self.prompt is not None:
            prompt = prompt_content(self.prompt)
            self.contents.append(await self.settings.model.upload_over_limit(prompt))
        while self.turns < self.settings.max_turns:
            over = over_before_call(self.settings.usage_limits, self._spent())
            if over is not None:  # the call is not made
                yield await self._end(self.result("incomplete", limit=over))
                return
            async for compacted in self.compact():
                yield compacted
            fetched: ModelResponse | Vetoed | None = None
            async with contextlib.aclosing(self._fetch()) as items:
                async for item in items:
                    if isinstance(item, ModelResponse | Vetoed):
                        fetched = item
                    else:
                        yield item
            if isinstance(fetched, Vetoed):
                if fetched.billed is not None:
                    yield self._count(fetched.billed)
                yield await self._end(self.result("blocked", reason=fetched.reason))
                return
            assert fetched is not None
            yield self._count(fetched)
            step, self.streaks = decide(
                fetched, classify(fetched), self.streaks, self.settings.limits
            )
            checked = await self._check_output(fetched, step)
            if isinstance(checked, DoneEvent):
                yield checked
                return
            step = checked
            if isinstance(step, AskAgain):
                continue
            step = self._within_budget(step)
            if isinstance(step, Stop):
                yield await self._stop(fetched, step)
                return
            self._keep(fetched)
            pending: Request | None = None
            async with contextlib.aclosing(self._execute(step.calls)) as events:
                async for event in events:
                    if isinstance(event, PendingEvent) and pending is None:
                        pending = event.request
                    yield event
            # Saved already, with the turn; `_wait` gets answers through the steps, if any.
            if pending is not None and (pending := await self._wait(pending)) is not None:
                yield DoneEvent(self.result("pending", pending=pending))
                return
            ran = [record.result for record in self.tool_calls[-len(step.calls) :]]
            self.streaks = record_results(self.streaks, step.calls, ran)
        yield await self._end(self.result("incomplete", limit="max_turns"))

    async def _check_output(
        self, response: ModelResponse, step: AskAgain | RunCalls | Stop
    ) -> DoneEvent | AskAgain | RunCalls | Stop:
        """Check a typed answer; end the run, or send the problems back and ask again.

        Handles a completed answer (native mode: its JSON; tool mode: it should have called
        the output function) and a turn that calls the output function (tool mode); the
        turn is then in the transcript with the feedback after it. Any other step (and
        every step of a run without ``output_type``) is returned as it is.
        """
        spec = self.settings.output
        if spec is None:
            return step
        output_calls = [c for c in response.calls if c.name == spec.tool_name]
        if isinstance(step, RunCalls) and spec.mode == "tool" and output_calls:
            verdict = spec.check_call(output_calls[0].args)
            self._keep(response)
            if isinstance(verdict, Accept):
                notes = {spec.tool_name: ToolResult("Final result accepted.")}
            else:
                notes = {spec.tool_name: ToolResult(verdict.feedback, is_error=True)}
            skipped = ToolResult("Not run: the final result was given in the same turn.", True)
            self.contents.append(
                function_responses(
                    [
                        (c.id, c.name, function_response(notes.get(c.name, skipped)))
                        for c in response.calls
                    ]
                )
            )
        elif isinstance(step, Stop) and step.status == "completed":
            self._keep(response)
            if spec.mode == "native":
                verdict = spec.check_text(response.text)
            else:
                verdict = Reject(
                    f"Give your final answer by calling `{spec.tool_name}` with it as the "
                    "arguments, not as text."
                )
            if isinstance(verdict, Reject):
                self.contents.append(user_content(verdict.feedback))
        else:
            return step
        if isinstance(verdict, Accept):
            done = self.result("completed", text=response.text, output=verdict.value)
            return await self._end(done)
        self.output_rejects += 1
        if self.output_rejects > spec.retries:
            return await self._end(
                self.result("incomplete", text=response.text, limit="invalid_output")
            )
        await self._checkpoint(None)
        return AskAgain()

    def _server_tools(self, response: ModelResponse) -> list[Event]:
        """Report what Gemini's built-in tools did in ``response``; collect its grounding."""
        turn = self.turns + 1  # reported before the response is counted
        events: list[Event] = [CodeExecutionEvent(turn, run) for run in code_runs(response.content)]
        found = grounding_of(response.raw)
        if found is not None:
            self.grounding = found if self.grounding is None else self.grounding + found
            events.append(GroundingEvent(turn, found))
        return events

    def _inbox(self) -> Inbox:
        """Return an inbox for the sub-agents this run's tool calls may start."""
        return Inbox(self.depth, self.streaming, self._charge)

    def _charge(self, usage: Usage) -> None:
        """Add a sub-agent's tokens to this run's."""
        self.usage = self.usage + usage

    def _keep(self, response: ModelResponse) -> None:
        """Append the model's turn to the transcript, as received."""
        if response.content is not None:
            self.contents.append(response.content)

    async def _stop(self, response: ModelResponse, step: Stop) -> DoneEvent:
        """Apply a `Stop`: keep the turn (answering the calls it refuses), save, end the run."""
        if step.keep:
            self._keep(response)
        if step.refusal is not None:
            self._refuse(response.calls, step.refusal)
        result = self.result(step.status, text=step.text, reason=step.reason, limit=step.limit)
        return await self._end(result)

    def _count(self, response: ModelResponse) -> UsageEvent:
        """Count a response as a turn, with its usage (the model was called and billed)."""
        self.turns += 1
        self.sent = (response.usage.prompt, len(self.contents))
        self.turn_usage.append(response.usage)
        self.usage = self.usage + response.usage
        self.finish_reason = response.finish_reason
        if response.model_version:
            self.model_version = response.model_version
        return UsageEvent(self.turns, response.usage, self.usage)

    async def _hook(self, name: str, hook: Callable[..., Any], *args: Any) -> Any:
        """Call a hook or ``wait_for`` (sync or async); wrap what it raises in `HookError`."""
        try:
            return await _maybe(hook(*args))
        except Exception as exc:  # cancellation is a BaseException and passes untouched
            raise HookError(
                f"the {name} hook raised {type(exc).__name__}: {exc}",
                hook=name,
                result=self.result("incomplete", reason=f"{name} hook failed"),
            ) from exc

    # -- fetch ------------------------------------------------------------------------------

    async def _fetch(self) -> AsyncGenerator[Event | ModelResponse | Vetoed, None]:
        """Get the next model response: hooks around the call, retries around the call.

        Yields text pieces and `RetryEvent`s as they happen, then one `ModelResponse` (or
        `Vetoed` when a model hook stopped the turn).

        Raises:
            ModelError: The call failed for good (not retryable, or out of attempts).
        """
        hooks = self.settings.hooks
        model = self.settings.model
        # Hooks get a copy of the transcript list, so a hook cannot change the run's own.
        request = model.request(list(self.contents), self.turns + 1)
        if hooks.before_model is not None:
            changed = await self._hook("before_model", hooks.before_model, request)
            if isinstance(changed, Veto):
                yield Vetoed(changed.reason, None)
                return
            request = changed or request
        response: ModelResponse | None = None
        failure: ModelFailure | None = None
        items = self.settings.steps.model(request, lambda: self._call_model(request))
        async with contextlib.aclosing(items):
            async for item in items:
                if isinstance(item, ModelResponse):
                    response = item
                elif isinstance(item, ModelFailure):
                    failure = item
                else:
                    if isinstance(item, RetryEvent):
                        self.retries.append(item)
                    yield item
        if failure is not None:
            raise self._model_error(failure.info, failure.attempts)
        assert response is not None
        if hooks.after_model is not None:
            changed = await self._hook("after_model", hooks.after_model, request, response.raw)
            if isinstance(changed, Veto):
                yield Vetoed(changed.reason, response)
                return
            if changed is not None:
                response = model.parse(changed)
        for event in self._server_tools(response):
            yield event
        yield response

    async def _call_model(self, request: ModelRequest) -> AsyncGenerator[ModelItem, None]:
        """Make the model call under the retry policy (the model step of `Steps.model`).

        Yields text pieces and `RetryEvent`s as they happen, then one `ModelResponse`, or a
        `ModelFailure` when the call failed for good.
        """
        retries: list[RetryEvent] = []  # told by the retry policy before each wait
        attempts = 0
        failure: ErrorInfo | None = None
        try:
            async for attempt in retrying(self.settings.retry, self._on_retry(request, retries)):
                while retries:
                    yield retries.pop(0)
                with attempt, self.trace.model_call(request, stream=self.streaming) as span:
                    attempts += 1
                    call = self.settings.model.call(request, stream=self.streaming)
                    async with contextlib.aclosing(call) as items:
                        async for item in items:
                            span.saw(item)
                            yield item
        except CallFailed as failed:
            failure = failed.info
        if failure is not None:  # outside the handler: the error chain stays empty
            yield ModelFailure(failure, attempts)

    def _on_retry(
        self, request: ModelRequest, retries: list[RetryEvent]
    ) -> Callable[[int, float, ErrorInfo], None]:
        """Return the retry policy's callback: record, log and queue one `RetryEvent`."""

        def on_retry(attempt: int, delay: float, info: ErrorInfo) -> None:
            retry = RetryEvent(attempt, delay, info.code, info.status, request.turn)
            # INFO, not WARNING: a library must not print by itself (Python's last-resort
            # handler shows warnings on stderr when the app set up no logging). Callers see
            # retries as `RetryEvent`s and in ``result.retries``.
            logger.info(
                "Gemini call failed (%s); retrying in %.1f s (attempt %d of %d)",
                _label(info),
                delay,
                attempt + 1,
                self.settings.retry.attempts,
            )
            retries.append(retry)

        return on_retry

    def _model_error(self, info: ErrorInfo, attempts: int) -> ModelError:
        return ModelError(
            code=info.code,
            status=info.status,
            message=info.message,
            attempts=attempts,
            result=self.result("incomplete", reason=_label(info) or "model error"),
        )

    # -- execute ----------------------------------------------------------------------------

    async def _execute(self, calls: Sequence[Call]) -> AsyncGenerator[Event, None]:
        """Run every call of a turn concurrently; append one user Content of the results.

        The turn is saved (see `_complete`) as soon as its last call finishes; a
        `PendingEvent` follows for each call that suspended.
        """
        tool_calls = [
            ToolCall(call.name, call.args, call.id, self.turns, i) for i, call in enumerate(calls)
        ]
        for call in tool_calls:
            yield ToolCallEvent(call)
        results: list[tuple[dict[str, Any], ToolResult]] = []
        inbox = self._inbox()
        with installed(inbox):  # sub-agents among the calls report to it
            futures = [
                asyncio.ensure_future(
                    self.trace.tool_call(call, run_call(self.settings, self._hook, call))
                )
                for call in tool_calls
            ]
        index: dict[asyncio.Future[Any], int] = {future: i for i, future in enumerate(futures)}
        try:
            waiting: set[asyncio.Future[Any]] = set(futures)
            while waiting:
                done, waiting = await inbox.wait(waiting)
                for nested in inbox.drain():
                    yield nested
                batch = sorted(index[future] for future in done)
                for i in batch:
                    futures[i].result()  # a HookError ends the turn here
                if not waiting:
                    # Every call has finished: record and save the turn before reporting the
                    # last results, so a consumer that stops at one of them loses nothing.
                    results = [future.result() for future in futures]
                    await self._complete(tool_calls, results)
                for i in batch:
                    yield ToolResultEvent(tool_calls[i], futures[i].result()[1])
        finally:
            # Leaving early (an error, a closed stream, a cancellation): stop the other
            # calls and wait for them, so no tool outlives its run.
            unfinished = [future for future in futures if not future.done()]
            for future in unfinished:
                future.cancel()
            if unfinished:
                await asyncio.wait(unfinished)
        for call, (_, result) in zip(tool_calls, results, strict=True):
            if result.pending is not None:
                yield PendingEvent(result.pending, call)

    async def _complete(
        self, calls: Sequence[ToolCall], results: Sequence[tuple[dict[str, Any], ToolResult]]
    ) -> None:
        """Record a turn's results, append them as one user Content and save the transcript."""
        responses = []
        pending: Request | None = None
        for call, (args, result) in zip(calls, results, strict=True):
            self.tool_calls.append(ToolCallRecord(call.name, args, call.id, result, call.turn))
            response = function_response(result, pending=result.pending)
            responses.append((call.id, call.name, response, result.attachments))
            pending = pending or result.pending
        multimodal = multimodal_function_responses(self.settings.model.name)
        self.contents.append(function_response_content(responses, multimodal=multimodal))
        await self._checkpoint(pending)

    def _refuse(self, calls: Sequence[Call], note: str) -> None:
        """Answer calls that are not run with an error, so the transcript stays valid history."""
        refused = function_response(ToolResult(note, is_error=True))
        self.contents.append(function_responses([(c.id, c.name, refused) for c in calls]))

    # -- suspension -------------------------------------------------------------------------

    async def _checkpoint(self, pending: Request | None) -> None:
        """Hand the transcript to the session store, at a point where it is valid history."""
        if self.save is not None:
            await self.save(self.transcript(), pending)

    async def _end(self, result: RunResult) -> DoneEvent:
        await self._checkpoint(result.pending)
        return DoneEvent(result)

    async def _wait(self, pending: Request) -> Request | None:
        """Wait through `Steps.wait` for the answers a turn's tools asked for.

        Returns:
            The request still unanswered (the run ends ``"pending"`` on it), or ``None``
            when every answer came and the tools were re-run with them.
        """
        while True:
            answer = await self.settings.steps.wait(pending)
            if answer is None:
                return pending
            self.answer, self.prompt = answer, None  # the prompt was used up by turn one
            still = await self._resume_pending()
            if still is None:
                return None
            pending = still[0]

    async def _resume_pending(self) -> tuple[Request, ToolCall] | None:
        """Answer what a suspended transcript waits on; return what still waits, if any.

        Each waiting request is answered by ``answer`` (matching id), else by ``wait_for``,
        else declined when a new prompt moves the conversation on; otherwise it still waits.
        """
        waiting = pending_requests(self.contents[-1]) if self.contents else []
        answer = self.answer
        if answer is not None and all(request["id"] != answer.get("id") for _, request in waiting):
            if not waiting:
                raise ConfigurationError(
                    f"answer={{'id': {answer.get('id')!r}, ...}} was given but the history "
                    "does not wait for an answer"
                )
            ids = ", ".join(repr(request["id"]) for _, request in waiting)
            raise ConfigurationError(
                f"answer id {answer.get('id')!r} does not match the pending request(s) {ids}"
            )
        calls = calls_of(self.contents[-2]) if waiting and len(self.contents) > 1 else []
        still: tuple[Request, ToolCall] | None = None
        answered = False
        for index, request in waiting:
            if index >= len(calls):
                raise ConfigurationError("the history's pending function response has no call")
            source = calls[index]
            call = ToolCall(source.name, source.args, source.id, self.turns, index)
            if answer is not None and answer.get("id") == request["id"]:
                reply: Answer = answer
            elif self.settings.wait_for is not None:
                reply = await self._hook("wait_for", self.settings.wait_for, request)
            elif self.prompt is not None:
                reply = Answer(id=request["id"], ok=False)
            else:
                still = still or (request, call)
                continue
            args, result = await run_call(self.settings, self._hook, call, (request, reply))
            record = ToolCallRecord(call.name, args, call.id, result, call.turn)
            self._record_answered(record, request["id"])
            self.contents[-1] = replace_response(
                self.contents[-1], index, function_response(result, pending=result.pending)
            )
            if result.pending is not None:  # answered, and now it asks something else
                still = still or (result.pending, call)
            answered = True
        if answered and still is None:
            await self._checkpoint(None)  # the answered tool ran: keep its result
        return still

    def _record_answered(self, record: ToolCallRecord, request_id: str) -> None:
        """Record an answered call, in place of its suspended record when this run made it."""
        for i, old in enumerate(self.tool_calls):
            pending = old.result.pending
            if pending is not None and pending["id"] == request_id:
                self.tool_calls[i] = record
                return
        self.tool_calls.append(record)

    # -- compaction -------------------------------------------------------------------------

    def _estimate(self) -> int:
        """Estimate the next request's tokens: the last prompt plus what was added since."""
        prompt, length = self.sent
        if prompt == 0 or length > len(self.contents):
            return estimate_tokens(self.transcript())
        added = [to_dict(content) for content in self.contents[length:]]
        return prompt + estimate_tokens(added)

    async def compact(self, *, force: bool = False) -> AsyncGenerator[Compacted, None]:
        """Compact the transcript when the next request would pass the trigger.

        Prunes large function results of older exchanges first, then replaces older
        exchanges by a model-written summary if still needed; yields one `Compacted`.
        """
        policy = self.settings.compaction
        if policy is None:
            return
        before = self._estimate()
        trigger = policy.trigger_tokens
        if trigger is None:
            limit = await input_limit(self.settings.model, before)
            trigger = int(policy.trigger_fraction * limit)
        if before <= trigger and not force:
            return
        dicts = self.transcript()
        starts = exchange_starts(dicts)
        keep = policy.keep_recent_turns
        cut = starts[-keep] if len(starts) > keep else 0
        pruned_dicts, pruned = prune(dicts, cut, policy.prune_chars)
        for index, (old, new) in enumerate(zip(dicts, pruned_dicts, strict=True)):
            if old is not new:
                self.archive.append(old)
                self.contents[index] = to_contents([new])[0]
        after = estimate_tokens(pruned_dicts)
        summarised = 0
        if (after > trigger or force) and cut > 0:
            summarised = len([s for s in starts if s < cut])
            summary = await self._summarise(pruned_dicts[:cut])
            if summary is None:
                summarised = 0
            else:
                self.archive.extend(pruned_dicts[:cut])
                first = to_dict(self.contents[cut])
                note = {"text": SUMMARY_HEADER + summary}
                first = {**first, "parts": [note, *first.get("parts", [])]}
                self.contents = [*to_contents([first]), *self.contents[cut + 1 :]]
                after = estimate_tokens(self.transcript())
        if pruned or summarised:
            self.sent = (0, 0)
            yield Compacted(before, after, summarised, pruned)

    async def _summarise(self, old: list[dict[str, Any]]) -> str | None:
        """Ask the model for a summary of ``old`` (a separate call, counted in usage)."""
        if over_before_call(self.settings.usage_limits, self._spent()) is not None:
            return None
        model = self.settings.model
        config = model.config.model_copy(
            update={"tools": None, "tool_config": None, "system_instruction": None}
        )
        prompt = user_content(SUMMARY_PROMPT + summary_text(old))
        request = ModelRequest(model.name, [prompt], config, self.turns + 1)
        response: ModelResponse | None = None
        try:
            with self.trace.model_call(request) as span:
                async with contextlib.aclosing(model.call(request, stream=False)) as items:
                    async for item in items:
                        if isinstance(item, ModelResponse):
                            response = item
                            span.done(item)
        except CallFailed as failed:
            raise self._model_error(failed.info, 1) from None
        assert response is not None
        self.extra_usage.append(response.usage)
        self.usage = self.usage + response.usage
        return response.text or None

    # -- budgets and cost -------------------------------------------------------------------

    def _spent(self) -> Spent:
        """Return what the run has used so far, as `UsageLimits` count it."""
        limits = self.settings.usage_limits
        usd = self._cost().usd if limits is not None and limits.cost_usd is not None else None
        requests = self.turns + len(self.extra_usage)
        return Spent(requests, self.usage, len(self.tool_calls), usd)

    def _within_budget(self, step: RunCalls | Stop) -> RunCalls | Stop:
        """Return ``step``, or a `Stop` when its calls follow a turn past a usage limit."""
        if not isinstance(step, RunCalls):
            return step
        over = over_after_turn(self.settings.usage_limits, self._spent(), len(step.calls))
        if over is None:
            return step
        return Stop("incomplete", limit=over, refusal=f"Not run: the run reached its {over} limit.")

    def _cost(self) -> Cost:
        return run_cost(self.settings.model.name, self.turn_usage, self.extra_usage)

    # -- transcript and result --------------------------------------------------------------

    def transcript(self) -> list[dict[str, Any]]:
        """Return the transcript as JSON-ready Content dicts (camelCase wire keys)."""
        return [to_dict(content) for content in self.contents]

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
        """Snapshot the run as a `RunResult`."""
        spec = self.settings.output
        return RunResult(
            status=status,
            text=text,
            reason=reason,
            limit=limit,
            turns=self.turns,
            tool_calls=tuple(self.tool_calls),
            usage=self.usage,
            turn_usage=tuple(self.turn_usage),
            contents=self.transcript(),
            finish_reason=self.finish_reason,
            model=self.model_version or self.settings.model.name,
            pending=pending,
            retries=tuple(self.retries),
            output=output,
            output_json=spec.dump(output) if spec is not None else None,
            grounding=self.grounding,
            cost=self._cost(),
        )


def _label(info: ErrorInfo) -> str:
    """``"503 UNAVAILABLE"``: the code and status that are known."""
    return " ".join(str(part) for part in (info.code, info.status) if part is not None)
