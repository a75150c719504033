"""Typed generation settings: what goes on the wire for each model generation."""

from __future__ import annotations

from typing import Any

import pytest

import toolnexus as tn
from agent import Agent, ClientSettings, ConfigurationError, ModelSettings
from agent.events import DoneEvent, TextEvent, ThoughtEvent
from agent.testing import FakeGemini, reply, text, thought


@tn.define_tool
def lookup(city: str) -> str:
    """Look a city up."""
    return city


async def _sent(model: str, **settings: Any) -> dict[str, Any]:
    fake = FakeGemini(["ok"])
    async with Agent(
        model,
        tn.toolkit([lookup]),
        client=ClientSettings(api_key="k", http_client=fake.http_client()),
        settings=ModelSettings(**settings),
    ) as agent:
        await agent.run("hi")
    body: dict[str, Any] = fake.requests[0].body
    return body


async def test_temperature_tokens_and_tool_choice() -> None:
    body = await _sent(
        "gemini-2.5-flash", temperature=0.2, max_output_tokens=300, tool_choice=["lookup"]
    )
    assert body["generationConfig"] == {"temperature": 0.2, "maxOutputTokens": 300}
    assert body["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["lookup"]}
    }
    body = await _sent("gemini-2.5-flash", tool_choice="none")
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}


@pytest.mark.parametrize(
    ("model", "thinking", "expected"),
    [
        ("gemini-3-flash-preview", "low", {"thinkingLevel": "LOW"}),
        ("gemini-3.1-pro-preview", 20000, {"thinkingLevel": "HIGH"}),
        ("gemini-3-flash-preview", 0, {"thinkingLevel": "MINIMAL"}),
        ("gemini-2.5-flash", 512, {"thinkingBudget": 512}),
        ("gemini-2.5-flash", "medium", {"thinkingBudget": 8192}),
        ("gemini-2.5-flash", "minimal", {"thinkingBudget": 0}),
        ("gemini-2.5-pro", "minimal", {"thinkingBudget": 128}),
        ("gemini-2.5-pro", "high", {"thinkingBudget": 32768}),
    ],
)
async def test_thinking_is_a_level_or_a_budget_as_the_model_takes(
    model: str, thinking: Any, expected: dict[str, Any]
) -> None:
    body = await _sent(model, thinking=thinking, include_thoughts=True)
    assert body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, **expected}


def test_bad_settings_and_conflicts_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="tool_choice names no tool"):
        Agent(
            toolkit=tn.toolkit([lookup]),
            settings=ModelSettings(tool_choice=["nope"]),
            client=ClientSettings(api_key="k"),
        )
    with pytest.raises(ConfigurationError, match="thinking must be one of"):
        Agent(settings=ModelSettings(thinking="max"), client=ClientSettings(api_key="k"))  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="sets temperature, which the Agent"):
        Agent(
            settings=ModelSettings(temperature=0.5, config={"temperature": 0.1}),
            client=ClientSettings(api_key="k"),
        )


async def test_thought_summaries_stream_as_thought_events() -> None:
    fake = FakeGemini([reply(thought("Paris is in France."), text("Paris."))])
    agent = Agent(
        "gemini-3-flash-preview",
        settings=ModelSettings(include_thoughts=True),
        client=ClientSettings(api_key="k", http_client=fake.http_client()),
    )
    events = [event async for event in agent.stream("Capital?")]
    thoughts = "".join(e.text for e in events if isinstance(e, ThoughtEvent))
    assert thoughts == "Paris is in France."
    kinds = [type(e) for e in events if isinstance(e, ThoughtEvent | TextEvent)]
    assert kinds.index(TextEvent) > kinds.index(ThoughtEvent)
    assert isinstance(events[-1], DoneEvent) and events[-1].result.text == "Paris."
    assert fake.requests[0].body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True}


@pytest.mark.parametrize(
    "settings",
    [
        {"tool_choice": "none"},
        {"tool_choice": "auto"},
        {"config": {"tool_config": {"function_calling_config": {"mode": "AUTO"}}}},
    ],
)
async def test_tool_choice_is_not_sent_without_function_tools(settings: dict[str, Any]) -> None:
    # Gemini refuses a functionCallingConfig beside built-in tools alone (400 "Function
    # calling config is set without function_declarations"), and so does the fake.
    fake = FakeGemini(["Found it."])
    async with Agent(
        "gemini-2.5-flash",
        client=ClientSettings(api_key="k", http_client=fake.http_client()),
        builtin_tools=["google_search"],
        settings=ModelSettings(**settings),
    ) as agent:
        result = await agent.run("Search the news")
    assert result.text == "Found it."
    assert fake.requests[0].body["tools"] == [{"googleSearch": {}}]
    assert "toolConfig" not in fake.requests[0].body


def test_tool_choice_any_without_function_tools_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="the agent has none"):
        Agent(
            builtin_tools=["google_search"],
            settings=ModelSettings(tool_choice="any"),
            client=ClientSettings(api_key="k"),
        )
