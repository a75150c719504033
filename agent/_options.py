"""`ModelSettings` and `RunLimits`: the agent's options, in two groups.

`ModelSettings` is what shapes each request (sampling, thinking, tool choice, how a typed
result is asked for, raw ``GenerateContentConfig`` fields); `RunLimits` is the turn and retry
policy of a run. Client settings (key, endpoint, timeout) are `ClientSettings`, and the
budgets of a run are `UsageLimits`. Grouping them keeps `Agent` at a dozen parameters::

    agent = Agent(
        "gemini-2.5-flash",
        toolkit,
        settings=ModelSettings(temperature=0.2, thinking="low"),
        limits=RunLimits(max_turns=20, deadline=120.0),
    )

The flat keywords of earlier releases (``Agent(temperature=0.2, max_turns=20, api_key=...)``)
still work for one release, each with a `DeprecationWarning` naming its new spelling.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agent._retry import RetryPolicy
from agent.errors import ConfigurationError

if TYPE_CHECKING:
    from agent._output import OutputMode
    from agent._settings import Thinking, ToolChoice

__all__ = ["DEFAULT_MAX_TURNS", "ModelSettings", "RunLimits", "ServiceTier", "split_legacy"]

ServiceTier = Literal["standard", "flex", "priority"]
"""Gemini's inference tiers: ``"standard"`` (the default), ``"flex"`` (half price, best
effort, minutes of latency, may be shed) and ``"priority"`` (a surcharge, lowest latency)."""

_TIERS: frozenset[str] = frozenset({"standard", "flex", "priority"})

DEFAULT_MAX_TURNS = 50
"""Model responses per run, at most, unless `RunLimits.max_turns` says otherwise."""


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """What every request of an agent carries besides the prompt and the tools.

    Example::

        ModelSettings(temperature=0.2, max_output_tokens=2048, thinking="low",
                      tool_choice="any")
    """

    temperature: float | None = None
    """Sampling temperature (Gemini 3 works best at the default 1.0)."""
    max_output_tokens: int | None = None
    """The longest answer, in tokens (thinking counts against it)."""
    thinking: Thinking | None = None
    """A thinking level (``"minimal"``, ``"low"``, ``"medium"``, ``"high"``) or a token
    budget, sent in the form the model takes (see the settings docs)."""
    include_thoughts: bool | None = None
    """Ask for thought summaries (`ThoughtEvent`s in a stream)."""
    tool_choice: ToolChoice | None = None
    """``"auto"``, ``"any"`` (must call a function), ``"none"``, or the names of the
    functions the model must choose among."""
    output_mode: OutputMode = "auto"
    """How a typed result is asked for: ``"native"`` (a JSON response schema), ``"tool"`` (a
    ``final_result`` function) or ``"auto"`` (native without tools or on Gemini 3+)."""
    skills_catalog_chars: int | None = 20_000
    """Size cap of the skills catalog in the system instruction (characters; ``None``: no
    cap). Past it, the catalog says how many skills it left out."""
    config: Mapping[str, Any] | None = None
    """More ``GenerateContentConfig`` fields, in the SDK's snake_case; a field set here and
    by one of the settings above is refused."""
    service_tier: ServiceTier | None = None
    """The inference tier sent with every request (``None``: the field is not sent, and
    Gemini serves the standard tier). See the cost docs for which tier when."""
    fallback_tier: ServiceTier | None = None
    """Where a shed request goes: a ``"flex"`` call that still fails with 429 or 503 after
    its retries is sent once more at this tier (a `TierFallbackEvent` says so); ``None``
    lets the call fail."""

    def __post_init__(self) -> None:
        for name in ("service_tier", "fallback_tier"):
            value = getattr(self, name)
            if value is not None and value not in _TIERS:
                raise ConfigurationError(
                    f"{name} must be 'standard', 'flex' or 'priority', got {value!r}"
                )
        if self.fallback_tier is not None and self.fallback_tier == (
            self.service_tier or "standard"
        ):
            raise ConfigurationError(
                f"fallback_tier {self.fallback_tier!r} is the tier requests are already sent at"
            )


@dataclass(frozen=True, slots=True)
class RunLimits:
    """How far a run may go and how it recovers: turns, deadline, re-asks, retries.

    Example::

        RunLimits(max_turns=20, deadline=300.0, retry=RetryPolicy(attempts=3))
    """

    max_turns: int = DEFAULT_MAX_TURNS
    """Model responses per run, at most; then the run ends ``"incomplete"``."""
    deadline: float | None = None
    """Seconds for a whole run (`DeadlineExceededError` past it); ``None`` for no limit."""
    malformed_retries: int = 2
    """Re-asks after a malformed or unexpected function call."""
    empty_retries: int = 1
    """Re-asks after an empty response."""
    repeat_limit: int = 3
    """Turns in a row with the very same calls, which kept returning the very same results,
    before the run is stopped."""
    output_retries: int = 2
    """Invalid typed answers sent back with their problems before the run ends
    ``"incomplete"`` with limit ``"invalid_output"``."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    """How a failed model call is retried."""
    tool_timeout: float | None = None
    """Seconds per tool call; ``None`` for no limit beyond each tool's own ``Tool.timeout``."""
    invalid_tools: Literal["skip", "raise"] = "skip"
    """``"skip"`` leaves out a tool Gemini would refuse (with a warning); ``"raise"`` refuses
    to build the agent."""
    fallback_cooldown: float = 300.0
    """With several models (``Agent(model=[...])``): seconds a model that failed for good
    is skipped by new turns of every run of the agent before it is tried again."""
    stop_at_tools: Sequence[str] = ()
    """Tools whose successful call ends the run: once the turn's calls have run, the run
    completes with that tool's result as its text, and no further model request is made."""
    final_turn: bool | None = None
    """Force an answer on the last allowed turn: its request offers only the output function
    (typed output in tool mode) or no tools at all, so the run ends with an answer rather
    than ``limit="max_turns"``. ``None`` (the default): only when typed output is asked
    for; ``True``: always; ``False``: never."""

    def __post_init__(self) -> None:
        if self.max_turns < 1:
            raise ConfigurationError(f"max_turns must be at least 1, got {self.max_turns}")
        if self.malformed_retries < 0 or self.empty_retries < 0:
            raise ConfigurationError("malformed_retries and empty_retries must be 0 or more")
        if self.repeat_limit < 2:
            raise ConfigurationError(f"repeat_limit must be at least 2, got {self.repeat_limit}")
        if self.output_retries < 0:
            raise ConfigurationError(f"output_retries must be 0 or more, got {self.output_retries}")
        if self.invalid_tools not in ("skip", "raise"):
            raise ConfigurationError(
                f"invalid_tools must be 'skip' or 'raise', got {self.invalid_tools!r}"
            )
        if self.deadline is not None and self.deadline <= 0:
            raise ConfigurationError(f"deadline must be more than 0 seconds, got {self.deadline}")
        if self.fallback_cooldown < 0:
            raise ConfigurationError(
                f"fallback_cooldown must be 0 seconds or more, got {self.fallback_cooldown}"
            )
        if isinstance(self.stop_at_tools, str) or not all(
            isinstance(name, str) and name for name in self.stop_at_tools
        ):
            raise ConfigurationError(
                f"stop_at_tools must be a list of tool names, got {self.stop_at_tools!r}"
            )


_SETTINGS = frozenset(f.name for f in dataclasses.fields(ModelSettings))
_LIMITS = frozenset(f.name for f in dataclasses.fields(RunLimits))
_CLIENT = frozenset(
    {"api_key", "http_client", "base_url", "api_version", "vertexai", "project", "location"}
)
_CLIENT_TIMEOUT = "timeout"


def split_legacy(
    legacy: Mapping[str, Any], settings: ModelSettings | None, limits: RunLimits | None
) -> tuple[ModelSettings, RunLimits, dict[str, Any]]:
    """Fold the flat keywords of earlier releases into the groups, warning for each.

    Args:
        legacy: The keywords `Agent` received beyond its own parameters.
        settings: The `ModelSettings` given, if any.
        limits: The `RunLimits` given, if any.

    Returns:
        The settings, the limits and the client keywords (for `ClientSettings`).

    Raises:
        TypeError: A keyword that never was an `Agent` parameter.
        ConfigurationError: A keyword given both flat and in its group.
    """
    unknown = sorted(set(legacy) - _SETTINGS - _LIMITS - _CLIENT - {_CLIENT_TIMEOUT})
    if unknown:
        raise TypeError(f"Agent() got an unexpected keyword argument {unknown[0]!r}")
    moved: dict[str, dict[str, Any]] = {"settings": {}, "limits": {}, "client": {}}
    for name, value in legacy.items():
        group = "settings" if name in _SETTINGS else "limits" if name in _LIMITS else "client"
        moved[group][name] = value
        spelling = {
            "settings": f"settings=ModelSettings({name}=...)",
            "limits": f"limits=RunLimits({name}=...)",
            "client": f"client=ClientSettings({name}=...)",
        }[group]
        warnings.warn(
            f"Agent({name}=...) is deprecated; use {spelling}", DeprecationWarning, stacklevel=3
        )
    if moved["settings"] and settings is not None:
        raise ConfigurationError("pass the generation settings in settings=, not both ways")
    if moved["limits"] and limits is not None:
        raise ConfigurationError("pass the run limits in limits=, not both ways")
    settings = settings or ModelSettings(**moved["settings"])
    if moved["limits"].get("retry") is None:
        moved["limits"].pop("retry", None)
    limits = limits or RunLimits(**moved["limits"])
    return settings, limits, moved["client"]
