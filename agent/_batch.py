"""The Gemini Batch engine: many runs, their model calls sent together in Batch API jobs.

Each task is an ordinary run (`Agent.plan`) whose `Steps` is a `TaskSteps`: the run's model
is wrapped (`Steps.model_for`) in a `BatchModel`, whose `call` hands the request to the
engine's `Collector` and waits for its response. Everything else of the run is the agent's
own: the retry policy, the capabilities (approval, usage limits, typed output, hooks,
tracing), the tools. So a task's transcript is the one the same run would have made calling
Gemini directly.

The collector sends one job when every live task is waiting for a model response (or has
finished), or when a request has waited `BatchOptions.hold` seconds; then it polls the job
and hands each response back by its key, ``TASK:N`` (the task's N-th model call). The tasks
run their tools (at most `BatchOptions.tool_concurrency` tool calls at once) and come back
with their next requests: the next job. ``max_enqueued_tokens`` keeps the estimated tokens
of a model's jobs in flight under that bound: what does not fit waits for a later job.

Failures are model-call failures, so the retry policy decides: a per-request error of a
succeeded job fails that request only (retried when ``generateContent`` would retry it); a
job that ends failed, expired or cancelled fails each of its requests with a retryable
error naming the state, so its tasks go into the next job (the `RetryEvent` records why).

Restart safety: the `BatchState` file records each job before and after it is created, its
results when it ends, and each task's settled model calls and tool results. A restarted
engine replays a task's recorded steps (no tool runs twice, no model call is paid twice),
polls a job it had created instead of creating it again, and finds a job whose creation was
cut short by its display name.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agent._batch_state import BatchState, StoredJob
from agent._batch_wire import (
    INLINE_LIMIT,
    Entry,
    JobStatus,
    Result,
    create_job,
    entry,
    find_job,
    get_job,
    job_results,
    response_of,
)
from agent._model import GeminiModel
from agent._response import requested_tier
from agent._retry import CallFailed, ErrorInfo
from agent.errors import ConfigurationError
from agent.events import RetryEvent, TextEvent, ThoughtEvent
from agent.steps import ModelFailure, Steps
from toolnexus import Attachment, ToolResult

if TYPE_CHECKING:
    from google import genai

    from agent._capability import Capability
    from agent._contents import Content
    from agent._model import Model
    from agent._response import ModelResponse
    from agent.events import ToolCall
    from agent.hooks import ModelRequest
    from agent.steps import ModelItem, ToolStep

__all__ = [
    "BatchModel",
    "BatchOptions",
    "Collector",
    "Engine",
    "JobNote",
    "TaskSteps",
    "check_capabilities",
    "check_model",
]

logger = logging.getLogger("agent")

_RESULT_READS = 5
"""Reads of a succeeded job's results before its calls fail (and go into a new job)."""


@dataclass(frozen=True, slots=True)
class BatchOptions:
    """How the engine sends and follows its jobs."""

    poll_interval: float = 30.0
    """Seconds between two reads of a job's state."""
    max_enqueued_tokens: int | None = None
    """The most estimated tokens of one model's jobs in flight (``None``: no bound)."""
    tool_concurrency: int = 8
    """Tool calls running at the same time, over all tasks."""
    hold: float | None = 300.0
    """Seconds a request waits for the other tasks before its job goes anyway (``None``:
    until every live task waits)."""
    inline_limit: int = INLINE_LIMIT
    """Bytes of requests a job carries inline; a larger job goes through an uploaded file."""

    def __post_init__(self) -> None:
        if self.poll_interval < 0:
            raise ConfigurationError("poll_interval must be 0 or more seconds")
        if self.max_enqueued_tokens is not None and self.max_enqueued_tokens < 1:
            raise ConfigurationError("max_enqueued_tokens must be at least 1")
        if self.tool_concurrency < 1:
            raise ConfigurationError("tool_concurrency must be at least 1")
        if self.hold is not None and self.hold < 0:
            raise ConfigurationError("hold must be 0 or more seconds")


@dataclass(frozen=True, slots=True)
class JobNote:
    """Something that happened to a job (the engine's progress)."""

    kind: Literal["created", "resumed", "state", "ended"]
    """``"created"``, ``"resumed"`` (a restarted engine follows a job it had created),
    ``"state"`` (a new state was read) or ``"ended"``."""
    job: str
    """The job's name."""
    state: str
    """Its state (``JOB_STATE_...``)."""
    requests: int
    """How many requests it holds (of this engine's tasks)."""
    model: str
    """The model its requests go to."""
    source: str | None = None
    """``"inline"`` or ``"file"`` (for ``created``)."""


@dataclass(eq=False)
class _Waiter:
    """One model call waiting for its response."""

    key: str
    client: genai.Client
    model: str
    entry: Entry
    future: asyncio.Future[Result]

    @property
    def group(self) -> tuple[int, str]:
        """Calls of one group go in one job: same client, same model."""
        return id(self.client), self.model


@dataclass(eq=False)
class _Flight:
    """A job in flight and the calls waiting on it."""

    stored: StoredJob
    client: genai.Client
    waiters: list[_Waiter] = field(default_factory=list)
    tokens: int = 0
    runner: asyncio.Task[None] | None = None


class Collector:
    """Gathers the tasks' model calls into jobs, follows the jobs, hands back the results."""

    def __init__(
        self, options: BatchOptions, state: BatchState, note: Callable[[JobNote], None]
    ) -> None:
        self.options = options
        self.state = state
        self.note = note
        self.live = 0
        """Tasks that have started and not finished."""
        self.pending: list[_Waiter] = []
        """Calls waiting for the next job."""
        self.waiting: set[_Waiter] = set()
        """Calls without their answer: in the next job or in one in flight."""
        self.flights: dict[str, _Flight] = {}
        """Jobs in flight, by display name."""
        self.tokens: dict[str, int] = {}
        """Estimated tokens in flight, per model."""
        self._timer: asyncio.TimerHandle | None = None
        self._overdue = False

    # -- a task's call ------------------------------------------------------------------

    async def call(
        self, model: GeminiModel, key: str, request: ModelRequest, fresh: bool
    ) -> Result:
        """Send ``request`` in a job (or take its recorded result); return the result.

        Args:
            model: The run's model (its client and name).
            key: The call's key, ``TASK:N``.
            request: The request.
            fresh: Ignore what the state file recorded for this key (the task diverged).
        """
        recorded = None if fresh else self.state.results.get(key)
        if recorded is not None and recorded.error is None:
            return recorded  # its job ended before a restart, before the task read it
        client = model.clients.genai
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        waiter = _Waiter(key, client, model.name, entry(client, key, request), future)
        stored = None if fresh else self.state.unfinished_job_of(key)
        self.waiting.add(waiter)
        if stored is not None:
            self._follow_stored(stored, waiter)
        else:
            self._queue(waiter)
        try:
            return await future
        finally:  # cancelled while waiting: out of the next job
            self.waiting.discard(waiter)
            if waiter in self.pending:
                self.pending.remove(waiter)
                self.flush()

    def started(self, count: int) -> None:
        """Count ``count`` tasks as live (before any of them runs)."""
        self.live += count

    def finished(self) -> None:
        """Count a task out: the others may now be all that a job waits for."""
        self.live -= 1
        self.flush()

    def _queue(self, waiter: _Waiter) -> None:
        self.pending.append(waiter)
        if self._timer is None and self.options.hold is not None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self.options.hold, self._hold_passed)
        self.flush()

    def _hold_passed(self) -> None:
        self._timer = None
        self._overdue = True
        self.flush()

    # -- sending jobs -------------------------------------------------------------------

    def flush(self) -> None:
        """Send the pending calls if every live task waits (or a call waited too long)."""
        if self.pending and (len(self.waiting) >= self.live or self._overdue):
            groups: dict[tuple[int, str], list[_Waiter]] = {}
            for waiter in self.pending:
                groups.setdefault(waiter.group, []).append(waiter)
            for waiters in groups.values():
                chosen = self._fitting(waiters)
                if chosen:
                    self._send(chosen)
        if not self.pending:
            self._overdue = False
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def _fitting(self, waiters: list[_Waiter]) -> list[_Waiter]:
        """Return the calls that fit under the token bound now (in arrival order)."""
        bound = self.options.max_enqueued_tokens
        if bound is None:
            return waiters
        flying = self.tokens.get(waiters[0].model, 0)
        chosen: list[_Waiter] = []
        for waiter in waiters:
            if flying + waiter.entry.tokens > bound:
                break
            flying += waiter.entry.tokens
            chosen.append(waiter)
        if not chosen and not self.tokens.get(waiters[0].model):
            logger.warning(
                "a batch request of about %d tokens is over max_enqueued_tokens (%d); "
                "sending it in a job of its own",
                waiters[0].entry.tokens,
                bound,
            )
            chosen = waiters[:1]
        return chosen

    def _send(self, waiters: list[_Waiter]) -> None:
        sent = set(waiters)
        self.pending = [waiter for waiter in self.pending if waiter not in sent]
        display = f"toolnexus-{self.state.run}-{len(self.state.jobs) + 1}"
        stored = self.state.creating(display, waiters[0].model, [w.key for w in waiters])
        flight = self.flights[display] = _Flight(stored, waiters[0].client)
        for waiter in waiters:
            self._board(flight, waiter)
        flight.runner = asyncio.ensure_future(self._fly(flight, create=True))

    def _follow_stored(self, stored: StoredJob, waiter: _Waiter) -> None:
        """Attach a call to a job an earlier engine created; follow it if nobody does yet."""
        flight = self.flights.get(stored.display)
        if flight is None:
            flight = self.flights[stored.display] = _Flight(stored, waiter.client)
            flight.runner = asyncio.ensure_future(self._fly(flight, create=False))
        self._board(flight, waiter)

    def _board(self, flight: _Flight, waiter: _Waiter) -> None:
        flight.waiters.append(waiter)
        flight.tokens += waiter.entry.tokens
        model = flight.stored.model
        self.tokens[model] = self.tokens.get(model, 0) + waiter.entry.tokens

    # -- following a job ----------------------------------------------------------------

    async def _fly(self, flight: _Flight, *, create: bool) -> None:
        """Create (or find) the job, follow it to its end, hand its results to the calls."""
        try:
            status = await (self._create(flight) if create else self._resume(flight))
            if status is not None:
                await self._settle(flight, await self._poll(flight, status))
        except CallFailed as failed:
            self._answer(flight.waiters, failed.info)
        finally:
            self.tokens[flight.stored.model] -= flight.tokens
            del self.flights[flight.stored.display]
            self.flush()

    async def _create(self, flight: _Flight) -> JobStatus:
        stored = flight.stored
        entries = [w.entry for w in flight.waiters]
        try:
            status, source = await create_job(
                flight.client,
                stored.model,
                entries,
                stored.display,
                inline_limit=self.options.inline_limit,
                poll=self.options.poll_interval,
            )
        except CallFailed as failed:
            if failed.info.code is not None:  # the API answered: no job was made
                self.state.ended(stored, "NOT_CREATED", [])
            # Else (a network failure) the job may exist: a retry of its calls finds it
            # by its display name before it makes another.
            raise
        self.state.created(stored, status.name)
        self._note("created", flight, status, source)
        return status

    async def _resume(self, flight: _Flight) -> JobStatus | None:
        """Find the job an earlier engine created; ``None`` when it never was (calls re-queued)."""
        stored = flight.stored
        if stored.name is None:
            name = await find_job(flight.client, stored.display)
            if name is None:
                self.state.ended(stored, "NOT_CREATED", [])
                waiters, flight.waiters = flight.waiters, []
                for waiter in waiters:
                    self._queue(waiter)
                return None
            self.state.created(stored, name)
        assert stored.name is not None
        status = await self._get(flight, stored.name)
        self._note("resumed", flight, status)
        return status

    async def _poll(self, flight: _Flight, status: JobStatus) -> JobStatus:
        """Read the job's state every `poll_interval` seconds until it ends."""
        while not status.ended:
            await asyncio.sleep(self.options.poll_interval)
            before = status.state
            status = await self._get(flight, status.name)
            if status.state != before:
                self._note("state", flight, status)
        return status

    async def _get(self, flight: _Flight, name: str) -> JobStatus:
        """Read a job: a network failure reads it again; a lost job re-queues its calls."""
        while True:
            try:
                return await get_job(flight.client, name)
            except CallFailed as failed:
                if failed.info.code == 404:
                    self.state.ended(flight.stored, "JOB_LOST", [])
                    raise CallFailed(_requeued(name, "JOB_LOST", "is gone (404)")) from None
                if not failed.info.retryable:
                    raise
                logger.info("reading batch job %s failed (%s); again", name, failed.info.message)
            await asyncio.sleep(max(self.options.poll_interval, 1.0))

    async def _settle(self, flight: _Flight, status: JobStatus) -> None:
        """Record how the job ended and hand each call its result (or its failure)."""
        results = await self._results(flight, status) if status.succeeded else []
        self.state.ended(flight.stored, status.state, results)
        self._note("ended", flight, status)
        if not status.succeeded:
            state = status.state.removeprefix("JOB_STATE_")
            self._answer(flight.waiters, _requeued(status.name, status.state, f"ended {state}"))
            return
        found = {result.key: result for result in results}
        for waiter in flight.waiters:
            # A request the job did not answer fails like a lost call, and is retried.
            self._answer([waiter], found.get(waiter.key) or Result(waiter.key))

    async def _results(self, flight: _Flight, status: JobStatus) -> list[Result]:
        """Read a succeeded job's results; a network failure reads them again (a few times)."""
        for _ in range(_RESULT_READS - 1):
            try:
                return await job_results(flight.client, status)
            except CallFailed as failed:
                if not failed.info.retryable:
                    raise
                logger.info("reading the results of %s failed; again", status.name)
            await asyncio.sleep(max(self.options.poll_interval, 1.0))
        return await job_results(flight.client, status)

    def _answer(self, waiters: Sequence[_Waiter], outcome: Result | ErrorInfo) -> None:
        """Hand the calls their result or failure: they wait no longer."""
        for waiter in waiters:
            self.waiting.discard(waiter)
            if waiter.future.done():
                continue
            if isinstance(outcome, ErrorInfo):
                waiter.future.set_exception(CallFailed(outcome))
            else:
                waiter.future.set_result(outcome)

    def _note(
        self,
        kind: Literal["created", "resumed", "state", "ended"],
        flight: _Flight,
        status: JobStatus,
        source: str | None = None,
    ) -> None:
        requests = len(flight.waiters) or len(flight.stored.keys)
        self.note(JobNote(kind, status.name, status.state, requests, flight.stored.model, source))

    async def aclose(self) -> None:
        """Stop following the jobs (they go on at Gemini; a restarted engine picks them up)."""
        runners = [f.runner for f in self.flights.values() if f.runner is not None]
        for runner in runners:
            runner.cancel()
        if runners:
            await asyncio.wait(runners)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _requeued(name: str, status: str, what: str) -> ErrorInfo:
    """Return the failure of calls their job did not answer: retried at once, next job."""
    return ErrorInfo(
        None,
        status,
        f"the batch job {name} {what}; its requests go into the next job",
        retryable=True,
        delay=0.0,
    )


# --------------------------------------------------------------------------- a task


class BatchModel:
    """The run's model, with its calls answered by batch jobs (`Model` protocol)."""

    def __init__(self, inner: GeminiModel, steps: TaskSteps) -> None:
        self.inner = inner
        self.steps = steps
        self.name = inner.name
        self.vertex = inner.vertex
        self.base_url = inner.base_url

    def request(self, contents: list[Content], turn: int) -> ModelRequest:
        """Return the request of model turn ``turn`` (the agent's)."""
        return self.inner.request(contents, turn)

    def summary_request(self, contents: list[Content], turn: int) -> ModelRequest:
        """Return a summary request (the agent's)."""
        return self.inner.summary_request(contents, turn)

    def parse(self, raw: Any) -> ModelResponse:
        """Read a raw response (the agent's way)."""
        return self.inner.parse(raw)

    async def input_limit(self, wanted: int) -> int:
        """Return the model's input-token limit."""
        return await self.inner.input_limit(wanted)

    async def upload_over_limit(
        self, content: Content, *, room: int | None = None, notes: bool = False
    ) -> Content:
        """Move large inline files to the Files API (a batch request may name them too)."""
        return await self.inner.upload_over_limit(content, room=room, notes=notes)

    async def call(
        self, request: ModelRequest, *, stream: bool
    ) -> AsyncGenerator[TextEvent | ThoughtEvent | ModelResponse, None]:
        """Send the request in the next job; yield its pieces, then the response.

        Raises:
            CallFailed: The job failed the request, or ended without answering it.
        """
        steps = self.steps
        result = await steps.engine.collector.call(self.inner, steps.key, request, steps.fresh)
        for item in pieces(response_of(result), request.turn):
            yield item


def pieces(response: ModelResponse, turn: int) -> list[TextEvent | ThoughtEvent | ModelResponse]:
    """Return what a unary call yields: the thought and text pieces, then the response."""
    found: list[TextEvent | ThoughtEvent | ModelResponse] = [
        ThoughtEvent(thought, turn) for thought in response.thoughts
    ]
    found.extend(TextEvent(text, turn) for text in response.texts)
    found.append(response)
    return found


class TaskSteps(Steps):
    """The steps of one task: model calls go in batch jobs; settled steps are recorded.

    A task whose steps the state file holds replays them (no tool runs twice, no model
    call is sent twice) as long as its requests are the ones recorded; from the first that
    differs (the task was changed), it runs afresh.
    """

    def __init__(self, engine: Engine, task: str) -> None:
        self.engine = engine
        self.task = task
        self.calls = 0
        """Model calls made (or replayed) so far."""
        self.tools = 0
        """Tool calls started (or replayed) so far."""
        self.key = ""
        """The key of the model call being made, ``TASK:N``."""
        self.fresh = False
        """The task no longer matches what the state file recorded: nothing is replayed."""

    def model_for(self, model: Model) -> Model:
        """Return the batch model in front of the run's Gemini model.

        Raises:
            ConfigurationError: The model is not one the Batch API serves this way.
        """
        return BatchModel(check_model(model), self)

    def model(
        self, request: ModelRequest, call: Callable[[], AsyncGenerator[ModelItem, None]]
    ) -> AsyncGenerator[ModelItem, None]:
        """Replay the call as recorded, or make it (through the batch) and record it."""
        self.calls += 1
        return self._model(self.calls, request, call)

    async def _model(
        self,
        number: int,
        request: ModelRequest,
        call: Callable[[], AsyncGenerator[ModelItem, None]],
    ) -> AsyncGenerator[ModelItem, None]:
        state = self.engine.state
        digest = _digest(request)
        recorded = None if self.fresh else state.calls.get((self.task, number))
        if recorded is not None and recorded.get("hash") == digest:
            replayed = _replay(recorded, state.results.get(f"{self.task}:{number}"), request)
            if replayed is not None:
                for item in replayed:
                    yield item
                return
        if recorded is not None and recorded.get("hash") != digest:
            self.fresh = True  # the task changed since: nothing recorded applies from here
        self.key = f"{self.task}:{number}"
        retries: list[dict[str, Any]] = []
        failure: ModelFailure | None = None
        async with contextlib.aclosing(call()) as items:
            async for item in items:
                if isinstance(item, RetryEvent):
                    retries.append(item.to_dict())
                elif isinstance(item, ModelFailure):
                    failure = item
                yield item
        state.record(
            {
                "task": self.task,
                "call": number,
                "hash": digest,
                "retries": retries,
                "failure": _failure_json(failure),
            }
        )

    def tool(self, call: ToolCall) -> ToolStep:
        """Return the tool call's step: its recorded result, or a run (then recorded)."""
        self.tools += 1
        number = self.tools
        runs = 0

        async def run(execute: Callable[[], Awaitable[ToolResult]]) -> ToolResult:
            nonlocal runs
            runs += 1
            key = f"{number}.{runs}"
            recorded = None if self.fresh else self.engine.state.tools.get((self.task, key))
            if recorded is not None:
                return _tool_result(recorded["result"])
            async with self.engine.tool_slots:
                result = await execute()
            line = {"task": self.task, "tool": key, "result": _tool_json(result)}
            self.engine.state.record(line)
            return result

        return run


def check_model(model: Model) -> GeminiModel:
    """Return ``model`` if its calls can go in Gemini Batch API jobs.

    Raises:
        ConfigurationError: It is not a Gemini API model, or it asks for a service tier.
    """
    from agent._routing import ModelChain

    if isinstance(model, ModelChain):
        raise ConfigurationError(
            "the Gemini Batch engine sends every call of a run to one model: an agent with "
            "a list of models (fallback) or a prepare_turn hook (a model per turn) runs on "
            "the local or dbos engine"
        )
    if not isinstance(model, GeminiModel):
        raise ConfigurationError(
            f"the Gemini Batch engine runs Gemini models; got {type(model).__name__}"
        )
    if model.vertex:
        raise ConfigurationError(
            "the Gemini Batch engine drives the Gemini API's batchGenerateContent; a Vertex "
            "AI client is not supported (Vertex batch prediction reads Cloud Storage or "
            "BigQuery)"
        )
    if requested_tier(model.config) is not None:
        raise ConfigurationError(
            "the Gemini Batch engine bills every request at the batch price; drop "
            "ModelSettings(service_tier=...) (a service tier is for direct calls)"
        )
    return model


def check_capabilities(capabilities: Sequence[Capability]) -> None:
    """Refuse the features that cannot work when calls wait hours in a job.

    Raises:
        ConfigurationError: The agent has a `ContextCache` (a job runs hours after it is
            sent, past a cache's life; its requests are half price already).
    """
    from agent._caching import ContextCache

    if any(isinstance(capability, ContextCache) for capability in capabilities):
        raise ConfigurationError(
            "the Gemini Batch engine does not take an agent with a ContextCache: a job may "
            "run hours after it is sent, past the cache's life (and its requests are half "
            "price already); give the batch's agent no ContextCache"
        )


def _digest(request: ModelRequest) -> str:
    """Fingerprint a request: a recorded call replays only for the same request."""
    contents = [c.model_dump(mode="json", exclude_none=True) for c in request.contents]
    config = request.config.model_dump(mode="json", exclude_none=True)
    text = json.dumps([request.model, contents, config], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _replay(
    recorded: dict[str, Any], result: Result | None, request: ModelRequest
) -> list[ModelItem] | None:
    """Return the items a recorded call yielded; ``None`` when its response is missing."""
    items: list[ModelItem] = [RetryEvent(**retry) for retry in recorded.get("retries") or ()]
    failure = recorded.get("failure")
    if failure is not None:
        info = ErrorInfo(**failure["info"])
        items.append(ModelFailure(info, int(failure["attempts"])))
        return items
    if result is None or result.error is not None:
        return None
    try:
        response = response_of(result)
    except CallFailed:
        return None
    items.extend(pieces(response, request.turn))
    return items


def _failure_json(failure: ModelFailure | None) -> dict[str, Any] | None:
    if failure is None:
        return None
    return {"info": failure.info._asdict(), "attempts": failure.attempts}


def _tool_json(result: ToolResult) -> dict[str, Any]:
    """Return a tool result as JSON (metadata values JSON cannot hold become text)."""
    return {
        "output": result.output,
        "is_error": result.is_error,
        "metadata": json.loads(json.dumps(result.metadata, default=str)),
        "attachments": [
            {
                "mime_type": a.mime_type,
                "data": base64.b64encode(a.data).decode() if a.data is not None else None,
                "uri": a.uri,
                "name": a.name,
            }
            for a in result.attachments
        ],
    }


def _tool_result(data: dict[str, Any]) -> ToolResult:
    attachments = tuple(
        Attachment(
            a["mime_type"],
            data=base64.b64decode(a["data"]) if a.get("data") is not None else None,
            uri=a.get("uri"),
            name=a.get("name"),
        )
        for a in data.get("attachments") or ()
    )
    return ToolResult(
        str(data["output"]), bool(data["is_error"]), data.get("metadata"), attachments
    )


# --------------------------------------------------------------------------- the engine


class Engine:
    """One run of many tasks through batch jobs: the state file, the collector, the tools."""

    def __init__(
        self, options: BatchOptions, state: BatchState, note: Callable[[JobNote], None]
    ) -> None:
        self.options = options
        self.state = state
        self.collector = Collector(options, state, note)
        self.tool_slots = asyncio.Semaphore(options.tool_concurrency)

    def steps(self, task: str) -> TaskSteps:
        """Return the steps of task ``task`` (its id keys its calls and its records)."""
        return TaskSteps(self, task)
