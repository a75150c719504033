"""Agents as MCP tools: a call runs the agent on a task, in a conversation of its own.

A served agent takes ``{"task": string, "session_id"?: string}`` and runs through its plan
like every other entry point, with one difference: when a tool call needs a human (an
approval its policy asks for, the ``question`` tool, a sub-agent's question), the run waits
through `Steps.wait` for the MCP client's answer (`ServedCall.ask`) and goes on in the same
run, so its limits (turns, usage, deadline) hold for the whole of it. Its events become
the call's status (progress notifications, a task's ``statusMessage``).

Conversations (`Conversations`): a call without ``session_id`` starts a new one under an
unguessable id the server makes up, and the result says it; a later call passes it back
to continue. In the agent's memory (the default) such an id is bound to the connection
that started it (when the transport has connections) and the oldest are forgotten past
`MAX_CONVERSATIONS`; with a persistent store (``SqliteStore``), ``session_id`` names a
stored conversation, continued if it exists and started if not, from any connection.
"""

from __future__ import annotations

import json
import secrets
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp_types as types

from agent._mcp_calls import error_result, scrubbed
from agent._store import MemoryStore
from agent.errors import ConfigurationError, RunError, SessionError
from agent.events import (
    Compacted,
    DoneEvent,
    Event,
    PendingEvent,
    RetryEvent,
    SubAgentEvent,
    TextEvent,
    ThoughtEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from agent.steps import Steps

if TYPE_CHECKING:
    from agent._agent import Agent
    from agent._mcp_calls import ServedCall
    from agent._result import RunResult
    from toolnexus import Answer, Request

__all__ = ["MAX_CONVERSATIONS", "SESSION_META", "AgentTool", "Conversations", "agent_schema"]

MAX_CONVERSATIONS = 1000
"""In-memory conversations kept at most; past it the least recently used is forgotten."""
SESSION_META = "toolnexus/session_id"
"""The ``_meta`` key of an agent result that holds its conversation's id."""


def agent_schema() -> dict[str, Any]:
    """Return the input schema of an agent tool: a task, and a conversation to continue."""
    return {
        "type": "object",
        "properties": {
            "task": {
                "type": "string",
                "description": "The task, with everything the agent needs to know.",
            },
            "session_id": {
                "type": "string",
                "description": (
                    "The session_id an earlier call's result gave: continue that conversation "
                    "(omit it to start a new one)."
                ),
            },
        },
        "required": ["task"],
    }


@dataclass(frozen=True, slots=True)
class _Made:
    """An in-memory conversation this server started."""

    agent: str
    """The agent's tool name."""
    owner: str | None
    """The connection that started it (``None`` when the transport has none)."""
    store: MemoryStore
    """Where the agent keeps it."""


class Conversations:
    """Which conversation each agent call runs in (see the module docstring)."""

    def __init__(self) -> None:
        self._made: OrderedDict[str, _Made] = OrderedDict()
        """In-memory conversations started here, least recently used first."""

    async def open(
        self, name: str, agent: Agent, session_id: str | None, owner: str | None
    ) -> str | None:
        """Return the session to run in, or ``None`` when ``session_id`` names none we hold.

        Args:
            name: The agent's tool name.
            agent: The agent (its store decides memory or persistent).
            session_id: What the client passed, if anything.
            owner: The connection asking (``None`` when the transport has none).
        """
        store = agent.store
        if session_id is None:
            session_id = f"{name}-{secrets.token_urlsafe(18)}"
            if isinstance(store, MemoryStore):
                await self._started(session_id, _Made(name, owner, store))
            return session_id
        if not isinstance(store, MemoryStore):
            return session_id
        made = self._made.get(session_id)
        if made is None or (made.agent, made.owner) != (name, owner):
            return None
        self._made.move_to_end(session_id)
        return session_id

    async def _started(self, session_id: str, made: _Made) -> None:
        """Note a new conversation; past `MAX_CONVERSATIONS`, forget the least recently used."""
        self._made[session_id] = made
        while len(self._made) > MAX_CONVERSATIONS:
            oldest, gone = self._made.popitem(last=False)
            await gone.store.delete(oldest)


class _AskTheClient(Steps):
    """In-process steps whose waits for a human go to the MCP client of the call."""

    def __init__(self, call: ServedCall) -> None:
        self.call = call

    async def wait(self, request: Request) -> Answer | None:
        return await self.call.ask(request)


class AgentTool:
    """One agent served as an MCP tool.

    Args:
        name: The tool name.
        description: When to hand it a task.
        agent: The agent.
        conversations: The server's conversations.
    """

    def __init__(
        self, name: str, description: str, agent: Agent, conversations: Conversations
    ) -> None:
        self.name = name
        self.description = description
        self.agent = agent
        self.conversations = conversations

    def declared(self) -> types.Tool:
        """Return the MCP declaration of the agent tool."""
        return types.Tool(name=self.name, description=self.description, input_schema=agent_schema())

    async def run(
        self, args: Mapping[str, Any], call: ServedCall, owner: str | None
    ) -> types.CallToolResult:
        """Run the agent on ``args["task"]`` and return its answer (or why it has none)."""
        task, session_id = args.get("task"), args.get("session_id")
        if not isinstance(task, str) or not task.strip():
            return error_result(f"Agent {self.name!r} needs a `task`: a non-empty string.")
        if session_id is not None and not isinstance(session_id, str):
            return error_result(f"Agent {self.name!r}: `session_id` must be a string.")
        session = await self.conversations.open(self.name, self.agent, session_id, owner)
        if session is None:
            return error_result(
                f"Agent {self.name!r} has no conversation {session_id!r} for this connection "
                "(use the session_id an earlier call returned, or leave it out to start one)."
            )
        try:
            result = await self._result(task, session, call)
        except RunError as exc:
            return _with_session(
                error_result(f"Agent {self.name!r} failed: {scrubbed(str(exc))}"), session
            )
        except (ConfigurationError, SessionError) as exc:
            return error_result(f"Agent {self.name!r} could not run: {scrubbed(str(exc))}")
        return _with_session(_outcome(self.name, result), session)

    async def _result(self, task: str, session: str, call: ServedCall) -> RunResult:
        plan = self.agent.plan(task, session=session, steps=_AskTheClient(call), name=self.name)
        call.note(f"running the agent {self.name!r}")
        result: RunResult | None = None
        async for event in plan.events():
            status = summary(event)
            if status is not None:
                call.note(status)
            if isinstance(event, DoneEvent):
                result = event.result
        assert result is not None  # the last event of every run
        return result


def summary(event: Event) -> str | None:
    """Return what an event says the run is doing, in a few words (``None``: nothing new)."""
    if isinstance(event, SubAgentEvent):
        inner = summary(event.event)
        return None if inner is None else f"{event.agent}: {inner}"
    if isinstance(event, ToolCallEvent):
        return f"turn {event.call.turn}: calling {event.call.name}"
    if isinstance(event, ToolResultEvent):
        verb = "failed" if event.result.is_error else "done"
        return f"turn {event.call.turn}: {event.call.name} {verb}"
    if isinstance(event, TextEvent):
        return f"turn {event.turn}: writing the answer"
    if isinstance(event, ThoughtEvent):
        return f"turn {event.turn}: thinking"
    if isinstance(event, PendingEvent):
        return f"waiting for an answer to {event.call.name}"
    if isinstance(event, RetryEvent):
        return f"turn {event.turn}: model call failed ({event.code or event.status}), retrying"
    if isinstance(event, Compacted):
        return "compacted the conversation"
    return None


def _outcome(name: str, result: RunResult) -> types.CallToolResult:
    """Return a completed run's final text (and typed output), else why it stopped."""
    if result.status == "completed":
        structured = _structured(result.output_json)
        text = result.text if structured is None else json.dumps(structured, ensure_ascii=False)
        return types.CallToolResult(
            content=[types.TextContent(text=scrubbed(text))], structured_content=structured
        )
    detail = result.limit or result.reason or ""
    partial = f" Its last text: {result.text}" if result.text else ""
    return error_result(
        scrubbed(f"Agent {name!r} did not finish ({result.status}: {detail}).{partial}")
    )


def _structured(output: Any) -> dict[str, Any] | None:
    """Return the typed output as a JSON object (as ``structuredContent`` must be), if any."""
    if output is None:
        return None
    return output if isinstance(output, dict) else {"result": output}


def _with_session(result: types.CallToolResult, session: str) -> types.CallToolResult:
    """Add the conversation's id: a last text block the model reads, and ``_meta``."""
    note = f"session_id: {session} (pass it as session_id to continue this conversation)"
    content = [*result.content, types.TextContent(text=note)]
    meta = {**(result.meta or {}), SESSION_META: session}
    return result.model_copy(update={"content": content, "meta": meta})
