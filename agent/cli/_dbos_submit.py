"""Submitting a distributed batch (``batch --engine dbos``), and fanning it out into tasks.

`submit` writes one row: a submission workflow (`batch_submit`) on the batch's queue,
carrying every task as its input (what the batch's flags decide goes with each task). The
first worker to dequeue the submission runs it: it enqueues the tasks on the same queue,
`ENQUEUE_CHUNK` per transaction and step. `submissions` lists the submissions that may
still hold tasks, for a submit again and for ``batch-status``.

A worker process imports this module, so that the submission workflow is registered
before DBOS launches. This module imports ``dbos``; the subcommands import it only when
they run.
"""

from __future__ import annotations

import argparse
import re
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from dbos import DBOS, DBOSClient, EnqueueOptions, StepOptions

from agent.cli._dbos_batch import (
    APP_VERSION,
    SUBMIT_WORKFLOW,
    TASK_WORKFLOW,
    client,
    db_url,
    queue_name,
    redact,
    register_queue,
    task_of,
    task_workflow_id,
)
from agent.cli._dbos_worker import current_runtime
from agent.cli._exits import EXIT_OK, CliError
from agent.cli._options import read_system
from agent.cli._rate import rate_spec

if TYPE_CHECKING:
    from agent.cli.batch import Task

__all__ = ["ENQUEUE_CHUNK", "Submission", "batch_submit", "submissions", "submit"]

ENQUEUE_CHUNK = 100
"""Tasks a worker enqueues per transaction (and per step) when it fans a submission out."""

_BATCH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


# --------------------------------------------------------------------------- the submit


def submit(args: argparse.Namespace, tasks: list[Task]) -> int:
    """Enqueue ``tasks`` as a batch (``batch --engine dbos``); return the exit code."""
    from agent.cli import batch_status

    batch = args.name or Path(args.tasks).stem
    if not _BATCH_NAME.fullmatch(batch):
        raise CliError(
            f"batch: the batch name {batch!r} may hold letters, digits, '_', '.' and '-' "
            "only; choose one with --name"
        )
    _check_flags(args)
    url = db_url(args.db)
    payload = _Payload(args, batch)
    ids = {task.id: task_workflow_id(batch, task.id) for task in tasks}
    queue = queue_name(batch)
    with client(url) as dbos:
        register_queue(
            dbos,
            queue,
            tasks=len(tasks),
            concurrency=args.concurrency,
            worker_concurrency=args.worker_concurrency or args.concurrency,
        )
        known = _known(dbos, batch)
        todo = [task for task in tasks if task.id not in known]
        if todo:
            options: EnqueueOptions = {
                "workflow_name": SUBMIT_WORKFLOW,
                "queue_name": queue,
                # A task's escaped id holds no "@": no submission can take a task's id.
                "workflow_id": f"{batch}:@{uuid.uuid4().hex}",
                "app_version": APP_VERSION,
            }
            try:
                dbos.enqueue(options, queue, [(ids[t.id], payload.of(t)) for t in todo])
            except sa.exc.SQLAlchemyError as exc:
                raise CliError(
                    f"batch {batch}: the submit failed ({_reason(exc)}), nothing was added; "
                    "run the same command again"
                ) from None
        added = len(todo)
    sys.stderr.write(
        f"batch {batch}: {added} tasks enqueued, {len(tasks) - added} already there; "
        f"database {redact(url)}\n"
        f"run workers:  toolnexus-agent worker --db URL\n"
        f"see progress: toolnexus-agent batch-status --db URL --name {batch}\n",
    )
    if args.out:
        return batch_status.follow_batch(url, batch, args.out)
    return EXIT_OK


def _known(dbos: DBOSClient, batch: str) -> set[str]:
    """Return the ids of the batch's tasks: enqueued, or held by a submission still to run."""
    statuses = dbos.list_workflows(
        name=TASK_WORKFLOW, workflow_id_prefix=f"{batch}:", load_input=False, load_output=False
    )
    known = {task_of(status.workflow_id)[1] for status in statuses}
    for submission in submissions(dbos, batch):
        if submission.active:
            known.update(task_of(workflow_id)[1] for workflow_id in submission.workflow_ids)
    return known


_ACTIVE = ("ENQUEUED", "DELAYED", "PENDING")
_ENDED_EARLY = ("ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")


@dataclass(frozen=True)
class Submission:
    """A submission of a batch that has not enqueued all its tasks (`submissions`)."""

    batch: str
    """The batch it adds tasks to."""
    status: str
    """Its workflow's DBOS status."""
    workflow_ids: tuple[str, ...]
    """The workflow ids of the tasks it carries (some may be enqueued already)."""

    @property
    def active(self) -> bool:
        """Whether it is still to run, or running: its tasks are on their way."""
        return self.status in _ACTIVE


def submissions(dbos: DBOSClient, batch: str | None = None) -> list[Submission]:
    """Return the submissions of ``batch`` (of every batch: ``None``) that may hold tasks.

    Those waiting for a worker or being fanned out, and those that ended before they
    enqueued every task (cancelled, failed); one that succeeded enqueued them all.
    """
    statuses = dbos.list_workflows(
        name=SUBMIT_WORKFLOW,
        workflow_id_prefix=f"{batch}:" if batch else None,
        status=[*_ACTIVE, *_ENDED_EARLY],
        load_output=False,
    )
    return [
        Submission(
            task_of(status.workflow_id)[0],
            status.status,
            tuple(workflow_id for workflow_id, _ in status.input["args"][1]),  # type: ignore[index]
        )
        for status in statuses
    ]


def _reason(exc: sa.exc.SQLAlchemyError) -> str:
    """Return the first line of the driver's message (SQLAlchemy adds the statement, a link)."""
    lines = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


class _Payload:
    """Builds each task's workflow input: the task, with what the batch's flags decide.

    Carried with the task, so every worker applies what the local runner would, whatever
    its own command line says: the approval policy, the typed output, the model chain, the
    context cache, the rate limits.
    """

    def __init__(self, args: argparse.Namespace, batch: str) -> None:
        self.args = args
        self.batch = batch
        self.system = read_system(args.system)
        self.output_schema = _output_schema(args.output_schema)
        self.rate = rate_spec(args)
        self.cache = _cache_setting(args)

    def of(self, task: Task) -> dict[str, Any]:
        args = self.args
        return {
            "id": task.id,
            "batch": self.batch,
            "prompt": task.prompt,
            "model": task.model or args.model,
            # The --model chain goes with the task (a task's own model: none).
            "fallback_models": [] if task.model else list(args.models[1:]),
            "system": task.system if task.system is not None else self.system,
            "max_turns": task.max_turns or args.max_turns,
            "files": [str(Path(name).resolve()) for name in task.files],
            "allow": list(task.allow),
            "approval": args.approval,
            "output_schema": self.output_schema,
            "deps": args.deps,
            "builtin_tools": list(args.builtin_tools or ()),
            # The context cache of --cache: each worker keeps one per setting.
            "cache": self.cache,
            "rate": self.rate,
        }


def _cache_setting(args: argparse.Namespace) -> list[Any] | None:
    """Return ``[ttl, mode]`` of ``--cache`` and ``--cache-mode`` (the workers make the cache).

    Read from the flags, not from a `ContextCache`: the submitter stays without the SDK.

    Raises:
        CliError: ``--cache-mode`` without ``--cache``.
    """
    ttl, mode = getattr(args, "cache", None), getattr(args, "cache_mode", None)
    if ttl is None:
        if mode is not None:
            raise CliError("toolnexus-agent: --cache-mode needs --cache TTL")
        return None
    return [float(ttl), mode or "auto"]


def _output_schema(spec: str | None) -> dict[str, Any] | None:
    """Return the JSON Schema of ``--output-schema`` (a file, or a type resolved here)."""
    from agent.cli.run import load_output_type

    output_type = load_output_type(spec)
    if output_type is None or isinstance(output_type, dict):
        return output_type
    import pydantic

    try:
        schema: dict[str, Any] = pydantic.TypeAdapter(output_type).json_schema()
    except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError) as exc:
        raise CliError(f"--output-schema: {spec} cannot be described as JSON: {exc}") from None
    return schema


def _check_flags(args: argparse.Namespace) -> None:
    """Refuse the flags a distributed batch cannot honour, and limits out of range."""
    if args.worker_concurrency is not None and not (
        1 <= args.worker_concurrency <= args.concurrency
    ):
        raise CliError("--worker-concurrency must be between 1 and --concurrency")
    if args.budget_usd is not None:
        raise CliError(
            "batch: --budget-usd is kept by the local runner, which sees every task's cost as "
            "it is recorded; with --engine dbos, limit the batch with --concurrency or run it "
            "locally"
        )
    if getattr(args, "service_tier", None) or getattr(args, "fallback_tier", None):
        raise CliError(
            "batch: with --engine dbos the workers make the model calls: give --service-tier "
            "(and --fallback-tier) to `toolnexus-agent worker`, not to the batch"
        )
    rate_spec(args)  # --tpm, --rpm and --rpm-window in range


# --------------------------------------------------------------------------- the fan-out


def _lost_database(error: BaseException) -> bool:
    return isinstance(error, (sa.exc.OperationalError, sa.exc.InterfaceError))


_ENQUEUE_STEP: StepOptions = {
    "name": "toolnexus.enqueue_tasks",
    # A lost database is waited out, as the worker waits it out (about 8 minutes): the
    # chunk is enqueued again, which is harmless. Then the submission fails, and its tasks
    # not enqueued show in batch-status, to be submitted again.
    "retries_allowed": True,
    "should_retry": _lost_database,
    "max_attempts": 10,
    "interval_seconds": 1.0,
    "backoff_rate": 2.0,
}


async def _submit(queue: str, items: list[tuple[str, dict[str, Any]]]) -> int:
    """Enqueue a submission's tasks on the batch's queue; return how many it carried.

    Each `ENQUEUE_CHUNK` of tasks is one transaction and one step. A worker that dies on
    the way leaves the submission to another (`agent.cli._dbos_liveness`), which skips the
    chunks recorded; a chunk that committed but was not recorded yet is enqueued again,
    which adds nothing (a task's workflow id is its key). So a task is neither lost (the
    submission holds it until it is enqueued) nor doubled.
    """
    runtime = current_runtime()
    for start in range(0, len(items), ENQUEUE_CHUNK):
        chunk = items[start : start + ENQUEUE_CHUNK]
        await DBOS.run_step_async(_ENQUEUE_STEP, runtime.enqueue, queue, chunk)
    return len(items)


batch_submit = DBOS.workflow(name=SUBMIT_WORKFLOW)(_submit)
"""The workflow a batch is submitted as: `submit` enqueues it, carrying the tasks."""
