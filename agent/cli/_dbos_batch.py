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
it enqueues the tasks, `ENQUEUE_CHUNK` per transaction and step, so a submit costs the same
for ten tasks as for ten thousand, and nothing is lost or doubled if a process dies on the
way (see `batch_submit`). Worker liveness (who died, whose tasks go back) is
`agent.cli._dbos_liveness`.

This module imports ``dbos``; the subcommands import it only when they run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import math
import os
import re
import socket
import string
import sys
import time
import urllib.parse
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import sqlalchemy as sa
from dbos import DBOS, DBOSClient, DBOSConfig, EnqueueOptions, StepOptions

from agent.cli import _engine_flags
from agent.cli._exits import EXIT_OK, CliError
from agent.cli._options import read_system
from agent.cli._rate import rate_of, rate_spec
from agent.cli._records import crashed_record, result_record
from agent.cli.run import with_files
from agent.dbos import DatabaseLedger, DbosSteps, engine_options, run_durably
from agent.errors import RunError

if TYPE_CHECKING:
    from agent import Agent
    from agent.capabilities import ContextCache, TokenRate
    from agent.cli._model import AgentFactory
    from agent.cli.batch import Task
    from toolnexus import Toolkit

__all__ = [
    "APP_NAME",
    "SUBMIT_WORKFLOW",
    "TASK_WORKFLOW",
    "WORKER_PREFIX",
    "Submission",
    "WorkerRuntime",
    "client",
    "db_url",
    "dbos_config",
    "engine_for",
    "enqueue",
    "polling_interval",
    "redact",
    "register_queue",
    "submissions",
    "submit",
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
"""The workflow that enqueues a submitted batch's tasks (see `batch_submit`)."""

DEFAULT_DB = _engine_flags.DEFAULT_DB

WORKER_PREFIX = "toolnexus-worker-"
"""The start of every worker's executor id (only such executors are recovered)."""

ENQUEUE_CHUNK = 100
"""Tasks a worker enqueues per transaction (and per step) when it fans a submission out."""

_BATCH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


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


# --------------------------------------------------------------------------- submit


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


# --------------------------------------------------------------------------- workers


async def maybe(value: Any) -> Any:
    """Await ``value`` when a ``--deps`` factory returned an awaitable."""
    return await value if inspect.isawaitable(value) else value


class WorkerRuntime:
    """What the task workflow needs in a worker: the agents, built from the worker's flags.

    The worker's own agent is made at once, before the worker takes tasks: it opens the
    SDK client that the agents of all tasks share (one per client configuration in a
    process), so the first task of each worker does not pay for opening it.

    Args:
        factory: Makes the agents (the worker's model and client flags).
        toolkit: The worker's tools.
        url: The batch database, where the batches' rate limits keep their entries.

    Raises:
        CliError: The worker's flags make no agent.
    """

    current: ClassVar[WorkerRuntime | None] = None
    """The runtime of this process (set by the worker before DBOS launches)."""

    def __init__(self, factory: AgentFactory, toolkit: Toolkit, url: str) -> None:
        self.factory = factory
        self.toolkit = toolkit
        self.url = url
        self.agent = factory.make(toolkit)
        """The agent of the worker's flags, holding the SDK client the tasks' agents share."""
        self._enqueuer: tuple[DBOSClient, sa.Engine] | None = None
        self._agents: dict[tuple[Any, ...], Agent] = {}
        self._deps: dict[str, Any] = {}
        self._rates: dict[tuple[Any, ...], TokenRate] = {}
        self._ledgers: dict[str, DatabaseLedger] = {}
        self._caches: dict[tuple[float, str], ContextCache] = {}

    def agent_for(self, task: Mapping[str, Any]) -> Agent:
        """Return the agent for a task's settings (tasks with the same ones share it)."""
        from agent.cli._approval import cli_policy

        allow = tuple(task.get("allow") or ())
        approval = task.get("approval") or "ask"
        schema = task.get("output_schema")
        # A task enqueued by an older version carries no chain: the worker's --model flags.
        carried = task.get("fallback_models")
        fallbacks = tuple(carried) if carried is not None else None
        builtin = tuple(task.get("builtin_tools") or ())
        rate = self.rate_for(task)
        key = (
            task["model"],
            task["system"],
            task["max_turns"],
            allow,
            approval,
            json.dumps(schema, sort_keys=True),
            builtin,
            tuple(task.get("cache") or ()),
            fallbacks,
            id(rate),
        )
        if key not in self._agents:
            # Nobody answers in a batch: a call that would ask is refused, unless allowed.
            policy = cli_policy(approval, self.toolkit, allow=allow, unattended=True)
            self._agents[key] = self.factory.make(
                self.toolkit,
                model=task["model"],
                system=task["system"],
                max_turns=task["max_turns"],
                approval=policy,
                output_type=schema,
                builtin_tools=builtin,
                cache=self._cache_of(task),
                fallbacks=fallbacks,
                rate=rate,
            )
        return self._agents[key]

    def _cache_of(self, task: Mapping[str, Any]) -> ContextCache | None:
        """Return the context cache of a task's ``--cache`` (else the worker's own, if any).

        The tasks of one setting share one cache in this worker; other workers find it on
        the server.
        """
        setting = task.get("cache")
        if not setting:
            return self.factory.cache
        ttl, mode = float(setting[0]), str(setting[1])
        if (ttl, mode) not in self._caches:
            from agent.capabilities import ContextCache

            self._caches[ttl, mode] = ContextCache(ttl=ttl, mode=mode)  # type: ignore[arg-type]
        return self._caches[ttl, mode]

    def rate_for(self, task: Mapping[str, Any]) -> TokenRate | None:
        """Return the batch's rate limit on the batch database (one per batch and limits)."""
        spec = task.get("rate")
        if spec is None:
            return None
        batch = str(task.get("batch"))
        key = (batch, spec["tokens"], spec["requests"], spec["per"])
        if key not in self._rates:
            if batch not in self._ledgers:
                self._ledgers[batch] = DatabaseLedger(self.url, name=f"batch:{batch}")
            rate = rate_of(spec, self._ledgers[batch])
            assert rate is not None
            self._rates[key] = rate
        return self._rates[key]

    def deps_of(self, task: Mapping[str, Any]) -> Any:
        """Return the task's ``deps`` from the batch's ``--deps`` factory (imported once)."""
        spec = task.get("deps")
        if spec is None:
            return None
        from agent.cli.batch import Task, load_deps_factory

        if spec not in self._deps:
            self._deps[spec] = load_deps_factory(spec)
        factory = self._deps[spec]
        fields = ("id", "prompt", "model", "system", "max_turns")
        one = Task(
            **{name: task[name] for name in fields},
            files=tuple(task.get("files") or ()),
            allow=tuple(task.get("allow") or ()),
        )
        return factory(one) if factory is not None else None

    async def enqueue(self, queue: str, items: Sequence[tuple[str, Any]]) -> None:
        """Enqueue tasks of a submission in one transaction (a client made at the first)."""
        if self._enqueuer is None:
            engine = engine_for(self.url)
            client = DBOSClient(system_database_engine=engine, application_name=APP_NAME)
            self._enqueuer = client, engine
        dbos, engine = self._enqueuer
        await asyncio.to_thread(enqueue, dbos, engine, TASK_WORKFLOW, queue, items)

    def close(self) -> None:
        """Close the database connections of the rate limits and of the submissions."""
        for ledger in self._ledgers.values():
            ledger.close()
        if self._enqueuer is not None:
            dbos, engine = self._enqueuer
            dbos.destroy()
            engine.dispose()


def _runtime() -> WorkerRuntime:
    if WorkerRuntime.current is None:
        raise RuntimeError("batch tasks run in `toolnexus-agent worker` processes only")
    return WorkerRuntime.current


async def _run_task(task: dict[str, Any]) -> dict[str, Any]:
    """Run one task durably; return its result line, as the local runner writes it.

    Its steps are the run's model and tool calls, nothing else. The duration is this
    execution's, read from a plain clock: a task a crash cut off and another worker
    resumed reports the time since it was resumed.
    """
    runtime = _runtime()
    started = time.monotonic()
    # A question gets no answer in a batch: the task ends "pending", as in the local runner.
    steps = DbosSteps(answer_timeout=0)
    try:
        agent = runtime.agent_for(task)
        deps = await maybe(runtime.deps_of(task))
        prompt = with_files(task["prompt"], list(task.get("files") or ()))
        result = await run_durably(agent, prompt, steps=steps, publish=False, deps=deps)
        error = None
    except RunError as exc:
        result, error = exc.result, str(exc)
    except Exception as exc:  # one task's failure must not stop the batch
        model = task["model"] or runtime.factory.model
        return crashed_record(task["id"], model, exc, time.monotonic() - started)
    return result_record(task["id"], result, error, time.monotonic() - started)


batch_task = DBOS.workflow(name=TASK_WORKFLOW)(_run_task)
"""The workflow every task of every batch runs as (registered when this module loads)."""


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
    runtime = _runtime()
    for start in range(0, len(items), ENQUEUE_CHUNK):
        chunk = items[start : start + ENQUEUE_CHUNK]
        await DBOS.run_step_async(_ENQUEUE_STEP, runtime.enqueue, queue, chunk)
    return len(items)


batch_submit = DBOS.workflow(name=SUBMIT_WORKFLOW)(_submit)
"""The workflow a batch is submitted as: `submit` enqueues it, carrying the tasks."""


def executor_id() -> str:
    """Return a new worker's executor id: unique, and naming the machine and process."""
    host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())[:40]
    return f"{WORKER_PREFIX}{host}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
