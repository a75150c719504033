"""Grouped options: `ModelSettings`, `RunLimits`, `ClientSettings`, and the old flat keywords."""

from __future__ import annotations

import inspect
import re
import warnings
from pathlib import Path

import pytest

import toolnexus as tn
from agent import (
    Agent,
    ClientSettings,
    ConfigurationError,
    Hooks,
    ModelRequest,
    ModelSettings,
    RetryPolicy,
    RunLimits,
    UsageLimits,
)
from agent.testing import FakeGemini, function_call, reply

ROOT = Path(__file__).resolve().parents[2]


def test_agent_takes_at_most_fifteen_parameters() -> None:
    parameters = [p for p in inspect.signature(Agent.__init__).parameters if p != "self"]
    assert len(parameters) <= 15, parameters


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ({"max_turns": 1}, "limits=RunLimits(max_turns=...)"),
        ({"temperature": 0.5}, "settings=ModelSettings(temperature=...)"),
        ({"api_key": "k"}, "client=ClientSettings(api_key=...)"),
        ({"retry": RetryPolicy(attempts=1)}, "limits=RunLimits(retry=...)"),
        ({"output_mode": "tool"}, "settings=ModelSettings(output_mode=...)"),
    ],
)
def test_an_old_keyword_warns_with_its_new_spelling_and_still_works(
    old: dict[str, object], new: str
) -> None:
    client = None if "api_key" in old else ClientSettings(api_key="k")
    with pytest.warns(DeprecationWarning, match=re.escape(new)):
        agent = Agent(client=client, **old)  # type: ignore[arg-type]
    assert agent.settings == ModelSettings(**{k: v for k, v in old.items() if k in _SETTINGS})
    for name, value in old.items():
        if name in _LIMITS:
            assert getattr(agent.limits, name) == value


_SETTINGS = {"temperature", "output_mode"}
_LIMITS = {"max_turns", "retry"}


async def test_old_keywords_run_the_same_requests_as_the_new_ones() -> None:
    old_fake, new_fake = FakeGemini(["hi"]), FakeGemini(["hi"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = Agent(api_key="k", http_client=old_fake.http_client(), temperature=0.3, max_turns=2)
    new = Agent(
        client=ClientSettings(api_key="k", http_client=new_fake.http_client()),
        settings=ModelSettings(temperature=0.3),
        limits=RunLimits(max_turns=2),
    )
    assert (await old.run("x")).text == (await new.run("x")).text == "hi"
    assert old_fake.requests[0].body == new_fake.requests[0].body


def test_a_group_given_both_ways_is_refused() -> None:
    with pytest.warns(DeprecationWarning), pytest.raises(ConfigurationError, match="limits="):
        Agent(limits=RunLimits(), max_turns=3, client=ClientSettings(api_key="k"))
    with pytest.warns(DeprecationWarning), pytest.raises(ConfigurationError, match="client="):
        Agent(client=ClientSettings(api_key="k"), api_key="k")


def test_an_unknown_keyword_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="max_turn"):
        Agent(client=ClientSettings(api_key="k"), max_turn=3)


@pytest.mark.parametrize(
    "limits",
    [
        {"max_turns": 0},
        {"repeat_limit": 1},
        {"malformed_retries": -1},
        {"output_retries": -1},
        {"invalid_tools": "drop"},
        {"deadline": 0},
    ],
)
def test_run_limits_are_checked(limits: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        RunLimits(**limits)  # type: ignore[arg-type]


def test_the_turn_default_is_written_once() -> None:
    # The CLI, the eval runner and the agent all take it from RunLimits.
    found = []
    for path in (ROOT / "agent").rglob("*.py"):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"max_turns\W.*\b50\b|\b50\b.*max_turns", line):
                found.append(f"{path.relative_to(ROOT)}:{number}")
    assert found == [], found


async def test_a_subagent_spends_from_its_parents_cost_limit_and_cost() -> None:
    def play(body: dict[str, object]) -> object:
        contents = body["contents"]
        assert isinstance(contents, list)
        last = contents[-1]["parts"][-1]
        if "functionResponse" in last:
            return reply("done", usage={"promptTokenCount": 1000, "totalTokenCount": 1000})
        if "helper" in str(body.get("tools")):
            calls = [function_call("helper", {"task": f"job {n}"}) for n in range(4)]
            return reply(*calls, usage={"promptTokenCount": 10, "totalTokenCount": 10})
        return reply(function_call("noop", {}), usage=_big)

    fake = FakeGemini(play)

    @tn.define_tool
    def noop() -> str:
        """Do nothing."""
        return "ok"

    client = ClientSettings(api_key="k", http_client=fake.http_client())
    helper = Agent("gemini-2.5-flash", tn.toolkit([noop]), client=client)
    lead = Agent(
        "gemini-2.5-flash",
        tn.toolkit([helper.as_tool(name="helper", description="Helps.")]),
        client=client,
        usage_limits=UsageLimits(cost_usd=0.01),
    )
    result = await lead.run("go")
    # Each helper call costs about $0.003; the tree stops at the parent's limit.
    helper_calls = [r for r in fake.requests if "noop" in str(r.body.get("tools"))]
    assert result.cost.usd is not None
    assert result.cost.usd >= sum(_usd(_big) for _ in helper_calls) * 0.99
    assert result.status == "incomplete" and result.limit == "usage:cost_usd"


_big = {"promptTokenCount": 10_000, "candidatesTokenCount": 100, "totalTokenCount": 10_100}


def _usd(usage: dict[str, int]) -> float:
    from agent._cost import call_usd
    from agent._result import Usage

    return (
        call_usd(
            "gemini-2.5-flash",
            Usage(prompt=usage["promptTokenCount"], candidates=usage["candidatesTokenCount"]),
        )
        or 0.0
    )


def test_no_package_reaches_into_anothers_private_modules() -> None:
    """agent imports no private toolnexus module; agent.cli, .dbos and .web no agent._* one.

    A private toolnexus module is ``toolnexus._*`` or one of a subpackage
    (``toolnexus.builtins._*``).
    """
    offenders = []
    pattern = {
        "agent": re.compile(r"^\s*(from|import) toolnexus(\.[a-z]\w*)*\._"),
        "agent/cli": re.compile(r"^\s*(from|import) agent\._|agent\._[a-z]"),
        "agent/dbos": re.compile(r"^\s*(from|import) agent\._|agent\._[a-z]"),
        "agent/web": re.compile(r"^\s*(from|import) agent\._|agent\._[a-z]"),
    }
    for folder, rule in pattern.items():
        for path in (ROOT / folder).rglob("*.py"):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if rule.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == [], "\n".join(offenders)


async def test_hooks_go_in_capabilities_and_the_old_keyword_still_works() -> None:
    seen: list[str] = []

    def note(request: ModelRequest) -> None:
        seen.append(request.model)

    new_fake, old_fake = FakeGemini(["hi"]), FakeGemini(["hi"])
    new = Agent(client=new_fake.client(), capabilities=[Hooks(before_model=note)])
    with pytest.warns(DeprecationWarning, match=re.escape("capabilities=[Hooks(...)]")):
        old = Agent(client=old_fake.client(), hooks=Hooks(before_model=note))  # type: ignore[call-arg]
    assert (await new.run("x")).text == (await old.run("x")).text == "hi"
    assert seen == ["gemini-2.5-flash", "gemini-2.5-flash"]
    assert new_fake.requests[0].body == old_fake.requests[0].body


def test_capabilities_are_one_of_a_kind_and_nothing_else() -> None:
    client = ClientSettings(api_key="k")
    with pytest.raises(ConfigurationError, match="two Hooks"):
        Agent(client=client, capabilities=[Hooks(), Hooks()])
    with pytest.raises(ConfigurationError, match="str is not a capability"):
        Agent(client=client, capabilities=["cache"])  # type: ignore[list-item]
