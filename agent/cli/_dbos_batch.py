"""The distributed batch on DBOS, shared by ``batch --engine dbos``, ``worker``, ``batch-status``.

A batch is a DBOS queue named after it; each task is a workflow on that queue whose id is
``BATCH:TASK_ID`` (the task id escaped, see `task_workflow_id`), so submitting the same
batch again adds nothing. Workers (any number, on any machine that reaches the database)
dequeue the tasks and run each as a durable agent run (`agent.dbos.run_durably`). The
queue's limits live in the database and hold across workers: ``--concurrency`` tasks at
once in all, ``--worker-concurrency`` per worker. ``--rpm`` puts every model call of the
batch through a second, rate-limited queue (a tiny workflow per call), so the budget holds
whatever the number of workers.

A worker that dies leaves its tasks ``PENDING`` under its executor id. Each worker holds a
lock for its life (a Postgres advisory lock, or a file lock next to a SQLite database);
the others, when they find the lock free on every look for ``--dead-after`` seconds, hand
the dead worker's tasks back to the queue, where they resume from their last finished
step. A live worker whose lock's connection dropped takes its lock again in that time.

This module imports ``dbos``; the subcommands import it only when they run.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import inspect
import json
import os
import re
import socket
import string
import sys
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import sqlalchemy as sa
from dbos import DBOS, DBOSClient, DBOSConfig, EnqueueOptions

from agent.cli import _engine_flags
from agent.cli._exits import EXIT_OK, CliError
from agent.cli._model import flag_cache
from agent.cli._options import read_system
from agent.cli._records import crashed_record, result_record
from agent.cli.run import with_files
from agent.dbos import DbosSteps, run_durably
from agent.errors import RunError

if TYPE_CHECKING:
    from agent import Agent
    from agent.capabilities import ContextCache
    from agent.cli._model import AgentFactory
    from agent.cli.batch import Task
    from toolnexus import Toolkit

__all__ = [
    "APP_NAME",
    "DATABASE_ERRORS",
    "DEFAULT_DB",
    "TASK_WORKFLOW",
    "DeadWorkers",
    "Liveness",
    "WorkerRuntime",
    "client",
    "db_url",
    "dbos_config",
    "redact",
    "submit",
    "task_of",
    "task_workflow_id",
]

APP_NAME = "toolnexus-agent"
"""The DBOS application every batch command and worker belongs to."""

APP_VERSION = "toolnexus-batch-1"
"""The application version tasks are enqueued with; every worker runs this one."""

TASK_WORKFLOW = "toolnexus.batch_task"
"""The workflow that runs one task."""

DEFAULT_DB = _engine_flags.DEFAULT_DB

WORKER_PREFIX = "toolnexus-worker-"
"""The start of every worker's executor id (only such executors are recovered)."""

POLLING_INTERVAL = 0.1
"""Seconds between two looks of a worker at a batch queue."""

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


def _engine(url: str, **connect_args: Any) -> sa.Engine:
    """Return an engine on the batch database (psycopg 3 for Postgres, as DBOS uses)."""
    parsed = sa.make_url(url)
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    return sa.create_engine(parsed, connect_args=connect_args)


_PLAIN = frozenset(string.ascii_letters + string.digits + "_.")
"""The characters a task id keeps as they are in its workflow id."""


def task_workflow_id(batch: str, task_id: str) -> str:
    """Return the workflow id of a batch's task: ``BATCH:`` and the task id, escaped.

    DBOS names the child workflows of a workflow ``PARENT-N`` (under ``--rpm`` each model
    call of a task is one), so a task ``t1`` has children ``BATCH:t1-2``, ``BATCH:t1-6``. In
    the escaped id every character but letters, digits, ``_`` and ``.`` is written ``%XX``
    (its UTF-8 bytes, ``-`` as ``%2D``): a task's workflow id never holds a ``-`` after
    the batch name, which holds no ``:``, so no task id can take another task's child's id.

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


def queues(batch: str) -> tuple[str, str]:
    """Return the names of a batch's task queue and model-call queue."""
    return f"toolnexus-{batch}", f"toolnexus-{batch}-model"


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
    _check_limits(args)
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
    url = db_url(args.db)
    system = read_system(args.system)
    output_schema = _output_schema(args.output_schema)
    cache = flag_cache(args)
    ids = {task.id: task_workflow_id(batch, task.id) for task in tasks}
    task_queue, model_queue = queues(batch)
    with client(url) as dbos:
        dbos.register_queue(
            task_queue,
            global_concurrency=args.concurrency,
            worker_concurrency=args.worker_concurrency or args.concurrency,
            polling_interval_sec=POLLING_INTERVAL,
            on_conflict="always_update",
        )
        if args.rpm is not None:
            dbos.register_queue(
                model_queue,
                limiter={"limit": args.rpm, "period": args.rpm_window},
                polling_interval_sec=POLLING_INTERVAL / 2,
                on_conflict="always_update",
            )
        # Tasks only: the model calls' permits are workflows of the batch too.
        known = {
            task_of(status.workflow_id)[1]
            for status in dbos.list_workflows(
                name=TASK_WORKFLOW,
                workflow_id_prefix=f"{batch}:",
                load_input=False,
                load_output=False,
            )
        }
        todo = [task for task in tasks if task.id not in known]
        # One transaction for the whole batch: it is enqueued entirely or not at all.
        engine = _engine(url)
        try:
            with engine.begin() as connection:
                for task in todo:
                    payload = {
                        "id": task.id,
                        "prompt": task.prompt,
                        "model": task.model or args.model,
                        # The --model chain goes with the task (a task's own model: none).
                        "fallback_models": [] if task.model else list(args.models[1:]),
                        "system": task.system if task.system is not None else system,
                        "max_turns": task.max_turns or args.max_turns,
                        "model_queue": model_queue if args.rpm is not None else None,
                        # Carried with the task, so every worker applies what the local
                        # runner would, whatever its own command line says.
                        "files": [str(Path(name).resolve()) for name in task.files],
                        "allow": list(task.allow),
                        "approval": args.approval,
                        "output_schema": output_schema,
                        "deps": args.deps,
                        "builtin_tools": list(args.builtin_tools or ()),
                        # The context cache of --cache: each worker keeps one per setting.
                        "cache": [cache.ttl, cache.mode] if cache is not None else None,
                    }
                    options: EnqueueOptions = {
                        "workflow_name": TASK_WORKFLOW,
                        "queue_name": task_queue,
                        "workflow_id": ids[task.id],
                        "app_version": APP_VERSION,
                    }
                    dbos.enqueue_in_transaction(connection, options, payload)
        finally:
            engine.dispose()
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


def _check_limits(args: argparse.Namespace) -> None:
    if args.worker_concurrency is not None and not (
        1 <= args.worker_concurrency <= args.concurrency
    ):
        raise CliError("--worker-concurrency must be between 1 and --concurrency")
    if args.rpm is not None and args.rpm < 1:
        raise CliError(f"--rpm must be at least 1, got {args.rpm}")
    if args.rpm_window <= 0:
        raise CliError("--rpm-window must be more than 0 seconds")


# --------------------------------------------------------------------------- workers


async def maybe(value: Any) -> Any:
    """Await ``value`` when a ``--deps`` factory returned an awaitable."""
    return await value if inspect.isawaitable(value) else value


class WorkerRuntime:
    """What the task workflow needs in a worker: the agents, built from the worker's flags."""

    current: ClassVar[WorkerRuntime | None] = None
    """The runtime of this process (set by the worker before DBOS launches)."""

    def __init__(self, factory: AgentFactory, toolkit: Toolkit) -> None:
        self.factory = factory
        self.toolkit = toolkit
        self._agents: dict[tuple[Any, ...], Agent] = {}
        self._deps: dict[str, Any] = {}
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


async def _run_task(task: dict[str, Any]) -> dict[str, Any]:
    """Run one task durably; return its result line, as the local runner writes it."""
    runtime = WorkerRuntime.current
    if runtime is None:
        raise RuntimeError("batch tasks run in `toolnexus-agent worker` processes only")
    # A question gets no answer in a batch: the task ends "pending", as in the local runner.
    steps = DbosSteps(answer_timeout=0, model_queue=task["model_queue"])
    start = await steps.now()
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
        return crashed_record(task["id"], model, exc, await steps.now() - start)
    return result_record(task["id"], result, error, await steps.now() - start)


batch_task = DBOS.workflow(name=TASK_WORKFLOW)(_run_task)
"""The workflow every task of every batch runs as (registered when this module loads)."""


def executor_id() -> str:
    """Return a new worker's executor id: unique, and naming the machine and process."""
    host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())[:40]
    return f"{WORKER_PREFIX}{host}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


class Liveness(Protocol):
    """A lock each worker holds while it lives, which the others can test."""

    def is_free(self, executor: str) -> bool:
        """Return whether the worker ``executor``'s lock is free right now."""
        ...

    def renew(self) -> bool:
        """Make sure this worker holds its lock; return whether it had to take it again."""
        ...

    def close(self) -> None:
        """Release this worker's lock."""
        ...


DATABASE_ERRORS = (sa.exc.OperationalError, sa.exc.InterfaceError, OSError)
"""What a lost or unreachable database raises: a worker retries on these, never dies."""

CONNECT_TIMEOUT = 10
"""Seconds a worker's lock connection waits for the database when it reconnects."""


@dataclass
class _PostgresLiveness:
    """Session advisory locks: the server drops a worker's with its connection.

    The server also drops it when the connection alone is lost (a database restart, a
    network cut, an administrator ending the session) while the worker lives on: `renew`
    then takes it again on a new connection, and the others wait `DeadWorkers.dead_after`
    before they take a free lock for a dead worker.
    """

    engine: sa.Engine
    executor: str
    connection: sa.Connection | None = None

    _SPACE = 0x746E  # keeps these locks apart from any other advisory locks in the database

    @classmethod
    def hold(cls, url: str, executor: str) -> _PostgresLiveness:
        liveness = cls(_engine(url, connect_timeout=CONNECT_TIMEOUT), executor)
        liveness.renew()
        return liveness

    def renew(self) -> bool:
        if self.connection is not None and not self.connection.invalidated:
            try:
                self.connection.execute(sa.text("SELECT 1"))
                return False  # the session lives, so does its lock
            except sa.exc.DBAPIError:
                pass  # the session is gone, and its lock with it: take it again below
        self._drop()
        connection = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            connection.execute(
                sa.text("SELECT pg_advisory_lock(:space, hashtext(:id))"),
                {"space": self._SPACE, "id": self.executor},
            )
        except BaseException:
            connection.close()
            raise
        self.connection = connection
        return True

    def is_free(self, executor: str) -> bool:
        connection = self.connection
        assert connection is not None, "renew() takes the lock first"
        params = {"space": self._SPACE, "id": executor}
        got = connection.execute(
            sa.text("SELECT pg_try_advisory_lock(:space, hashtext(:id))"), params
        ).scalar()
        if got:
            connection.execute(sa.text("SELECT pg_advisory_unlock(:space, hashtext(:id))"), params)
        return bool(got)

    def _drop(self) -> None:
        if self.connection is not None:
            with contextlib.suppress(sa.exc.SQLAlchemyError):
                self.connection.close()
            self.connection = None

    def close(self) -> None:
        self._drop()
        self.engine.dispose()


@dataclass
class _FileLiveness:
    """File locks in a directory next to the SQLite database (one machine)."""

    folder: Path
    fd: int

    @classmethod
    def hold(cls, url: str, executor: str) -> _FileLiveness:
        database = Path(sa.make_url(url).database or "toolnexus-batch.sqlite")
        folder = database.with_name(database.name + ".workers")
        folder.mkdir(exist_ok=True)
        fd = os.open(folder / f"{executor}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return cls(folder, fd)

    def renew(self) -> bool:
        return False  # a file lock lives as long as the process: no connection to lose

    def is_free(self, executor: str) -> bool:
        path = self.folder / f"{executor}.lock"
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        finally:
            os.close(fd)
        path.unlink(missing_ok=True)
        return True

    def close(self) -> None:
        os.close(self.fd)


def hold_liveness(url: str, executor: str) -> Liveness:
    """Take this worker's liveness lock; hold it before DBOS starts dequeuing."""
    if url.startswith("sqlite"):
        return _FileLiveness.hold(url, executor)
    return _PostgresLiveness.hold(url, executor)


DEFAULT_DEAD_AFTER = 10.0
"""Seconds another worker's lock must stay free before that worker is taken for dead."""


class DeadWorkers:
    """Which other workers are gone: their lock found free on every look for a while.

    A lock found free once is not enough: a live worker whose lock connection dropped takes
    its lock again at its next look (`Liveness.renew`), and taking its tasks meanwhile
    would run them twice and report the tools it is finishing as cut off.

    Args:
        liveness: This worker's lock, which tests the others'.
        me: This worker's executor id (never dead to itself).
        dead_after: Seconds a lock must stay free; ``0`` takes a free lock at once.
        clock: Where the seconds come from (a monotonic clock).
    """

    def __init__(
        self,
        liveness: Liveness,
        me: str,
        dead_after: float = DEFAULT_DEAD_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.liveness = liveness
        self.me = me
        self.dead_after = dead_after
        self._clock = clock
        self._free_since: dict[str, float] = {}

    def gone(self, executors: Iterable[str]) -> list[str]:
        """Look at the locks of ``executors``; return those free for `dead_after` seconds."""
        now = self._clock()
        free_since: dict[str, float] = {}
        dead: list[str] = []
        for executor in sorted(set(executors) - {self.me}):
            if not self.liveness.is_free(executor):
                continue
            since = self._free_since.get(executor, now)
            if now - since >= self.dead_after:
                dead.append(executor)
            else:
                free_since[executor] = since
        self._free_since = free_since
        return dead


async def recover_dead(watch: DeadWorkers) -> list[str]:
    """Hand the tasks of dead workers back to their queues; return those workers' ids.

    Raises:
        sqlalchemy.exc.OperationalError: The database was lost on the way (as the other
            `DATABASE_ERRORS`); nobody was taken for dead.
    """
    import asyncio

    pending = await DBOS.list_workflows_async(status="PENDING", load_input=False, load_output=False)
    others = {
        status.executor_id
        for status in pending
        if status.executor_id and status.executor_id.startswith(WORKER_PREFIX)
    }
    dead = await asyncio.to_thread(watch.gone, others)
    if dead:
        # DBOS has no public call for this without its Conductor service: it is what
        # Conductor does when an executor goes away (its workflows go back to the queue).
        await asyncio.to_thread(DBOS._recover_pending_workflows, dead)
    return dead
