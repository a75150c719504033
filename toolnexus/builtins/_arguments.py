"""Numeric arguments of the built-ins, read with one wording for every tool.

The schemas already made ``offset``, ``limit`` and ``timeout`` numbers; these check the
value (whole, positive, not past a maximum), huge values included.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from toolnexus.errors import ToolError

__all__ = ["positive_number", "whole_number"]

_SHOWN_DIGITS = 20


def _show(value: float) -> str:
    if isinstance(value, int):
        if abs(value) < 10**_SHOWN_DIGITS:
            return str(value)
        sign = "-" if value < 0 else ""
        return f"about {sign}1e{int(math.log10(abs(value)))}"
    return f"{value:g}"


def _finite(value: float) -> bool:
    return isinstance(value, int) or math.isfinite(value)


def whole_number(args: Mapping[str, Any], name: str, default: int, maximum: int) -> int:
    """Return the whole-number argument ``name`` (1 .. ``maximum``), or raise naming it.

    The schema already made it a number; this checks the value. Python ints of any size
    (JSON allows ``1e400`` digits) are handled without overflow.
    """
    value = args.get(name)
    if value is None:
        return default
    whole = _finite(value) and value == int(value)
    if not whole and not value >= 1:
        raise ToolError(
            f"Invalid arguments: `{name}` must be a positive whole number, got {_show(value)}."
        )
    if not whole:
        raise ToolError(f"Invalid arguments: `{name}` must be a whole number, got {_show(value)}.")
    if value < 1:
        raise ToolError(f"Invalid arguments: `{name}` must be 1 or more, got {_show(value)}.")
    if value > maximum:
        raise ToolError(
            f"Invalid arguments: `{name}` must be at most {maximum}, got {_show(value)}."
        )
    return int(value)


def positive_number(
    args: Mapping[str, Any], name: str, default: float, maximum: float, unit: str
) -> float:
    """Return the positive number argument ``name`` (at most ``maximum``), or raise naming it.

    ``unit`` ("milliseconds", "seconds") goes into the message.
    """
    value = args.get(name)
    if value is None:
        return default
    if not _finite(value) or value <= 0:
        raise ToolError(
            f"Invalid arguments: `{name}` must be a positive number of {unit}, got {_show(value)}."
        )
    if value > maximum:
        raise ToolError(
            f"Invalid arguments: `{name}` must be at most {maximum:g} {unit}, got {_show(value)}."
        )
    return float(value)
