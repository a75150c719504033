"""Sub-agents: an `Agent` as a tool of another (`Agent.as_tool`).

The tool takes ``{"task": string}`` and runs the sub-agent's own conversation (its own model,
tools, system prompt and limits) on that task, with the parent run's ``deps``. While it
runs, its events reach the parent's stream as `SubAgentEvent` events through the parent run's
`Inbox`, found in a context variable the parent sets around its tool calls; its usage is
added to the parent's. When the sub-agent suspends (a question, an approval), the tool
suspends on the same request, carrying the sub-agent's transcript in ``Request.state``; the
answer re-runs the tool, which resumes the sub-agent where it stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent.events import DoneEvent, Event, SubAgentEvent
from toolnexus import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from agent._agent import Agent
    from agent._result import RunResult, Usage

__all__ = ["DEFAULT_MAX_DEPTH", "Inbox", "current_inbox", "installed", "subagent_tool"]

DEFAULT_MAX_DEPTH = 3
"""How deep sub-agents may nest by default (a sub-agent of a sub-agent is depth 2)."""

_INBOX: contextvars.ContextVar[Inbox | None] = contextvars.ContextVar("agent_inbox", default=None)


@dataclass
class Inbox:
    """Where the sub-agents of one run's tool calls deliver their events and usage."""

    depth: int
    """The depth of the run that owns the inbox (0 for a top-level run)."""
    streaming: bool
    """Whether that run streams (sub-agents then stream too)."""
    charge: Callable[[Usage], None]
    """Adds a sub-agent's usage to the owning run's."""
    events: list[Event] = field(default_factory=list)
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def put(self, event: Event) -> None:
        """Deliver one event (the owner yields it at its next chance)."""
        self.events.append(event)
        self._arrived.set()

    def drain(self) -> list[Event]:
        """Return and forget the events delivered so far."""
        events, self.events = self.events, []
        self._arrived.clear()
        return events

    async def wait(
        self, futures: set[asyncio.Future[Any]]
    ) -> tuple[set[asyncio.Future[Any]], set[asyncio.Future[Any]]]:
        """Wait until one of ``futures`` is done or an event arrives; return (done, waiting)."""
        if self.events:
            return set(), futures
        arrival = asyncio.ensure_future(self._arrived.wait())
        try:
            done, waiting = await asyncio.wait(
                {*futures, arrival}, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            arrival.cancel()
        done.discard(arrival)
        waiting.discard(arrival)
        return done, waiting


def current_inbox() -> Inbox | None:
    """Return the inbox of the run whose tool call is running here, if any."""
    return _INBOX.get()


@contextlib.contextmanager
def installed(inbox: Inbox) -> Iterator[None]:
    """Make ``inbox`` the current one for tasks created inside the block."""
    token = _INBOX.set(inbox)
    try:
        yield
    finally:
        _INBOX.reset(token)


def subagent_tool(agent: Agent, name: str, description: str, max_depth: int) -> Tool:
    """Return ``agent`` as a tool taking ``{"task": string}`` (see `Agent.as_tool`)."""

    async def handler(args: dict[str, Any], context: ToolContext) -> ToolResult:
        parent = current_inbox()
        depth = (parent.depth if parent else 0) + 1
        if depth > max_depth:
            return ToolResult(
                f"Sub-agent {name!r} was not started: sub-agents may nest {max_depth} deep "
                "at most. Do this task yourself.",
                is_error=True,
            )
        state = context.request.get("state") if context.request is not None else None
        if isinstance(state, dict) and context.answer is not None:
            task, history = None, state.get("contents")
        else:
            task, history = str(args["task"]), None
        result = await _run(agent, name, depth, parent, task, history, context)
        return _outcome(name, result)

    schema = {
        "type": "object",
        "properties": {
            "task": {
                "type": "string",
                "description": "The task, with everything the sub-agent needs to know.",
            }
        },
        "required": ["task"],
    }
    return Tool(name, handler, description, schema, source="agent")


async def _run(
    agent: Agent,
    name: str,
    depth: int,
    parent: Inbox | None,
    task: str | None,
    history: list[dict[str, Any]] | None,
    context: ToolContext,
) -> RunResult:
    """Run (or resume) the sub-agent; hand its events and usage to the parent run."""
    streaming = parent.streaming if parent else False
    answer = context.answer if history is not None else None
    events = agent._events(task, history, answer, None, context.deps, streaming=streaming)
    result: RunResult | None = None
    async with contextlib.aclosing(events):
        async for event in events:
            if isinstance(event, DoneEvent):
                result = event.result
            if parent is not None:
                nested = event if isinstance(event, SubAgentEvent) else None
                parent.put(nested or SubAgentEvent(name, depth, event))
    assert result is not None
    if parent is not None:
        parent.charge(result.usage)
    return result


def _outcome(name: str, result: RunResult) -> ToolResult:
    """Turn the sub-agent's result into the tool's: its answer, a suspension, or an error."""
    if result.status == "pending" and result.pending is not None:
        request = {**result.pending, "state": {"agent": name, "contents": result.contents}}
        return ToolResult(
            f"Sub-agent {name!r} is waiting for an answer.", metadata={"pending": request}
        )
    if result.status == "completed":
        output = getattr(result, "output", None)
        if output is not None and not isinstance(output, str):
            return ToolResult(_json(output))
        return ToolResult(result.text)
    detail = result.limit or result.reason or ""
    partial = f" Its last text: {result.text}" if result.text else ""
    return ToolResult(
        f"Sub-agent {name!r} did not finish ({result.status}: {detail}).{partial}",
        is_error=True,
    )


def _json(value: Any) -> str:
    dump = getattr(value, "model_dump_json", None)
    if callable(dump):
        return str(dump())
    return json.dumps(value, ensure_ascii=False, default=str)
