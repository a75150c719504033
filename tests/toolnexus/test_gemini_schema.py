"""``to_gemini`` renders declarations the SDK and the (fake) API accept, for real-world schemas."""

from __future__ import annotations

import warnings
from typing import Annotated, Any, Literal

import pydantic
import pytest
from google.genai import types

import toolnexus as tn
from agent import ClientSettings
from agent.testing import FakeGemini
from toolnexus import GeminiSchemaWarning, Tool, ToolContext


class Cat(pydantic.BaseModel):
    kind: Literal["cat"]
    lives: int = 9


class Dog(pydantic.BaseModel):
    kind: Literal["dog"]
    good: bool | None = None


class Owner(pydantic.BaseModel):
    name: str
    pets: list[Annotated[Cat | Dog, pydantic.Field(discriminator="kind")]]
    best: Cat | None = None


@tn.define_tool
def adopt(owner: Owner, note: str | None = None) -> str:
    """Register an owner and their pets."""
    return owner.name


MCP_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File to open."},
        "mode": {"const": "r"},
        "limit": {"type": ["integer", "null"], "minimum": 1},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    },
    "required": ["path", "ghost"],
    "additionalProperties": False,
}


def _echo(args: dict[str, Any], ctx: ToolContext) -> str:
    return "ok"


def _mcp_tool() -> Tool:
    return Tool("files_open", _echo, "Open a file.", MCP_SCHEMA, source="mcp")


def _declaration(tools: list[Tool], **kwargs: Any) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GeminiSchemaWarning)
        decl: dict[str, Any] = tn.to_gemini(tools, **kwargs)[0]["functionDeclarations"][0]
    return decl


def test_nested_pydantic_union_is_accepted_by_the_sdk() -> None:
    decl = _declaration([adopt])
    types.FunctionDeclaration.model_validate(decl)
    owner = decl["parameters"]["properties"]["owner"]
    assert "$ref" not in str(decl) and "$defs" not in str(decl)
    branches = owner["properties"]["pets"]["items"]["anyOf"]
    assert [b["properties"]["kind"] for b in branches] == [
        {"type": "string", "enum": ["cat"]},
        {"type": "string", "enum": ["dog"]},
    ]
    assert owner["properties"]["best"]["nullable"] is True
    assert decl["parameters"]["properties"]["note"] == {"type": "string", "nullable": True}


def test_mcp_schema_with_dollar_schema_is_accepted_by_the_sdk() -> None:
    with pytest.warns(GeminiSchemaWarning) as caught:
        decl = tn.to_gemini([_mcp_tool()])[0]["functionDeclarations"][0]
    types.FunctionDeclaration.model_validate(decl)
    assert decl["parameters"] == {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File to open."},
            "mode": {"enum": ["r"], "type": "string"},
            "limit": {"type": "integer", "minimum": 1, "nullable": True},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["path"],
    }
    assert [str(w.message) for w in caught] == [
        "tool 'files_open': parameters.properties.tags.uniqueItems has no equivalent; "
        "dropped from Gemini `parameters`"
    ]


def test_the_raw_mcp_schema_is_what_the_sdk_refuses() -> None:
    # The point of the rewrite: the schema as the server published it does not validate
    # (the SDK even fails with an AttributeError on the type list).
    with pytest.raises((pydantic.ValidationError, AttributeError)):
        types.FunctionDeclaration.model_validate(
            {"name": "files_open", "description": "", "parameters": MCP_SCHEMA}
        )


def test_json_schema_form_keeps_everything_but_dollar_schema() -> None:
    decl = _declaration([_mcp_tool()], json_schema=True)
    assert "parameters" not in decl
    expected = {k: v for k, v in MCP_SCHEMA.items() if k != "$schema"}
    assert decl["parametersJsonSchema"] == expected
    types.FunctionDeclaration.model_validate(decl)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tn.to_gemini([adopt, _mcp_tool()], json_schema=True)  # never warns


@pytest.mark.parametrize(
    ("schema", "expected", "keyword"),
    [
        ({"type": "object", "properties": {"n": {"enum": [1, 2]}}}, {}, "enum"),
        ({"type": "object", "properties": {"n": {"const": 3}}}, {}, "const"),
        ({"type": "object", "properties": {"n": {"not": {"type": "string"}}}}, {}, "not"),
        (
            {"type": "object", "properties": {"n": {"type": "object", "additionalProperties": {}}}},
            {"type": "object"},
            None,
        ),
        (
            {"type": "object", "properties": {"n": {"additionalProperties": {"type": "integer"}}}},
            {},
            "additionalProperties",
        ),
    ],
)
def test_what_cannot_be_said_is_dropped_with_a_warning_naming_it(
    schema: dict[str, Any], expected: dict[str, Any], keyword: str | None
) -> None:
    tool = Tool("odd", _echo, "", schema)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        decl = tn.to_gemini([tool])[0]["functionDeclarations"][0]
    assert decl["parameters"]["properties"]["n"] == expected
    messages = [str(w.message) for w in caught]
    if keyword is None:
        assert messages == []
    else:
        assert len(messages) == 1
        assert f"tool 'odd': parameters.properties.n.{keyword}" in messages[0]
    types.FunctionDeclaration.model_validate(decl)


def test_type_lists_one_of_all_of_and_recursion() -> None:
    schema = {
        "type": "object",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"value": {"type": "integer"}, "next": {"$ref": "#/$defs/Node"}},
            }
        },
        "properties": {
            "either": {"type": ["string", "integer"]},
            "choice": {"oneOf": [{"type": "string"}, {"type": "null"}]},
            "both": {
                "allOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                    {"properties": {"b": {"type": "number"}}},
                ]
            },
            "list": {"$ref": "#/$defs/Node"},
        },
    }
    with pytest.warns(GeminiSchemaWarning, match=r"'#/\$defs/Node' refers to itself"):
        decl = tn.to_gemini([Tool("shapes", _echo, "", schema)])[0]["functionDeclarations"][0]
    types.FunctionDeclaration.model_validate(decl)
    props = decl["parameters"]["properties"]
    assert props["either"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert props["choice"] == {"nullable": True, "type": "string"}
    assert props["both"] == {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "number"}},
        "required": ["a"],
    }
    assert props["list"]["properties"]["next"] == {"type": "object"}


def test_the_fake_api_accepts_the_rendered_parameters() -> None:
    """Both forms go through the real SDK to the strict fake, which checks `parameters`."""
    fake = FakeGemini(["ok", "ok"])
    client = fake.client()
    for json_schema in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", GeminiSchemaWarning)
            rendered = tn.to_gemini([adopt, _mcp_tool()], json_schema=json_schema)
        tools = [types.Tool.model_validate(tool) for tool in rendered]
        response = client.models.generate_content(
            model="gemini-2.5-flash",
            contents="hi",
            config=types.GenerateContentConfig(
                tools=tools,  # type: ignore[arg-type]
                automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
            ),
        )
        assert response.text == "ok"
    fake.assert_consumed()
    assert [r.declared_functions for r in fake.requests] == [["adopt", "files_open"]] * 2


async def test_the_agent_sends_the_full_schema_without_dollar_schema() -> None:
    from agent import Agent

    fake = FakeGemini(["done"])
    async with Agent(
        toolkit=tn.toolkit([_mcp_tool()]),
        client=ClientSettings(api_key="k", http_client=fake.http_client()),
    ) as agent:
        await agent.run("open it")
    [decl] = fake.requests[0].body["tools"][0]["functionDeclarations"]
    assert decl["parametersJsonSchema"] == {k: v for k, v in MCP_SCHEMA.items() if k != "$schema"}
    assert decl == _declaration([_mcp_tool()], json_schema=True)
