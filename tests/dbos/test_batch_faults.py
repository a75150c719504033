"""``batch --engine dbos`` under faults: ids that look like DBOS's own, bad ids, lost connections.

A worker is a real ``toolnexus-agent worker`` process against the fake Gemini served on
127.0.0.1. The connection tests end the workers' database sessions from the test with
``pg_terminate_backend``, as a database restart or a network cut would.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos", reason="needs the dbos extra: pip install '.[dbos]'")

from agent.cli import EXIT_OK, EXIT_USAGE, main
from agent.testing import FakeGemini, ReplyLike, function_call, reply
from tests.dbos.conftest import PYTHON, env, kill

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
