"""YAML scenarios: every turn field, expectations, captures and clear errors for bad files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.genai import errors, types

from agent.testing import FakeGeminiError, ScenarioError, load_scenario, read_scenario
from tests.agent.testing.sdk import candidate, content, parts, usage

REPO = Path(__file__).resolve().parents[3]
MODEL = "gemini-3-flash-preview"


def _tools(*names: str) -> types.GenerateContentConfig:
    return types.GenerateContentConfig(
        tools=[
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(name=n, parameters_json_schema={"type": "object"})
                    for n in names
                ]
            )
        ],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


def _answer(content: types.Content, outputs: dict[str, str]) -> types.Content:
    return types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    id=p.function_call.id,
                    name=p.function_call.name,
                    response={"output": outputs[p.function_call.name or ""]},
                )
            )
            for p in content.parts or []
            if p.function_call
        ],
    )


async def test_the_example_scenario_drives_the_sdk() -> None:
    scenario = read_scenario(REPO / "examples/scenarios/weather.yaml")
    assert scenario.prompt == "What is the weather in Paris, and what time is it there?"
    fake = scenario.fake()
    client = fake.client()
    config = _tools("get_weather", "get_time")
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=scenario.prompt)])]
    with pytest.raises(errors.ClientError) as limited:
        await client.aio.models.generate_content(model=MODEL, contents=contents, config=config)
    assert limited.value.details["error"]["details"][0]["retryDelay"] == "0.01s"
    first = await client.aio.models.generate_content(model=MODEL, contents=contents, config=config)
    assert [c.name for c in first.function_calls or []] == ["get_weather", "get_time"]
    assert first.usage_metadata and usage(first).thoughts_token_count == 40
    model_turn = content(first)
    contents += [
        model_turn,
        _answer(model_turn, {"get_weather": "sunny, 21C", "get_time": "14:05"}),
    ]
    final = await client.aio.models.generate_content(model=MODEL, contents=contents, config=config)
    assert final.text == "Paris: sunny, 21C. Local time: 14:05."
    fake.assert_consumed()


async def test_expectation_failure_is_a_final_400_and_fails_assert_consumed() -> None:
    fake = load_scenario("turns:\n  - expect: {user_text: hello}\n    text: hi\n")
    with pytest.raises(errors.ClientError, match=r"turn 1: no user text contains 'hello'") as err:
        await fake.client().aio.models.generate_content(model=MODEL, contents="goodbye")
    assert (err.value.code, err.value.status) == (400, "FAILED_PRECONDITION")
    with pytest.raises(FakeGeminiError, match="failed its expectation"):
        fake.assert_consumed()


async def test_expect_tools_and_function_response_contents() -> None:
    fake = load_scenario(
        [
            {"expect": {"tools": ["a", "b"]}, "text": "x"},
            {"calls": [{"name": "a", "id": None}], "signature": False},
            {"expect": {"function_response": "a", "contains": "42"}, "text": "ok"},
        ]
    )
    client = fake.client()
    with pytest.raises(errors.ClientError, match="functions not declared: b"):
        await client.aio.models.generate_content(model=MODEL, contents="go", config=_tools("a"))
    call = await client.aio.models.generate_content(model=MODEL, contents="go", config=_tools("a"))
    part = parts(call)[0]
    assert part.function_call is not None and part.function_call.id is None
    assert part.thought_signature is None
    contents: list[Any] = [
        "go",
        content(call),
        _answer(content(call), {"a": "7"}),
    ]
    with pytest.raises(errors.ClientError, match="does not contain '42'"):
        await client.aio.models.generate_content(model=MODEL, contents=contents, config=_tools("a"))


async def test_error_blocked_delay_raw_and_plain_string_turns() -> None:
    fake = load_scenario(
        [
            {"error": 503},
            {"error": {"code": 500, "mid_stream": True}},
            {"blocked": "SAFETY"},
            {"delay": 0.01, "text": ["a", "b"], "finish_reason": "MAX_TOKENS"},
            {"raw": {"candidates": [{"content": {"role": "model", "parts": [{"text": "raw"}]}}]}},
            "plain",
        ]
    )
    client = fake.client()
    with pytest.raises(errors.ServerError, match="UNAVAILABLE"):
        await client.aio.models.generate_content(model=MODEL, contents="x")
    with pytest.raises(errors.ServerError, match="INTERNAL"):
        async for _ in await client.aio.models.generate_content_stream(model=MODEL, contents="x"):
            pass
    blocked = await client.aio.models.generate_content(model=MODEL, contents="x")
    assert (
        blocked.prompt_feedback
        and blocked.prompt_feedback.block_reason == types.BlockedReason.SAFETY
    )
    late = await client.aio.models.generate_content(model=MODEL, contents="x")
    assert late.text == "ab" and candidate(late).finish_reason == types.FinishReason.MAX_TOKENS
    assert (await client.aio.models.generate_content(model=MODEL, contents="x")).text == "raw"
    assert (await client.aio.models.generate_content(model=MODEL, contents="x")).text == "plain"
    fake.assert_consumed()


async def test_capture_without_a_match_fails_the_turn() -> None:
    fake = load_scenario(
        [
            {"calls": [{"name": "a"}]},
            {"capture": {"n": {"function_response": "a", "pattern": "(\\d+)"}}, "text": "{n}"},
        ]
    )
    client = fake.client()
    call = await client.aio.models.generate_content(model=MODEL, contents="go", config=_tools("a"))
    contents: list[Any] = [
        "go",
        content(call),
        _answer(content(call), {"a": "none"}),
    ]
    with pytest.raises(errors.ClientError, match="capture 'n' found no match"):
        await client.aio.models.generate_content(model=MODEL, contents=contents, config=_tools("a"))


def test_literal_braces_that_are_not_captures_stay() -> None:
    scenario = read_scenario([{"calls": [{"name": "write", "args": {"content": '{"a": {x}}'}}]}])
    turn = scenario.turns[0]
    assert turn.parts[0].args == {"content": '{"a": {x}}'}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"turns": "nope"}, "a list of turns"),
        ([{"txt": "typo"}], "turn 1: unknown field(s) txt"),
        ([{"calls": [{"args": {}}]}], "turn 1: calls[0] needs a name"),
        ([{"calls": [{"name": "a", "args": [1]}]}], "calls[0].args must be a mapping"),
        (["ok", {"error": {"status": "X"}}], "turn 2: error needs at least a code"),
        ([{"expect": {"nope": 1}, "text": "x"}], "unknown expect field(s) nope"),
        (
            [{"capture": {"n": {"pattern": "x"}}, "text": "x"}],
            "needs function_response and pattern",
        ),
        (
            [{"capture": {"n": {"function_response": "a", "pattern": "("}}, "text": "x"}],
            "bad pattern",
        ),
        ([42], "turn 1: expected a mapping or a string"),
        ([{"delay": "soon", "text": "x"}], "turn 1: delay must be a number, got 'soon'"),
        ([{"error": {"code": "rate"}}], "turn 1: error code must be a number"),
        ([{"raw": [1]}], "turn 1: raw must be a GenerateContentResponse mapping"),
    ],
)
def test_bad_scenarios_are_reported_with_the_turn(data: Any, message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        read_scenario(data)
    assert message in str(caught.value)
