"""``batch`` and ``eval`` with ``--engine gemini-batch``, against the fake's Batch API."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.testing import FakeGemini, error, function_call, reply
from tests.cli.conftest import Cli, cli_env, wait_for_request_handlers

USAGE = {"promptTokenCount": 1_000, "candidatesTokenCount": 100, "totalTokenCount": 1_100}

COUNTING_TOOLS = '''\
from pathlib import Path

from toolnexus import define_tool


@define_tool
def lookup(key: str) -> str:
    """Look a key up."""
    with Path("runs.log").open("a", encoding="utf-8") as log:
        log.write(key + "\\n")
    return f"{key} = {len(key)}"


TOOLS = [lookup]
'''


def two_tool_turns(body: dict[str, Any]) -> Any:
    task = body["contents"][0]["parts"][0]["text"]
    turns = sum(1 for content in body["contents"] if content.get("role") == "model")
    if task == "fail":
        return error(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")
    if turns < 2:
        return reply(function_call("lookup", {"key": f"{task}/{turns}"}), usage=USAGE)
    return reply(f"done with {task}", usage=USAGE)


@pytest.fixture
def tasks(workdir: Path) -> list[str]:
    (workdir / "counting.py").write_text(COUNTING_TOOLS, encoding="utf-8")
    ids = [f"t{i:02d}" for i in range(50)]
    listed = [{"id": task, "prompt": f"task {task}"} for task in ids]
    (workdir / "tasks.yaml").write_text(yaml.safe_dump({"tasks": listed}), encoding="utf-8")
    return ids


def _args(out: str, *more: str) -> list[str]:
    return [
        "batch",
        "tasks.yaml",
        "--out",
        out,
        "--no-builtins",
        "--tools",
        "counting:TOOLS",
        *more,
    ]


def _jobs(out: str, *more: str) -> list[str]:
    return _args(out, "--engine", "gemini-batch", "--poll-interval", "0", *more)


def _records(path: Path) -> dict[str, dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    records = {line["id"]: line for line in lines}
    assert len(records) == len(lines), "a task was recorded twice"
    return records


def test_fifty_tasks_take_three_jobs_at_half_the_cost(
    cli: Cli, workdir: Path, tasks: list[str]
) -> None:
    fake = FakeGemini(two_tool_turns)
    with fake.serve() as server:
        code, _, err = cli(*_jobs("batched.jsonl"), server=server)
        assert code == 0, err
        assert fake.batches.created == 3
        local_code, _, local_err = cli(*_args("local.jsonl", "--concurrency", "10"), server=server)
        assert local_code == 0, local_err
    assert err.count("requests sent (inline)") == 3
    assert "job batches/fakebatch000003: JOB_STATE_SUCCEEDED" in err
    assert err.endswith("50 tasks: 50 completed; results in batched.jsonl\n")
    batched, local = _records(workdir / "batched.jsonl"), _records(workdir / "local.jsonl")
    assert sorted(batched) == tasks
    for task in tasks:
        mine, theirs = batched[task], local[task]
        assert (mine["status"], mine["turns"], mine["tool_calls"]) == ("completed", 3, 2)
        assert mine["text"] == theirs["text"] == f"done with task {task}"
        assert mine["usage"] == theirs["usage"]
        assert mine["cost_usd"] == pytest.approx(theirs["cost_usd"] / 2)
    log = Counter((workdir / "runs.log").read_text(encoding="utf-8").splitlines())
    assert len(log) == 100 and set(log.values()) == {2}  # once per runner
    assert not (workdir / "batched.gemini-batch.jsonl").exists()  # done: state removed


def _wait(condition: Any, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert process.poll() is None, f"the batch ended before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_killed_after_its_second_job_the_batch_follows_that_job_when_run_again(
    cli: Cli, workdir: Path, tasks: list[str]
) -> None:
    fake = FakeGemini(two_tool_turns)
    fake.batches.progression = ("PENDING",) * 10**6  # jobs wait until the test lets them
    state = workdir / "out.gemini-batch.jsonl"
    command = [sys.executable, "-m", "agent", *_jobs("out.jsonl")]
    command[command.index("0")] = "0.01"  # --poll-interval
    with fake.serve() as server:
        first = subprocess.Popen(
            command, cwd=workdir, env=cli_env(server), stderr=subprocess.DEVNULL
        )
        try:
            _wait(lambda: fake.batches.created == 1, first, "the first job")
            fake.batches.jobs["fakebatch000001"].gets = 10**6  # it ends at its next read
            recorded = '"job": "batches/fakebatch000002"'
            _wait(lambda: recorded in state.read_text(encoding="utf-8"), first, "the second job")
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait()
        wait_for_request_handlers()
        assert first.returncode == -signal.SIGKILL
        assert (workdir / "out.jsonl").read_text(encoding="utf-8") == ""
        assert len((workdir / "runs.log").read_text(encoding="utf-8").splitlines()) == 50
        fake.batches.progression = ()
        code, _, err = cli(*_jobs("out.jsonl"), server=server)
    assert code == 0, err
    assert fake.batches.created == 3  # job 2 was followed, not created again
    assert "job batches/fakebatch000002: followed again after a restart" in err
    records = _records(workdir / "out.jsonl")
    assert sorted(records) == tasks
    assert {record["status"] for record in records.values()} == {"completed"}
    assert {record["turns"] for record in records.values()} == {3}
    log = Counter((workdir / "runs.log").read_text(encoding="utf-8").splitlines())
    assert len(log) == 100 and set(log.values()) == {1}  # no tool ran twice
    assert not state.exists()


def test_a_failed_task_runs_afresh_with_retry_failed(cli: Cli, workdir: Path) -> None:
    (workdir / "counting.py").write_text(COUNTING_TOOLS, encoding="utf-8")
    listed = [{"id": "good", "prompt": "task good"}, {"id": "bad", "prompt": "fail"}]
    (workdir / "tasks.yaml").write_text(yaml.safe_dump({"tasks": listed}), encoding="utf-8")
    fixed = [False]

    def model(body: dict[str, Any]) -> Any:
        if fixed[0]:  # the second run: the request is fine now
            body["contents"][0]["parts"][0]["text"] = "task bad"
        return two_tool_turns(body)

    fake = FakeGemini(model)
    with fake.serve() as server:
        code, _, err = cli(*_jobs("out.jsonl"), server=server)
        assert code == 1 and "1 completed, 1 failed" in err
        assert not (workdir / "out.gemini-batch.jsonl").exists()
        fixed[0] = True
        again, _, again_err = cli(*_jobs("out.jsonl", "--retry-failed"), server=server)
    assert again == 0, again_err
    lines = [json.loads(line) for line in (workdir / "out.jsonl").read_text().splitlines()]
    assert [(line["id"], line["status"]) for line in lines] == [
        ("bad", "failed"),
        ("good", "completed"),
        ("bad", "completed"),
    ]
    assert fake.batches.created == 6  # the second run sent "bad" afresh, three turns


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--rpm", "60"], "--rpm does not apply to --engine gemini-batch"),
        (["--service-tier", "flex"], "--service-tier does not apply"),
        (["--cache", "10m"], "--cache does not apply"),
        (["--budget-usd", "1"], "--budget-usd does not apply"),
        (["--db", "sqlite:///x.sqlite"], "--db does not apply"),
        (["--poll-interval", "-1"], "--poll-interval must be 0 or more"),
        (["--max-enqueued-tokens", "0"], "--max-enqueued-tokens must be at least 1"),
    ],
)
def test_flags_that_mean_nothing_for_batch_jobs_are_refused(
    cli: Cli, workdir: Path, tasks: list[str], flags: list[str], message: str
) -> None:
    code, out, err = cli(*_jobs("out.jsonl", *flags))
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (workdir / "out.jsonl").exists()


EVALS = """\
cases:
  - id: one
    prompt: task one
    expect:
      text_contains: [done with task one]
      tools:
        in_order: [{name: lookup}, {name: lookup}]
  - id: two
    prompt: task two
    expect:
      text_contains: [done with task two]
"""


def test_eval_runs_its_samples_in_batch_jobs(cli: Cli, workdir: Path) -> None:
    (workdir / "counting.py").write_text(COUNTING_TOOLS, encoding="utf-8")
    (workdir / "evals.yaml").write_text(EVALS, encoding="utf-8")
    fake = FakeGemini(two_tool_turns)
    args = ["eval", "evals.yaml", "--out", "runs.jsonl", "--samples", "2", "--no-builtins"]
    args += ["--tools", "counting:TOOLS", "--engine", "gemini-batch", "--poll-interval", "0"]
    with fake.serve() as server:
        code, _, err = cli(*args, server=server)
        refused, _, refused_err = cli(*args, "--service-tier", "flex", server=server)
    assert code == 0, err
    assert fake.batches.created == 3
    assert [len(job.keys) for job in fake.batches.jobs.values()] == [4, 4, 4]
    records = [json.loads(line) for line in (workdir / "runs.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in records) == ["one#1", "one#2", "two#1", "two#2"]
    assert all(r["passed"] for r in records)
    assert not (workdir / "runs.gemini-batch.jsonl").exists()
    assert refused == 2 and "--service-tier does not apply to --engine gemini-batch" in refused_err


SCENARIO = """\
batches: {progression: [], endings: [EXPIRED]}
turns:
  - text: Paris.
"""


def test_a_fake_scenario_plays_the_batch_api_and_an_expired_job_is_requeued(
    cli: Cli, workdir: Path
) -> None:
    (workdir / "scenario.yaml").write_text(SCENARIO, encoding="utf-8")
    tasks = [{"id": "capital", "prompt": "Capital of France?"}]
    (workdir / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}), encoding="utf-8")
    command = ["batch", "tasks.yaml", "--out", "out.jsonl", "--no-builtins"]
    command += ["--fake", "scenario.yaml", "--engine", "gemini-batch", "--poll-interval", "0"]
    code, _, err = cli(*command)
    assert code == 0, err
    assert err.splitlines()[:5] == [
        "job batches/fakebatch000001: 1 requests sent (inline)",
        "job batches/fakebatch000001: JOB_STATE_EXPIRED",
        "job batches/fakebatch000002: 1 requests sent (inline)",
        "job batches/fakebatch000002: JOB_STATE_SUCCEEDED",
        "capital: (model call failed: JOB_STATE_EXPIRED; retrying after 0.0 s)",
    ]
    (record,) = _records(workdir / "out.jsonl").values()
    assert (record["status"], record["text"]) == ("completed", "Paris.")


def test_a_scenarios_batches_are_checked(cli: Cli, workdir: Path) -> None:
    (workdir / "scenario.yaml").write_text(
        "batches: {endings: [EXPLODED]}\nturns: [{text: hi}]\n", encoding="utf-8"
    )
    (workdir / "tasks.yaml").write_text("tasks: [{id: a, prompt: hi}]\n", encoding="utf-8")
    code, _, err = cli("batch", "tasks.yaml", "--out", "o.jsonl", "--fake", "scenario.yaml")
    assert code == 2 and "batches.endings is a list of CANCELLED, EXPIRED" in err
