"""Pure request building: system instruction, declarations and the pre-flight check."""

from __future__ import annotations

import math

import pytest

from agent._declarations import check_declaration, declaration, split_valid, system_instruction
from toolnexus import Tool


def decl(name: str = "ok", schema: object = None) -> dict[str, object]:
    return {
        "name": name,
        "description": "",
        "parametersJsonSchema": {"type": "object"} if schema is None else schema,
    }


def fields(d: dict[str, object]) -> list[str]:
    return [p.field for p in check_declaration(d)]


@pytest.mark.parametrize(
    ("prompt", "catalog", "expected"),
    [
        ("Be brief.", "", "Be brief."),
        (None, "## Skills", "## Skills"),
        ("Be brief.", "## Skills", "Be brief.\n\n## Skills"),
        ("  ", "", None),
        (None, "", None),
    ],
)
def test_system_instruction_joins_without_dangling_separators(prompt, catalog, expected):
    assert system_instruction(prompt, catalog) == expected


def test_declaration_uses_parameters_json_schema_verbatim():
    schema = {"type": "object", "properties": {"x": {"type": ["string", "null"]}}}
    tool = Tool("t", lambda a, c: "", "Does t.", schema)
    assert declaration(tool) == {
        "name": "t",
        "description": "Does t.",
        "parametersJsonSchema": schema,
    }


def test_declaration_defaults():
    tool = Tool("t", lambda a, c: "", None, {})  # type: ignore[arg-type]
    assert declaration(tool) == {
        "name": "t",
        "description": "",
        "parametersJsonSchema": {"type": "object"},
    }


@pytest.mark.parametrize("name", ["a", "_a", "read_file", "a-b", "A" * 63])
def test_good_names(name):
    assert check_declaration(decl(name)) == []


@pytest.mark.parametrize("name", ["", "1bad", "bad name", "a.b", "a:b", "A" * 64, "ünï"])
def test_bad_names_name_the_field(name):
    assert fields(decl(name)) == ["name"]


def test_rich_json_schema_passes():
    schema = {
        "type": "object",
        "$defs": {"U": {"type": "string"}},
        "properties": {
            "u": {"$ref": "#/$defs/U"},
            "n": {"type": ["integer", "null"]},
            "c": {"const": 3},
            "o": {"oneOf": [{"type": "string"}, {"type": "number"}]},
            "m": {"type": "object", "additionalProperties": {"type": "boolean"}},
            "l": {"type": "array", "items": {"type": "string"}, "prefixItems": [True]},
        },
        "required": ["u"],
        "additionalProperties": False,
    }
    assert check_declaration(decl(schema=schema)) == []


@pytest.mark.parametrize(
    "schema",
    [
        # Valid JSON Schema that Gemini takes: the tool is kept, not dropped.
        {"type": "object", "required": ["x"]},
        {"type": "object", "properties": {"a": {}}, "required": ["a", "b"]},
        {"type": ["object"], "properties": {"a": {"type": "string"}}},
        {"properties": {"a": {"$ref": "#"}}},
    ],
)
def test_accepted_valid_schemas(schema):
    assert check_declaration(decl(schema=schema)) == []
    kept, problems = split_valid([decl(schema=schema)])
    assert (len(kept), problems) == (1, [])


def test_a_remote_ref_is_named_as_such():
    schema = {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}}
    (problem,) = check_declaration(decl(schema=schema))
    assert "not a local reference" in problem.message


@pytest.mark.parametrize(
    ("schema", "field"),
    [
        ({"type": "string"}, "parametersJsonSchema.type"),
        ([], "parametersJsonSchema"),
        (
            {"type": "object", "properties": {"a": {"type": "text"}}},
            "parametersJsonSchema.properties.a.type",
        ),
        (
            {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}},
            "parametersJsonSchema.properties.a.$ref",
        ),
        ({"type": "object", "required": "x"}, "parametersJsonSchema.required"),
        (
            {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}},
            "parametersJsonSchema.properties.a.$ref",
        ),
        ({"type": "object", "$ref": "other.json#/$defs/A"}, "parametersJsonSchema.$ref"),
        ({"type": ["object", "null"]}, "parametersJsonSchema.type"),
        (
            {"type": "object", "properties": {"a": {"default": math.nan}}},
            "parametersJsonSchema.properties.a.default",
        ),
        (
            {"type": "object", "properties": {"a": {"enum": {1, 2}}}},
            "parametersJsonSchema.properties.a.enum",
        ),
        ({"type": "object", "properties": []}, "parametersJsonSchema.properties"),
        (
            {"type": "object", "anyOf": [{"type": "nope"}]},
            "parametersJsonSchema.anyOf[0].type",
        ),
        (
            {"type": "object", "properties": {"a": {"items": {"type": []}}}},
            "parametersJsonSchema.properties.a.items.type",
        ),
    ],
)
def test_schema_problems_name_the_field(schema, field):
    assert field in fields(decl(schema=schema))


def test_problem_text_names_tool_and_field():
    (problem,) = check_declaration(decl("1x"))
    assert str(problem).startswith("tool '1x', field name: ")


def test_split_valid_keeps_order_and_collects_problems():
    kept, problems = split_valid([decl("a"), decl("1b"), decl("c")])
    assert [d["name"] for d in kept] == ["a", "c"]
    assert [p.tool for p in problems] == ["1b"]


def test_the_preflight_docs_say_what_the_code_does_with_undeclared_required_names():
    # The code sends such a tool as written (valid JSON Schema); the docs used to list it
    # among the reasons a tool is left out.
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "agent-loop.md").read_text("utf-8")
    assert "`required` naming an undeclared" not in text
    assert "is **not** a\nproblem" in text
