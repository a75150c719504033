"""Adapters: exact payload shapes, ordering, defaults, and a Gemini round trip offline."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable
from typing import Any

import pytest

import toolnexus as tn
from toolnexus import Tool, ToolContext, ToolResult, define_tool

Adapter = Callable[[Any], list[dict[str, Any]]]
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "What to echo."}},
    "required": ["text"],
}


def _echo(args: dict[str, Any], ctx: ToolContext) -> str:
    return str(args.get("text", ""))


def _tool(name: str, description: str = "", schema: dict[str, Any] | None = None) -> Tool:
    if schema is None:
        return Tool(name, _echo, description)
    return Tool(name, _echo, description, schema)


def _declarations(adapter: Adapter, tools: Any) -> list[dict[str, Any]]:
    """The per-tool entries in a common shape, whichever adapter rendered them."""
    payload = adapter(tools)
    if adapter is tn.to_gemini:
        return [
            {"name": d["name"], "description": d["description"], "schema": d["parameters"]}
            for d in payload[0]["functionDeclarations"]
        ]
    if adapter is tn.to_openai:
        return [
            {
                "name": d["function"]["name"],
                "description": d["function"]["description"],
                "schema": d["function"]["parameters"],
            }
            for d in payload
        ]
    return [
        {"name": d["name"], "description": d["description"], "schema": d["input_schema"]}
        for d in payload
    ]


ADAPTERS = [tn.to_gemini, tn.to_openai, tn.to_anthropic]
ids = ["gemini", "openai", "anthropic"]


def test_gemini_shape() -> None:
    tk = tn.toolkit([_tool("echo", "Echo text.", SCHEMA)])
    assert tn.to_gemini(tk) == [
        {
            "functionDeclarations": [
                {"name": "echo", "description": "Echo text.", "parameters": SCHEMA}
            ]
        }
    ]


def test_openai_shape() -> None:
    tk = tn.toolkit([_tool("echo", "Echo text.", SCHEMA)])
    assert tn.to_openai(tk) == [
        {
            "type": "function",
            "function": {"name": "echo", "description": "Echo text.", "parameters": SCHEMA},
        }
    ]


def test_anthropic_shape() -> None:
    tk = tn.toolkit([_tool("echo", "Echo text.", SCHEMA)])
    assert tn.to_anthropic(tk) == [
        {"name": "echo", "description": "Echo text.", "input_schema": SCHEMA}
    ]


def test_empty() -> None:
    empties: list[Iterable[Tool]] = [tn.toolkit([]), [], ()]
    for tools in empties:
        assert tn.to_gemini(tools) == [{"functionDeclarations": []}]
        assert tn.to_openai(tools) == []
        assert tn.to_anthropic(tools) == []


@pytest.mark.parametrize("adapter", ADAPTERS, ids=ids)
def test_toolkit_renders_sorted_by_name(adapter: Adapter) -> None:
    tools = [_tool("zeta"), _tool("alpha"), _tool("Mid"), _tool("beta")]
    names = [d["name"] for d in _declarations(adapter, tn.toolkit(tools))]
    assert names == ["Mid", "alpha", "beta", "zeta"]


@pytest.mark.parametrize("adapter", ADAPTERS, ids=ids)
def test_explicit_list_and_tuple_keep_their_order(adapter: Adapter) -> None:
    tools = [_tool("zeta"), _tool("alpha"), _tool("beta")]
    assert [d["name"] for d in _declarations(adapter, tools)] == ["zeta", "alpha", "beta"]
    assert [d["name"] for d in _declarations(adapter, tuple(tools))] == ["zeta", "alpha", "beta"]


@pytest.mark.parametrize("adapter", ADAPTERS, ids=ids)
def test_defaults_for_missing_description_and_schema(adapter: Adapter) -> None:
    tools = [
        Tool("plain", _echo),
        Tool("empty_schema", _echo, "", {}),
        Tool("nones", _echo, None, None),  # type: ignore[arg-type]
    ]
    for declaration in _declarations(adapter, tools):
        assert declaration["description"] == ""
        assert declaration["schema"] == {"type": "object"}


@pytest.mark.parametrize("adapter", ADAPTERS[1:], ids=ids[1:])
def test_schema_is_passed_through_verbatim(adapter: Adapter) -> None:
    odd = {
        "type": "object",
        "properties": {"x": {"type": ["string", "null"], "oneOf": [{"const": 1}]}},
        "$defs": {"A": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert _declarations(adapter, [_tool("odd", "d", odd)])[0]["schema"] == odd


def _walk(node: Any, path: str = "$") -> list[str]:
    nones = [path] if node is None else []
    if isinstance(node, dict):
        for key, value in node.items():
            nones += _walk(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            nones += _walk(item, f"{path}[{index}]")
    return nones


def _mixed_toolkit() -> tn.Toolkit:
    def lookup(city: str, days: int | None = None, unit: str | None = None) -> str:
        """Look up the weather."""
        return city

    return tn.toolkit(
        [
            Tool("plain", _echo),
            Tool("nones", _echo, None, None),  # type: ignore[arg-type]
            _tool("echo", "Echo.", SCHEMA),
            define_tool(lookup),
        ]
    )


@pytest.mark.parametrize("adapter", ADAPTERS, ids=ids)
def test_no_none_anywhere_and_json_ready(adapter: Adapter) -> None:
    payload = adapter(_mixed_toolkit())
    assert _walk(payload) == []
    assert json.loads(json.dumps(payload)) == payload


@pytest.mark.parametrize("adapter", ADAPTERS, ids=ids)
def test_mutating_the_payload_does_not_change_the_tool(adapter: Adapter) -> None:
    tk = tn.toolkit([_tool("echo", "Echo.", copy.deepcopy(SCHEMA))])
    first = adapter(tk)
    for declaration in _declarations(adapter, tk):
        schema = declaration["schema"]
        schema["properties"]["text"]["type"] = "integer"
        schema["required"].append("other")
        schema["new"] = True
    first.clear()
    assert dict(tk["echo"].input_schema) == SCHEMA
    assert _declarations(adapter, tk)[0]["schema"] == SCHEMA


def test_define_tool_schema_renders_and_survives_mutation() -> None:
    @define_tool
    def add(a: int, b: int = 1) -> int:
        """Add two numbers."""
        return a + b

    payload = tn.to_gemini([add])
    expected_schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "default": 1}},
        "required": ["a"],
    }  # `additionalProperties: false` has no place in Gemini's `parameters` subset
    assert payload == [
        {
            "functionDeclarations": [
                {"name": "add", "description": "Add two numbers.", "parameters": expected_schema}
            ]
        }
    ]
    payload[0]["functionDeclarations"][0]["parameters"]["properties"].clear()
    assert tn.to_gemini([add])[0]["functionDeclarations"][0]["parameters"] == expected_schema


# --- Gemini round trip without network --------------------------------------------------------


def _function_response(call: dict[str, Any], result: ToolResult) -> dict[str, Any]:
    """A `functionResponse` part answering one `functionCall`, echoing its id when it had one."""
    response: dict[str, Any] = {"name": call["name"]}
    if call.get("id"):
        response = {"id": call["id"], **response}
    response["response"] = {"output": result.output, "isError": result.is_error}
    return {"functionResponse": response}


def _answer(tk: tn.Toolkit, model_content: dict[str, Any]) -> dict[str, Any]:
    """Run every functionCall of a model Content and build the one user Content replying."""
    parts = []
    for part in model_content["parts"]:
        call = part.get("functionCall")
        if call is None:
            continue
        result = tn.execute(tk, call["name"], call.get("args"), ToolContext(call_id=call.get("id")))
        parts.append(_function_response(call, result))
    return {"role": "user", "parts": parts}


def test_gemini_round_trip() -> None:
    @define_tool
    def get_weather(city: str, unit: str = "C") -> dict[str, Any]:
        """Current weather for a city."""
        return {"city": city, "temp": 21, "unit": unit}

    tk = tn.toolkit([get_weather, _tool("echo", "Echo.", SCHEMA)])
    declared = {d["name"] for d in tn.to_gemini(tk)[0]["functionDeclarations"]}
    model_content = {
        "role": "model",
        "parts": [
            {"text": "Let me check."},
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "call-1"}},
            {"functionCall": {"name": "get_weather", "args": {"city": 3}, "id": "call-2"}},
            {"functionCall": {"name": "echo", "id": "call-3"}},
            {"functionCall": {"name": "missing_tool", "args": {}}},
        ],
    }
    assert {"get_weather", "echo"} == declared
    reply = _answer(tk, model_content)
    assert reply["role"] == "user"
    assert [p["functionResponse"].get("id") for p in reply["parts"]] == [
        "call-1",
        "call-2",
        "call-3",
        None,
    ]
    first = reply["parts"][0]["functionResponse"]
    assert first == {
        "id": "call-1",
        "name": "get_weather",
        "response": {"output": '{"city":"Paris","temp":21,"unit":"C"}', "isError": False},
    }
    second = reply["parts"][1]["functionResponse"]["response"]
    assert second["isError"] is True
    assert second["output"].startswith("Invalid arguments: `city`: Input should be a valid string")
    assert reply["parts"][2]["functionResponse"]["response"] == {"output": "", "isError": False}
    last = reply["parts"][3]["functionResponse"]
    assert last["name"] == "missing_tool"
    assert last["response"]["isError"] is True
    assert "Available tools: echo, get_weather" in last["response"]["output"]
    assert json.loads(json.dumps(reply)) == reply
