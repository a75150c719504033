"""``batch --engine dbos`` under faults: ids that look like DBOS's own, bad ids, lost connections.

A worker is a real ``toolnexus-agent worker`` process against the fake Gemini served on
127.0.0.1. The connection tests end the workers' database sessions from the test with
``pg_terminate_backend``, as a database restart or a network cut would.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos", reason="needs the dbos extra: pip install '.[dbos]'")

from agent.cli import EXIT_OK, EXIT_USAGE, main
from agent.testing import FakeGemini, ReplyLike, function_call, reply
from tests.dbos.conftest import PYTHON, env, kill, wait_until

WORKER = ("--no-builtins", "--tools", "tests.dbos.batch_tools:work", "--recover-every", "0.2")


def play(body: dict[str, Any]) -> ReplyLike:
    """A task's prompt asks for the ``work`` tool; its result ends the task."""
    part = body["contents"][-1]["parts"][0]
    if "text" in part:
        return reply(function_call("work", {"task": int(part["text"].split()[-1])}))
    return f"done: {part['functionResponse']['response']['output']}"


def tasks_file(path: Path, ids: list[str]) -> Path:
    path.write_text(
        "tasks:\n"
        + "".join(f"  - {{id: {json.dumps(i)}, prompt: task {n}}}\n" for n, i in enumerate(ids))
    )
    return path


@pytest.fixture
def worker_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    with FakeGemini(play).serve() as server:
        yield env(
            GOOGLE_GEMINI_BASE_URL=server.base_url,
            GEMINI_API_KEY="test-key-not-a-secret",
            WORK=str(tmp_path),
        )


def results(path: Path) -> dict[str, dict[str, Any]]:
    records = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    return {record["id"]: record for record in records}


def test_task_ids_shaped_like_dbos_child_ids_each_run_once(
    tmp_path: Path,
    worker_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Under --rpm every model call of task `t1` is a child workflow DBOS names `t1-N`: tasks
    # with such ids, submitted with it or added later, must neither clash nor be skipped.
    db = f"sqlite:///{tmp_path / 'batch.sqlite'}"
    for name, value in worker_env.items():
        monkeypatch.setenv(name, value)
    submit = ["batch", str(tmp_path / "nightly.yaml"), "--engine", "dbos", "--db", db]
    submit += ["--rpm", "6000", "--out", str(tmp_path / "results.jsonl")]
    first = ["t1", "t1-2"]
    later = [*first, "t1-1", "t1-3", "t1-4", "t1-5", "t1-6", "t1-7", "t1-8", "t1:2", "t1%2D9"]
    worker = subprocess.Popen(
        [PYTHON, "-m", "agent", "worker", "--db", db, *WORKER],
        env=worker_env,
        cwd=tmp_path,
        text=True,
    )
    try:
        tasks_file(tmp_path / "nightly.yaml", first)
        assert main(submit) == EXIT_OK
        assert "2 tasks enqueued, 0 already there" in capsys.readouterr().err
        tasks_file(tmp_path / "nightly.yaml", later)
        assert main(submit) == EXIT_OK
        assert "9 tasks enqueued, 2 already there" in capsys.readouterr().err
    finally:
        kill(worker)
    done = results(tmp_path / "results.jsonl")
    assert sorted(done) == sorted(later)
    assert {task: record["status"] for task, record in done.items()} == dict.fromkeys(
        later, "completed"
    )
    assert {task: record["text"] for task, record in done.items()} == {
        task: f"done: worked on {n}" for n, task in enumerate(later)
    }


def test_a_task_id_the_database_cannot_hold_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'batch.sqlite'}"
    tasks = tasks_file(tmp_path / "nightly.yaml", ["fine", "bad\u0000id"])
    assert main(["batch", str(tasks), "--engine", "dbos", "--db", db]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "NUL" in err and "'bad\\x00id'" in err
    assert main(["batch-status", "--db", db]) != EXIT_OK  # nothing was enqueued
    assert "no batch in this database" in capsys.readouterr().err


class Worker:
    """A ``worker`` process whose stderr lines are collected as they come."""

    def __init__(self, db: str, environ: dict[str, str], cwd: Path, *flags: str) -> None:
        self.process = subprocess.Popen(
            [PYTHON, "-m", "agent", "worker", "--db", db, *flags],
            env=environ,
            cwd=cwd,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    def said(self, text: str) -> int:
        """How many of its lines so far hold ``text``."""
        return sum(text in line for line in list(self.lines))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                kill(self.process)
        self._reader.join(30)
        assert self.process.stderr is not None
        self.process.stderr.close()


def terminate_sessions(db: str, application: str | None = None) -> int:
    """End the database sessions of one application name (all but ours when ``None``)."""
    import psycopg

    which = "application_name = %s" if application else "TRUE"
    with psycopg.connect(db, autocommit=True) as connection:
        ended = connection.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            f"WHERE datname = current_database() AND pid <> pg_backend_pid() AND {which}",
            (application,) if application else (),
        ).fetchone()
    assert ended is not None
    return int(ended[0])


def gated_play(body: dict[str, Any]) -> ReplyLike:
    """The task asks for the ``gated`` tool; its result ends the task."""
    part = body["contents"][-1]["parts"][0]
    if "text" in part:
        return reply(function_call("gated", {"task": 1}))
    return f"done: {part['functionResponse']['response']['output']}"


def export(db: str, environ: dict[str, str], out: Path) -> None:
    """Wait for the batch to finish and export its results to ``out``."""
    argv = [PYTHON, "-m", "agent", "batch-status", "--db", db, "--wait", "--export", str(out)]
    done = subprocess.run(argv, env=environ, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr


def test_workers_ride_out_dropped_database_connections(tmp_path: Path, postgres: str) -> None:
    # Worker A runs the task's tool, which is not idempotent; the test ends A's database
    # sessions (its lock's with them), then every worker's. No worker dies, none is taken
    # for dead, and the tool A finishes is the result the model reads, not "cut off".
    tasks = tasks_file(tmp_path / "nightly.yaml", ["only"])
    fake = FakeGemini(gated_play)
    flags = ("--no-builtins", "--tools", "tests.dbos.batch_tools:gated", "--recover-every", "0.2")
    workers: list[Worker] = []
    with fake.serve() as server:
        environ = env(
            GOOGLE_GEMINI_BASE_URL=server.base_url,
            GEMINI_API_KEY="test-key-not-a-secret",
            WORK=str(tmp_path),
        )
        some_died = lambda: any(w.process.poll() is not None for w in workers)  # noqa: E731
        try:
            a = Worker(f"{postgres}?application_name=worker-a", environ, tmp_path, *flags)
            workers.append(a)
            wait_until(lambda: a.said("ready on"), "worker A to start")
            submit = ["batch", str(tasks), "--engine", "dbos", "--db", postgres]
            done = subprocess.run(
                [PYTHON, "-m", "agent", *submit], env=environ, capture_output=True, text=True
            )
            assert done.returncode == 0, done.stderr
            wait_until(lambda: (tmp_path / "ran.log").exists(), "A to start the tool")
            b = Worker(f"{postgres}?application_name=worker-b", environ, tmp_path, *flags)
            workers.append(b)
            wait_until(lambda: b.said("ready on"), "worker B to start")

            assert terminate_sessions(postgres, "worker-a") >= 1  # its lock's among them
            wait_until(
                lambda: a.said("reconnected") or b.said("is gone") or some_died(),
                "A to take its lock again",
            )
            assert not b.said("is gone") and not some_died(), f"{a.output}\n{b.output}"

            assert terminate_sessions(postgres) >= 2  # every worker's
            wait_until(
                lambda: (a.said("reconnected") >= 2 and b.said("reconnected")) or some_died(),
                "both workers to take their locks again",
            )
            (tmp_path / "gate").touch()
            export(postgres, environ, tmp_path / "results.jsonl")
            alive = [w.process.poll() is None for w in workers]
        finally:
            for worker in workers:
                worker.stop()
    for worker in workers:
        assert "Traceback" not in worker.output, worker.output
        assert not worker.said("is gone"), worker.output
    assert alive == [True, True]
    record = results(tmp_path / "results.jsonl")["only"]
    assert (record["status"], record["text"]) == ("completed", "done: gated 1 done")
    ran = (tmp_path / "ran.log").read_text().split("\n")
    assert ran == [f"{a.process.pid} start 1", f"{a.process.pid} end 1", ""]
    response = fake.requests[1].function_responses[0]["response"]
    assert response == {"output": "gated 1 done", "isError": False}


def test_a_worker_is_dead_only_when_its_lock_stays_free(tmp_path: Path) -> None:
    from agent.cli._dbos_liveness import DeadWorkers, hold_liveness

    url = f"sqlite:///{tmp_path / 'batch.sqlite'}"
    now = [0.0]
    mine = hold_liveness(url, "toolnexus-worker-me")
    other = hold_liveness(url, "toolnexus-worker-other")
    watch = DeadWorkers(mine, "toolnexus-worker-me", dead_after=5, clock=lambda: now[0])
    try:
        assert watch.gone(["toolnexus-worker-me", "toolnexus-worker-other"]) == []
        other.close()  # free from now on, as a dropped lock connection leaves it
        seen = []
        for now[0] in (1.0, 3.0, 5.9, 6.0):
            seen.append(watch.gone(["toolnexus-worker-other"]))
        assert seen == [[], [], [], ["toolnexus-worker-other"]]
        # Taken again in between: the wait starts over.
        now[0] = 10.0
        assert watch.gone(["toolnexus-worker-other"]) == []
        other = hold_liveness(url, "toolnexus-worker-other")
        now[0] = 11.0
        assert watch.gone(["toolnexus-worker-other"]) == []
        other.close()
        for now[0] in (12.0, 16.9):
            assert watch.gone(["toolnexus-worker-other"]) == []
        now[0] = 17.0
        assert watch.gone(["toolnexus-worker-other"]) == ["toolnexus-worker-other"]
    finally:
        mine.close()


def test_the_worker_flags_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    cases = {
        ("--dead-after", "-1"): "--dead-after must be 0 seconds or more, got -1.0",
        ("--recover-every", "0"): "--recover-every must be more than 0 seconds, got 0.0",
    }
    for flags, message in cases.items():
        assert main(["worker", *flags]) == EXIT_USAGE
        assert message in capsys.readouterr().err
