"""The offline example runs: a durable run, then a batch shared by two workers on SQLite."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.dbos.conftest import REPO, env

pytest.importorskip("dbos", reason="needs the dbos extra: pip install '.[dbos]'")


def test_the_durable_batch_example_runs_offline() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "durable_batch.py")],
        env=env(),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "durable run: completed: There are 12 lamps.",
        "recorded steps: toolnexus.model_call, toolnexus.tool:stock, toolnexus.model_call",
        *(f"shelf-{i}: completed: Done: count shelf {i}" for i in range(6)),
    ]
