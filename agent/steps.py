"""The durable-step seam: every side effect of a run goes through one `Steps` object.

A run's side effects are the model call, each tool call, waiting for a human's answer, the
clock and random ids. The loop hands each of them to ``Settings.steps`` instead of doing it
itself, so a durable engine can record each one as a step and, after a crash, hand back the
recorded outcome instead of doing it again. This module is the in-process default: every
step simply runs, and a run whose tool asks a question ends ``"pending"`` (as it always
has). ``agent.dbos`` implements the same methods on DBOS; nothing here imports it.

The rules an implementation relies on:

- `Steps.model` and `Steps.tool` get the work as a callable and decide whether to run it or
  to replay a recorded outcome; what comes back must be the same either way.
- `Steps.tool` is a plain method, called at the start of each function call in call order
  (before any hook can make the concurrent calls of a turn interleave), so an engine can
  number the call's step there; the step itself runs when the returned `ToolStep` is
  awaited.
- Outcomes cross the seam as values (a `ModelResponse` or a `ModelFailure`, a `ToolResult`),
  never as exceptions, so what a replay hands back needs no exception to be stored.
- `Steps.model_for` may put another model in front of the run's (the Gemini Batch engine
  sends the calls in batch jobs this way); the calls still go through the retry policy and
  the capabilities, so a run reads the same whichever model answers it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from agent._model import Model
    from agent._response import ModelResponse
    from agent._retry import ErrorInfo
    from agent.events import RetryEvent, TextEvent, ThoughtEvent, ToolCall
    from agent.hooks import ModelRequest
    from toolnexus import Answer, Request, ToolResult

__all__ = ["ModelFailure", "ModelItem", "Steps", "ToolStep"]


@dataclass(frozen=True, slots=True)
class ModelFailure:
    """The last item of a model call that failed for good (not retryable, or out of tries)."""

    info: ErrorInfo
    """What the last attempt failed with (the API key already scrubbed out)."""
    attempts: int
    """How many attempts were made."""


ModelItem: TypeAlias = "TextEvent | ThoughtEvent | RetryEvent | ModelResponse | ModelFailure"
"""What a model call yields: text pieces and retries as they happen, then one
`ModelResponse` or `ModelFailure`."""

ToolStep: TypeAlias = "Callable[[Callable[[], Awaitable[ToolResult]]], Awaitable[ToolResult]]"
"""Runs one execution of a tool (the callable it is given) as a step; see `Steps.tool`."""


class Steps:
    """Where a run's side effects happen: in process, each step just runs (the default).

    Subclass it to make runs durable (``agent.dbos`` does); the loop only ever calls these
    methods, so an engine sees every model call, tool call, human wait, clock reading and
    random id of a run.
    """

    durable: bool = False
    """Whether the steps outlive the process. A durable run's questions wait for
    `Steps.wait` only: the agent's in-process ``wait_for`` is not used."""

    def model(
        self, request: ModelRequest, call: Callable[[], AsyncGenerator[ModelItem, None]]
    ) -> AsyncGenerator[ModelItem, None]:
        """Make one model call (with its retries) and yield what it yields.

        Args:
            request: The request of the call (its ``turn`` numbers it within the run).
            call: Makes the call; yields pieces and retries, then one `ModelResponse` or
                `ModelFailure`.

        Returns:
            The items of the call, in order (a durable engine may replay recorded ones).
        """
        return call()

    def model_for(self, model: Model) -> Model:
        """Return the model the run's calls go to (``model``, the agent's, by default).

        Called once when the run is assembled. An engine that makes the calls elsewhere
        (``agent.batch`` sends them in Gemini Batch API jobs) returns a model that wraps
        ``model``: it builds requests the same way and answers `Model.call` its own way.

        Args:
            model: The run's model (the agent's, with the run's system prompt).

        Returns:
            The model every call of the run goes through.
        """
        return model

    def tool(self, call: ToolCall) -> ToolStep:
        """Return how executions of the tool behind ``call`` are run.

        Called once per function call, at its start and in call order; the returned
        `ToolStep` is awaited with the execution each time the tool runs (a second time
        when a suspended call is answered inline).

        Args:
            call: The function call the model asked for.

        Returns:
            A callable that runs the execution it is given and returns its result.
        """

        async def run(execute: Callable[[], Awaitable[ToolResult]]) -> ToolResult:
            return await execute()

        return run

    async def wait(self, request: Request) -> Answer | None:
        """Wait for a human's answer to a suspended tool's request.

        Called when a turn's tools asked a question and no inline ``wait_for`` answered it.
        In process there is nobody to wait for: ``None`` ends the run ``"pending"``, to be
        resumed later with the answer. A durable engine waits (for days if need be) for an
        answer sent from any process.

        Args:
            request: The request the run waits on.

        Returns:
            The answer, or ``None`` to end the run ``"pending"``.
        """
        return None

    async def now(self) -> float:
        """Return the wall-clock time in seconds since the epoch (recorded when durable)."""
        return time.time()

    async def new_id(self) -> str:
        """Return a new random id (recorded when durable, so a replay sees the same one)."""
        return uuid.uuid4().hex
