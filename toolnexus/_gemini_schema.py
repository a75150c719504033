"""Turn a tool's JSON Schema into the schema Gemini takes under ``parameters``.

Gemini's ``parameters`` field is not JSON Schema but an OpenAPI-3.0 subset (the SDK's
``types.Schema``): no ``$ref``/``$defs``, no ``$schema``, no ``const``, no ``oneOf`` or
``allOf``, one ``type`` per schema (``nullable`` instead of ``"null"`` in a type list),
string-only ``enum``. `gemini_parameters` rewrites a schema into that subset:

- ``$ref`` is replaced by the definition it points at (``$defs`` / ``definitions`` are then
  dropped); a reference cycle is cut at its second visit (an open ``{"type": "object"}``).
- ``$schema``, ``$id``, ``$comment``, ``$anchor`` are dropped (metadata only).
- ``const: "x"`` becomes ``enum: ["x"]``; a non-string ``const`` keeps only its type.
- ``type: ["string", "null"]`` becomes ``type: "string", nullable: true``; several non-null
  types become an ``anyOf`` of one schema per type.
- ``anyOf`` / ``oneOf`` with a ``{"type": "null"}`` branch become ``nullable``; ``oneOf``
  becomes ``anyOf`` (Gemini treats them alike); ``allOf`` of object schemas is merged.
- ``additionalProperties: false`` / ``true`` is dropped: the model writes only declared
  properties, and the tool's own argument check still refuses unknown ones.
- ``required`` keeps only names that ``properties`` declares.

What cannot be expressed (a non-string ``enum``, ``not``, ``if``/``then``, ``prefixItems``,
``patternProperties``, a schema-valued ``additionalProperties``, ...) is dropped with a
`GeminiSchemaWarning` naming the tool and the keyword. The agent itself never needs this:
it sends the full schema as ``parametersJsonSchema`` (see ``to_gemini(..., json_schema=True)``).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping
from typing import Any

from toolnexus.errors import GeminiSchemaWarning

__all__ = ["SCHEMA_KEYWORDS", "gemini_parameters", "json_schema_parameters"]


SCHEMA_KEYWORDS = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "anyOf",
        "propertyOrdering",
        "default",
        "items",
        "minimum",
        "maximum",
    }
)
"""Keywords of Gemini's ``parameters`` Schema that carry over from JSON Schema as they are
(camelCase, as on the wire)."""

_SILENT_DROP = frozenset(
    {
        "$schema",
        "$id",
        "$comment",
        "$anchor",
        "$defs",
        "definitions",
        "additionalProperties",
        "discriminator",
    }
)
"""Keywords dropped without a warning: metadata, or meaning the subset does not need (an
OpenAPI ``discriminator`` is already said by the ``enum`` of each ``anyOf`` branch)."""

_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})


def json_schema_parameters(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Return the schema to send as ``parametersJsonSchema``: the full JSON Schema.

    Only ``$schema`` is dropped (it names the dialect, which Gemini fixes); an empty or
    missing schema becomes ``{"type": "object"}``.
    """
    out = copy.deepcopy(dict(schema)) if schema else {"type": "object"}
    out.pop("$schema", None)
    return out


def gemini_parameters(schema: Mapping[str, Any] | None, tool: str) -> dict[str, Any]:
    """Return ``schema`` rewritten into Gemini's ``parameters`` subset (see the module doc).

    Args:
        schema: The tool's JSON Schema (an object schema); ``None`` or empty means no
            arguments.
        tool: The tool's name, for the warnings.

    Returns:
        A new schema dict that ``types.FunctionDeclaration(parameters=...)`` accepts.
    """
    if not schema:
        return {"type": "object"}
    root = dict(schema)
    converted = _Converter(root, tool).convert(root, "parameters", ())
    return converted if converted else {"type": "object"}


class _Converter:
    def __init__(self, root: Mapping[str, Any], tool: str) -> None:
        self.root = root
        self.tool = tool

    def warn(self, where: str, keyword: str, why: str) -> None:
        warnings.warn(
            f"tool {self.tool!r}: {where}.{keyword} {why}; dropped from Gemini `parameters`",
            GeminiSchemaWarning,
            stacklevel=2,
        )

    def convert(self, node: Any, where: str, seen: tuple[str, ...]) -> dict[str, Any]:
        """Convert one (sub)schema; ``seen`` are the ``$ref``s being expanded above it."""
        if isinstance(node, bool) or not isinstance(node, Mapping):
            return {}  # ``true`` (anything) or garbage: an unconstrained schema
        node = dict(node)
        ref = node.pop("$ref", None)
        if isinstance(ref, str):
            node = self._inline(ref, node, where, seen)
            seen = (*seen, ref)
        if "allOf" in node:
            node = self._merge_all_of(node, where)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("properties", "items", "anyOf", "oneOf", "type", "const", "enum"):
                continue  # handled below, in an order that does not depend on the input's
            if key in _SILENT_DROP:
                if key == "additionalProperties" and isinstance(value, Mapping) and value:
                    self.warn(where, key, "is a schema (a map of free keys)")
                continue
            if key in SCHEMA_KEYWORDS:
                out[key] = copy.deepcopy(value)
            else:
                self.warn(where, key, "has no equivalent")
        self._type(node, out, where)
        self._const_and_enum(node, out, where)
        self._alternatives(node, out, where, seen)
        if isinstance(node.get("properties"), Mapping):
            out["properties"] = {
                name: self.convert(sub, f"{where}.properties.{name}", seen)
                for name, sub in node["properties"].items()
            }
        if "required" in out:
            declared = out.get("properties", {})
            out["required"] = [name for name in out["required"] if name in declared]
            if not out["required"]:
                del out["required"]
        items = node.get("items")
        if isinstance(items, Mapping | bool):
            out["items"] = self.convert(items, f"{where}.items", seen)
        elif isinstance(items, list):
            self.warn(where, "items", "is a tuple (a list of schemas)")
            out.pop("items", None)
        # The input's key order, then what the rewrite added (``nullable``, ``enum``...).
        ordered = {key: out[key] for key in node if key in out}
        return {**ordered, **out}

    def _inline(
        self, ref: str, node: dict[str, Any], where: str, seen: tuple[str, ...]
    ) -> dict[str, Any]:
        if ref in seen:
            self.warn(where, "$ref", f"{ref!r} refers to itself (a recursive schema)")
            return {"type": "object", **{k: v for k, v in node.items() if k == "description"}}
        target = _resolve(self.root, ref)
        if not isinstance(target, Mapping):
            self.warn(where, "$ref", f"{ref!r} does not resolve within the schema")
            return node
        merged = dict(target)
        merged.update(node)  # siblings of the $ref (a description, say) win
        return merged

    def _merge_all_of(self, node: dict[str, Any], where: str) -> dict[str, Any]:
        parts = node.pop("allOf")
        if not isinstance(parts, list):
            return node
        merged = dict(node)
        for raw in parts:
            if not isinstance(raw, Mapping):
                continue
            part = dict(raw)
            if "$ref" in part:
                target = _resolve(self.root, part.pop("$ref"))
                part = {**(dict(target) if isinstance(target, Mapping) else {}), **part}
            for key, value in part.items():
                if key == "properties" and isinstance(value, Mapping):
                    merged["properties"] = {**merged.get("properties", {}), **value}
                elif key == "required" and isinstance(value, list):
                    merged["required"] = [*merged.get("required", []), *value]
                else:
                    merged.setdefault(key, value)
        return merged

    def _type(self, node: Mapping[str, Any], out: dict[str, Any], where: str) -> None:
        declared = node.get("type")
        if declared is None:
            return
        types = declared if isinstance(declared, list) else [declared]
        known = [t for t in types if t in _TYPES]
        if len(known) != len(types):
            self.warn(where, "type", f"names an unknown type in {declared!r}")
        if "null" in known and len(known) > 1:
            out["nullable"] = True
            known = [t for t in known if t != "null"]
        if len(known) == 1:
            out["type"] = known[0]
        elif len(known) > 1:
            # One schema per type; keywords of the other types stay on the parent (ignored
            # by the model where they do not apply).
            out["anyOf"] = [{"type": t} for t in known]

    def _const_and_enum(self, node: Mapping[str, Any], out: dict[str, Any], where: str) -> None:
        if "const" in node:
            const = node["const"]
            if isinstance(const, str):
                out["enum"] = [const]
                out.setdefault("type", "string")
            else:
                self.warn(where, "const", f"is {const!r}, not a string")
        if "enum" in node:
            values = node["enum"]
            if not isinstance(values, list):
                self.warn(where, "enum", "is not a list")
                return
            if None in values:
                out["nullable"] = True
                values = [v for v in values if v is not None]
            if all(isinstance(v, str) for v in values):
                out["enum"] = list(values)
            else:
                self.warn(where, "enum", f"holds non-string values {values!r}")

    def _alternatives(
        self, node: Mapping[str, Any], out: dict[str, Any], where: str, seen: tuple[str, ...]
    ) -> None:
        options: list[Any] = []
        for key in ("anyOf", "oneOf"):
            value = node.get(key)
            if isinstance(value, list):
                options.extend(value)
        if not options:
            return
        if any(_is_null(option) for option in options):
            out["nullable"] = True
            options = [option for option in options if not _is_null(option)]
        converted = [
            self.convert(option, f"{where}.anyOf[{i}]", seen) for i, option in enumerate(options)
        ]
        if len(converted) == 1:
            for key, value in converted[0].items():
                out.setdefault(key, value)
        elif converted:
            out["anyOf"] = converted


def _is_null(schema: Any) -> bool:
    return isinstance(schema, Mapping) and schema.get("type") == "null" and len(schema) == 1


def _resolve(root: Mapping[str, Any], ref: str) -> Any:
    """Follow a local ``#/...`` JSON pointer; ``None`` when it does not resolve."""
    if not ref.startswith("#"):
        return None
    node: Any = root
    for raw in ref[1:].split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        else:
            return None
    return node
