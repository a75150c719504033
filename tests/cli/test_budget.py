"""``toolnexus-agent batch --budget-usd`` and the cost shown by ``run``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.testing import FakeGemini, reply
from tests.cli.conftest import Cli

# A million prompt tokens on gemini-2.5-flash: $0.30 a task.
PRICEY = {"promptTokenCount": 1_000_000, "candidatesTokenCount": 0, "totalTokenCount": 1_000_000}


def _pricey(body: dict[str, Any]) -> Any:
    return reply("answer to " + body["contents"][0]["parts"][0]["text"], usage=PRICEY)


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_twenty_task_batch_stops_at_its_budget_and_resumes_under_the_same_total(
    cli: Cli, workdir: Path
) -> None:
    tasks = [{"id": f"t{i:02d}", "prompt": f"task {i}"} for i in range(20)]
    (workdir / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}), "utf-8")
    args = ("batch", "tasks.yaml", "--out", "out.jsonl", "--no-builtins", "--concurrency", "1")
    fake = FakeGemini(_pricey)
    with fake.serve() as server:
        code, _, err = cli(*args, "--model", "gemini-2.5-flash", "--budget-usd", "1", server=server)
        # Three tasks spent $0.90, so a fourth started; after it, $1.20 >= $1: stop.
        records = _records(workdir / "out.jsonl")
        assert code == 1, err
        assert [r["id"] for r in records] == ["t00", "t01", "t02", "t03"]
        assert all(r["cost_usd"] == pytest.approx(0.3) for r in records)
        assert records[0]["cost_estimated"] is False
        assert "cost: $1.200000 for the tasks recorded in out.jsonl" in err
        assert "budget of $1 reached: 16 tasks not started" in err
        assert err.endswith("20 tasks: 4 completed, 16 missing; results in out.jsonl\n")
        assert len(fake.requests) == 4

        # The same budget again: the recorded total already reached it, nothing runs.
        code, _, err = cli(*args, "--budget-usd", "1", server=server)
        assert code == 1
        assert "budget of $1 reached: 16 tasks not started" in err
        assert len(fake.requests) == 4

        # A higher budget goes on from the recorded $1.20: three more tasks reach $2.10.
        code, _, err = cli(*args, "--budget-usd", "2", server=server)
        assert len(_records(workdir / "out.jsonl")) == 7
        assert "cost: $2.100000" in err

        code, _, err = cli(*args, server=server)  # no budget: the rest runs
    assert code == 0, err
    assert len(_records(workdir / "out.jsonl")) == 20
    assert "cost: $6.000000" in err
    assert len(fake.requests) == 20


def test_run_shows_the_cost(cli: Cli) -> None:
    fake = FakeGemini([reply("Hi.", usage=PRICEY)])
    with fake.serve() as server:
        code, out, err = cli(
            "run", "--no-builtins", "--model", "gemini-2.5-flash", "hi", server=server
        )
    assert code == 0, err
    assert out == "Hi.\n"
    assert err == "cost: $0.300000 (gemini-2.5-flash prices of 2026-09-20)\n"


@pytest.mark.parametrize("where", ["flag", "task"])
@pytest.mark.filterwarnings("default::agent.UnknownModelWarning")  # shown as a warning line
def test_a_budget_with_a_model_the_price_table_lacks_is_refused_before_any_task(
    cli: Cli, workdir: Path, where: str
) -> None:
    # A typo such as gemini-2.5-flsh would cost "$0.000000" and never stop the batch.
    tasks: list[dict[str, Any]] = [{"id": "a", "prompt": "one"}, {"id": "b", "prompt": "two"}]
    flags: tuple[str, ...] = ("--model", "gemini-2.5-flsh")
    if where == "task":
        tasks[1]["model"], flags = "gemini-2.5-flsh", ()
    (workdir / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}), "utf-8")
    fake = FakeGemini(_pricey)
    args = ("batch", "tasks.yaml", "--out", "out.jsonl", "--no-builtins", *flags)
    with fake.serve() as server:
        code, out, err = cli(*args, "--budget-usd", "1", server=server)
        assert (code, out) == (2, "")
        assert len(err.splitlines()) == 1, err
        assert "--budget-usd needs a price for 'gemini-2.5-flsh'" in err
        assert fake.requests == []
        assert (workdir / "out.jsonl").read_text(encoding="utf-8") == ""
        code, _, err = cli(*args, server=server)  # without a budget it runs, into Gemini's 404
    assert code == 1, err
    failed = [r for r in _records(workdir / "out.jsonl") if r["status"] == "failed"]
    assert "404 NOT_FOUND: models/gemini-2.5-flsh is not found" in failed[0]["error"]
