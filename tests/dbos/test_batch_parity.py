"""``batch --engine dbos`` with a worker does what the local ``batch`` does, flag for flag.

The same tasks file runs twice against one fake Gemini: once by the local runner, once
enqueued on SQLite and run by a real ``toolnexus-agent worker`` process. Both send the
same system instruction, declarations, built-in tool, output schema and prompt (with its
file), hand the same ``deps`` to the tools, refuse the same gated call for the task that
does not allow it, and record the same result lines.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos", reason="needs the dbos extra: pip install '.[dbos]'")

from agent.cli import EXIT_FAILED, EXIT_USAGE, main
from agent.testing import FakeGemini, function_call, json_output, reply
from tests.dbos.conftest import PYTHON, env, kill

MODEL = "gemini-3-flash-preview"
TASKS = """\
tasks:
  - {id: plain, prompt: "Note it down: plain"}
  - {id: allowed, prompt: "Note it down: allowed", allow: [write], files: [notes.txt]}
"""


def play(body: dict[str, Any]) -> Any:
    """Ask who the task is for and write a note; then answer with what came back."""
    parts = body["contents"][-1]["parts"]
    if "functionResponse" not in parts[0]:
        name = parts[0]["text"].rsplit(" ", 1)[-1]
        calls = [
            function_call("whoami", {}),
            function_call("write", {"path": name, "content": "x"}),
        ]
        return reply(*calls)
    outputs = [part["functionResponse"]["response"]["output"] for part in parts]
    return reply(json_output({"answer": outputs[0]}))


def flags(work: Path) -> list[str]:
    return [
        *("--model", MODEL, "--system", "You keep notes."),
        *("--builtin-tool", "google_search", "--root", str(work / "root")),
        *("--tools", "tests.dbos.batch_tools:whoami", "--deps", "tests.dbos.batch_tools:deps_for"),
        *("--output-schema", str(work / "schema.json"), "--disable", "bash"),
    ]


def requests_by_task(fake: FakeGemini) -> dict[str, list[dict[str, Any]]]:
    """Each task's requests (without the per-run signatures), keyed by its prompt's id."""
    seen: dict[str, list[dict[str, Any]]] = {}
    for request in fake.requests:
        first = request.body["contents"][0]["parts"][0]["text"].rsplit(" ", 1)[-1]
        body = {k: v for k, v in request.body.items() if k != "contents"}
        seen.setdefault(first, []).append(body)
    return seen


def lines(path: Path) -> dict[str, dict[str, Any]]:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    keep = ("status", "output", "denied", "text")
    return {r["id"]: {k: r.get(k) for k in keep} for r in records}


def test_the_dbos_engine_honours_every_flag_the_local_runner_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "notes.txt").write_text("Buy milk.")
    (tmp_path / "schema.json").write_text(
        json.dumps(
            {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
        )
    )
    (tmp_path / "tasks.yaml").write_text(TASKS)
    monkeypatch.chdir(tmp_path)
    fake = FakeGemini(play)
    with fake.serve() as server:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
        monkeypatch.setenv("GEMINI_API_KEY", "test-key-not-a-secret")
        # A task whose gated call is refused ends "completed" with it denied.
        code = main(["batch", "tasks.yaml", "--out", "local.jsonl", *flags(tmp_path)])
        assert code in (0, EXIT_FAILED)
        local_requests = requests_by_task(fake)
        fake.requests.clear()
        db = f"sqlite:///{tmp_path / 'batch.sqlite'}"
        # Three workers; their own flags name only the toolkit: approval, output, deps and
        # built-in tools travel with each task.
        command = [
            *(PYTHON, "-m", "agent", "worker", "--db", db, "--recover-every", "0.2"),
            *("--root", str(tmp_path / "root"), "--tools", "tests.dbos.batch_tools:whoami"),
            *("--disable", "bash"),
        ]
        workers = [
            subprocess.Popen(
                command,
                env=env(GOOGLE_GEMINI_BASE_URL=server.base_url, GEMINI_API_KEY="test-key"),
                cwd=tmp_path,
                text=True,
            )
            for _ in range(3)
        ]
        try:
            submit = ["batch", "tasks.yaml", "--engine", "dbos", "--db", db, "--out", "dbos.jsonl"]
            assert main([*submit, *flags(tmp_path)]) in (0, EXIT_FAILED)
        finally:
            for worker in workers:
                kill(worker)
        durable_requests = requests_by_task(fake)
    assert durable_requests == local_requests
    body = local_requests["plain"][0]
    assert body["systemInstruction"]["parts"][0]["text"] == "You keep notes."
    assert {"googleSearch": {}} in body["tools"]
    assert body["generationConfig"]["responseJsonSchema"]["required"] == ["answer"]
    assert lines(tmp_path / "dbos.jsonl") == lines(tmp_path / "local.jsonl")
    results = lines(tmp_path / "local.jsonl")
    assert results["plain"]["denied"] == ["write"]
    assert results["plain"]["output"] == {"answer": "for plain"}
    assert not results["allowed"].get("denied")
    assert (tmp_path / "root" / "allowed").read_text() == "x"
    assert not (tmp_path / "root" / "plain").exists()
    # A task's steps are its model and tool calls, nothing else (no clock readings).
    from dbos import DBOSClient

    client = DBOSClient(system_database_url=db)
    try:
        steps = client.list_workflow_steps("tasks:allowed", load_output=False)
    finally:
        client.destroy()
    assert [step["function_name"] for step in steps] == [
        "toolnexus.model_call",
        "toolnexus.tool:whoami:begin",
        "toolnexus.tool:whoami",
        "toolnexus.tool:write:begin",
        "toolnexus.tool:write",
        "toolnexus.model_call",
    ]


def test_the_dbos_engine_refuses_a_budget_it_cannot_keep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "tasks.yaml").write_text(TASKS)
    db = f"sqlite:///{tmp_path / 'batch.sqlite'}"
    argv = ["batch", str(tmp_path / "tasks.yaml"), "--engine", "dbos", "--db", db]
    assert main([*argv, "--budget-usd", "1"]) == EXIT_USAGE
    assert "--budget-usd is kept by the local runner" in capsys.readouterr().err


def test_the_dbos_engine_refuses_a_service_tier_its_workers_would_not_see(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "tasks.yaml").write_text(TASKS)
    db = f"sqlite:///{tmp_path / 'batch.sqlite'}"
    argv = ["batch", str(tmp_path / "tasks.yaml"), "--engine", "dbos", "--db", db]
    assert main([*argv, "--service-tier", "flex"]) == EXIT_USAGE
    assert "give --service-tier (and --fallback-tier) to `toolnexus-agent worker`" in (
        capsys.readouterr().err
    )
