"""``--tpm`` and ``--rpm``: one limit over every model call of a command, where accepted.

The acceptance test runs the real minute: ten tasks of about 20,000 prompt tokens under
``--tpm 100000``; five fit a window, the next five wait until a minute after the first
ones came back. The fake records when each request arrives; no 60-second window of those
arrivals may hold more than 100,000 of the prompt tokens the fake reported.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.testing import FakeGemini
from tests.cli.conftest import Cli

TASKS = 10
PROMPT = "word " * 15_900  # about 19,900 tokens as the fake counts them (4 characters each)


class Arrivals:
    """Plays the model: answers ``done``, noting when each request arrived and for what."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, str]] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        text = body["contents"][0]["parts"][0]["text"]
        with self.lock:
            self.seen.append((time.monotonic(), text.split(":")[0]))
        return "done"


def most_in_any_window(arrivals: list[tuple[float, int]], window: float) -> int:
    """The most tokens whose arrivals fall in one half-open window of ``window`` seconds."""
    arrivals = sorted(arrivals)
    return max(
        sum(tokens for when, tokens in arrivals[i:] if when < start + window)
        for i, (start, _) in enumerate(arrivals)
    )


def write_tasks(folder: Path, count: int, prompt: str) -> None:
    tasks = [{"id": f"t{i}", "prompt": f"t{i}: {prompt}"} for i in range(count)]
    (folder / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}), "utf-8")


@pytest.mark.timeout(240)  # a real minute of waiting
def test_local_batch_holds_100k_tokens_in_any_minute_of_the_servers_arrivals(
    cli: Cli, workdir: Path
) -> None:
    write_tasks(workdir, TASKS, PROMPT)
    model = Arrivals()
    fake = FakeGemini(model)
    with fake.serve() as server:
        code, _, err = cli(
            "batch",
            "tasks.yaml",
            "--out",
            "results.jsonl",
            "--no-builtins",
            *("--concurrency", str(TASKS), "--tpm", "100000"),
            server=server,
        )
    assert code == 0, err
    records = [json.loads(line) for line in (workdir / "results.jsonl").read_text().splitlines()]
    reported = {record["id"]: record["usage"]["prompt"] for record in records}
    assert len(reported) == TASKS and all(19_800 < n < 20_000 for n in reported.values())
    arrivals = [(when, reported[task]) for when, task in model.seen]
    assert len(arrivals) == TASKS
    assert most_in_any_window(arrivals, 60.0) <= 100_000
    # The limit was used, not just respected: five prompts in the first minute.
    assert most_in_any_window(arrivals, 60.0) > 100_000 - 20_000
    first, last = min(t for t, _ in model.seen), max(t for t, _ in model.seen)
    assert last - first >= 60.0


def test_rpm_is_honoured_by_the_local_batch(cli: Cli, workdir: Path) -> None:
    # --rpm used to be read only by --engine dbos: the local runner dropped it silently.
    write_tasks(workdir, 6, "hello")
    model = Arrivals()
    fake = FakeGemini(model)
    with fake.serve() as server:
        code, _, err = cli(
            "batch",
            "tasks.yaml",
            "--out",
            "results.jsonl",
            "--no-builtins",
            *("--concurrency", "6", "--rpm", "2", "--rpm-window", "1"),
            server=server,
        )
    assert code == 0, err
    times = sorted(when for when, _ in model.seen)
    assert max(sum(1 for t in times[i:] if t < s + 1.0) for i, s in enumerate(times)) <= 2
    assert times[-1] - times[0] >= 2.0


def test_run_and_eval_take_the_limits(cli: Cli, workdir: Path) -> None:
    fake = FakeGemini(["Sunny.", "Sunny."])
    with fake.serve() as server:
        code, out, err = cli(
            "run", "--json", "--no-builtins", "--tpm", "10", "word " * 100, server=server
        )
    assert code == 4, err  # incomplete: the prompt alone is over the limit
    assert json.loads(out)["limit"] == "token_rate"
    assert fake.requests == []  # refused before it was sent
    with fake.serve() as server:
        code, out, err = cli("run", "--json", "--no-builtins", "--rpm", "5", "hi", server=server)
    assert code == 0, err
    evals = {"cases": [{"id": "a", "prompt": "word " * 100, "expect": {"text_contains": "Sunny"}}]}
    (workdir / "evals.yaml").write_text(yaml.safe_dump(evals), "utf-8")
    with fake.serve() as server:
        code, out, err = cli(
            "eval", "evals.yaml", "--no-builtins", "--tpm", "10", "--out", "e.jsonl", server=server
        )
    assert code == 1, err
    record = json.loads((workdir / "e.jsonl").read_text().splitlines()[0])
    assert record["status"] == "incomplete"


def test_limits_out_of_range_are_usage_errors(cli: Cli, workdir: Path) -> None:
    write_tasks(workdir, 1, "hello")
    cases = [
        (("batch", "tasks.yaml", "--out", "o.jsonl", "--tpm", "0"), "--tpm must be at least 1"),
        (("run", "--rpm", "0", "hi"), "--rpm must be at least 1"),
        (("batch", "tasks.yaml", "--out", "o.jsonl", "--rpm", "-1"), "--rpm must be at least 1"),
    ]
    fake = FakeGemini([])
    with fake.serve() as server:
        for args, message in cases:
            code, _, err = cli(*args, "--no-builtins", server=server)
            assert code == 2 and message in err, err
    assert fake.requests == []


def test_chat_and_worker_refuse_the_flags(cli: Cli, capsys: pytest.CaptureFixture[str]) -> None:
    # chat has no rate limit; a worker takes each batch's from the batch (set at submit).
    for command in ("chat", "worker"):
        with pytest.raises(SystemExit) as exited:
            cli(command, "--tpm", "1000")
        assert exited.value.code == 2
        assert "unrecognized arguments: --tpm" in capsys.readouterr().err
