"""Run many agent tasks at half price: their model calls go in Gemini Batch API jobs.

Each task is an ordinary run of an `Agent`, hop by hop: every task that waits for a model
response is sent in one batch job (``batchGenerateContent``); when the job ends, each task
gets its response, runs its tools here, and the tasks that need another turn go into the
next job. Every request is billed at the Batch API price (half the standard price), and a
task's transcript is the one a direct run makes: same requests, same tools, same checks.

Example::

    import asyncio
    from agent import Agent
    from agent.batch import GeminiBatch

    agent = Agent("gemini-2.5-flash", toolkit=tools)
    batch = GeminiBatch(state="runs.batch-state.jsonl")
    results = asyncio.run(batch.run(agent, {"paris": "Weather in Paris?", "oslo": "...?"}))
    print(results["paris"].text, results["paris"].cost.usd)

A job takes minutes to hours (Gemini targets 24 hours), so a batch of three-turn tasks
takes three jobs' time. With a ``state`` file, a batch that was stopped or crashed picks
up where it was: run it again with the same state file and task ids, and the tasks replay
their recorded steps (no tool runs twice, no request is paid twice) and the engine follows
the job it had created instead of creating it again.

``toolnexus-agent batch --engine gemini-batch`` and ``eval --engine gemini-batch`` run on
this engine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from agent._batch import Engine, check_capabilities, check_model
from agent._batch_jobs import BatchOptions, JobNote
from agent._batch_state import BatchState
from agent._batch_wire import INLINE_LIMIT
from agent.errors import RunError

if TYPE_CHECKING:
    from agent._agent import Agent
    from agent._limits import UsageLimits
    from agent._media import Prompt
    from agent._result import RunResult
    from agent.steps import Steps

__all__ = ["INLINE_LIMIT", "GeminiBatch", "JobNote", "Task"]

T = TypeVar("T")

Task = Callable[["Steps"], Awaitable[T]]
"""One task of `GeminiBatch.run_tasks`: an async function that makes its run (or runs)
with the `Steps` it is given (``agent.plan(..., steps=steps)``) and returns what it likes."""


class GeminiBatch:
    """The Gemini Batch engine: many runs whose model calls go in Batch API jobs.

    Args:
        state: A JSON Lines file recording the jobs and each task's settled steps, so that
            a stopped or crashed batch resumes (``None``: kept in memory only). It is
            locked while the batch runs.
        poll_interval: Seconds between two reads of a job's state.
        max_enqueued_tokens: The most estimated tokens (one per four characters of the
            requests' JSON) of one model's jobs in flight, to stay under the Batch API's
            enqueued-tokens quota; requests that do not fit wait for a later job.
        tool_concurrency: Tool calls that run at the same time, over all tasks.
        hold: Seconds a request waits for the other tasks before its job is sent anyway
            (``None``: until every unfinished task waits for a model response).
        inline_limit: Bytes of requests a job carries inline; a larger job goes as a JSON
            Lines file through the Files API.
        on_job: Called with a `JobNote` when a job is created, resumed, changes state or
            ends (for progress displays).

    Raises:
        ConfigurationError: An option is out of range.
    """

    def __init__(
        self,
        *,
        state: str | Path | None = None,
        poll_interval: float = 30.0,
        max_enqueued_tokens: int | None = None,
        tool_concurrency: int = 8,
        hold: float | None = 300.0,
        inline_limit: int = INLINE_LIMIT,
        on_job: Callable[[JobNote], None] | None = None,
    ) -> None:
        self.state = Path(state) if state is not None else None
        """The state file, if any."""
        self.options = BatchOptions(
            poll_interval, max_enqueued_tokens, tool_concurrency, hold, inline_limit
        )
        self.on_job = on_job
        self.jobs_created = 0
        """Jobs created by the last `run_tasks` (resumed ones not counted)."""

    async def run(
        self,
        agent: Agent,
        prompts: Mapping[str, Prompt],
        *,
        deps: Callable[[str], Any] | None = None,
        usage_limits: UsageLimits | None = None,
    ) -> dict[str, RunResult]:
        """Run ``agent`` on every prompt; return each task's result by its id.

        Args:
            agent: The agent (its tools, approval policy, limits and capabilities apply to
                every task as to a direct run).
            prompts: The prompt of each task, by task id (ids key the state file).
            deps: Returns a task's run data from its id (``context.deps`` of its tools).
            usage_limits: Limits for each task's run, instead of the agent's.

        Returns:
            The results by task id. A run that failed (`RunError`, such as a model call
            that failed for good) is there with the partial result the error carries.

        Raises:
            ConfigurationError: The agent's client cannot send batch jobs (Vertex AI), it
                asks for a service tier, or the state file is in use.
        """
        check_model(agent._core.model)
        check_capabilities(agent._core.capabilities)

        def task(task_id: str, prompt: Prompt) -> Task[RunResult]:
            async def run(steps: Steps) -> RunResult:
                data = deps(task_id) if deps is not None else None
                plan = agent.plan(prompt, deps=data, usage_limits=usage_limits, steps=steps)
                try:
                    return await plan.result()
                except RunError as exc:
                    return exc.result

            return run

        return await self.run_tasks({key: task(key, prompt) for key, prompt in prompts.items()})

    async def run_tasks(
        self,
        tasks: Mapping[str, Task[T]],
        *,
        on_done: Callable[[str, T], None] | None = None,
    ) -> dict[str, T]:
        """Run every task at once, each with its own `Steps`; return what each returned.

        The general form of `run`: a task makes its run (or several, all batched) as it
        likes, with ``agent.plan(..., steps=steps)``, and returns any value. Start every
        task here, at once: a job is sent when all unfinished tasks wait for a model
        response, so a task that only starts later would wait alone.

        Args:
            tasks: The tasks by id (ids key the state file: a task with a recorded id
                replays its recorded steps).
            on_done: Called with each task's id and value as soon as it finishes.

        Returns:
            The tasks' values by id.

        Raises:
            ExceptionGroup: A task raised; the others were cancelled (their jobs go on, a
                run with the same state file picks them up).
            ConfigurationError: The state file is in use by another batch, or is not one.
        """
        state = BatchState.open(self.state)
        engine = Engine(self.options, state, self._note)
        done: dict[str, T] = {}
        self.jobs_created = 0

        async def one(task_id: str, task: Task[T]) -> None:
            try:
                value = await task(engine.steps(task_id))
            finally:
                engine.collector.finished()
            done[task_id] = value
            if on_done is not None:
                on_done(task_id, value)

        try:
            engine.collector.started(len(tasks))
            async with asyncio.TaskGroup() as group:
                for task_id, task in tasks.items():
                    group.create_task(one(task_id, task))
        finally:
            await engine.collector.aclose()
            state.close()
        return done

    def _note(self, note: JobNote) -> None:
        if note.kind == "created":
            self.jobs_created += 1
        if self.on_job is not None:
            self.on_job(note)
