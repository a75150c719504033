"""The tools the distributed-batch tests give their workers (``--tools``).

``work`` (declared idempotent) appends ``PID start N`` and ``PID end N`` to
``$WORK/ran.log``; in a worker started with ``BLOCK_TOOLS=1`` it never ends (that worker
is the one the test kills). ``gated`` (not idempotent) logs the same way and ends once the
file ``$WORK/gate`` exists.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from toolnexus import ToolContext, define_tool


def _log(line: str) -> None:
    with (Path(os.environ["WORK"]) / "ran.log").open("a", encoding="utf-8") as file:
        file.write(f"{os.getpid()} {line}\n")


@define_tool(idempotent=True)  # a crash may run it again: the test counts on that
def work(task: int) -> str:
    """Do the work of one task."""
    _log(f"start {task}")
    while os.environ.get("BLOCK_TOOLS") == "1":
        time.sleep(0.05)
    _log(f"end {task}")
    return f"worked on {task}"


def deps_for(task: object) -> dict[str, str]:
    """The ``--deps`` factory of the parity test: who the task is for."""
    return {"user": getattr(task, "id", "?")}


@define_tool
def whoami(context: ToolContext) -> str:
    """Say whom this task is for."""
    return f"for {context.deps['user']}"


@define_tool  # not idempotent: a task cut off in it is told so, never run again
def gated(task: int) -> str:
    """Do the work of one task once ``$WORK/gate`` exists."""
    _log(f"start {task}")
    while not (Path(os.environ["WORK"]) / "gate").exists():
        time.sleep(0.02)
    _log(f"end {task}")
    return f"gated {task} done"
