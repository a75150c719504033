"""``batch --engine dbos`` and ``batch-status`` on SQLite, without workers: what is queued."""

from __future__ import annotations

import io
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos", reason="needs the dbos extra: pip install '.[dbos]'")

from agent.cli import EXIT_FAILED, EXIT_OK, EXIT_PENDING, EXIT_USAGE, main
from agent.cli._dbos_batch import polling_interval
from tests.cli.conftest import Terminal
from tests.dbos.conftest import PYTHON, env, wait_until


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    path = tmp_path / "nightly.yaml"
    path.write_text(
        "defaults: {model: gemini-2.5-pro}\n"
        "tasks:\n  - {id: a, prompt: first}\n  - {id: b, prompt: second}\n"
    )
    return path


def test_a_batch_is_enqueued_once_and_its_progress_shown(
    tasks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'batch.sqlite'}"
    assert main(["batch", str(tasks), "--engine", "dbos", "--db", db]) == EXIT_OK
    assert "batch nightly: 2 tasks enqueued, 0 already there" in capsys.readouterr().err
    assert main(["batch", str(tasks), "--engine", "dbos", "--db", db, "--name", "nightly"]) == 0
    assert "batch nightly: 0 tasks enqueued, 2 already there" in capsys.readouterr().err
    assert main(["batch-status", "--db", db, "--export", str(tmp_path / "r.jsonl")]) == EXIT_PENDING
    err = capsys.readouterr().err
    assert "nightly [------------------------------] 0/2 done, 0 running, 2 waiting" in err
    assert "0 results written" in err
    assert (tmp_path / "r.jsonl").read_text() == ""


def test_the_engine_flags_are_checked(
    tasks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'batch.sqlite'}"
    cases = {
        ("--db", "mysql://db/x"): "--db: expected sqlite:///FILE or postgresql://",
        ("--name", "a:b"): "the batch name 'a:b' may hold letters",
        ("--worker-concurrency", "9"): "--worker-concurrency must be between 1 and --concurrency",
        ("--rpm", "0"): "--rpm must be at least 1",
        ("--tpm", "0"): "--tpm must be at least 1",
        ("--budget-usd", "1"): "--budget-usd is kept by the local runner",
    }
    for flags, message in cases.items():
        argv = ["batch", str(tasks), "--engine", "dbos", "--db", db, *flags]
        assert main(argv) == EXIT_USAGE, flags
        assert message in capsys.readouterr().err
    assert main(["batch", str(tasks)]) == EXIT_USAGE
    assert "--out RESULTS.jsonl is required" in capsys.readouterr().err


class TtyStream(io.StringIO):
    """A stderr that says it is a terminal, so batch-status --wait draws its live frame."""

    def isatty(self) -> bool:
        return True


def test_batch_status_wait_redraws_two_batches_in_place(
    tasks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dbos import DBOSClient

    db = f"sqlite:///{tmp_path / 'batch.sqlite'}"
    other = tmp_path / "weekly.yaml"
    other.write_text("tasks:\n  - {id: w, prompt: third}\n")
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert main(["batch", str(tasks), "--engine", "dbos", "--db", db]) == EXIT_OK
    assert main(["batch", str(other), "--engine", "dbos", "--db", db]) == EXIT_OK
    screen = TtyStream()
    monkeypatch.setattr(sys, "stderr", screen)
    monkeypatch.setenv("COLUMNS", "200")  # the lines are cut to the terminal width
    codes: list[int] = []
    follower = threading.Thread(
        target=lambda: codes.append(main(["batch-status", "--db", db, "--wait"]))
    )
    follower.start()
    try:
        wait_until(lambda: "weekly [" in screen.getvalue(), "the first frame")
        frames = screen.getvalue().count("weekly [")
        wait_until(lambda: screen.getvalue().count("weekly [") > frames, "a redrawn frame")
    finally:
        # Workflows that are cancelled are finished: the follower stops.
        client = DBOSClient(system_database_url=db)
        try:
            for status in client.list_workflows():
                client.cancel_workflow(status.workflow_id)
        finally:
            client.destroy()
        follower.join(60)
    assert codes == [EXIT_FAILED]  # finished, not completed
    terminal = Terminal()
    terminal.write(screen.getvalue())
    assert terminal.rows == [
        "nightly [##############################] 2/2 done, 0 running, 0 waiting, 2 not completed",
        "weekly [##############################] 1/1 done, 0 running, 0 waiting, 1 not completed",
        "",
    ]


def _submitted(db: str) -> list[list[tuple[str, dict[str, Any]]]]:
    """The tasks each submission of the database carries: (workflow id, payload) pairs."""
    from agent.cli._dbos_batch import SUBMIT_WORKFLOW, client

    with client(db) as dbos:
        statuses = dbos.list_workflows(name=SUBMIT_WORKFLOW, load_input=True)
    return [status.input["args"][1] for status in statuses]  # type: ignore[index]


def test_the_submit_loads_no_gemini_sdk_and_writes_one_submission(tmp_path: Path) -> None:
    # The submitting process only writes a row: importing the SDK cost it seconds, and
    # enqueueing each task itself two database statements per task.
    big = tmp_path / "big.yaml"
    big.write_text("tasks:\n" + "".join(f"  - {{id: t{i}, prompt: p{i}}}\n" for i in range(250)))
    db = f"sqlite:///{tmp_path / 'batch.sqlite'}"
    script = (
        "import sys\n"
        "from agent.cli import main\n"
        f"code = main(['batch', {str(big)!r}, '--engine', 'dbos', '--db', {db!r},"
        " '--tpm', '50000', '--concurrency', '10'])\n"
        "assert code == 0, code\n"
        "sdk = ('google.genai', 'agent._agent')\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(sdk))\n"
        "print(loaded)\n"
    )
    done = subprocess.run(
        [PYTHON, "-c", script], env=env(), cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert "250 tasks enqueued" in done.stderr
    [items] = _submitted(db)
    assert [workflow_id for workflow_id, _ in items] == [f"big:t{i}" for i in range(250)]
    task = items[0][1]
    assert task["rate"] == {"tokens": 50000, "requests": None, "per": 60.0}
    assert task["batch"] == "big"
    from agent.cli._dbos_batch import client

    with client(db) as dbos:
        queue = dbos.retrieve_queue("toolnexus-big")
    assert queue is not None
    assert queue.polling_interval_sec == polling_interval(250, 10)


async def test_a_submission_enqueues_its_tasks_once_however_often_it_runs(
    tmp_path: Path,
) -> None:
    import httpx
    from dbos import DBOS

    from agent.cli._dbos_batch import TASK_WORKFLOW, client
    from agent.cli._dbos_submit import batch_submit
    from agent.cli._dbos_worker import WorkerRuntime
    from agent.cli._model import AgentFactory
    from toolnexus import Toolkit

    path = tmp_path / "night.yaml"
    path.write_text("tasks:\n" + "".join(f"  - {{id: t{i}, prompt: p{i}}}\n" for i in range(250)))
    db = f"sqlite:///{tmp_path / 'batch.sqlite'}"
    assert main(["batch", str(path), "--engine", "dbos", "--db", db]) == EXIT_OK
    [items] = _submitted(db)
    # Another application on the same database: it runs the submission here, and leaves
    # the batch's queue (the workers' application) alone.
    DBOS(config={"name": "fan-out-test", "system_database_url": db})
    DBOS.launch()
    async with httpx.AsyncClient() as http:
        runtime = WorkerRuntime(AgentFactory("gemini-2.5-flash", http, "k"), Toolkit(), db)
        WorkerRuntime.current = runtime
        try:
            # A chunk committed by a worker that died before its step was recorded...
            await runtime.enqueue("toolnexus-night", items[:100])
            # ...the submission run again by another, and a second submission of the same
            # tasks (two submits racing): each task is there once.
            assert await batch_submit("toolnexus-night", items) == 250
            assert await batch_submit("toolnexus-night", items) == 250
        finally:
            WorkerRuntime.current = None
            runtime.close()
            DBOS.destroy()
    with client(db) as dbos:
        statuses = dbos.list_workflows(name=TASK_WORKFLOW, load_input=True)
    assert sorted(status.workflow_id for status in statuses) == sorted(i for i, _ in items)
    assert {status.status for status in statuses} == {"ENQUEUED"}
    payloads = {status.workflow_id: status.input["args"][0] for status in statuses}  # type: ignore[index]
    assert payloads == dict(items)


def test_the_polling_interval_grows_with_the_batch() -> None:
    intervals = [polling_interval(tasks, 32) for tasks in (1, 32, 800, 3_200, 100_000)]
    assert intervals == sorted(intervals)
    assert intervals[0] == intervals[1] == 0.05  # one wave: looked at often
    assert 0.05 < intervals[2] < intervals[3] == 0.2 == intervals[4]


def test_the_model_chain_goes_with_each_task_to_the_workers(tmp_path: Path) -> None:
    import httpx

    from agent.cli._dbos_worker import WorkerRuntime
    from agent.cli._model import AgentFactory
    from toolnexus import Toolkit

    path = tmp_path / "night.yaml"
    path.write_text(
        "tasks:\n  - {id: a, prompt: first}\n  - {id: b, prompt: second, model: gemini-2.5-pro}\n"
    )
    db = f"sqlite:///{tmp_path / 'batch.sqlite'}"
    chain = "gemini-3.1-pro-preview,gemini-3-flash-preview"
    argv = ["batch", str(path), "--engine", "dbos", "--db", db, "--model", chain]
    assert main(argv) == EXIT_OK
    [items] = _submitted(db)
    payloads = {payload["id"]: payload for _, payload in items}
    assert payloads["a"]["model"] == "gemini-3.1-pro-preview"
    assert payloads["a"]["fallback_models"] == ["gemini-3-flash-preview"]
    assert payloads["b"]["fallback_models"] == []  # a task's own model: no fallback
    # A worker builds each task's agent with the chain the task carries, whatever its flags.
    factory = AgentFactory("gemini-2.5-flash", httpx.AsyncClient(), "k")
    runtime = WorkerRuntime(factory, Toolkit(), db)
    base = {"system": None, "max_turns": None, "approval": "never-ask"}
    assert runtime.agent_for({**base, **payloads["a"]}).models == (
        "gemini-3.1-pro-preview",
        "gemini-3-flash-preview",
    )
    assert runtime.agent_for({**base, **payloads["b"]}).models == ("gemini-2.5-pro",)
