"""Typed generation settings on `Agent`, turned into ``GenerateContentConfig`` fields (pure).

``temperature``, ``max_output_tokens``, ``thinking``, ``include_thoughts`` and
``tool_choice`` are shortcuts for what people set daily; anything else still goes through
``config=``. Setting a field both ways is refused.

``thinking`` takes a level (``"minimal"``, ``"low"``, ``"medium"``, ``"high"``) or a token
budget (an ``int``) and sends what the model takes: Gemini 3 and newer take a
``thinkingLevel``, Gemini 2.x a ``thinkingBudget``. The other form is mapped:

| asked | Gemini 3 (level) | Gemini 2.x (budget) |
|---|---|---|
| ``"minimal"`` | ``MINIMAL`` | 0 (128 on 2.5 Pro, which cannot turn thinking off) |
| ``"low"`` | ``LOW`` | 1024 |
| ``"medium"`` | ``MEDIUM`` | 8192 |
| ``"high"`` | ``HIGH`` | 24576 (32768 on 2.5 Pro) |
| budget ``n`` | by size (below) | ``n`` (-1: dynamic) |

A budget on Gemini 3 becomes ``MINIMAL`` when n <= 0, ``LOW`` when n <= 2048, ``MEDIUM``
when n <= 12288 and ``HIGH`` above.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal, TypeAlias

from agent._capabilities import generation
from agent.errors import ConfigurationError

__all__ = ["Thinking", "ToolChoice", "generation_options"]

Thinking: TypeAlias = Literal["minimal", "low", "medium", "high"] | int
"""A thinking level, or a token budget."""
ToolChoice: TypeAlias = Literal["auto", "any", "none"] | Sequence[str]
"""``"auto"`` (the model chooses), ``"any"`` (it must call a function), ``"none"`` (no
calls), or the names of the functions it must choose among."""

_LEVELS = ("minimal", "low", "medium", "high")
_BUDGETS = {"minimal": 0, "low": 1024, "medium": 8192, "high": 24576}
_PRO_BUDGETS = {"minimal": 128, "high": 32768}


def _thinking_config(model: str, thinking: Thinking | None, include: bool | None) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if include is not None:
        config["include_thoughts"] = include
    if thinking is None:
        return config
    if isinstance(thinking, bool) or not isinstance(thinking, int | str):
        raise ConfigurationError(f"thinking must be a level or a token budget, got {thinking!r}")
    if isinstance(thinking, str) and thinking not in _LEVELS:
        raise ConfigurationError(
            f"thinking must be one of {', '.join(_LEVELS)} or a token budget, got {thinking!r}"
        )
    found = generation(model)
    if found is None or found >= 3:
        if isinstance(thinking, int):
            thinking = (
                "minimal"
                if thinking <= 0
                else "low"
                if thinking <= 2048
                else "medium"
                if thinking <= 12288
                else "high"
            )
        config["thinking_level"] = thinking.upper()
    elif isinstance(thinking, int):
        config["thinking_budget"] = thinking
    else:
        pro = "pro" in model
        config["thinking_budget"] = (_PRO_BUDGETS if pro else {}).get(thinking, _BUDGETS[thinking])
    return config


def _tool_config(choice: ToolChoice | None, names: Collection[str]) -> dict[str, Any] | None:
    if choice is None:
        return None
    if isinstance(choice, str):
        if choice not in ("auto", "any", "none"):
            raise ConfigurationError(
                f"tool_choice must be 'auto', 'any', 'none' or a list of tool names, got {choice!r}"
            )
        if not names:
            _check_without_functions(choice)
            return None
        return {"function_calling_config": {"mode": choice.upper()}}
    allowed = list(choice)
    unknown = [name for name in allowed if name not in names]
    if unknown or not allowed:
        raise ConfigurationError(
            f"tool_choice names no tool of the agent: {', '.join(map(repr, unknown)) or '[]'} "
            f"(the tools are {', '.join(sorted(names)) or 'none'})"
        )
    return {"function_calling_config": {"mode": "ANY", "allowed_function_names": allowed}}


def _check_without_functions(choice: str) -> None:
    """``tool_choice`` for an agent without function tools: nothing to send, or an error.

    Gemini refuses a ``functionCallingConfig`` in a request without function declarations
    ("Function calling config is set without function_declarations"), even beside its own
    tools such as ``google_search``, which ``tool_choice`` does not steer. ``"auto"`` and
    ``"none"`` mean no call either way, so nothing is sent.
    """
    if choice == "any":
        raise ConfigurationError(
            "tool_choice='any' makes the model call a function tool, and the agent has none "
            "(built-in tools such as google_search are not chosen by tool_choice)"
        )


def generation_options(
    model: str,
    config: Mapping[str, Any] | None,
    *,
    temperature: float | None,
    max_output_tokens: int | None,
    thinking: Thinking | None,
    include_thoughts: bool | None,
    tool_choice: ToolChoice | None,
    tool_names: Collection[str],
) -> dict[str, Any] | None:
    """Return ``config`` with the typed settings added (``None`` when there is nothing).

    Raises:
        ConfigurationError: A setting is invalid, or ``config`` already sets the same field.
    """
    options = dict(config or {})
    typed: dict[str, Any] = {}
    if temperature is not None:
        typed["temperature"] = temperature
    if max_output_tokens is not None:
        if max_output_tokens < 1:
            raise ConfigurationError(
                f"max_output_tokens must be at least 1, got {max_output_tokens}"
            )
        typed["max_output_tokens"] = max_output_tokens
    thinking_config = _thinking_config(model, thinking, include_thoughts)
    if thinking_config:
        typed["thinking_config"] = thinking_config
    tool_config = _tool_config(tool_choice, tool_names)
    if tool_config is not None:
        typed["tool_config"] = tool_config
    both = sorted(set(typed) & set(options))
    if both:
        raise ConfigurationError(
            f"config={{...}} sets {', '.join(both)}, which the Agent's own arguments set too; "
            "use one or the other"
        )
    options.update(typed)
    return options or None
