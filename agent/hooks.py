"""Hooks: typed callbacks around the model call and around each tool call.

Each hook may be a plain function or a coroutine function. Give them to the agent as one
`Hooks` object::

    from agent import Agent, Hooks
    from toolnexus import ToolResult

    def guard(call):
        if call.name == "bash":
            return ToolResult("bash is disabled here", is_error=True)   # short-circuit
        return None                                                      # run as asked

    agent = Agent(toolkit=tk, capabilities=[Hooks(before_tool=guard)])

What each hook may return:

- ``before_model(request)``: ``None`` (send as is), a `ModelRequest` (send that instead, for
  this call only; the transcript is unchanged) or a `Veto` (end the run as ``"blocked"``).
- ``after_model(request, response)``: ``None`` (keep), a replacement response object, or a
  `Veto` (the response is dropped and the run ends as ``"blocked"``).
- ``before_tool(call)``: ``None`` (run as asked), a ``dict`` (run with these arguments) or a
  `ToolResult` (do not run the tool; send this result instead: the guardrail seam).
- ``after_tool(call, result)``: ``None`` (keep) or a `ToolResult` that replaces the result.

An exception raised by a hook is not caught: it ends the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

if TYPE_CHECKING:
    from agent.events import ToolCall
    from toolnexus import ToolResult

__all__ = [
    "AfterModelHook",
    "AfterToolHook",
    "BeforeModelHook",
    "BeforeToolHook",
    "Hooks",
    "ModelRequest",
    "Veto",
]

T = TypeVar("T")
MaybeAwaitable: TypeAlias = T | Awaitable[T]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One model call about to be made."""

    model: str
    """The model name sent."""
    contents: list[Any]
    """The transcript to send, as ``google.genai.types.Content`` objects."""
    config: Any
    """The ``google.genai.types.GenerateContentConfig`` to send (system instruction, tools)."""
    turn: int
    """The 1-based number of the model turn being fetched."""


@dataclass(frozen=True, slots=True)
class Veto:
    """Returned by a model hook to stop the run; it ends as ``"blocked"`` with this reason."""

    reason: str


BeforeModelHook: TypeAlias = Callable[[ModelRequest], MaybeAwaitable["ModelRequest | Veto | None"]]
"""``before_model(request) -> ModelRequest | Veto | None`` (sync or async)."""

AfterModelHook: TypeAlias = Callable[[ModelRequest, Any], MaybeAwaitable[Any]]
"""``after_model(request, response) -> response | Veto | None`` (sync or async); the response
is a ``google.genai.types.GenerateContentResponse``."""

BeforeToolHook: TypeAlias = Callable[
    ["ToolCall"], MaybeAwaitable["dict[str, Any] | ToolResult | None"]
]
"""``before_tool(call) -> dict | ToolResult | None`` (sync or async)."""

AfterToolHook: TypeAlias = Callable[["ToolCall", "ToolResult"], MaybeAwaitable["ToolResult | None"]]
"""``after_tool(call, result) -> ToolResult | None`` (sync or async)."""


@dataclass(frozen=True, slots=True)
class Hooks:
    """The hooks of an agent; every field is optional."""

    before_model: BeforeModelHook | None = None
    """Called before each model call; may rewrite the request or veto it."""
    after_model: AfterModelHook | None = None
    """Called with each model response; may replace it or veto it."""
    before_tool: BeforeToolHook | None = None
    """Called before each tool call; may rewrite the arguments or answer in the tool's place."""
    after_tool: AfterToolHook | None = None
    """Called with each tool result; may replace it."""
