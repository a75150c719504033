"""Pure request building: the system instruction, the declarations and their pre-flight check.

Nothing here talks to the network or imports the Gemini SDK. Declarations are plain dicts
``{"name", "description", "parametersJsonSchema"}``: the full JSON Schema goes out as
``parametersJsonSchema`` because the SDK's ``parameters`` type refuses ``$ref``, ``oneOf``,
``const``, type arrays and more.

The pre-flight check finds what Gemini would refuse before any request is sent, naming the
tool and the field, so one bad tool cannot fail every request of a run.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from toolnexus import Tool
from toolnexus.adapter import json_schema_parameters

__all__ = [
    "DeclarationProblem",
    "check_declaration",
    "declaration",
    "split_valid",
    "system_instruction",
]

FUNCTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,62}$")
"""Names every Gemini API version accepts: a letter or ``_`` first, at most 63 characters."""

_JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
)
_SUBSCHEMA_KEYS = frozenset(_SCHEMA_MAPS + _SCHEMA_LISTS + _SCHEMA_VALUES)


@dataclass(frozen=True, slots=True)
class DeclarationProblem:
    """Why Gemini would refuse one function declaration."""

    tool: str
    """The tool's name."""
    field: str
    """Where the problem is, e.g. ``"name"`` or ``"parametersJsonSchema.properties.x.type"``."""
    message: str
    """What is wrong, in words a tool author can act on."""

    def __str__(self) -> str:
        return f"tool {self.tool!r}, field {self.field}: {self.message}"


def system_instruction(system_prompt: str | None, skills_catalog: str) -> str | None:
    """Join the system prompt and the skills catalog with a blank line; ``None`` if both empty."""
    parts = [part for part in ((system_prompt or "").strip(), skills_catalog.strip()) if part]
    return "\n\n".join(parts) or None


def declaration(tool: Tool) -> dict[str, Any]:
    """Return the Gemini function declaration of ``tool``: its whole schema (``$schema`` aside).

    The same declaration ``toolnexus.to_gemini(tools, json_schema=True)`` renders.
    """
    return {
        "name": tool.name,
        "description": tool.description or "",
        "parametersJsonSchema": json_schema_parameters(tool.input_schema),
    }


def check_declaration(decl: Mapping[str, Any]) -> list[DeclarationProblem]:
    """Return every reason Gemini would refuse ``decl`` (empty when it looks acceptable).

    Checked: the function-name rules (``^[A-Za-z_][A-Za-z0-9_-]{0,62}$``, the rules every
    API version agrees on), that the schema is a JSON object schema (``type`` absent,
    ``"object"`` or ``["object"]``), that it holds only JSON values, that every ``type`` is a
    JSON-Schema type, that ``required`` is a list of names and that every ``$ref`` is local
    (``#...``, Gemini fetches nothing) and points at an existing definition.

    Deliberately not a problem: ``required`` naming a property that ``properties`` does not
    declare. That is valid JSON Schema (the object may still hold the property), so the
    tool is sent as its author wrote it rather than silently left out.
    """
    name = str(decl.get("name", ""))
    problems: list[DeclarationProblem] = []
    if not FUNCTION_NAME.match(name):
        problems.append(
            DeclarationProblem(
                name,
                "name",
                "function names must start with a letter or '_', use only letters, digits, "
                "'_' and '-', and be at most 63 characters",
            )
        )
    schema = decl.get("parametersJsonSchema")
    field = "parametersJsonSchema"
    if not isinstance(schema, Mapping):
        problems.append(DeclarationProblem(name, field, "the schema must be a JSON object"))
        return problems
    if schema.get("type", "object") not in ("object", ["object"]):
        problems.append(
            DeclarationProblem(
                name, f"{field}.type", "function parameters must be an object schema"
            )
        )
    problems.extend(
        DeclarationProblem(name, where, message)
        for where, message in _schema_problems(schema, schema, field)
    )
    return problems


def _schema_problems(node: Any, root: Mapping[str, Any], where: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, bool):
        return
    if not isinstance(node, Mapping):
        yield where, f"a schema must be an object or a boolean, got {type(node).__name__}"
        return
    yield from _value_problems(node, where)
    yield from _type_problems(node, where)
    yield from _ref_problems(node, root, where)
    yield from _required_problems(node, where)
    yield from _child_problems(node, root, where)


def _child_problems(
    node: Mapping[str, Any], root: Mapping[str, Any], where: str
) -> Iterator[tuple[str, str]]:
    """Check the subschemas of ``node``: under maps, lists and single keywords."""
    yield from _list_problems(node, root, where)
    for key in _SCHEMA_VALUES:
        if key in node:
            yield from _schema_problems(node[key], root, f"{where}.{key}")
    for key in _SCHEMA_MAPS:
        children = node.get(key)
        if isinstance(children, Mapping):
            for child_name, child in children.items():
                yield from _schema_problems(child, root, f"{where}.{key}.{child_name}")
        elif children is not None:
            yield f"{where}.{key}", "must be an object mapping names to schemas"


def _list_problems(
    node: Mapping[str, Any], root: Mapping[str, Any], where: str
) -> Iterator[tuple[str, str]]:
    for key in _SCHEMA_LISTS:
        children = node.get(key)
        if isinstance(children, list):
            for i, child in enumerate(children):
                yield from _schema_problems(child, root, f"{where}.{key}[{i}]")
        elif children is not None:
            yield f"{where}.{key}", "must be a list of schemas"


def _value_problems(node: Mapping[Any, Any], where: str) -> Iterator[tuple[str, str]]:
    """Report keyword values (other than subschemas) that are not plain JSON."""
    for key, value in node.items():
        if not isinstance(key, str):
            yield where, f"schema keys must be strings, got {key!r}"
        elif key not in _SUBSCHEMA_KEYS:
            bad = _first_non_json(value)
            if bad is not None:
                yield f"{where}.{key}", bad


def _type_problems(node: Mapping[str, Any], where: str) -> Iterator[tuple[str, str]]:
    if "type" not in node:
        return
    declared = node["type"]
    types = declared if isinstance(declared, list) else [declared]
    if not types:
        yield f"{where}.type", "an empty type list allows nothing"
    for item in types:
        if item not in _JSON_TYPES:
            yield f"{where}.type", f"{item!r} is not a JSON-Schema type"


def _ref_problems(
    node: Mapping[str, Any], root: Mapping[str, Any], where: str
) -> Iterator[tuple[str, str]]:
    ref = node.get("$ref")
    if ref is None:
        return
    if not isinstance(ref, str):
        yield f"{where}.$ref", "must be a string"
    elif not ref.startswith("#"):
        yield (
            f"{where}.$ref",
            f"{ref!r} is not a local reference: Gemini resolves only '#/...' references "
            "within the schema",
        )
    elif _resolve(root, ref) is None:
        yield f"{where}.$ref", f"{ref!r} does not point at a definition in this schema"


def _required_problems(node: Mapping[str, Any], where: str) -> Iterator[tuple[str, str]]:
    required = node.get("required")
    if required is None:
        return
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        yield f"{where}.required", "must be a list of property names"


def _resolve(root: Mapping[str, Any], ref: str) -> Any:
    node: Any = root
    for raw in ref[1:].split("/")[1:] if ref != "#" else []:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


def _first_non_json(value: Any) -> str | None:
    """Return why ``value`` is not plain JSON, or ``None`` when it is."""
    stack = [value]
    while stack:
        item = stack.pop()
        if item is None or isinstance(item, str | bool | int):
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return f"{item!r} is not a JSON number"
            continue
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, Mapping):
            if not all(isinstance(k, str) for k in item):
                return "object keys must be strings"
            stack.extend(item.values())
        else:
            return f"holds a {type(item).__name__}, which is not a JSON value"
    return None


def split_valid(
    declarations: Iterable[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[DeclarationProblem]]:
    """Return the declarations Gemini would accept and the problems of the others."""
    kept: list[dict[str, Any]] = []
    problems: list[DeclarationProblem] = []
    for decl in declarations:
        found = check_declaration(decl)
        if found:
            problems.extend(found)
        else:
            kept.append(decl)
    return kept, problems
