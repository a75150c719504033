"""What runs a distributed batch's tasks in a worker (``toolnexus-agent worker``).

`batch_task` is the workflow every task runs as: a durable agent run (one DBOS step per
model call and per tool call). `WorkerRuntime` holds what it needs in the worker process:
the agents, built from the worker's flags and each task's settings, the batch's rate
limits, and the client that enqueues the tasks of a submission the worker fans out.

A worker imports `agent.cli._dbos_submit` too, whose submission workflow it runs. This
module imports ``dbos``; the ``worker`` subcommand imports it only when it runs.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import re
import socket
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import sqlalchemy as sa
from dbos import DBOS, DBOSClient

from agent.cli._dbos_batch import APP_NAME, TASK_WORKFLOW, WORKER_PREFIX, engine_for, enqueue
from agent.cli._rate import rate_of
from agent.cli._records import crashed_record, result_record
from agent.cli.run import with_files
from agent.dbos import DatabaseLedger, DbosSteps, run_durably
from agent.errors import RunError

if TYPE_CHECKING:
    from agent import Agent
    from agent.capabilities import ContextCache, TokenRate
    from agent.cli._model import AgentFactory
    from toolnexus import Toolkit

__all__ = ["WorkerRuntime", "batch_task", "current_runtime", "executor_id"]


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


def current_runtime() -> WorkerRuntime:
    """Return the runtime of this worker process (`WorkerRuntime.current`).

    Raises:
        RuntimeError: This process is no worker.
    """
    if WorkerRuntime.current is None:
        raise RuntimeError("batch tasks run in `toolnexus-agent worker` processes only")
    return WorkerRuntime.current


async def _run_task(task: dict[str, Any]) -> dict[str, Any]:
    """Run one task durably; return its result line, as the local runner writes it.

    Its steps are the run's model and tool calls, nothing else. The duration is this
    execution's, read from a plain clock: a task a crash cut off and another worker
    resumed reports the time since it was resumed.
    """
    runtime = current_runtime()
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


def executor_id() -> str:
    """Return a new worker's executor id: unique, and naming the machine and process."""
    host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())[:40]
    return f"{WORKER_PREFIX}{host}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
