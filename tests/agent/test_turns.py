"""Per-turn control over the real SDK against the fake: prepare_turn, stop tools, the forced
final turn and the "any" reset, checked on the request bodies the fake received."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from agent import (
    Agent,
    ClientSettings,
    HookError,
    Hooks,
    ModelSettings,
    RetryPolicy,
    RunLimits,
    TurnSettings,
    TurnState,
)
from agent.errors import ConfigurationError
from agent.events import DoneEvent
from agent.testing import FakeGemini, function_call
from tests.agent._loop_support import KEY
from toolnexus import define_tool, toolkit

FLASH = "gemini-3-flash-preview"
PRO = "gemini-3.1-pro-preview"


@define_tool
def search(query: str) -> str:
    """Search the notes."""
    return f"found {query}"


@define_tool
def submit(answer: str) -> str:
    """Hand in the final answer."""
    return f"submitted: {answer}"


@define_tool
def fail_submit(answer: str) -> str:
    """A submit that refuses an empty answer."""
    if not answer:
        raise ValueError("the answer is empty")
    return f"submitted: {answer}"


async def _no_wait(seconds: float) -> None:
    return None


def make_agent(fake: FakeGemini, model: Any = FLASH, **options: Any) -> Agent:
    limits = options.pop("limits", RunLimits())
    return Agent(
        model,
        toolkit([search, submit, fail_submit]),
        limits=RunLimits(
            **{
                **{f: getattr(limits, f) for f in limits.__dataclass_fields__},
                "retry": RetryPolicy(attempts=2, sleep=_no_wait),
            }
        ),
        client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
        **options,
    )


def calling(body: dict[str, Any]) -> dict[str, Any] | None:
    config = body.get("toolConfig") or {}
    found: dict[str, Any] | None = config.get("functionCallingConfig")
    return found


def declared(request: Any) -> list[str]:
    return sorted(request.declared_functions)


# -- prepare_turn ------------------------------------------------------------------------


async def test_prepare_turn_sets_the_model_tools_choice_and_thinking_of_one_turn():
    seen: list[TurnState] = []

    def prepare(state: TurnState) -> TurnSettings | None:
        seen.append(state)
        if state.turn == 1:
            return TurnSettings(
                model=PRO, tool_choice="any", allowed_tools=["search"], thinking="low"
            )
        return None

    fake = FakeGemini([function_call("search", {"query": "q"}), "Done."], api_key=KEY)
    agent = make_agent(fake, capabilities=[Hooks(prepare_turn=prepare)])
    result = await agent.run("go", deps={"user": 7})
    fake.assert_consumed()
    first, second = fake.requests
    assert (first.model, second.model) == (PRO, FLASH)
    assert declared(first) == ["search"]
    assert calling(first.body) == {"mode": "ANY"}
    assert first.body["generationConfig"]["thinkingConfig"] == {"thinkingLevel": "LOW"}
    # The next turn is the agent's own again (and flash gets no signature pro issued).
    assert declared(second) == ["fail_submit", "search", "submit"]
    assert calling(second.body) is None and not second.body.get("generationConfig")
    assert second.contents[1]["parts"][0]["thoughtSignature"] == "skip_thought_signature_validator"
    assert result.turn_models == (PRO, FLASH)
    assert [s.turn for s in seen] == [1, 2]
    assert seen[0].max_turns == 50 and seen[0].deps == {"user": 7}
    assert seen[1].tool_calls[0].name == "search" and seen[1].contents[-1]["role"] == "user"
    assert seen[0].models == (FLASH,) and seen[0].model == FLASH and not seen[0].last_turn


async def test_an_async_prepare_turn_can_offer_no_function_at_all():
    async def prepare(state: TurnState) -> TurnSettings:
        return TurnSettings(allowed_tools=[])

    fake = FakeGemini(["Plain answer."], api_key=KEY)
    agent = make_agent(
        fake,
        settings=ModelSettings(tool_choice="any"),
        capabilities=[Hooks(prepare_turn=prepare)],
    )
    result = await agent.run("go")
    body = fake.requests[0].body
    assert "tools" not in body and "toolConfig" not in body
    assert result.text == "Plain answer."


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        (TurnSettings(allowed_tools=["nope"]), "allowed_tools names no tool"),
        (TurnSettings(tool_choice=["nope"]), "tool_choice names no tool"),
        (TurnSettings(tool_choice="sometimes"), "tool_choice must be"),  # type: ignore[arg-type]
        (TurnSettings(thinking="lots"), "thinking must be"),  # type: ignore[arg-type]
        ("any", "must return TurnSettings"),
    ],
)
async def test_settings_that_cannot_apply_are_a_hook_error(settings: Any, problem: str):
    fake = FakeGemini([], api_key=KEY)
    agent = make_agent(fake, capabilities=[Hooks(prepare_turn=lambda state: settings)])
    with pytest.raises(HookError, match=problem) as raised:
        await agent.run("go")
    assert raised.value.hook == "prepare_turn"
    assert raised.value.result.status == "incomplete"
    assert fake.requests == []  # nothing was sent


def test_turn_settings_are_checked_when_made():
    with pytest.raises(ConfigurationError):
        TurnSettings(allowed_tools="search")
    with pytest.raises(ConfigurationError):
        TurnSettings(model="")


# -- stop_at_tools -------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_a_stop_tool_ends_the_run_with_its_result_and_no_further_request(stream: bool):
    fake = FakeGemini(
        [
            function_call("search", {"query": "q"}),
            # Both calls of the turn run; the run ends with submit's result.
            [function_call("search", {"query": "r"}), function_call("submit", {"answer": "42"})],
        ],
        api_key=KEY,
    )
    agent = make_agent(fake, limits=RunLimits(stop_at_tools=["submit"]))
    if stream:
        events = [e async for e in agent.stream("go")]
        assert isinstance(events[-1], DoneEvent)
        result = events[-1].result
    else:
        result = await agent.run("go")
    fake.assert_consumed()
    assert len(fake.requests) == 2
    assert result.status == "completed" and result.text == "submitted: 42"
    assert [c.name for c in result.tool_calls] == ["search", "search", "submit"]
    assert result.contents[-1]["role"] == "user"  # the calls are answered: valid history


async def test_a_stop_tool_that_fails_goes_back_to_the_model():
    fake = FakeGemini(
        [
            function_call("fail_submit", {"answer": ""}),
            function_call("fail_submit", {"answer": "x"}),
        ],
        api_key=KEY,
    )
    agent = make_agent(fake, limits=RunLimits(stop_at_tools=["fail_submit"]))
    result = await agent.run("go")
    fake.assert_consumed()
    assert len(fake.requests) == 2
    assert fake.requests[1].function_responses[0]["response"]["isError"] is True
    assert result.text == "submitted: x"


def test_stop_at_tools_must_be_a_list_of_names():
    with pytest.raises(ConfigurationError):
        RunLimits(stop_at_tools="submit")  # type: ignore[arg-type]


# -- the forced final turn -----------------------------------------------------------------


class Answer(BaseModel):
    value: int


async def test_the_last_turn_offers_only_the_output_function_in_tool_mode():
    fake = FakeGemini(
        [function_call("search", {"query": "q"}), function_call("final_result", {"value": 3})],
        api_key=KEY,
    )
    agent = make_agent(
        fake,
        model="gemini-2.5-flash",
        output_type=Answer,
        limits=RunLimits(max_turns=2),
    )
    result = await agent.run("go")
    fake.assert_consumed()
    first, last = fake.requests
    assert declared(first) == ["fail_submit", "final_result", "search", "submit"]
    assert declared(last) == ["final_result"]
    assert calling(last.body) == {"mode": "ANY", "allowedFunctionNames": ["final_result"]}
    assert result.status == "completed" and result.output == Answer(value=3)


async def test_the_last_turn_offers_no_function_in_native_mode():
    fake = FakeGemini([function_call("search", {"query": "q"}), '{"value": 5}'], api_key=KEY)
    agent = make_agent(fake, output_type=Answer, limits=RunLimits(max_turns=2))
    result = await agent.run("go")
    last = fake.requests[-1]
    assert "tools" not in last.body and "toolConfig" not in last.body
    assert last.body["generationConfig"]["responseMimeType"] == "application/json"
    assert result.output == Answer(value=5)


async def test_a_text_agent_forces_its_last_turn_only_when_asked():
    script = [function_call("search", {"query": "q"}), "Answer."]
    plain = FakeGemini(list(script), api_key=KEY)
    assert declared((await _run(plain, RunLimits(max_turns=2)))[1]) != []
    forced = FakeGemini(list(script), api_key=KEY)
    requests = await _run(forced, RunLimits(max_turns=2, final_turn=True))
    assert "tools" not in requests[1].body
    never = FakeGemini([function_call("search", {"query": "q"})] * 2, api_key=KEY)
    agent = make_agent(never, output_type=Answer, limits=RunLimits(max_turns=2, final_turn=False))
    result = await agent.run("go")
    assert result.limit == "max_turns" and declared(never.requests[1]) != ["final_result"]


async def _run(fake: FakeGemini, limits: RunLimits) -> list[Any]:
    await make_agent(fake, limits=limits).run("go")
    fake.assert_consumed()
    return fake.requests


# -- tool_choice "any" resets after the forced call ----------------------------------------


@pytest.mark.parametrize("choice", ["any", ["search"]])
async def test_a_forced_tool_choice_resets_to_auto_after_the_forced_call(choice: Any):
    fake = FakeGemini([function_call("search", {"query": "q"}), "Done."], api_key=KEY)
    agent = make_agent(fake, settings=ModelSettings(tool_choice=choice))
    result = await agent.run("go")
    fake.assert_consumed()
    assert calling(fake.requests[0].body)["mode"] == "ANY"  # type: ignore[index]
    assert calling(fake.requests[1].body) == {"mode": "AUTO"}
    assert result.status == "completed" and result.text == "Done."
    # A second run starts forced again.
    again = FakeGemini(["x"], api_key=KEY)
    await make_agent(again, settings=ModelSettings(tool_choice=choice)).run("go")
    assert calling(again.requests[0].body)["mode"] == "ANY"  # type: ignore[index]


async def test_prepare_turn_may_force_a_call_on_a_later_turn_anyway():
    def prepare(state: TurnState) -> TurnSettings | None:
        return TurnSettings(tool_choice="any") if state.turn == 2 else None

    fake = FakeGemini(
        [function_call("search", {"query": "q"}), function_call("search", {"query": "r"}), "ok"],
        api_key=KEY,
    )
    agent = make_agent(
        fake, settings=ModelSettings(tool_choice="any"), capabilities=[Hooks(prepare_turn=prepare)]
    )
    await agent.run("go")
    modes = [calling(r.body)["mode"] for r in fake.requests]  # type: ignore[index]
    assert modes == ["ANY", "ANY", "AUTO"]


def test_a_forced_choice_without_functions_is_refused():
    with pytest.raises(ConfigurationError):
        Agent(settings=ModelSettings(tool_choice="any"), client=ClientSettings(api_key=KEY))
