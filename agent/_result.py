"""What a run returns: `RunResult`, with `Usage` and `ToolCallRecord`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agent._cost import Cost

if TYPE_CHECKING:
    from agent._builtin_tools import Grounding
    from agent.events import RetryEvent
    from toolnexus import Request, ToolResult

__all__ = ["Limit", "RunResult", "Status", "ToolCallRecord", "Usage"]

Status = Literal["completed", "pending", "blocked", "incomplete"]
"""How a run ended: see `RunResult.status`."""

Limit = Literal[
    "max_turns",
    "repeated_call",
    "malformed_function_call",
    "max_tokens",
    "empty_response",
    "invalid_output",
    "usage:requests",
    "usage:input_tokens",
    "usage:output_tokens",
    "usage:total_tokens",
    "usage:tool_calls",
    "usage:cost_usd",
    "token_rate",
]
"""Which limit ended an ``"incomplete"`` run."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts, as reported by Gemini's ``usageMetadata`` (missing counts are 0)."""

    prompt: int = 0
    """``promptTokenCount``: the whole prompt, cached tokens included."""
    candidates: int = 0
    """``candidatesTokenCount``: visible output, thoughts excluded."""
    thoughts: int = 0
    """``thoughtsTokenCount``: thinking tokens."""
    cached: int = 0
    """``cachedContentTokenCount``: the cached part of the prompt."""
    tool_use_prompt: int = 0
    """``toolUsePromptTokenCount``: tokens of server-side tool results."""
    total: int = 0
    """``totalTokenCount``."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt + other.prompt,
            self.candidates + other.candidates,
            self.thoughts + other.thoughts,
            self.cached + other.cached,
            self.tool_use_prompt + other.tool_use_prompt,
            self.total + other.total,
        )

    def to_dict(self) -> dict[str, int]:
        """Return the counts as a JSON-ready dict with snake_case keys."""
        return {
            "prompt": self.prompt,
            "candidates": self.candidates,
            "thoughts": self.thoughts,
            "cached": self.cached,
            "tool_use_prompt": self.tool_use_prompt,
            "total": self.total,
        }


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One function call the model made and what came back."""

    name: str
    """The tool name the model called (it may not exist in the toolkit)."""
    args: dict[str, Any]
    """The arguments the tool ran with (after any before-tool hook rewrote them)."""
    id: str | None
    """The model's call id, when it sent one."""
    result: ToolResult
    """The result sent back to the model."""
    turn: int
    """The model turn (1-based) that asked for the call."""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (the result's metadata is left out unless it is pending)."""
        out: dict[str, Any] = {
            "name": self.name,
            "args": self.args,
            "id": self.id,
            "turn": self.turn,
            "result": {"output": self.result.output, "is_error": self.result.is_error},
        }
        if self.result.pending is not None:
            out["result"]["pending"] = dict(self.result.pending)
        return out


@dataclass(frozen=True, slots=True)
class RunResult:
    """The outcome of `Agent.run`.

    ``status`` is one of:

    - ``"completed"``: the model answered without asking for more tools; ``text`` is the answer.
    - ``"pending"``: a tool asked a human something (``pending`` is the `Request`); resume
      with ``agent.run(history=result.contents, answer={...})``.
    - ``"blocked"``: the prompt or the output was blocked; ``reason`` is the block or finish
      reason (``"SAFETY"``, ``"PROHIBITED_CONTENT"``, ...) or a hook's veto.
    - ``"incomplete"``: a limit ended the run; ``limit`` names it (``"max_turns"``,
      ``"repeated_call"``, ``"malformed_function_call"``, ``"max_tokens"``,
      ``"empty_response"``, ``"invalid_output"``, ``"usage:<name>"`` for a
      `UsageLimits` limit such as ``"usage:cost_usd"``, or ``"token_rate"`` for a request
      larger than a `TokenRate` lets through in one window). The partial result carried by a
      `RunError` is also ``"incomplete"``, with ``limit`` ``None`` and ``reason`` naming
      the failure.
    """

    status: Status
    """``"completed"``, ``"pending"``, ``"blocked"`` or ``"incomplete"``."""
    text: str = ""
    """The non-thought text of the last model turn."""
    reason: str | None = None
    """Why a run was blocked (the finish or block reason), or what failed."""
    limit: Limit | None = None
    """Which limit ended an incomplete run."""
    turns: int = 0
    """Model responses received in this run (retried malformed/empty turns included)."""
    tool_calls: tuple[ToolCallRecord, ...] = ()
    """Every function call of this run, in order."""
    usage: Usage = field(default_factory=Usage)
    """Token counts summed over the turns of this run."""
    turn_usage: tuple[Usage, ...] = ()
    """Token counts of each turn, in order."""
    turn_models: tuple[str, ...] = ()
    """The model that answered each turn, in order (the same for every turn unless a
    fallback or a per-turn choice sent one elsewhere)."""
    contents: list[dict[str, Any]] = field(default_factory=list)
    """The whole transcript (history included) as JSON-ready Gemini Content dicts with the
    wire's camelCase keys; pass it back as ``history`` to continue or resume."""
    finish_reason: str | None = None
    """The last response's ``finishReason`` (``"STOP"``, ``"MAX_TOKENS"``, ...)."""
    model: str = ""
    """The model version that answered last (or the model asked for, if none answered)."""
    pending: Request | None = None
    """The `Request` a suspended run waits on."""
    retries: tuple[RetryEvent, ...] = ()
    """Every retried model call, in order."""
    output: Any = None
    """The typed result (``Agent(output_type=T)``): an instance of ``T`` (a dict for a JSON
    Schema) when the run completed, else ``None``. ``text`` stays the raw text."""
    output_json: Any = None
    """``output`` as JSON-ready data (what ``to_dict`` and ``--json`` carry)."""
    grounding: Grounding | None = None
    """What Google Search / URL context contributed over the run (queries, sources with
    URI and title, URL statuses); ``None`` when no built-in tool grounded anything."""
    cost: Cost = field(default_factory=Cost)
    """What the run cost in US dollars, in total and per turn (see `Cost`)."""
    service_tier: str | None = None
    """The service tier that served the last model turn, as the server reported it (the
    ``x-gemini-service-tier`` header): ``"flex"``, ``"standard"`` after a fallback or a
    downgraded ``"priority"`` request. ``None`` when no tier was asked for."""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict of the whole result (for ``--json`` output)."""
        return {
            "status": self.status,
            "text": self.text,
            "reason": self.reason,
            "limit": self.limit,
            "turns": self.turns,
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "usage": self.usage.to_dict(),
            "turn_usage": [usage.to_dict() for usage in self.turn_usage],
            "turn_models": list(self.turn_models),
            "contents": self.contents,
            "finish_reason": self.finish_reason,
            "model": self.model,
            "pending": dict(self.pending) if self.pending is not None else None,
            "retries": [retry.to_dict() for retry in self.retries],
            "output": self.output_json,
            "grounding": self.grounding.to_dict() if self.grounding is not None else None,
            "cost": self.cost.to_dict(),
            "service_tier": self.service_tier,
        }
