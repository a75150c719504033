"""`ContextCache` in durable runs: the cache is made once, and a replay finds it again.

Making a cache is a side effect outside the model step. It is replay-safe because a cache
is found by its prefix: a durable run resumed in a new process (after a crash) looks the
prefix up on the server before making one, so the crash costs no second cache.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos", reason="needs the dbos extra: pip install '.[dbos]'")

from dbos import DBOS

import toolnexus as tn
from agent import Agent
from agent.capabilities import ContextCache
from agent.dbos import DurableAgent, follow
from agent.events import CacheEvent
from agent.testing import FakeGemini, function_call
from agent.testing._server import FakeServer
from tests.dbos.conftest import PYTHON, env, kill, wait_until


@tn.define_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


RULES = "Keep to the house rules. " * 400
# Created at import time, before DBOS launches, as DBOS wants its workflows.
CACHING = FakeGemini([function_call("add", {"a": 2, "b": 3}), "2 + 3 = 5"])
caching = DurableAgent(
    Agent(
        toolkit=tn.toolkit([add]),
        system_prompt=RULES,
        capabilities=[ContextCache(ttl=600, mode="always")],
        client=CACHING.client(),
    ),
    name="test_caching",
)


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    database = tmp_path_factory.mktemp("dbos") / "runs.sqlite"
    DBOS(config={"name": "caching-tests", "system_database_url": f"sqlite:///{database}"})
    DBOS.launch()
    yield
    DBOS.destroy()


async def test_a_durable_run_uses_its_cache_from_the_first_request(launched: None) -> None:
    result = await caching.run("What is 2 + 3?", run_id="cached-1")
    assert (result.status, result.text) == ("completed", "2 + 3 = 5")
    assert [r.body.get("cachedContent") for r in CACHING.requests] == [
        "cachedContents/fakecache0001"
    ] * 2
    assert all("systemInstruction" not in r.body for r in CACHING.requests)
    assert CACHING.caches.created == ["cachedContents/fakecache0001"]
    assert result.cost.cache_storage > 0
    events = [event async for event in follow("cached-1")]
    assert [(e.action, e.name) for e in events if isinstance(e, CacheEvent)] == [
        ("created", "cachedContents/fakecache0001")
    ]
    # The same run id is the same run: nothing is made or sent again.
    assert await caching.run("What is 2 + 3?", run_id="cached-1") == result
    assert len(CACHING.requests) == 2 and len(CACHING.caches.created) == 1


APP = str(Path(__file__).with_name("durable_app.py"))


def _ran(work: Path) -> list[str]:
    log = work / "ran.log"
    return log.read_text("utf-8").splitlines() if log.exists() else []


def _start(
    server: FakeServer, db: str, work: Path, *args: str, output: int = subprocess.DEVNULL
) -> subprocess.Popen[str]:
    """Start the app; its output is discarded unless ``output`` is ``subprocess.PIPE``."""
    environ = env(FAKE_URL=server.base_url, DB_URL=db, WORK=str(work), CACHE="1")
    return subprocess.Popen(
        [PYTHON, APP, *args], env=environ, stdout=output, stderr=output, text=True
    )


def test_a_run_killed_mid_way_resumes_on_the_cache_it_made(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    fake = FakeGemini([function_call("slow", {"text": "one"}), "All done."])
    with fake.serve() as server:
        first = _start(server, db, tmp_path, "start", "run-c", "Do it.")
        try:
            wait_until(lambda: "start slow one" in _ran(tmp_path), "the slow tool to start")
        finally:
            kill(first)
        assert fake.caches.created == ["cachedContents/fakecache0001"]
        (tmp_path / "gate").touch()
        resumed = _start(server, db, tmp_path, "resume", "run-c", output=subprocess.PIPE)
        out, err = resumed.communicate(timeout=90)
    assert resumed.returncode == 0, err
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    assert result == {"status": "completed", "text": "All done.", "turns": 2}
    # The replay looked the prefix up and found the cache: none was made again.
    assert fake.caches.created == ["cachedContents/fakecache0001"]
    assert [method for method, _ in fake.caches.requests] == ["GET", "POST", "GET"]
    assert [r.body.get("cachedContent") for r in fake.requests] == [
        "cachedContents/fakecache0001"
    ] * 2
    fake.assert_consumed()


def test_batch_on_dbos_carries_cache_to_the_worker(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'batch.sqlite'}"
    tasks = tmp_path / "nightly.yaml"
    tasks.write_text(
        "tasks:\n" + "".join(f"  - {{id: t{i}, prompt: task {i}}}\n" for i in range(3))
    )
    (tmp_path / "rules.txt").write_text(RULES, encoding="utf-8")
    fake = FakeGemini(lambda body: "done")
    cli = [PYTHON, "-m", "agent"]
    with fake.serve() as server:
        base = env(GOOGLE_GEMINI_BASE_URL=server.base_url, GEMINI_API_KEY="test-key-not-a-secret")
        submit = [*cli, "batch", str(tasks), "--engine", "dbos", "--db", db, "--no-builtins"]
        submit += ["--system", "@rules.txt", "--cache", "10m"]
        done = subprocess.run(submit, env=base, cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        # The worker is given no --cache: the setting comes with each task.
        worker = subprocess.Popen(
            [*cli, "worker", "--db", db, "--no-builtins"],
            env=base,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            status = subprocess.run(
                [*cli, "batch-status", "--db", db, "--name", "nightly", "--wait"],
                env=base,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=120,
            )
        finally:
            worker.terminate()
            worker.wait(30)
    assert status.returncode == 0, status.stderr
    assert len(fake.requests) == 3
    assert fake.caches.created == ["cachedContents/fakecache0001"]
    assert {r.body.get("cachedContent") for r in fake.requests} == {"cachedContents/fakecache0001"}
    assert all("systemInstruction" not in r.body for r in fake.requests)
