"""Render tools as the tool schemas of Gemini, OpenAI and Anthropic.

Schema only: no network, no key. A `Toolkit` renders sorted by tool name; a list or
tuple of tools renders in the order given. Every payload is a plain JSON-ready dict with
no ``None`` in it: a missing description becomes ``""`` and a missing schema
``{"type": "object"}``. OpenAI and Anthropic get the schema verbatim (copied, so a caller
mutating the payload cannot change the tool). Gemini gets it in a form Gemini accepts:
rewritten into the ``parameters`` subset, or whole as ``parametersJsonSchema`` with
``json_schema=True`` (see `toolnexus._gemini_schema`).

Example::

    import toolnexus as tn

    tn.to_gemini(tn.toolkit([]))   # [{"functionDeclarations": []}]
    tn.to_openai(tn.toolkit([]))   # []
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from toolnexus._gemini_schema import SCHEMA_KEYWORDS, gemini_parameters, json_schema_parameters
from toolnexus.tool import Tool

__all__ = [
    "GEMINI_SCHEMA_KEYWORDS",
    "json_schema_parameters",
    "to_anthropic",
    "to_gemini",
    "to_openai",
]

GEMINI_SCHEMA_KEYWORDS = SCHEMA_KEYWORDS
"""The JSON Schema keywords Gemini's ``parameters`` field takes (the rest is rewritten)."""


def _fields(tool: Tool) -> tuple[str, str, dict[str, Any]]:
    schema = copy.deepcopy(dict(tool.input_schema)) if tool.input_schema else {"type": "object"}
    return tool.name, tool.description or "", schema


def to_gemini(tools: Iterable[Tool], *, json_schema: bool = False) -> list[dict[str, Any]]:
    """Render ``tools`` as Gemini function declarations that Gemini accepts.

    By default each schema is rewritten into the OpenAPI subset Gemini's ``parameters``
    field takes: ``$ref`` resolved, ``$schema`` dropped, ``const``, type lists and
    nullables expressed the way the subset does. What the subset cannot say is dropped
    with a `GeminiSchemaWarning` naming the tool and the keyword. With ``json_schema=True``
    the full JSON Schema goes under ``parametersJsonSchema`` instead (only ``$schema``
    dropped): that is what the agent sends, and it loses nothing.

    Args:
        tools: A `Toolkit` (rendered sorted by name) or tools in the order to render.
        json_schema: Render ``parametersJsonSchema`` (full JSON Schema) instead of
            ``parameters`` (the subset).

    Returns:
        ``[{"functionDeclarations": [{"name", "description", "parameters"}, ...]}]``:
        always one wrapper, also when there are no tools.

    Example::

        tn.to_gemini(tn.toolkit([tool]))
        # [{"functionDeclarations": [{"name": "echo", "description": "...", "parameters": {...}}]}]
        tn.to_gemini(tn.toolkit([tool]), json_schema=True)
        # [{"functionDeclarations": [{"name": "echo", ..., "parametersJsonSchema": {...}}]}]
    """
    declarations = []
    for tool in tools:
        declarations.append(_declaration(tool, json_schema=json_schema))
    return [{"functionDeclarations": declarations}]


def _declaration(tool: Tool, *, json_schema: bool = False) -> dict[str, Any]:
    """Return one Gemini function declaration (see `to_gemini`)."""
    if json_schema:
        key, schema = "parametersJsonSchema", json_schema_parameters(tool.input_schema)
    else:
        key, schema = "parameters", gemini_parameters(tool.input_schema, tool.name)
    return {"name": tool.name, "description": tool.description or "", key: schema}


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
