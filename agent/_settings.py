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

__all__ = [
    "Thinking",
    "ToolChoice",
    "generation_options",
    "thinking_fields",
    "thinking_for",
    "tool_config",
]

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
    if _takes_level(model):
        level = _level_of(thinking) if isinstance(thinking, int) else thinking
        config["thinking_level"] = level.upper()
    elif isinstance(thinking, int):
        config["thinking_budget"] = thinking
    else:
        config["thinking_budget"] = _budget_of(model, thinking)
    return config


def thinking_fields(model: str, thinking: Thinking) -> dict[str, Any]:
    """Return the thinking config of ``thinking`` for ``model`` (the other form cleared).

    Raises:
        ConfigurationError: ``thinking`` is neither a level nor a token budget.
    """
    return {
        "thinking_level": None,
        "thinking_budget": None,
        **_thinking_config(model, thinking, None),
    }


def _takes_level(model: str) -> bool:
    """Gemini 3 and newer (and names the rule cannot read) take a level, 2.x a budget."""
    found = generation(model)
    return found is None or found >= 3


def _level_of(budget: int) -> str:
    if budget <= 0:
        return "minimal"
    if budget <= 2048:
        return "low"
    return "medium" if budget <= 12288 else "high"


def _budget_of(model: str, level: str) -> int:
    return (_PRO_BUDGETS if "pro" in model else {}).get(level, _BUDGETS[level])


def thinking_for(model: str, level: str | None, budget: int | None) -> dict[str, Any]:
    """Return the thinking fields to change so ``model`` takes a setting made for another.

    A request built for Gemini 3 carries a ``thinking_level``, one built for 2.x a
    ``thinking_budget``; sent to a model of the other kind, the setting is mapped as the
    table above says. Nothing changes when the form already fits (or both are set).

    Args:
        model: The model the request goes to.
        level: The request's ``thinking_level`` (``"HIGH"``), if any.
        budget: The request's ``thinking_budget``, if any.

    Returns:
        ``thinking_config`` fields to update (empty when none).
    """
    if _takes_level(model) and budget is not None and level is None:
        return {"thinking_level": _level_of(budget).upper(), "thinking_budget": None}
    if not _takes_level(model) and level is not None and budget is None:
        lowered = level.lower()
        if lowered in _BUDGETS:
            return {"thinking_budget": _budget_of(model, lowered), "thinking_level": None}
    return {}


def tool_config(choice: ToolChoice | None, names: Collection[str]) -> dict[str, Any] | None:
    """Return the ``tool_config`` of a tool choice among ``names`` (``None``: send none).

    Raises:
        ConfigurationError: An unknown choice, or names that are not among ``names``.
    """
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
    calling = tool_config(tool_choice, tool_names)
    if calling is not None:
        typed["tool_config"] = calling
    both = sorted(set(typed) & set(options))
    if both:
        raise ConfigurationError(
            f"config={{...}} sets {', '.join(both)}, which the Agent's own arguments set too; "
            "use one or the other"
        )
    options.update(typed)
    return options or None
