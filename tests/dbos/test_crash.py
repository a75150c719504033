"""A durable run killed with SIGKILL resumes in a new process without repeating work.

Each test runs ``durable_app.py`` as a real process against the fake Gemini served on
127.0.0.1, kills it with SIGKILL at a known point, and starts it again; the request counts
are taken at the fake, the tool runs from the tools' own log.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos", reason="needs the dbos extra: pip install '.[dbos]'")

from dbos import DBOSClient

from agent.dbos import EVENTS_STREAM, follow, pending, send
from agent.events import Event
from agent.testing import FakeGemini, function_call, reply
from agent.testing._server import FakeServer
from tests.dbos.conftest import PYTHON, env, kill, wait_until

APP = str(Path(__file__).with_name("durable_app.py"))


def _app(server: FakeServer, db: str, work: Path) -> dict[str, str]:
    return env(FAKE_URL=server.base_url, DB_URL=db, WORK=str(work))


def _start(environ: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """Start the app in the background, its output discarded (it is killed)."""
    return subprocess.Popen(
        [PYTHON, APP, *args],
        env=environ,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def _ran(work: Path) -> list[str]:
    log = work / "ran.log"
    return log.read_text("utf-8").splitlines() if log.exists() else []


def _finish(command: list[str], environ: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(command, env=environ, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_run_killed_in_slow_tools_resumes_without_repeating_finished_work(
    tmp_path: Path,
) -> None:
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    fake = FakeGemini(
        [
            reply(function_call("note", {"text": "one"})),
            reply(function_call("slow", {"text": "two"}), function_call("charge", {"amount": 5})),
            "All done.",
        ]
    )
    with fake.serve() as server:
        environ = _app(server, db, tmp_path)
        first = _start(environ, "start", "run-1", "Do the two things.")
        try:
            wait_until(
                lambda: {"start slow two", "start charge 5"} <= set(_ran(tmp_path)),
                "both slow tools to start",
            )
        finally:
            kill(first)
        assert len(fake.requests) == 2  # killed after its second model call
        (tmp_path / "gate").touch()
        result = _finish([PYTHON, APP, "resume", "run-1"], environ)
    assert result == {"status": "completed", "text": "All done.", "turns": 3}
    # No model call was made twice: three requests, one per turn, each one turn longer.
    assert [len(r.contents) for r in fake.requests] == [1, 3, 5]
    fake.assert_consumed()
    # The finished tool ran once. Of the two cut off mid-call, the idempotent one ran again
    # and finished; the other was not run again, and the model was told so.
    ran = _ran(tmp_path)
    assert ran[:2] == ["start note one", "end note one"]
    assert sorted(ran[2:]) == ["end slow two", "start charge 5", "start slow two", "start slow two"]
    slow, charge = (r["response"] for r in fake.requests[2].function_responses)
    assert slow == {"output": "slow two done", "isError": False}
    assert charge["isError"] is True
    assert (
        "cut off by a crash" in charge["output"] and "not declared idempotent" in charge["output"]
    )


def test_a_question_is_answered_from_another_process_after_a_restart(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    question = {"questions": [{"question": "Ship it?", "options": ["yes", "no"]}]}
    fake = FakeGemini([reply(function_call("question", question)), "Shipped."])
    with fake.serve() as server:
        environ = _app(server, db, tmp_path)
        first = _start(environ, "start", "run-q", "Ship the release.")
        try:
            asked = asyncio.run(pending("run-q", db=db, wait=60))
        finally:
            kill(first)
        assert asked is not None and asked["prompt"] == "Ship it? (options: yes, no)"
        resumed = subprocess.Popen(
            [PYTHON, APP, "resume", "run-q"],
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # From this, a third process, naming the request it answers.
            asyncio.run(send("run-q", "yes", request_id=asked["id"], db=db))
            out, err = resumed.communicate(timeout=90)
        finally:
            if resumed.poll() is None:
                kill(resumed)
    assert resumed.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1]) == {
        "status": "completed",
        "text": "Shipped.",
        "turns": 2,
    }
    assert len(fake.requests) == 2  # the question was not asked of the model again
    answered = fake.requests[1].function_responses[0]["response"]
    assert answered["isError"] is False and "yes" in answered["output"]
    # Followed from here, a third process: each event once, across the kill and restart.
    events = asyncio.run(_events("run-q", db))
    assert [type(event).__name__ for event in events] == [
        "UsageEvent",
        "ToolCallEvent",
        "ToolResultEvent",
        "PendingEvent",
        "ToolResultEvent",  # the call re-run with the answer
        "TextEvent",
        "UsageEvent",
        "DoneEvent",
    ]


def test_events_written_again_by_a_model_call_cut_off_are_followed_once(
    tmp_path: Path,
) -> None:
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    held = threading.Event()

    def second_call(body: dict[str, Any]) -> str:
        held.wait(60)  # until the process that made the call is killed
        return "never received"

    fake = FakeGemini([reply(function_call("note", {"text": "one"})), second_call, "Noted."])
    with fake.serve() as server:
        environ = _app(server, db, tmp_path)
        first = _start(environ, "start", "run-e", "Take a note.")
        try:
            # The second call's step wrote the first turn's events, then made the call.
            wait_until(lambda: len(fake.requests) == 2, "the second model call")
        finally:
            kill(first)
            held.set()
        result = _finish([PYTHON, APP, "resume", "run-e"], environ)
    assert result == {"status": "completed", "text": "Noted.", "turns": 2}
    assert len(fake.requests) == 3  # the call cut off was made again
    # Its step wrote the first turn's events again; a follower reads them once.
    client = DBOSClient(system_database_url=db)
    try:
        entries = list(client.read_stream("run-e", EVENTS_STREAM))
    finally:
        client.destroy()
    assert [entry["number"] for entry in entries] == [0, 0, 1]
    events = asyncio.run(_events("run-e", db))
    assert [type(event).__name__ for event in events] == [
        "UsageEvent",
        "ToolCallEvent",
        "ToolResultEvent",
        "TextEvent",
        "UsageEvent",
        "DoneEvent",
    ]


async def _events(run_id: str, db: str) -> list[Event]:
    return [event async for event in follow(run_id, db=db)]
