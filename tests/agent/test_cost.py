"""`RunResult.cost` and the price table shipped as data."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent import Agent, ClientSettings, Usage
from agent._cost import price_table, run_cost
from agent.testing import FakeGemini, function_call, reply
from tests.agent._loop_support import KEY, echo_toolkit

ROOT = Path(__file__).resolve().parents[2]


def test_every_model_the_docs_name_has_a_price():
    names: set[str] = set()
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        names.update(re.findall(r"(?<![\w-])gemini-\d[\w.\-]*[A-Za-z0-9]", path.read_text("utf-8")))
    assert names, "the docs name no model?"
    table = price_table()
    missing = sorted(name for name in names if table.lookup(name) is None)
    assert not missing, f"no price for {missing}"


def test_the_table_is_dated_and_complete():
    table = price_table()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", table.source_date)
    for name, prices in table.models.items():
        for key in ("input", "output", "cached_input"):
            assert prices[key] > 0, (name, key)
        assert prices["batch"]["input"] < prices["input"], name
        if "long_context_threshold" in prices:
            assert prices["long_context"]["input"] > prices["input"], name


def test_prices_per_tier():
    turn = Usage(prompt=1_000_000, candidates=500_000, thoughts=500_000, cached=200_000)
    cost = run_cost("gemini-2.5-pro", [turn])
    # 800k fresh input at the >200k tier 2.50, 200k cached at 0.25, 1M output at 15.00
    assert cost.usd == pytest.approx(0.8 * 2.5 + 0.2 * 0.25 + 15.0)
    assert not cost.estimated
    small = run_cost("gemini-2.5-pro", [Usage(prompt=100_000, candidates=100_000)])
    assert small.usd == pytest.approx(0.1 * 1.25 + 0.1 * 10.0)
    batch = run_cost(
        "gemini-2.5-flash", [Usage(prompt=1_000_000, candidates=1_000_000)], batch=True
    )
    assert batch.usd == pytest.approx(0.15 + 1.25)
    derived = run_cost("gemini-3-flash-preview", [Usage(prompt=1_000_000)], batch=True)
    assert derived.estimated


def test_names_match_by_prefix_and_unknown_models_have_no_price():
    cost = run_cost("models/gemini-2.5-flash-lite-preview-06-17", [Usage(prompt=1_000_000)])
    assert (cost.model, cost.usd, cost.estimated) == ("gemini-2.5-flash-lite", 0.1, True)
    unknown = run_cost("llama-3", [Usage(prompt=10)])
    assert unknown.usd is None
    assert unknown.estimated


async def test_run_result_carries_the_cost_per_turn():
    fake = FakeGemini(
        [
            reply(
                function_call("echo", {"text": "a"}),
                usage={
                    "promptTokenCount": 1000,
                    "candidatesTokenCount": 100,
                    "totalTokenCount": 1100,
                },
            ),
            reply(
                "done",
                usage={
                    "promptTokenCount": 2000,
                    "candidatesTokenCount": 50,
                    "thoughtsTokenCount": 50,
                    "totalTokenCount": 2100,
                },
            ),
        ],
        api_key=KEY,
    )
    ag = Agent(
        toolkit=echo_toolkit(), client=ClientSettings(api_key=KEY, http_client=fake.http_client())
    )
    result = await ag.run("go")
    per_turn = (1000 * 0.3 + 100 * 2.5) / 1e6, (2000 * 0.3 + 100 * 2.5) / 1e6
    assert result.cost.turns == pytest.approx(per_turn)
    assert result.cost.usd == pytest.approx(sum(per_turn))
    assert result.cost.model == "gemini-2.5-flash"
    assert result.cost.prices_date == price_table().source_date
    assert result.to_dict()["cost"]["usd"] == pytest.approx(sum(per_turn))
