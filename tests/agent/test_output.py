"""Typed results (``output_type``) over the real SDK against the strict fake."""

from __future__ import annotations

import dataclasses
from typing import Any

import pydantic
import pytest
from typing_extensions import TypedDict

import toolnexus as tn
from agent import Agent, ClientSettings, MemoryStore, ModelError, ModelSettings, RetryPolicy
from agent.testing import FakeGemini, function_call, json_output, reply
from tests.agent._loop_support import with_retry


class Weather(pydantic.BaseModel):
    city: str
    temp_c: int


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Pair(TypedDict):
    a: str
    b: int


@tn.define_tool
def forecast(city: str) -> str:
    """Today's weather for a city."""
    return f"{city}: 21 C"


def agent_on(fake: FakeGemini, model: str, tools: list[tn.Tool] | None = None, **kw: Any) -> Agent:
    return Agent(
        model,
        tn.toolkit(tools or []),
        client=ClientSettings(api_key="k", http_client=fake.http_client()),
        limits=with_retry(kw.pop("limits", None), RetryPolicy(attempts=1)),
        **kw,
    )


async def test_gemini_3_with_tools_sends_schema_and_tools_in_one_request() -> None:
    fake = FakeGemini(
        [function_call("forecast", {"city": "Paris"}), json_output({"city": "Paris", "temp_c": 21})]
    )
    agent = agent_on(fake, "gemini-3-flash-preview", [forecast], output_type=Weather)
    assert agent.output is not None and agent.output.mode == "native"
    result = await agent.run("Weather in Paris?")
    fake.assert_consumed()
    assert result.status == "completed"
    assert result.output == Weather(city="Paris", temp_c=21)
    assert result.text == '{"city": "Paris", "temp_c": 21}'
    for request in fake.requests:
        config = request.body["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        assert config["responseJsonSchema"] == Weather.model_json_schema()
        assert request.declared_functions == ["forecast"]
    assert result.to_dict()["output"] == {"city": "Paris", "temp_c": 21}


async def test_gemini_2_5_with_tools_uses_the_output_function() -> None:
    fake = FakeGemini(
        [
            reply(function_call("forecast", {"city": "Paris"}, id=None), signature=None),
            reply(
                function_call("final_result", {"city": "Paris", "temp_c": 21}, id=None),
                signature=None,
            ),
        ]
    )
    agent = agent_on(fake, "gemini-2.5-flash", [forecast], output_type=Weather)
    result = await agent.run("Weather in Paris?")
    fake.assert_consumed()
    assert (result.status, result.output) == ("completed", Weather(city="Paris", temp_c=21))
    assert fake.requests[0].declared_functions == ["forecast", "final_result"]
    assert "responseMimeType" not in fake.requests[0].body.get("generationConfig", {})
    last = result.contents[-1]
    assert last["role"] == "user"
    assert last["parts"][0]["functionResponse"]["name"] == "final_result"
    assert last["parts"][0]["functionResponse"]["response"]["output"] == "Final result accepted."


async def test_the_fake_refuses_native_output_with_tools_on_gemini_2_5() -> None:
    fake = FakeGemini(["never served"])
    agent = agent_on(
        fake,
        "gemini-2.5-flash",
        [forecast],
        output_type=Weather,
        settings=ModelSettings(output_mode="native"),
    )
    with pytest.raises(ModelError) as caught:
        await agent.run("Weather in Paris?")
    assert caught.value.code == 400
    assert fake.requests[0].error == (
        "Function calling with a response mime type: 'application/json' is unsupported"
    )


async def test_without_tools_native_works_on_every_model() -> None:
    fake = FakeGemini([json_output({"x": 1, "y": 2})])
    agent = agent_on(fake, "gemini-2.5-flash", output_type=Point)
    result = await agent.run("A point?")
    assert result.output == Point(1, 2)
    assert fake.requests[0].body["generationConfig"]["responseMimeType"] == "application/json"


async def test_invalid_output_is_sent_back_by_field_then_accepted() -> None:
    fake = FakeGemini([json_output({"a": "x", "b": "many"}), json_output({"a": "x", "b": 2})])
    agent = agent_on(fake, "gemini-3-flash-preview", output_type=Pair)
    result = await agent.run("A pair?")
    fake.assert_consumed()
    assert (result.status, result.output) == ("completed", {"a": "x", "b": 2})
    feedback = fake.requests[1].contents[-1]["parts"][0]["text"]
    assert "`b`: Input should be a valid integer" in feedback
    assert [c["role"] for c in fake.requests[1].contents] == ["user", "model", "user"]


async def test_refused_three_times_ends_incomplete_invalid_output() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    fake = FakeGemini([json_output({"n": "one"}), "not json", json_output({})])
    agent = agent_on(fake, "gemini-3-flash-preview", output_type=schema)
    result = await agent.run("A number?")
    fake.assert_consumed()
    assert (result.status, result.limit, result.output) == ("incomplete", "invalid_output", None)
    assert result.turns == 3
    assert "`n` must be an integer, got string" in fake.requests[1].contents[-1]["parts"][0]["text"]
    assert "is not valid JSON" in fake.requests[2].contents[-1]["parts"][0]["text"]


async def test_tool_mode_text_answer_and_bad_arguments_are_sent_back() -> None:
    fake = FakeGemini(
        [
            "It is 21 C in Paris.",
            function_call("final_result", {"city": "Paris"}),
            function_call("final_result", {"city": "Paris", "temp_c": 21}),
        ]
    )
    agent = agent_on(
        fake,
        "gemini-3-flash-preview",
        [forecast],
        output_type=Weather,
        settings=ModelSettings(output_mode="tool"),
    )
    result = await agent.run("Weather?")
    fake.assert_consumed()
    assert result.output == Weather(city="Paris", temp_c=21)
    assert "by calling `final_result`" in fake.requests[1].contents[-1]["parts"][0]["text"]
    refused = fake.requests[2].function_responses[0]["response"]
    assert refused["isError"] is True and "`temp_c`: Field required" in refused["output"]


def test_output_function_name_avoids_a_user_tool() -> None:
    @tn.define_tool
    def final_result(x: int) -> int:
        """A user tool with the default name."""
        return x

    agent = Agent(
        "gemini-2.5-flash",
        tn.toolkit([final_result]),
        output_type=Weather,
        client=ClientSettings(api_key="k"),
    )
    assert agent.output is not None and agent.output.tool_name == "final_output"
    assert [d["name"] for d in agent.declarations] == ["final_result", "final_output"]


def _writer(tmp_path: Any) -> tn.Tool:
    @tn.define_tool
    def write_note(text: str) -> str:
        """Write a note to notes.txt."""
        (tmp_path / "notes.txt").write_text(text, encoding="utf-8")
        return f"wrote {len(text)} characters"

    return write_note


async def test_output_beside_a_call_runs_the_call_then_completes(tmp_path: Any) -> None:
    store = MemoryStore()
    fake = FakeGemini(
        [
            reply(
                function_call("write_note", {"text": "hello"}, id=None),
                function_call("final_result", {"city": "Paris", "temp_c": 21}, id=None),
                signature=None,
            ),
            reply(
                function_call("final_result", {"city": "Paris", "temp_c": 19}, id=None),
                signature=None,
            ),
        ]
    )
    agent = agent_on(
        fake, "gemini-2.5-flash", [_writer(tmp_path)], output_type=Weather, store=store
    )
    result = await agent.run("Note it, then the weather in Paris?", session="s")
    assert (result.status, result.output) == ("completed", Weather(city="Paris", temp_c=21))
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "hello"  # the call ran
    assert [(c.name, c.result.is_error) for c in result.tool_calls] == [
        ("write_note", False),
        ("final_result", False),
    ]
    assert result.tool_calls[0].result.output == "wrote 5 characters"
    responses = [p["functionResponse"] for p in result.contents[-1]["parts"]]
    assert [r["name"] for r in responses] == ["write_note", "final_result"]
    assert responses[1]["response"]["output"] == "Final result accepted."
    # The saved session is valid history: the strict fake takes it on the next run.
    again = await agent.run("And yesterday?", session="s")
    fake.assert_consumed()
    assert all(request.status == 200 for request in fake.requests)
    assert again.output == Weather(city="Paris", temp_c=19)
    assert [c["role"] for c in fake.requests[-1].contents] == ["user", "model", "user", "user"]


async def test_a_rejected_output_beside_a_call_runs_the_call_and_asks_again(
    tmp_path: Any,
) -> None:
    fake = FakeGemini(
        [
            reply(
                function_call("final_result", {"city": "Paris"}, id=None),
                function_call("write_note", {"text": "hi"}, id=None),
                signature=None,
            ),
            reply(
                function_call("final_result", {"city": "Paris", "temp_c": 21}, id=None),
                signature=None,
            ),
        ]
    )
    agent = agent_on(fake, "gemini-2.5-flash", [_writer(tmp_path)], output_type=Weather)
    result = await agent.run("Note it, then the weather in Paris?")
    fake.assert_consumed()
    assert (result.status, result.output) == ("completed", Weather(city="Paris", temp_c=21))
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "hi"
    assert [c.name for c in result.tool_calls] == ["final_result", "write_note", "final_result"]
    sent = fake.requests[1].function_responses
    assert [r["name"] for r in sent] == ["final_result", "write_note"]
    assert sent[0]["response"]["isError"] is True
    assert "`temp_c`: Field required" in sent[0]["response"]["output"]
    assert sent[1]["response"] == {"output": "wrote 2 characters", "isError": False}
    assert all(request.status == 200 for request in fake.requests)
