"""``--service-tier`` and ``--fallback-tier`` on run, batch, chat and eval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from agent.testing import FakeGemini, function_call
from tests.cli.conftest import Cli

TOOLS = ("--no-builtins", "--tools", "clitools:TOOLS")


def _tiers(fake: FakeGemini) -> list[str | None]:
    return [request.body.get("serviceTier") for request in fake.requests]


def test_run_sends_the_tier_on_every_request_and_reports_the_tier_used(cli: Cli) -> None:
    fake = FakeGemini([function_call("get_weather", {"city": "Paris"}), "Sunny."])
    with fake.serve() as server:
        code, out, err = cli(
            "run", "--json", *TOOLS, "--service-tier", "flex", "Weather?", server=server
        )
    assert code == 0, err
    assert _tiers(fake) == ["flex", "flex"]
    assert json.loads(out)["service_tier"] == "flex"


def test_run_falls_back_from_a_shed_flex_request(cli: Cli) -> None:
    fake = FakeGemini(["Sunny."], shed_flex=10, shed_retry_delay=0.01)
    with fake.serve() as server:
        code, out, err = cli(
            "run",
            "--json",
            "--no-builtins",
            "--service-tier",
            "flex",
            "--fallback-tier",
            "standard",
            "Weather?",
            server=server,
        )
    assert code == 0, err
    assert _tiers(fake)[-1] == "standard"
    assert set(_tiers(fake)[:-1]) == {"flex"}
    assert json.loads(out)["service_tier"] == "standard"


def test_batch_records_the_tier_of_each_task(cli: Cli, workdir: Path) -> None:
    tasks = [{"id": f"t{i}", "prompt": f"task {i}"} for i in range(3)]
    (workdir / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}), "utf-8")
    fake = FakeGemini(lambda body: "done")
    with fake.serve() as server:
        code, _, err = cli(
            "batch",
            "tasks.yaml",
            "--out",
            "out.jsonl",
            "--no-builtins",
            "--service-tier",
            "priority",
            server=server,
        )
    assert code == 0, err
    assert _tiers(fake) == ["priority"] * 3
    records = [json.loads(line) for line in (workdir / "out.jsonl").read_text().splitlines()]
    assert [r["service_tier"] for r in records] == ["priority"] * 3


def test_eval_runs_its_cases_at_the_tier(cli: Cli, workdir: Path) -> None:
    evals = {"cases": [{"id": "hi", "prompt": "Hi?", "scenario": [{"text": "Hello."}]}]}
    (workdir / "evals.yaml").write_text(yaml.safe_dump(evals), "utf-8")
    code, _, err = cli(
        "eval", "evals.yaml", "--out", "runs.jsonl", "--offline", "--service-tier", "flex"
    )
    assert code == 0, err
    (record,) = [json.loads(line) for line in (workdir / "runs.jsonl").read_text().splitlines()]
    assert record["service_tier"] == "flex"  # the fake names the tier it was asked for


def test_chat_takes_the_flag(cli: Cli, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli("chat", "--help")
    assert "--service-tier" in capsys.readouterr().out


def test_a_fallback_without_flex_is_a_usage_error(cli: Cli) -> None:
    code, _, err = cli("run", "--fallback-tier", "standard", "hi")
    assert code == 2
    assert err.strip() == "toolnexus-agent: --fallback-tier needs --service-tier flex"
