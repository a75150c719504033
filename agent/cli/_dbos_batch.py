"""The distributed batch on DBOS, shared by ``batch --engine dbos``, ``worker``, ``batch-status``.

A batch is a DBOS queue named after it; each task is a workflow on that queue whose id is
``BATCH:TASK_ID`` (the task id escaped, see `task_workflow_id`), so submitting the same
batch again adds nothing. Workers (any number, on any machine that reaches the database)
dequeue the tasks and run each as a durable agent run (`agent.dbos.run_durably`): one DBOS
step per model call and one per tool call. The queue's limits live in the database and
hold across workers: ``--concurrency`` tasks at once in all, ``--worker-concurrency`` per
worker. ``--tpm`` and ``--rpm`` put every model call of the batch under one `TokenRate`
whose entries are kept in the same database (`agent.dbos.DatabaseLedger`), so the limit
holds whatever the number of workers.

The submitting process needs DBOS only (not the Gemini SDK), and writes one row: a
submission workflow on the batch's queue, carrying the tasks. The first worker to dequeue
it enqueues the tasks, `agent.cli._dbos_submit.ENQUEUE_CHUNK` per transaction and step, so
a submit costs the same for ten tasks as for ten thousand, and nothing is lost or doubled
if a process dies on the way.

The distributed batch is four modules:

- this one: what every side shares: the DBOS application and its configuration, the
  database (URL, client, engine), the names of the workflows, a task's workflow id, and
  the batch's queue (its limits, its polling interval, enqueueing into it);
- `agent.cli._dbos_submit`: submitting a batch, and the submission workflow that fans a
  submission out into its tasks;
- `agent.cli._dbos_worker`: what runs the tasks in a worker (the task workflow and the
  agents it runs);
- `agent.cli._dbos_liveness`: worker liveness (who died, whose tasks go back).

This module imports ``dbos``; the subcommands import it only when they run.
"""

from __future__ import annotations

import contextlib
import math
import string
import urllib.parse
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from dbos import DBOS, DBOSClient, DBOSConfig, EnqueueOptions

from agent.cli import _engine_flags
from agent.cli._exits import CliError
from agent.dbos import engine_options

__all__ = [
    "APP_NAME",
    "SUBMIT_WORKFLOW",
    "TASK_WORKFLOW",
    "WORKER_PREFIX",
    "client",
    "db_url",
    "dbos_config",
    "engine_for",
    "enqueue",
    "polling_interval",
    "redact",
    "register_queue",
    "task_of",
    "task_workflow_id",
]

APP_NAME = "toolnexus-agent"
"""The DBOS application every batch command and worker belongs to."""

APP_VERSION = "toolnexus-batch-3"
"""The application version tasks are enqueued with; every worker runs this one (version 3:
a batch is submitted as one workflow that a worker fans out into its tasks)."""

TASK_WORKFLOW = "toolnexus.batch_task"
"""The workflow that runs one task."""

SUBMIT_WORKFLOW = "toolnexus.batch_submit"
"""The workflow that enqueues a submitted batch's tasks (see
`agent.cli._dbos_submit.batch_submit`)."""

DEFAULT_DB = _engine_flags.DEFAULT_DB

WORKER_PREFIX = "toolnexus-worker-"
"""The start of every worker's executor id (only such executors are recovered)."""


# --------------------------------------------------------------------------- shared


def db_url(value: str | None) -> str:
    """Return the database URL of ``--db`` (a SQLite file by default).

    Raises:
        CliError: The URL is neither ``sqlite:///...`` nor ``postgresql://...``.
    """
    url = value or DEFAULT_DB
    if url.startswith("postgres://"):
        url = "postgresql://" + url.removeprefix("postgres://")
    if not url.startswith(("sqlite:///", "postgresql://", "postgresql+psycopg://")):
        raise CliError(
            f"--db: expected sqlite:///FILE or postgresql://USER@HOST/DB, got {redact(url)!r}"
        )
    return url


def redact(url: str) -> str:
    """Return ``url`` with its password hidden, fit for messages."""
    try:
        return sa.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return url


def dbos_config(url: str, executor_id: str | None = None) -> DBOSConfig:
    """Return the DBOS configuration of a worker (or of any process joining a batch)."""
    config: DBOSConfig = {
        "name": APP_NAME,
        "system_database_url": url,
        "application_version": APP_VERSION,
        "log_level": "WARNING",
        "notification_listener_polling_interval_sec": 0.1,
        "db_engine_kwargs": engine_options(url),  # SQLite: a commit need not wait for the disk
    }
    if executor_id is not None:
        config["executor_id"] = executor_id
    return config


@contextlib.contextmanager
def client(url: str) -> Iterator[DBOSClient]:
    """Yield a `DBOSClient` on the batch database (created first when it is new).

    Raises:
        CliError: The database cannot be reached.
    """
    try:
        DBOS.migrate(url)
        dbos_client = DBOSClient(system_database_url=url, application_name=APP_NAME)
    except (sa.exc.SQLAlchemyError, OSError) as exc:
        raise CliError(f"--db: cannot use {redact(url)}: {exc}") from None
    try:
        yield dbos_client
    finally:
        dbos_client.destroy()


def engine_for(url: str, **connect_args: Any) -> sa.Engine:
    """Return an engine on the batch database (psycopg 3 for Postgres, as DBOS uses)."""
    parsed = sa.make_url(url)
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    return sa.create_engine(parsed, connect_args=connect_args)


_PLAIN = frozenset(string.ascii_letters + string.digits + "_.")
"""The characters a task id keeps as they are in its workflow id."""


def task_workflow_id(batch: str, task_id: str) -> str:
    """Return the workflow id of a batch's task: ``BATCH:`` and the task id, escaped.

    DBOS names the child workflows of a workflow ``PARENT-N``, so a task ``t1`` could have
    children ``BATCH:t1-2``, ``BATCH:t1-6``. In the escaped id every character but letters,
    digits, ``_`` and ``.`` is written ``%XX`` (its UTF-8 bytes, ``-`` as ``%2D``): a
    task's workflow id never holds a ``-`` after the batch name, which holds no ``:``, so
    no task id can take another task's child's id.

    Raises:
        CliError: The id holds a NUL or is not valid Unicode text: the batch database keeps
            ids and records as text, which cannot hold them.
    """
    if "\x00" in task_id:
        raise CliError(
            f"batch: the task id {task_id!r} holds a NUL character, which a batch database "
            "cannot store; choose another id"
        )
    try:
        escaped = "".join(
            char if char in _PLAIN else "".join(f"%{byte:02X}" for byte in char.encode())
            for char in task_id
        )
    except UnicodeEncodeError:
        raise CliError(
            f"batch: the task id {task_id!r} is not valid Unicode text (a lone surrogate), "
            "which a batch database cannot store; choose another id"
        ) from None
    return f"{batch}:{escaped}"


def task_of(workflow_id: str) -> tuple[str, str]:
    """Return the batch name and the task id of a task's workflow id (`task_workflow_id`)."""
    batch, _, escaped = workflow_id.partition(":")
    return batch, urllib.parse.unquote(escaped)


def queue_name(batch: str) -> str:
    """Return the name of a batch's task queue."""
    return f"toolnexus-{batch}"


# --------------------------------------------------------------------------- the queue

POLL_FASTEST = 0.05
"""The shortest queue polling interval, in seconds (a batch of one wave)."""

POLL_SLOWEST = 0.2
"""The longest queue polling interval, in seconds (a batch of a hundred waves and more)."""


def polling_interval(tasks: int, concurrency: int) -> float:
    """Return how often a worker looks at a batch's queue for tasks, from the batch's size.

    A look that finds the worker's slots full costs one database round trip; one that
    finds free slots claims tasks for all of them in one transaction, which costs about the
    same for one task as for eight. A batch of one wave (no more tasks than its
    concurrency) is claimed at the first looks: a short interval starts it at once and
    costs little, the batch being short. A batch of many waves is a long stream of slots
    that free up: looking a little less often claims several tasks per transaction, which
    saves more than the wait costs. So the interval grows with the square root of the
    number of waves: `POLL_FASTEST` for one, 0.1 s at 25, `POLL_SLOWEST` from 100. The
    same batch always gets the same interval (the benchmark's bare DBOS floor uses it too).

    Args:
        tasks: The tasks of the batch.
        concurrency: The tasks of the batch that run at once, on all workers.
    """
    waves = tasks / max(concurrency, 1)
    return float(min(POLL_SLOWEST, max(POLL_FASTEST, 0.02 * math.sqrt(waves))))


def register_queue(
    dbos: DBOSClient, name: str, *, tasks: int, concurrency: int, worker_concurrency: int
) -> None:
    """Create (or update) a batch's queue with its limits and polling interval."""
    dbos.register_queue(
        name,
        global_concurrency=concurrency,
        worker_concurrency=worker_concurrency,
        polling_interval_sec=polling_interval(tasks, concurrency),
        on_conflict="always_update",
    )


def enqueue(
    dbos: DBOSClient,
    engine: sa.Engine,
    workflow: str,
    queue: str,
    items: Sequence[tuple[str, Any]],
) -> None:
    """Enqueue ``(workflow id, input)`` items as ``workflow`` on ``queue``, in one transaction.

    An item whose workflow id is there already adds nothing (the id is the key), whatever
    state its workflow is in.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: The database refused the transaction (none of the
            items was enqueued).
    """
    with engine.begin() as connection:
        for workflow_id, payload in items:
            options: EnqueueOptions = {
                "workflow_name": workflow,
                "queue_name": queue,
                "workflow_id": workflow_id,
                "app_version": APP_VERSION,
            }
            dbos.enqueue_in_transaction(connection, options, payload)
