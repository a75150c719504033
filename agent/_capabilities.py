"""What a Gemini model accepts, told from its name (pure; shared by the agent and the fake).

Gemini 3 models take a JSON response schema together with function declarations; Gemini
2.x models refuse that combination with ``400 INVALID_ARGUMENT`` ("Function calling with a
response mime type: 'application/json' is unsupported"). A name the rule cannot read (a
tuned model, an alias) is treated as the newest generation.
"""

from __future__ import annotations

import re

__all__ = ["accepts_schema_with_tools", "generation"]

_GENERATION = re.compile(r"gemini-(\d+)(?:\.(\d+))?")


def generation(model: str) -> float | None:
    """Return the model generation (``2.5``, ``3.0``, ``3.1``) read from its name, or ``None``."""
    match = _GENERATION.search(model)
    if match is None:
        return None
    return float(f"{match[1]}.{match[2] or 0}")


def accepts_schema_with_tools(model: str) -> bool:
    """Tell whether ``model`` takes ``responseJsonSchema`` in a request that also has tools."""
    found = generation(model)
    return found is None or found >= 3
