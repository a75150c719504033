"""``batch --engine dbos --tpm``: three worker processes on a real Postgres share one limit.

Ten tasks of about 20,000 prompt tokens under ``--tpm 100000``, spread over three workers
by the queue: the limit's entries are rows of the batch database, taken under its lock, so
the workers together let five requests through in the first minute and the other five a
minute after those came back. The fake records when each request arrives (the real minute:
the test takes a little over one).
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos", reason="needs the dbos extra: pip install '.[dbos]'")

from dbos import DBOSClient

from agent.testing import FakeGemini
from tests.dbos.conftest import PYTHON, env, kill, wait_until

TASKS = 10
PROMPT = "word " * 15_900  # about 19,900 tokens as the fake counts them


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
    arrivals = sorted(arrivals)
    return max(
        sum(tokens for when, tokens in arrivals[i:] if when < start + window)
        for i, (start, _) in enumerate(arrivals)
    )


@pytest.mark.timeout(300)  # a real minute of waiting, and workers starting
def test_three_workers_hold_100k_tokens_in_any_minute(tmp_path: Path, postgres: str) -> None:
    tasks = tmp_path / "big.yaml"
    tasks.write_text(
        "tasks:\n" + "".join(f"  - id: t{i}\n    prompt: 't{i}: {PROMPT}'\n" for i in range(TASKS)),
        "utf-8",
    )
    model = Arrivals()
    fake = FakeGemini(model)
    cli = [PYTHON, "-m", "agent"]
    submit = [*cli, "batch", str(tasks), "--engine", "dbos", "--db", postgres]
    submit += ["--concurrency", str(TASKS), "--worker-concurrency", "4", "--tpm", "100000"]
    worker = [*cli, "worker", "--db", postgres, "--no-builtins", "--recover-every", "0.5"]
    workers: list[subprocess.Popen[str]] = []
    logs = [tmp_path / f"worker-{n}.log" for n in range(3)]
    with fake.serve() as server:
        base = env(GOOGLE_GEMINI_BASE_URL=server.base_url, GEMINI_API_KEY="test-key-not-a-secret")
        try:
            for log in logs:
                with log.open("w") as err:
                    workers.append(
                        subprocess.Popen(worker, env=base, cwd=tmp_path, text=True, stderr=err)
                    )
            wait_until(lambda: all("ready" in log.read_text() for log in logs), "workers")
            done = subprocess.run(submit, env=base, cwd=tmp_path, capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            status = subprocess.run(
                [*cli, "batch-status", "--db", postgres, "--wait", "--export", "results.jsonl"],
                env=base,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=240,
            )
            assert status.returncode == 0, status.stderr
            client = DBOSClient(system_database_url=postgres)
            try:
                ran_on = {
                    status.executor_id
                    for status in client.list_workflows(name="toolnexus.batch_task")
                }
            finally:
                client.destroy()
        finally:
            for process in workers:
                process.terminate()
            for process in workers:
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    kill(process)
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    reported = {record["id"]: record["usage"]["prompt"] for record in records}
    assert len(reported) == TASKS and all(19_800 < n < 20_000 for n in reported.values())
    arrivals = [(when, reported[task]) for when, task in model.seen]
    assert len(arrivals) == TASKS
    assert most_in_any_window(arrivals, 60.0) <= 100_000
    assert most_in_any_window(arrivals, 60.0) > 100_000 - 20_000  # the room was used
    first, last = min(t for t, _ in model.seen), max(t for t, _ in model.seen)
    assert last - first >= 60.0
    assert len(ran_on) >= 2  # the limit was held across workers, not inside one
