"""Durable runs and a distributed batch on DBOS, offline, on SQLite.

Run it from the repository root (needs ``pip install -e '.[dbos]'``)::

    python examples/durable_batch.py

Part 1 runs an agent as a DBOS workflow (``DurableAgent``): every model call and tool call
is a recorded step, so a crash in the middle resumes where it stopped. Part 2 enqueues a
batch of tasks (``toolnexus-agent batch --engine dbos``), runs two ``toolnexus-agent worker``
processes that share them, and exports the results (``batch-status --export``). Both talk
to the fake Gemini of ``agent.testing``: no key, no network. Everything is written to a
temporary directory, removed at the end.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from dbos import DBOS

import toolnexus as tn
from agent import Agent
from agent.dbos import DurableAgent
from agent.testing import FakeGemini, function_call, reply

REPO = Path(__file__).resolve().parents[1]


@tn.define_tool(idempotent=True)  # a read: a crash may run it again
def stock(item: str) -> str:
    """Return how many of an item are in stock."""
    return f"{item}: 12 in stock"


# Part 1 ------------------------------------------------------------------------------
# A DurableAgent is created at import time, like any DBOS workflow, so that a restarted
# process finds it when DBOS recovers an interrupted run.
fake = FakeGemini([reply(function_call("stock", {"item": "lamps"})), "There are 12 lamps."])
durable = DurableAgent(Agent(toolkit=tn.toolkit([stock]), client=fake.client()), name="shop")


async def durable_run(folder: Path) -> None:
    database = f"sqlite:///{folder / 'shop.sqlite'}"
    DBOS(config={"name": "shop", "system_database_url": database, "log_level": "WARNING"})
    DBOS.launch()
    try:
        result = await durable.run("How many lamps are left?", run_id="order-1")
        print(f"durable run: {result.status}: {result.text}")
        steps = await DBOS.list_workflow_steps_async("order-1")
        names = [step["function_name"] for step in steps if "Stream" not in step["function_name"]]
        print(f"recorded steps: {', '.join(names)}")
    finally:
        DBOS.destroy()


# Part 2 ------------------------------------------------------------------------------


def model(body: dict[str, Any]) -> str:
    """Plays the model for the batch: answers each task's prompt."""
    prompt = body["contents"][-1]["parts"][0]["text"]
    return f"Done: {prompt.lower()}"


def batch(folder: Path) -> None:
    tasks = folder / "inventory.yaml"
    tasks.write_text(
        "tasks:\n" + "".join(f"  - id: shelf-{i}\n    prompt: Count shelf {i}\n" for i in range(6))
    )
    db = f"sqlite:///{folder / 'batch.sqlite'}"
    with FakeGemini(model).serve() as server:
        env = {
            **os.environ,
            "GOOGLE_GEMINI_BASE_URL": server.base_url,
            "GEMINI_API_KEY": "fake-key-not-a-secret",
            "PYTHONPATH": str(REPO),
        }
        quiet: dict[str, Any] = {"env": env, "cwd": folder, "stderr": subprocess.DEVNULL}
        subprocess.run(
            [sys.executable, "-m", "agent", "batch", str(tasks), "--engine", "dbos", "--db", db],
            check=True,
            **quiet,
        )
        worker = [sys.executable, "-m", "agent", "worker", "--db", db, "--no-builtins"]
        status = [sys.executable, "-m", "agent", "batch-status", "--db", db, "--wait"]
        workers = [subprocess.Popen(worker, **quiet) for _ in range(2)]
        try:
            subprocess.run(
                [*status, "--export", "results.jsonl"],
                check=True,
                timeout=120,
                **quiet,
            )
        finally:
            for process in workers:
                process.terminate()
            for process in workers:
                process.wait()
    records = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    for record in sorted(records, key=lambda record: record["id"]):
        print(f"{record['id']}: {record['status']}: {record['text']}")


def main() -> None:
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        asyncio.run(durable_run(folder))
        batch(folder)


if __name__ == "__main__":
    main()
