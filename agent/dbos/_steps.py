"""`DbosSteps`: the loop's side effects as DBOS steps, so a crashed run resumes where it was.

Inside a DBOS workflow, each model call (with its retries) is one step and each execution
of a tool is one step; the wait for a human's answer is a durable ``DBOS.recv`` that
survives restarts and takes only an answer bound to the request it waits on; the clock and
random ids are steps too. When DBOS recovers the workflow after a crash, every finished
step hands back its recorded outcome instead of running again, so a finished model call is
not made twice and a finished tool is not run twice.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from dbos import DBOS, StepReservation

from agent.dbos._events import EventLog, write_entry
from agent.steps import ModelItem, Steps, ToolStep
from toolnexus import ToolResult

if TYPE_CHECKING:
    from agent.events import ToolCall
    from agent.hooks import ModelRequest
    from toolnexus import Answer, Request, Toolkit

__all__ = ["ANSWER_TOPIC", "PENDING_EVENT", "DbosSteps"]

ANSWER_TOPIC = "toolnexus.answer"
"""The DBOS message topic a run's answers are sent on (see `agent.dbos.send`): each message
is an `Answer` whose ``id`` names the request it answers; the run drops any other."""

PENDING_EVENT = "toolnexus.pending"
"""The DBOS event holding the request a run waits on (``None`` once answered or timed out):
`agent.dbos.send` sends an answer only to the request it holds."""

logger = logging.getLogger("agent")

DEFAULT_ANSWER_TIMEOUT = 7 * 24 * 3600.0
"""Seconds a run waits for an answer before it ends ``"pending"``: a week."""


class DbosSteps(Steps):
    """The `Steps` of a run inside a DBOS workflow.

    Args:
        answer_timeout: Seconds to wait for an answer to a question; then the run ends
            ``"pending"`` (it can still be resumed with its history and the answer).
        model_queue: A rate-limited DBOS queue every model call waits its turn on (one
            tiny workflow per call), so a requests-per-minute budget holds across
            processes; ``None`` calls the model at once.
        toolkit: The run's tools: a tool not declared idempotent that a crash cut off is
            not run again (the model is told its effect is unknown).
    """

    durable = True

    def __init__(
        self,
        *,
        answer_timeout: float = DEFAULT_ANSWER_TIMEOUT,
        model_queue: str | None = None,
        toolkit: Toolkit | None = None,
    ) -> None:
        self.answer_timeout = answer_timeout
        self.model_queue = model_queue
        self.toolkit = toolkit
        """The run's tools, for their `Tool.idempotent` declarations."""
        self.events: EventLog | None = None
        """The run's events not written yet (`run_durably` sets it): written to its stream
        by each model call's step, before the call, and before each wait for an answer."""

    def model(
        self, request: ModelRequest, call: Callable[[], AsyncGenerator[ModelItem, None]]
    ) -> AsyncGenerator[ModelItem, None]:
        return self._model(call)

    async def _model(
        self, call: Callable[[], AsyncGenerator[ModelItem, None]]
    ) -> AsyncGenerator[ModelItem, None]:
        entry = self.events.take() if self.events is not None else None
        if self.model_queue is not None:
            handle = await DBOS.enqueue_workflow_async(self.model_queue, rate_permit)
            await handle.get_result()

        async def model_call() -> list[ModelItem]:
            if entry is not None:
                await write_entry(entry)  # the events of the turn before, as the call starts
            items = call()
            try:
                return [item async for item in items]
            finally:
                await items.aclose()

        # The pieces and retries come all at once, after the call: a durable run is not a
        # streaming one, and a replay must hand back exactly what the first run saw.
        for item in await DBOS.run_step_async({"name": "toolnexus.model_call"}, model_call):
            yield item

    def tool(self, call: ToolCall) -> ToolStep:
        # Numbered now, in call order: the concurrent calls of a turn may reach their tool
        # in any order (hooks, slow arguments), but each keeps its own steps.
        tool = self.toolkit.get(call.name) if self.toolkit is not None else None
        begin = None if tool is None or tool.idempotent else DBOS.reserve_step()
        reservation: StepReservation | None = DBOS.reserve_step()
        name = f"toolnexus.tool:{call.name}"

        async def run(execute: Callable[[], Awaitable[ToolResult]]) -> ToolResult:
            nonlocal reservation, begin
            if reservation is None:  # a second execution of the same call
                reservation = DBOS.reserve_step()
            current, reservation = reservation, None
            began = _PROCESS
            if begin is not None:
                # Recorded before the tool runs: a replay that finds it from another process
                # but no result knows the tool was cut off mid-call.
                began = await begin.run_async({"name": f"{name}:begin"}, _process)
                begin = None

            async def tool_call() -> ToolResult:
                if began != _PROCESS:
                    return _cut_off(call.name)
                return await execute()

            return await current.run_async({"name": name}, tool_call)

        return run

    async def wait(self, request: Request) -> Answer | None:
        if self.events is not None:
            await self.events.flush()  # the turn that asked, before the wait
        await DBOS.set_event_async(PENDING_EVENT, dict(request))
        answer = await self._answer(request)
        await DBOS.set_event_async(PENDING_EVENT, None)
        return answer

    async def _answer(self, request: Request) -> Answer | None:
        """Return the first message bound to ``request``, or ``None`` when time is up.

        A message bound to another request (a late or second answer to an earlier
        question, one meant for another run) or not made by `send` is dropped; the wait
        goes on until the same deadline, so such messages cannot stretch it.
        """
        deadline = await self.now() + self.answer_timeout
        while True:
            left = max(deadline - await self.now(), 0.0)
            message = await DBOS.recv_async(ANSWER_TOPIC, timeout_seconds=left)
            if message is None:
                return None
            answer = as_answer(message, request)
            if answer is not None:
                return answer
            logger.warning(
                "a durable run waiting on request %r dropped a message that does not answer it",
                request["id"],
            )

    async def now(self) -> float:
        return await DBOS.run_step_async({"name": "toolnexus.now"}, time.time)

    async def new_id(self) -> str:
        return await DBOS.run_step_async({"name": "toolnexus.new_id"}, _random_id)


def _random_id() -> str:
    return uuid.uuid4().hex


_PROCESS = uuid.uuid4().hex
"""This process, as the begin marker of a non-idempotent tool records it."""


def _process() -> str:
    return _PROCESS


def _cut_off(name: str) -> ToolResult:
    return ToolResult(
        f"The tool {name!r} was cut off by a crash before it finished, and it is not run "
        "again because it is not declared idempotent: whether it took effect is unknown. "
        "Check before calling it again.",
        is_error=True,
    )


ANSWER_KEYS = frozenset({"id", "ok", "data"})
"""The keys of a message `agent.dbos.send` delivers: an `Answer`."""


def as_answer(message: Any, request: Request) -> Answer | None:
    """Return the `Answer` to ``request`` that a message holds, or ``None`` when it holds none.

    A message answers ``request`` only when it is an answer bound to it, as `send` makes
    them: a mapping with the request's ``id``, a boolean ``ok`` and maybe ``data``, and no
    other key. Anything else is not an answer to this request: an answer to another
    request (late, sent twice, meant for another run), a bare value sent with
    ``DBOS.send``, an ``ok`` that is not a boolean.
    """
    if not isinstance(message, Mapping) or message.get("id") != request["id"]:
        return None
    if not isinstance(message.get("ok"), bool) or not ANSWER_KEYS.issuperset(message):
        return None
    answer: Answer = {"id": request["id"], "ok": message["ok"]}
    if "data" in message:
        answer["data"] = message["data"]
    return answer


async def _rate_permit() -> None:
    """Start and end at once: its start on a rate-limited queue is the permit to call."""


rate_permit = DBOS.workflow(name="toolnexus.rate_permit")(_rate_permit)
"""The workflow a model call enqueues on a rate-limited queue and waits for."""
