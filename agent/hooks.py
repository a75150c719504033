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
- ``prepare_turn(state)``: called before each model turn with a `TurnState`; ``None``
  (the turn as configured) or a `TurnSettings` for this turn only: another model, tool
  choice, set of allowed tools or thinking setting. It runs before ``before_model``, which
  sees the request as changed.

An exception raised by a hook is not caught: it ends the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

if TYPE_CHECKING:
    from agent._result import ToolCallRecord, Usage
    from agent._settings import Thinking, ToolChoice
    from agent.events import ToolCall
    from toolnexus import ToolResult

__all__ = [
    "AfterModelHook",
    "AfterToolHook",
    "BeforeModelHook",
    "BeforeToolHook",
    "Hooks",
    "ModelRequest",
    "PrepareTurnHook",
    "TurnSettings",
    "TurnState",
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


@dataclass(frozen=True, slots=True)
class TurnState:
    """Where a run stands before one model turn: what ``prepare_turn`` decides on."""

    turn: int
    """The 1-based number of the model turn about to be fetched."""
    max_turns: int
    """The run's last allowed turn (`RunLimits.max_turns`)."""
    model: str
    """The model the turn's request names (a fallback's while the first model cools down)."""
    models: tuple[str, ...]
    """The agent's models (the first, then those it falls back to)."""
    tool_calls: tuple[ToolCallRecord, ...]
    """Every function call of the run so far, with its result."""
    usage: Usage
    """Tokens spent by the run so far."""
    contents: list[dict[str, Any]]
    """The transcript so far, as JSON-ready Gemini Content dicts (do not change them)."""
    deps: Any = None
    """The run's ``deps``."""

    @property
    def last_turn(self) -> bool:
        """Whether this is the last turn the run may take."""
        return self.turn >= self.max_turns


@dataclass(frozen=True, slots=True)
class TurnSettings:
    """What ``prepare_turn`` changes for one model turn; ``None`` fields stay as configured.

    Example::

        def prepare_turn(state: TurnState) -> TurnSettings | None:
            if state.turn == 1:
                return TurnSettings(tool_choice=["plan"])           # plan first
            if state.last_turn:
                return TurnSettings(allowed_tools=[], thinking="low")  # answer now
            return None
    """

    model: str | None = None
    """Send this turn to another model (its thinking setting is sent in that model's form,
    and the history without the thought signatures other models issued)."""
    tool_choice: ToolChoice | None = None
    """``"auto"``, ``"any"`` (must call a function), ``"none"``, or the names of the functions
    it must choose among (see `ModelSettings.tool_choice`)."""
    allowed_tools: Sequence[str] | None = None
    """The only functions declared this turn (``[]``: none; Gemini's built-in tools stay)."""
    thinking: Thinking | None = None
    """A thinking level or budget for this turn (see `ModelSettings.thinking`)."""

    def __post_init__(self) -> None:
        from agent.errors import ConfigurationError

        if self.model is not None and (not isinstance(self.model, str) or not self.model):
            raise ConfigurationError(f"TurnSettings.model must be a model name, got {self.model!r}")
        allowed = self.allowed_tools
        if allowed is not None and (
            isinstance(allowed, str) or not all(isinstance(n, str) for n in allowed)
        ):
            raise ConfigurationError(
                f"TurnSettings.allowed_tools must be a list of tool names, got {allowed!r}"
            )


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

PrepareTurnHook: TypeAlias = Callable[[TurnState], MaybeAwaitable["TurnSettings | None"]]
"""``prepare_turn(state) -> TurnSettings | None`` (sync or async)."""


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
    prepare_turn: PrepareTurnHook | None = None
    """Called before each model turn; may set that turn's model, tool choice, allowed tools
    or thinking (`TurnSettings`)."""
