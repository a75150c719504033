"""Typed events of a run, as yielded by `Agent.stream` (and drained by `Agent.run`).

Every event class ends in ``Event``. A run yields the same sequence whatever the mode:
`TextEvent` and `ThoughtEvent` as text arrives, a `ToolCallEvent` and a `ToolResultEvent`
per function call, `RetryEvent` when a model call is retried, `UsageEvent` after each model
response, `PendingEvent` when a tool suspends, `SubAgentEvent` wrapping each event of a
sub-agent's run, and exactly one final `DoneEvent` carrying the `RunResult`. A function
call itself is a `ToolCall` value: the events that concern a call
carry it as ``.call``, and before-tool and after-tool hooks receive it.

Example::

    async for event in agent.stream("List the Python files"):
        match event:
            case TextEvent(text=text):
                print(text, end="")
            case ToolCallEvent(call=call):
                print(f" -> {call.name}({call.args})")
            case DoneEvent(result=result):
                print(result.status)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from agent._builtin_tools import CodeRun, Grounding
    from agent._result import RunResult, Usage
    from toolnexus import Request, ToolResult

__all__ = [
    "CacheEvent",
    "CodeExecutionEvent",
    "Compacted",
    "DoneEvent",
    "Event",
    "FallbackEvent",
    "GroundingEvent",
    "PendingEvent",
    "RetryEvent",
    "SubAgentEvent",
    "TextEvent",
    "ThoughtEvent",
    "TierFallbackEvent",
    "ToolCall",
    "ToolCallEvent",
    "ToolResultEvent",
    "UsageEvent",
]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call the model asked for (what before-tool and after-tool hooks receive)."""

    name: str
    """The tool name as the model sent it."""
    args: dict[str, Any]
    """The arguments as the model sent them."""
    id: str | None
    """The model's call id, when present."""
    turn: int
    """The model turn (1-based) that asked for the call."""
    index: int = 0
    """Position of the call within its turn."""


@dataclass(frozen=True, slots=True)
class TextEvent:
    """Visible model text (a streamed piece, or a whole part in unary mode)."""

    text: str
    turn: int


@dataclass(frozen=True, slots=True)
class ThoughtEvent:
    """Thought-summary text (only sent when the model is asked to include thoughts)."""

    text: str
    turn: int


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """The model asked for a function call; the tool is about to run."""

    call: ToolCall

    @property
    def turn(self) -> int:
        """The model turn that asked for the call."""
        return self.call.turn


@dataclass(frozen=True, slots=True)
class ToolResultEvent:
    """The result of one function call, as it will be sent back to the model."""

    call: ToolCall
    result: ToolResult

    @property
    def turn(self) -> int:
        """The model turn that asked for the call."""
        return self.call.turn


@dataclass(frozen=True, slots=True)
class PendingEvent:
    """A tool suspended on a `Request` that no ``wait_for`` callable answered."""

    request: Request
    call: ToolCall


@dataclass(frozen=True, slots=True)
class RetryEvent:
    """A model call failed and will be tried again after ``delay`` seconds."""

    attempt: int
    """The attempt that failed (1 = the first call)."""
    delay: float
    """Seconds waited before the next attempt."""
    code: int | None
    """HTTP status of the failure (``None`` for a network error or timeout)."""
    status: str | None
    """Server status string, or ``"NETWORK_ERROR"`` / ``"TIMEOUT"``."""
    turn: int = 0
    """The model turn being fetched."""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "attempt": self.attempt,
            "delay": self.delay,
            "code": self.code,
            "status": self.status,
            "turn": self.turn,
        }


@dataclass(frozen=True, slots=True)
class UsageEvent:
    """Token counts of one model response and the running total of the run."""

    turn: int
    usage: Usage
    total: Usage


@dataclass(frozen=True, slots=True)
class GroundingEvent:
    """What Google Search or URL context found for one model response (built-in tools)."""

    turn: int
    grounding: Grounding
    """Search queries, sources (URI and title) and URL-context statuses."""


@dataclass(frozen=True, slots=True)
class CodeExecutionEvent:
    """Code Gemini ran with its code-execution tool in one model response, and the output."""

    turn: int
    run: CodeRun
    """The code, its language, the outcome and what it printed."""


@dataclass(frozen=True, slots=True)
class SubAgentEvent:
    """An event of a sub-agent's run (``Agent.as_tool``), seen in its parent's stream.

    Events of a sub-agent's own sub-agents arrive as they were marked there, so ``depth``
    says how far down the run is.
    """

    agent: str
    """The sub-agent's tool name."""
    depth: int
    """1 for a sub-agent of a top-level run, 2 for a sub-agent of that one, and so on."""
    event: Event
    """The sub-agent's event (its `DoneEvent` carries the sub-agent's `RunResult`)."""


@dataclass(frozen=True, slots=True)
class Compacted:
    """The transcript was compacted before a model call (see `agent.Compaction`)."""

    tokens_before: int
    """The estimated size of the next request before compacting."""
    tokens_after: int
    """Its estimated size after."""
    turns_summarised: int
    """Exchanges replaced by the model-written summary (0 when pruning was enough)."""
    pruned: int = 0
    """Large function results replaced by a short note."""


@dataclass(frozen=True, slots=True)
class TierFallbackEvent:
    """A request shed at its service tier (``"flex"``) is sent again at ``fallback``."""

    tier: str
    """The tier the request was shed at."""
    fallback: str
    """The tier it is sent at now (`ModelSettings.fallback_tier`)."""
    code: int | None
    """HTTP status of the last failure at ``tier`` (429 or 503)."""
    status: str | None
    """Its status string (``"UNAVAILABLE"``, ``"RESOURCE_EXHAUSTED"``)."""
    turn: int = 0
    """The model turn being fetched."""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "tier": self.tier,
            "fallback": self.fallback,
            "code": self.code,
            "status": self.status,
            "turn": self.turn,
        }


@dataclass(frozen=True, slots=True)
class CacheEvent:
    """The run's context cache (`agent.capabilities.ContextCache`) changed.

    ``action`` says how: ``"created"`` (made for the run's prefix), ``"found"`` (one made
    earlier, named by the session or listed by the server, taken up), ``"extended"`` (its
    life renewed before it ran out), ``"recreated"`` (it was gone, expired or deleted: made
    again and the turn sent again), ``"deleted"`` (the cache of a prefix the conversation
    left) or ``"failed"`` (it could not be made or renewed: the request goes without it).
    """

    action: Literal["created", "found", "extended", "recreated", "deleted", "failed"]
    """What happened."""
    name: str | None
    """The cache (``cachedContents/...``); ``None`` when none could be made."""
    tokens: int = 0
    """Its size in tokens."""
    expires: float | None = None
    """When it expires, in seconds since the epoch (``None`` when deleted or failed)."""
    turn: int = 0
    """The model turn about to be sent."""
    reason: str | None = None
    """Why it was recreated or failed (the API's message)."""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "action": self.action,
            "name": self.name,
            "tokens": self.tokens,
            "expires": self.expires,
            "turn": self.turn,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class FallbackEvent:
    """A model call failed for good, so the turn goes to the next model of the agent's chain."""

    model: str
    """The model that failed (it cools down: new turns skip it for a while)."""
    fallback: str
    """The model the turn is sent to now."""
    code: int | None
    """HTTP status of the last failure (429, 503...); ``None`` for a timeout."""
    status: str | None
    """Its status string (``"UNAVAILABLE"``, ``"RESOURCE_EXHAUSTED"``, ``"TIMEOUT"``)."""
    turn: int = 0
    """The model turn being fetched."""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "model": self.model,
            "fallback": self.fallback,
            "code": self.code,
            "status": self.status,
            "turn": self.turn,
        }


@dataclass(frozen=True, slots=True)
class DoneEvent:
    """The run ended; always the last event."""

    result: RunResult


Event = (
    TextEvent
    | ThoughtEvent
    | ToolCallEvent
    | ToolResultEvent
    | PendingEvent
    | RetryEvent
    | TierFallbackEvent
    | CacheEvent
    | FallbackEvent
    | UsageEvent
    | GroundingEvent
    | CodeExecutionEvent
    | SubAgentEvent
    | Compacted
    | DoneEvent
)
"""Any event of a run."""
