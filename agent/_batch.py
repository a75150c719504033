"""The Gemini Batch engine: many runs, their model calls sent together in Batch API jobs.

Each task is an ordinary run (`Agent.plan`) whose `Steps` is a `TaskSteps`: the run's model
is wrapped (`Steps.model_for`) in a `BatchModel`, whose `call` hands the request to the
engine's `Collector` and waits for its response. Everything else of the run is the agent's
own: the retry policy, the capabilities (approval, usage limits, typed output, hooks,
tracing), the tools. So a task's transcript is the one the same run would have made calling
Gemini directly.

The engine has three parts: a task's side, its steps recorded and replayed (this module);
which calls go into which job, and when (`agent._batch_collector`); a job's life from its
creation to its results or its failure (`agent._batch_jobs`).

Restart safety: the `BatchState` file records each task's settled model calls and tool
results (and the jobs, with their results). A restarted engine replays a task's recorded
steps (no tool runs twice, no model call is paid twice) as long as its requests are the
ones recorded, and its calls rejoin the jobs they were in.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from agent._batch_collector import Collector
from agent._batch_jobs import BatchOptions, JobNote
from agent._batch_state import BatchState
from agent._batch_wire import Result, response_of
from agent._model import GeminiModel
from agent._response import requested_tier
from agent._retry import CallFailed, ErrorInfo
from agent.errors import ConfigurationError
from agent.events import RetryEvent, TextEvent, ThoughtEvent
from agent.steps import ModelFailure, Steps
from toolnexus import Attachment, ToolResult

if TYPE_CHECKING:
    from agent._capability import Capability
    from agent._contents import Content
    from agent._model import Model
    from agent._response import ModelResponse
    from agent.events import ToolCall
    from agent.hooks import ModelRequest
    from agent.steps import ModelItem, ToolStep

__all__ = [
    "BatchModel",
    "Engine",
    "TaskSteps",
    "check_capabilities",
    "check_model",
]


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
