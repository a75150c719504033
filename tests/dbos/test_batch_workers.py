"""Three worker processes on a real Postgres run one batch: each task once, limits held.

The fake Gemini (a Python function playing the model) is served on 127.0.0.1 and records
when each request arrives; the workers are real ``toolnexus-agent worker`` processes.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos", reason="needs the dbos extra: pip install '.[dbos]'")

from dbos import DBOSClient

from agent.testing import FakeGemini, ReplyLike, function_call, reply
from tests.dbos.conftest import PYTHON, env, kill, wait_until

TASKS = 60
EXPORT = ("--export", "results.jsonl")
RPM, WINDOW = 20, 1.0  # at most 20 model requests in any one second, across workers


class Model:
    """Plays the model: a task's prompt asks for the ``work`` tool, its result ends it."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self.first_prompts: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> ReplyLike:
        part = body["contents"][-1]["parts"][0]
        with self.lock:
            self.arrivals.append(time.monotonic())
            if "text" in part:
                self.first_prompts[part["text"]] += 1
        if "text" in part:
            number = int(part["text"].split()[-1])
            return reply(function_call("work", {"task": number}))
        return f"done: {part['functionResponse']['response']['output']}"


def _cli(*args: str, **extra: str) -> list[str]:
    return [PYTHON, "-m", "agent", *args]


def _ran(work: Path) -> list[tuple[str, str, int]]:
    log = work / "ran.log"
    lines = log.read_text("utf-8").splitlines() if log.exists() else []
    return [(pid, what, int(n)) for pid, what, n in (line.split() for line in lines)]


def _most_in_any_window(times: list[float], window: float) -> int:
    times = sorted(times)
    return max(sum(1 for t in times[i:] if t < start + window) for i, start in enumerate(times))


def test_three_workers_run_a_batch_exactly_once_within_its_limits(
    tmp_path: Path, postgres: str
) -> None:
    tasks = tmp_path / "nightly.yaml"
    tasks.write_text(
        "tasks:\n" + "".join(f"  - id: t{i:02d}\n    prompt: task {i}\n" for i in range(TASKS))
    )
    model = Model()
    fake = FakeGemini(model)
    submit = [
        *_cli("batch", str(tasks), "--engine", "dbos", "--db", postgres),
        *("--concurrency", "6", "--worker-concurrency", "2"),
        *("--rpm", str(RPM), "--rpm-window", str(WINDOW)),
    ]
    worker = [
        *_cli("worker", "--db", postgres, "--no-builtins", "--recover-every", "0.2"),
        *("--dead-after", "1"),  # the killed worker's lock is free for good: no need to wait
        *("--tools", "tests.dbos.batch_tools:work"),
    ]
    workers: list[subprocess.Popen[str]] = []
    with fake.serve() as server:
        base = env(
            GOOGLE_GEMINI_BASE_URL=server.base_url,
            GEMINI_API_KEY="test-key-not-a-secret",
            WORK=str(tmp_path),
        )
        try:
            # The first worker's tools never end: it takes two tasks and is killed in them.
            doomed = subprocess.Popen(
                worker, env={**base, "BLOCK_TOOLS": "1"}, cwd=tmp_path, text=True
            )
            workers.append(doomed)
            done = subprocess.run(submit, env=base, cwd=tmp_path, capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            assert "batch nightly: 60 tasks enqueued, 0 already there" in done.stderr
            in_doomed = lambda: [n for pid, what, n in _ran(tmp_path) if pid == str(doomed.pid)]  # noqa: E731
            wait_until(lambda: len(in_doomed()) == 2, "the first worker to block in two tasks")
            workers += [
                subprocess.Popen(worker, env=base, cwd=tmp_path, text=True) for _ in range(2)
            ]
            kill(doomed)
            status = subprocess.run(
                [*_cli("batch-status", "--db", postgres, "--name", "nightly", "--wait"), *EXPORT],
                env=base,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=240,
            )
            assert status.returncode == 0, status.stderr
            again = subprocess.run(submit, env=base, cwd=tmp_path, capture_output=True, text=True)
        finally:
            for process in workers:
                if process.poll() is None:
                    process.terminate()
            for process in workers:
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    kill(process)
    killed = in_doomed()
    # Every task completed, exactly once: the fake saw each task's first prompt once.
    lines = (tmp_path / "results.jsonl").read_text("utf-8").splitlines()
    records = [__import__("json").loads(line) for line in lines]
    assert sorted(r["id"] for r in records) == [f"t{i:02d}" for i in range(TASKS)]
    assert {r["status"] for r in records} == {"completed"}
    assert all(r["text"] == f"done: worked on {int(r['id'][1:])}" for r in records)
    assert model.first_prompts == Counter({f"task {i}": 1 for i in range(TASKS)})
    assert len(model.arrivals) == 2 * TASKS
    # The killed worker's two tasks were finished by the others: their tool ran again
    # elsewhere (it was cut off), and every task's tool finished once.
    ran = _ran(tmp_path)
    ends = Counter(n for _, what, n in ran if what == "end")
    assert ends == Counter(range(TASKS))
    for number in killed:
        starts = [pid for pid, what, n in ran if what == "start" and n == number]
        assert len(starts) == 2 and starts[0] == str(doomed.pid) != starts[1]
    # The request budget held across the workers (timestamps taken at the fake; a tenth
    # of the window is left for the time between a permit and its request's arrival).
    assert _most_in_any_window(model.arrivals, WINDOW * 0.9) <= RPM
    # Submitting the same batch again added nothing.
    assert again.returncode == 0, again.stderr
    assert "batch nightly: 0 tasks enqueued, 60 already there" in again.stderr
    client = DBOSClient(system_database_url=postgres)
    try:
        tasks_there = client.list_workflows(name="toolnexus.batch_task", load_output=False)
        assert len(tasks_there) == TASKS
    finally:
        client.destroy()
