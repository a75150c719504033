"""``toolnexus-agent batch-status``: the progress of distributed batches, and their results.

Reads the batch database only (any machine that reaches it will do): how many tasks are
waiting, running and done, as a progress bar on a terminal; ``--export`` writes the
finished tasks' results as the same JSON lines the local ``batch`` runner writes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from agent.cli._engine_flags import add_db_flag
from agent.cli._exits import EXIT_CODES_HELP, EXIT_FAILED, EXIT_OK, EXIT_PENDING
from agent.cli._records import crashed_record

if TYPE_CHECKING:
    from dbos import DBOSClient, WorkflowStatus

__all__ = ["add_parser", "command", "follow_batch", "redraw"]

_EPILOG = f"""\
examples:
  toolnexus-agent batch-status                                 # every batch, once
  toolnexus-agent batch-status --db postgresql://agent@db/batches --name nightly --wait
  toolnexus-agent batch-status --name nightly --export results.jsonl

exit code: 0 when every task completed, 1 when a finished task did not, 3 while tasks are
still waiting or running.

{EXIT_CODES_HELP}"""

_BAR_WIDTH = 30
_REFRESH = 0.5


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``batch-status`` and its flags."""
    parser = commands.add_parser(
        "batch-status",
        help="show the progress of distributed batches; export their results",
        description="Show how far the batches of `batch --engine dbos` are.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_flag(parser)
    parser.add_argument("--name", metavar="BATCH", help="only this batch (default: all)")
    parser.add_argument(
        "--wait", action="store_true", help="follow the progress until every task finished"
    )
    parser.add_argument(
        "--export",
        metavar="RESULTS.jsonl",
        help="write the finished tasks' results as JSON lines (as the local runner does)",
    )
    parser.set_defaults(command=command)


@dataclass
class Progress:
    """The state of one batch's tasks."""

    batch: str
    waiting: int = 0
    running: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def done(self) -> int:
        """Tasks finished, whatever their status."""
        return sum(self.statuses.values())

    @property
    def total(self) -> int:
        """Every task of the batch."""
        return self.waiting + self.running + self.done

    def finished(self, record: dict[str, Any]) -> None:
        """Count a finished task, whose result line is ``record``."""
        self.records.append(record)
        kind = str(record["status"])
        self.statuses[kind] = self.statuses.get(kind, 0) + 1

    def line(self) -> str:
        """``[####------] 20/60 done, 4 running, 36 waiting, 1 not completed``."""
        filled = _BAR_WIDTH * self.done // max(self.total, 1)
        bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
        failed = self.done - self.statuses.get("completed", 0)
        return (
            f"{self.batch} [{bar}] {self.done}/{self.total} done, {self.running} running, "
            f"{self.waiting} waiting, {failed} not completed"
        )


def command(args: argparse.Namespace) -> int:
    """Run ``batch-status`` and return its exit code."""
    from agent.cli import _dbos_batch

    url = _dbos_batch.db_url(args.db)
    with _dbos_batch.client(url) as client:
        return _show(client, args.name, args.wait, args.export, sys.stderr)


def follow_batch(url: str, batch: str, out: str) -> int:
    """Follow ``batch`` until it finishes, then export its results to ``out``."""
    from agent.cli import _dbos_batch

    with _dbos_batch.client(url) as client:
        return _show(client, batch, True, out, sys.stderr)


def _show(client: DBOSClient, name: str | None, wait: bool, export: str | None, err: TextIO) -> int:
    live = err.isatty() and wait
    shown: list[str] = []
    drawn = 0
    while True:
        batches = _read(client, name)
        lines = [progress.line() for progress in batches]
        unfinished = any(progress.done < progress.total for progress in batches)
        if live:
            width = max(shutil.get_terminal_size().columns - 1, 20)
            err.write(redraw([line[:width] for line in lines], drawn))
            drawn = max(drawn, len(lines))
        elif lines != shown:
            err.write("".join(line + "\n" for line in lines))
        err.flush()
        shown = lines
        if not (wait and unfinished):
            break
        time.sleep(_REFRESH)
    if drawn:
        err.write("\n")
    if not batches:
        err.write(f"no batch{f' named {name!r}' if name else ''} in this database\n")
        return EXIT_FAILED
    if export is not None:
        records = [record for progress in batches for record in progress.records]
        _write(export, records)
        err.write(f"{len(records)} results written to {export}\n")
    if unfinished:
        return EXIT_PENDING
    completed = all(set(p.statuses) <= {"completed"} for p in batches)
    return EXIT_OK if completed else EXIT_FAILED


def redraw(lines: Sequence[str], drawn: int) -> str:
    """Return the terminal text that draws ``lines`` over the ``drawn`` lines shown last.

    The cursor stands at the end of the last line drawn. It goes back up to the first one,
    and every line is cleared before it is written: a shorter line leaves nothing of the
    longer one, and lines left over from a longer frame are blanked. The frame stays in
    place however many batches it shows (lines must fit the terminal's width).

    Args:
        lines: The lines of the new frame.
        drawn: How many lines the previous frame took (0 for the first).
    """
    up = f"\x1b[{drawn - 1}A" if drawn > 1 else ""
    rows = [*lines, *[""] * (drawn - len(lines))]
    return up + "\n".join(f"\r\x1b[2K{row}" for row in rows)


def _read(client: DBOSClient, name: str | None) -> list[Progress]:
    from agent.cli._dbos_batch import TASK_WORKFLOW, task_of
    from agent.cli._dbos_submit import submissions

    statuses = client.list_workflows(
        name=TASK_WORKFLOW,
        workflow_id_prefix=f"{name}:" if name else None,
        load_input=False,
    )
    batches: dict[str, Progress] = {}
    for status in statuses:
        batch, task_id = task_of(status.workflow_id)
        progress = batches.setdefault(batch, Progress(batch))
        if status.status in ("ENQUEUED", "DELAYED"):
            progress.waiting += 1
        elif status.status == "PENDING":
            progress.running += 1
        else:
            progress.finished(_record(task_id, status))
    # The tasks submissions hold and did not enqueue: on their way while a submission
    # still to run holds them, never to run when those holding them ended early.
    held: dict[str, bool] = {}
    enqueued = {status.workflow_id for status in statuses}
    for submission in submissions(client, name):
        for workflow_id in set(submission.workflow_ids) - enqueued:
            held[workflow_id] = held.get(workflow_id, False) or submission.active
    for workflow_id, on_the_way in held.items():
        batch, task_id = task_of(workflow_id)
        progress = batches.setdefault(batch, Progress(batch))
        if on_the_way:
            progress.waiting += 1
        else:
            progress.finished(crashed_record(task_id, None, _NOT_ENQUEUED, 0.0))
    return [batches[batch] for batch in sorted(batches)]


_NOT_ENQUEUED = "never enqueued: its submission was cancelled or failed; submit the batch again"


def _record(task_id: str, status: WorkflowStatus) -> dict[str, Any]:
    """Return the result line of a finished task (a failed line when its workflow raised)."""
    if status.status == "SUCCESS" and isinstance(status.output, dict):
        return status.output
    return crashed_record(task_id, None, status.error or status.status.lower(), 0.0)


def _write(path: str, records: Sequence[dict[str, Any]]) -> None:
    """Write ``records`` as JSON lines, replacing ``path`` in one step."""
    target = Path(path)
    fd, temp = tempfile.mkstemp(dir=target.parent or ".", prefix=f".{target.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        for record in records:
            file.write(json.dumps(record, ensure_ascii=False) + "\n")
    os.replace(temp, target)
