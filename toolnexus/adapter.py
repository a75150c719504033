"""Render tools as the tool schemas of Gemini, OpenAI and Anthropic.

Schema only: no network, no key. A `Toolkit` renders sorted by tool name; a list or
tuple of tools renders in the order given. Every payload is a plain JSON-ready dict with
no ``None`` in it: a missing description becomes ``""`` and a missing schema
``{"type": "object"}``. The schema is otherwise passed through verbatim (copied, so a
caller mutating the payload cannot change the tool).

Example::

    import toolnexus as tn

    tn.to_gemini(tn.toolkit([]))   # [{"functionDeclarations": []}]
    tn.to_openai(tn.toolkit([]))   # []
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from toolnexus.tool import Tool

__all__ = ["to_anthropic", "to_gemini", "to_openai"]


def _fields(tool: Tool) -> tuple[str, str, dict[str, Any]]:
    schema = copy.deepcopy(dict(tool.input_schema)) if tool.input_schema else {"type": "object"}
    return tool.name, tool.description or "", schema


def to_gemini(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """Render ``tools`` as Gemini function declarations.

    Args:
        tools: A `Toolkit` (rendered sorted by name) or tools in the order to render.

    Returns:
        ``[{"functionDeclarations": [{"name", "description", "parameters"}, ...]}]``:
        always one wrapper, also when there are no tools.

    Example::

        tn.to_gemini(tn.toolkit([tool]))
        # [{"functionDeclarations": [{"name": "echo", "description": "...", "parameters": {...}}]}]
    """
    declarations = []
    for tool in tools:
        name, description, schema = _fields(tool)
        declarations.append({"name": name, "description": description, "parameters": schema})
    return [{"functionDeclarations": declarations}]


def to_openai(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """Render ``tools`` as OpenAI function tools.

    Args:
        tools: A `Toolkit` (rendered sorted by name) or tools in the order to render.

    Returns:
        ``[{"type": "function", "function": {"name", "description", "parameters"}}, ...]``;
        ``[]`` when there are no tools.

    Example::

        tn.to_openai(tn.toolkit([tool]))[0]["function"]["name"]   # "echo"
    """
    rendered = []
    for tool in tools:
        name, description, schema = _fields(tool)
        rendered.append(
            {
                "type": "function",
                "function": {"name": name, "description": description, "parameters": schema},
            }
        )
    return rendered


def to_anthropic(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """Render ``tools`` as Anthropic tools.

    Args:
        tools: A `Toolkit` (rendered sorted by name) or tools in the order to render.

    Returns:
        ``[{"name", "description", "input_schema"}, ...]``; ``[]`` when there are no tools.

    Example::

        tn.to_anthropic(tn.toolkit([tool]))[0]["input_schema"]   # {"type": "object", ...}
    """
    rendered = []
    for tool in tools:
        name, description, schema = _fields(tool)
        rendered.append({"name": name, "description": description, "input_schema": schema})
    return rendered
