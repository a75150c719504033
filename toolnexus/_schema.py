"""Check tool arguments against the JSON-Schema subset tools declare.

Covers ``type`` (one or a list), ``properties``, ``required``, ``additionalProperties``
(boolean or schema), ``items``, ``enum``, ``minimum`` / ``maximum``, ``minItems`` and
``anyOf``. That is what built-in, skill and HTTP tool schemas use; Python-function tools
validate with their own pydantic model instead. Every problem is reported with the path
of the field, so a model can fix its call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolnexus.tool import ArgumentError, Validator

__all__ = ["check", "json_type", "schema_validator"]

_JSON_TYPES = {
    "string": "string",
    "number": "number",
    "integer": "integer",
    "boolean": "boolean",
    "array": "array",
    "object": "object",
    "null": "null",
}


def json_type(value: Any, *, article: bool = False) -> str:
    """Name the JSON type of ``value`` as messages show it: ``"integer"``, ``"array"``...

    With ``article`` the name gets "a"/"an" (``"an array"``).
    """
    name = _json_type_name(value)
    return _article(name) if article else name


def _json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _is_type(value: Any, expected: str) -> bool:
    actual = json_type(value)
    if expected == "number":
        return actual in ("number", "integer")
    if expected == "integer":
        return actual == "integer" or (actual == "number" and float(value).is_integer())
    return actual == expected


def _where(path: str) -> str:
    return f"`{path}`" if path else "the arguments"


def _check_type(value: Any, schema: Mapping[str, Any], path: str) -> str | None:
    expected = schema.get("type")
    if expected is None:
        return None
    options = [expected] if isinstance(expected, str) else list(expected)
    if any(_is_type(value, t) for t in options if t in _JSON_TYPES):
        return None
    wanted = " or ".join(options)
    return f"{_where(path)} must be {_article(wanted)}, got {json_type(value)}"


def _article(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


def check(value: Any, schema: Mapping[str, Any], path: str = "") -> list[str]:
    """Return the problems of ``value`` against ``schema`` (empty when it fits)."""
    problem = _check_type(value, schema, path)
    if problem:
        return [problem]
    problems: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(repr(v) for v in schema["enum"])
        problems.append(f"{_where(path)} must be one of {allowed}, got {value!r}")
    if "anyOf" in schema and all(check(value, s, path) for s in schema["anyOf"]):
        problems.append(f"{_where(path)} matches none of the allowed shapes")
    if json_type(value) in ("integer", "number"):
        problems += _check_bounds(value, schema, path)
    if isinstance(value, Mapping):
        problems += _check_object(value, schema, path)
    elif isinstance(value, list | tuple):
        problems += _check_array(value, schema, path)
    return problems


def _check_bounds(value: float, schema: Mapping[str, Any], path: str) -> list[str]:
    problems = []
    if "minimum" in schema and value < schema["minimum"]:
        problems.append(f"{_where(path)} must be at least {schema['minimum']}, got {value}")
    if "maximum" in schema and value > schema["maximum"]:
        problems.append(f"{_where(path)} must be at most {schema['maximum']}, got {value}")
    return problems


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _check_object(value: Mapping[str, Any], schema: Mapping[str, Any], path: str) -> list[str]:
    problems = []
    properties: Mapping[str, Any] = schema.get("properties") or {}
    for key in schema.get("required") or ():
        if key not in value:
            problems.append(f"missing required argument `{_join(path, key)}`")
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        sub = _join(path, str(key))
        if key in properties:
            problems += check(item, properties[key], sub)
        elif extra is False:
            known = ", ".join(properties) or "none"
            problems.append(f"unknown argument `{sub}` (allowed: {known})")
        elif isinstance(extra, Mapping):
            problems += check(item, extra, sub)
    return problems


def _check_array(
    value: list[Any] | tuple[Any, ...], schema: Mapping[str, Any], path: str
) -> list[str]:
    problems = []
    if "minItems" in schema and len(value) < schema["minItems"]:
        problems.append(f"{_where(path)} needs at least {schema['minItems']} item(s)")
    items = schema.get("items")
    if isinstance(items, Mapping):
        for index, item in enumerate(value):
            problems += check(item, items, f"{path}[{index}]")
    return problems


schema_problems = check
"""Public name of `check`: the problems of a value against a JSON Schema (empty: it fits)."""


def schema_validator(schema: Mapping[str, Any]) -> Validator:
    """Return a validator that raises `ArgumentError` listing every problem."""

    def validate(args: Any) -> dict[str, Any]:
        problems = check(args, schema)
        if problems:
            raise ArgumentError("Invalid arguments: " + "; ".join(problems))
        return dict(args)

    return validate
