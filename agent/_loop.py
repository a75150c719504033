"""The one agent loop: fetch → classify → execute → decide, as an async generator of events.

`Run.events` is the only copy of the loop. `Agent.run` drains it and returns the `DoneEvent`
event's result; `Agent.stream` hands the events to the caller. The fetch step differs by
transport mode only (unary ``generateContent`` or ``streamGenerateContent``); both feed the
same classification, execution and decision steps.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from agent import _gemini
from agent._classify import Kind, call_signature, classify
from agent._result import Limit, RunResult, Status, ToolCallRecord, Usage
from agent._retry import RetryPolicy, retrying
from agent.errors import ConfigurationError, HookError, ModelError
from agent.events import (
    DoneEvent,
    Event,
    PendingEvent,
    RetryEvent,
    TextEvent,
    ThoughtEvent,
    ToolCall,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from agent.hooks import Hooks, ModelRequest, Veto
from toolnexus import Answer, Request, ToolContext, Toolkit, ToolResult

__all__ = ["Checkpoint", "Run", "Settings", "WaitFor"]

T = TypeVar("T")

logger = logging.getLogger("agent")

WaitFor = Callable[[Request], "Answer | Awaitable[Answer]"]
"""Answers a suspended tool's `Request` inline (sync or async)."""

Checkpoint = Callable[[list[dict[str, Any]], Request | None], Awaitable[None]]
"""Saves the transcript (and the request it waits on) after each completed turn."""


@dataclass(slots=True)
class Settings:
    """Everything a run needs from its agent; built once per agent."""

    model: str
    config: _gemini.Config
    toolkit: Toolkit
    hooks: Hooks
    wait_for: WaitFor | None
    max_turns: int
    retry: RetryPolicy
    malformed_retries: int
    empty_retries: int
    repeat_limit: int
    tool_timeout: float | None
    client: Callable[[], _gemini.Clients]


async def _maybe(value: T | Awaitable[T]) -> T:
    if inspect.isawaitable(value):
        return await value
    return value


def _response(result: ToolResult, *, pending: Request | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {"output": result.output, "isError": result.is_error}
    if pending is not None:
        response["pending"] = dict(pending)
    return response


class Run:
    """The state of one run and the loop that advances it."""

    def __init__(
        self,
        settings: Settings,
        prompt: str | None,
        history: Sequence[Any] | None,
        answer: Answer | None,
        save: Checkpoint | None = None,
        *,
        streaming: bool = False,
    ) -> None:
        self.s = settings
        self.streaming = streaming
        self._save = save
        self.answer = answer
        self.contents: list[_gemini.Content] = _gemini.to_contents(history or ())
        # History is converted like model turns (once, on first use), so the transcript
        # is always fresh camelCase JSON, whatever key style or bytes the caller passed.
        self.dicts: list[dict[str, Any] | None] = [None] * len(self.contents)
        self._prompt = prompt
        if prompt is None and not self.contents:
            raise ConfigurationError("run() needs a prompt, or a history to continue or resume")
        self.turns = 0
        self.usage = Usage()
        self.turn_usage: list[Usage] = []
        self.tool_calls: list[ToolCallRecord] = []
        self.retries: list[RetryEvent] = []
        self.finish_reason: str | None = None
        self.model_version: str | None = None
        self._fresh_retries: list[RetryEvent] = []
        self._reply: _gemini.Reply | None = None
        self._veto: str | None = None
        self._response: Any = None
        self._attempts = 0
        self._malformed = self._empty = self._repeats = 0
        self._last_calls: frozenset[tuple[str, str]] | None = None

    # -- the loop ---------------------------------------------------------------------------

    async def events(self) -> AsyncGenerator[Event, None]:
        """Run to the end, yielding every event; the last one is `DoneEvent`."""
        waiting = await self._resume_pending()
        if waiting is not None:
            yield PendingEvent(*waiting)
            yield await self._end(self.result("pending", pending=waiting[0]))
            return
        if self._prompt is not None:
            self._append(_gemini.user_content(self._prompt))
        while True:
            if self.turns >= self.s.max_turns:
                yield await self._end(self.result("incomplete", limit="max_turns"))
                return
            async with contextlib.aclosing(self._fetch()) as events:
                async for event in events:
                    yield event
            reply = self._reply
            if reply is None:
                yield await self._end(self.result("blocked", reason=self._veto))
                return
            for event in self._observe(reply):
                yield event
            outcome = classify(reply)
            end = self._decide(reply, outcome.kind, outcome.reason)
            if end is not None:
                yield await self._end(end)
                return
            if outcome.kind is Kind.CALLS:
                async with contextlib.aclosing(self._execute(reply.calls)) as events:
                    async for event in events:
                        yield event
                pending = self._first_pending()
                if pending is not None:  # already saved, with the turn
                    yield DoneEvent(self.result("pending", pending=pending))
                    return

    def _decide(self, reply: _gemini.Reply, kind: Kind, reason: str | None) -> RunResult | None:
        """Return the result that ends the run, or ``None`` to go on (ask again or run calls)."""
        if kind is Kind.MALFORMED:
            self._malformed += 1
            if self._malformed > self.s.malformed_retries:
                return self.result("incomplete", limit="malformed_function_call", reason=reason)
            return None
        if kind is Kind.EMPTY:
            self._empty += 1
            if self._empty > self.s.empty_retries:
                return self.result("incomplete", limit="empty_response")
            return None
        self._malformed = self._empty = 0
        if reply.content is not None and reply.content.parts:
            self._append(reply.content)
        if kind is Kind.BLOCKED or kind is Kind.MAX_TOKENS:
            if reply.calls:  # never run, but answered so the transcript stays valid history
                self._refuse(reply.calls, f"Not run: the turn ended with {reason}.")
            if kind is Kind.BLOCKED:
                return self.result("blocked", reason=reason, text=reply.text)
            return self.result("incomplete", limit="max_tokens", reason=reason, text=reply.text)
        if kind is Kind.FINAL:
            return self.result("completed", text=reply.text)
        signature = call_signature(reply.calls)
        self._repeats = self._repeats + 1 if signature == self._last_calls else 1
        self._last_calls = signature
        if self._repeats >= self.s.repeat_limit:
            self._refuse(
                reply.calls,
                f"Not run: this exact call was made {self.s.repeat_limit} turns in a row, "
                "so the run was stopped.",
            )
            return self.result("incomplete", limit="repeated_call")
        return None

    def _count(self, reply: _gemini.Reply) -> UsageEvent:
        """Count a response as a turn, with its usage (the model was called and billed)."""
        self.turns += 1
        self.turn_usage.append(reply.usage)
        self.usage = self.usage + reply.usage
        self.finish_reason = reply.finish_reason
        if reply.model_version:
            self.model_version = reply.model_version
        return UsageEvent(self.turns, reply.usage, self.usage)

    def _observe(self, reply: _gemini.Reply) -> list[Event]:
        """Count a response's usage; in unary mode also report its text and thoughts."""
        events: list[Event] = [self._count(reply)]
        if not self.streaming:
            events.extend(ThoughtEvent(text, self.turns) for text in reply.thoughts)
            events.extend(TextEvent(text, self.turns) for text in reply.texts)
        return events

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

    async def _fetch(self) -> AsyncGenerator[Event, None]:
        """Call the model (with retries); leave the parsed reply in ``self._reply``."""
        self._reply = None
        turn = self.turns + 1
        hooks = self.s.hooks
        # Hooks get a copy of the transcript list; without hooks nothing is copied.
        watched = hooks.before_model is not None or hooks.after_model is not None
        contents = list(self.contents) if watched else self.contents
        request = ModelRequest(self.s.model, contents, self.s.config, turn)
        if hooks.before_model is not None:
            changed = await self._hook("before_model", hooks.before_model, request)
            if isinstance(changed, Veto):
                self._veto = changed.reason
                return
            if changed is not None:
                request = changed
        failure: _gemini.ErrorInfo | None = None
        try:
            async with contextlib.aclosing(self._call(request)) as events:
                async for event in events:
                    yield event
        except Exception as exc:
            failure = _gemini.error_info(exc)
            if failure is None:
                raise
        if failure is not None:
            # Raised outside the handler, so the SDK error (whose body may echo the API key)
            # is neither the cause nor the context of the ModelError.
            raise self._model_error(failure)
        response = self._response
        if hooks.after_model is not None:
            changed = await self._hook("after_model", hooks.after_model, request, response)
            if isinstance(changed, Veto):
                self._veto = changed.reason
                yield self._count(_gemini.parse(response))  # vetoed, but billed all the same
                return
            if changed is not None:
                response = changed
        self._reply = _gemini.parse(response)

    def _model_error(self, failure: _gemini.ErrorInfo) -> ModelError:
        info = _gemini.scrubbed(failure, _gemini.api_key_of(self.s.client().genai))
        label = " ".join(str(p) for p in (info.code, info.status) if p is not None)
        return ModelError(
            code=info.code,
            status=info.status,
            message=info.message,
            attempts=self._attempts,
            result=self.result("incomplete", reason=label or "model error"),
        )

    async def _call(self, request: ModelRequest) -> AsyncGenerator[Event, None]:
        """Make the model call under the retry policy; leave the response in ``_response``.

        The first attempt runs without the retry machinery (most calls succeed); only a
        retryable failure starts it, replaying that failure as its first attempt.
        """
        genai_client = self.s.client().genai
        self._attempts = 1
        replay: list[Exception] = []
        try:
            async with contextlib.aclosing(self._attempt(genai_client, request)) as events:
                async for event in events:
                    yield event
            return
        except Exception as exc:
            info = _gemini.error_info(exc)
            if info is None or not info.retryable or self.s.retry.attempts < 2:
                raise
            replay.append(exc)
        async for attempt in retrying(self.s.retry, _gemini.error_info, self._on_retry):
            while self._fresh_retries:
                yield self._fresh_retries.pop(0)
            with attempt:
                if replay:
                    raise replay.pop()
                self._attempts += 1
                async with contextlib.aclosing(self._attempt(genai_client, request)) as events:
                    async for event in events:
                        yield event

    async def _attempt(self, client: Any, request: ModelRequest) -> AsyncGenerator[Event, None]:
        """One model call: unary, or streamed with text reported as it arrives."""
        if not self.streaming:
            self._response = await _gemini.generate(
                client, request.model, request.contents, request.config
            )
            return
        assembler = _gemini.Assembler()
        turn = self.turns + 1
        chunks = _gemini.stream(client, request.model, request.contents, request.config)
        async with contextlib.aclosing(chunks):
            async for chunk in chunks:
                for piece, thought in assembler.add(chunk):
                    yield ThoughtEvent(piece, turn) if thought else TextEvent(piece, turn)
        self._response = assembler.response()

    def _on_retry(self, attempt: int, delay: float, info: _gemini.ErrorInfo) -> None:
        info = _gemini.scrubbed(info, _gemini.api_key_of(self.s.client().genai))
        retry = RetryEvent(attempt, delay, info.code, info.status, self.turns + 1)
        # INFO, not WARNING: a library must not print by itself (Python's last-resort
        # handler shows warnings on stderr when the app set up no logging). Callers see
        # retries as `RetryEvent`s and in ``result.retries``.
        logger.info(
            "Gemini call failed (%s); retrying in %.1f s (attempt %d of %d)",
            " ".join(str(p) for p in (info.code, info.status) if p is not None),
            delay,
            attempt + 1,
            self.s.retry.attempts,
        )
        self.retries.append(retry)
        self._fresh_retries.append(retry)

    # -- execute ----------------------------------------------------------------------------

    async def _execute(self, calls: Sequence[_gemini.Call]) -> AsyncGenerator[Event, None]:
        """Run every call of a turn concurrently; append one user Content of the results.

        The turn is saved (see `_complete`) as soon as its last call finishes.
        """
        tool_calls = [
            ToolCall(call.name, call.args, call.id, self.turns, i) for i, call in enumerate(calls)
        ]
        for call in tool_calls:
            yield ToolCallEvent(call)
        results: list[tuple[dict[str, Any], ToolResult]] = []
        futures = [asyncio.ensure_future(self._run_call(call)) for call in tool_calls]
        index = {future: i for i, future in enumerate(futures)}
        try:
            waiting = set(futures)
            while waiting:
                done, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
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
        for call, (args, result) in zip(calls, results, strict=True):
            self.tool_calls.append(ToolCallRecord(call.name, args, call.id, result, call.turn))
            responses.append((call.id, call.name, _response(result, pending=result.pending)))
        self._append(_gemini.function_responses(responses))
        await self._checkpoint(self._first_pending())

    async def _run_call(
        self, call: ToolCall, answered: tuple[Request, Answer] | None = None
    ) -> tuple[dict[str, Any], ToolResult]:
        """One call: before-tool hook, the tool, an inline answer if asked, after-tool hook.

        ``answered`` re-runs a call that suspended in an earlier run with its answer.
        Returns the arguments the tool ran with and its result.
        """
        hooks = self.s.hooks
        args: dict[str, Any] = call.args
        result: ToolResult | None = None
        if hooks.before_tool is not None:
            changed = await self._hook("before_tool", hooks.before_tool, call)
            if isinstance(changed, ToolResult):
                result = changed
            elif changed is not None:
                args = dict(changed)
        if result is None and answered is not None:
            result = await self._answered(call, args, *answered)
        elif result is None:
            result = await self._tool(call, args, None)
            request = result.pending
            if request is not None and self.s.wait_for is not None:
                reply = await self._hook("wait_for", self.s.wait_for, request)
                result = await self._answered(call, args, request, reply)
        if hooks.after_tool is not None:
            changed = await self._hook("after_tool", hooks.after_tool, call, result)
            if changed is not None:
                result = changed
        return args, result

    async def _tool(
        self, call: ToolCall, args: dict[str, Any], answer: Answer | None
    ) -> ToolResult:
        context = ToolContext(timeout=self.s.tool_timeout, call_id=call.id, answer=answer)
        from toolnexus import execute_async  # loaded on the first tool call, not at import

        return await execute_async(self.s.toolkit, call.name, args, context)

    async def _answered(
        self, call: ToolCall, args: dict[str, Any], request: Request, answer: Answer
    ) -> ToolResult:
        """Re-run a suspended tool once with its answer; refusal or a second suspension fail."""
        if not answer.get("ok"):
            return ToolResult(
                f"The request was declined or expired: {request.get('prompt', '')}".rstrip(": "),
                is_error=True,
            )
        result = await self._tool(call, args, answer)
        if result.pending is not None:
            return ToolResult(
                f"Tool {call.name!r} asked again after its request {request['id']!r} was "
                "answered; giving up on this call.",
                is_error=True,
            )
        return result

    def _refuse(self, calls: Sequence[_gemini.Call], note: str) -> None:
        """Answer calls that are not run with an error, so the transcript stays valid history."""
        refused = _response(ToolResult(note, is_error=True))
        self._append(_gemini.function_responses([(c.id, c.name, refused) for c in calls]))

    # -- suspension -------------------------------------------------------------------------

    async def _checkpoint(self, pending: Request | None) -> None:
        """Hand the transcript to the session store, at a point where it is valid history."""
        if self._save is not None:
            await self._save(self.transcript(), pending)

    async def _end(self, result: RunResult) -> DoneEvent:
        await self._checkpoint(result.pending)
        return DoneEvent(result)

    def _first_pending(self) -> Request | None:
        for _, request in _gemini.pending_requests(self.contents[-1]):
            return request
        return None

    async def _resume_pending(self) -> tuple[Request, ToolCall] | None:
        """Answer what a suspended transcript waits on; return what still waits, if any.

        Each waiting request is answered by ``answer`` (matching id), else by ``wait_for``,
        else declined when a new prompt moves the conversation on; otherwise it still waits.
        """
        waiting = _gemini.pending_requests(self.contents[-1]) if self.contents else []
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
        calls = _gemini.calls_of(self.contents[-2]) if waiting and len(self.contents) > 1 else []
        still: tuple[Request, ToolCall] | None = None
        answered = False
        for index, request in waiting:
            if index >= len(calls):
                raise ConfigurationError("the history's pending function response has no call")
            source = calls[index]
            call = ToolCall(source.name, source.args, source.id, 0, index)
            if answer is not None and answer.get("id") == request["id"]:
                reply: Answer = answer
            elif self.s.wait_for is not None:
                reply = await self._hook("wait_for", self.s.wait_for, request)
            elif self._prompt is not None:
                reply = Answer(id=request["id"], ok=False)
            else:
                still = still or (request, call)
                continue
            args, result = await self._run_call(call, (request, reply))
            self.tool_calls.append(ToolCallRecord(call.name, args, call.id, result, call.turn))
            self._replace_last(
                _gemini.replace_response(self.contents[-1], index, _response(result))
            )
            answered = True
        if answered and still is None:
            await self._checkpoint(None)  # the answered tool ran: keep its result
        return still

    # -- transcript and result --------------------------------------------------------------

    def _append(self, content: _gemini.Content) -> None:
        self.contents.append(content)
        self.dicts.append(None)

    def _replace_last(self, content: _gemini.Content) -> None:
        self.contents[-1] = content
        self.dicts[-1] = None

    def transcript(self) -> list[dict[str, Any]]:
        """Return the transcript as JSON-ready dicts, converting each Content once."""
        for i, cached in enumerate(self.dicts):
            if cached is None:
                self.dicts[i] = _gemini.to_dict(self.contents[i])
        return list(self.dicts)  # type: ignore[arg-type]

    def result(
        self,
        status: Status,
        *,
        text: str = "",
        reason: str | None = None,
        limit: Limit | None = None,
        pending: Request | None = None,
    ) -> RunResult:
        """Snapshot the run as a `RunResult`."""
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
            model=self.model_version or self.s.model,
            pending=pending,
            retries=tuple(self.retries),
        )
