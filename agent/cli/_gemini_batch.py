"""``batch --engine gemini-batch`` (and ``eval --engine gemini-batch``): tasks in Batch API jobs.

Every task runs as on the local runner (the same agent, tools, approval rule and output
line), but its model calls go in Gemini Batch API jobs, at half the price: all tasks waiting
for a model response go in one job, then the tools run here, then the next job. The engine
is `agent.batch.GeminiBatch`; its state file sits beside the output (``RESULTS.jsonl`` ->
``RESULTS.gemini-batch.jsonl``) so that a killed batch, run again, follows the job it had
created and replays its tasks' recorded steps. It is removed once every task is recorded.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from agent.cli._approval import cli_policy
from agent.cli._exits import CliError
from agent.cli._records import crashed_record, result_record

if TYPE_CHECKING:
    from agent import Agent, RunResult
    from agent.batch import GeminiBatch, JobNote
    from agent.cli._model import AgentFactory
    from agent.cli.batch import Task
    from agent.events import RetryEvent
    from agent.steps import Steps
    from toolnexus import Toolkit

__all__ = [
    "add_gemini_batch_flags",
    "check_gemini_batch_flags",
    "engine",
    "run_task_in_jobs",
    "state_path",
]

ENGINE = "gemini-batch"


def add_gemini_batch_flags(parser: argparse.ArgumentParser, *, engine_flag: bool) -> None:
    """Declare the flags of ``--engine gemini-batch`` (and ``--engine`` itself for ``eval``)."""
    group = parser.add_argument_group("Gemini Batch API (--engine gemini-batch)")
    if engine_flag:
        group.add_argument(
            "--engine",
            choices=("local", ENGINE),
            default="local",
            help="local: call Gemini directly (default); gemini-batch: send the model "
            "calls in Gemini Batch API jobs, at half the price (minutes to hours a turn)",
        )
    group.add_argument(
        "--poll-interval",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="seconds between two reads of a batch job's state (default: 30)",
    )
    group.add_argument(
        "--max-enqueued-tokens",
        type=int,
        metavar="N",
        help="the most estimated tokens in batch jobs at a time, to stay under the Batch "
        "API's enqueued-tokens quota; requests over it wait for a later job",
    )


def check_gemini_batch_flags(args: argparse.Namespace, command: str) -> None:
    """Refuse the flags that mean nothing (or something else) for batch jobs.

    Raises:
        CliError: One of them was given.
    """
    if args.poll_interval < 0:
        raise CliError(f"--poll-interval must be 0 or more, got {args.poll_interval:g}")
    if args.max_enqueued_tokens is not None and args.max_enqueued_tokens < 1:
        raise CliError(f"--max-enqueued-tokens must be at least 1, got {args.max_enqueued_tokens}")
    refused = {
        "rpm": "a batch job's requests are not rate-limited per minute: bound them with "
        "--max-enqueued-tokens",
        "tpm": "a batch job's requests are not rate-limited per minute: bound them with "
        "--max-enqueued-tokens",
        "service_tier": "every request of a batch job is billed at the batch price",
        "fallback_tier": "every request of a batch job is billed at the batch price",
        "cache": "a job may run hours after it is sent, past a context cache's life, and "
        "its requests are half price already",
        "cache_mode": "a job may run hours after it is sent, past a context cache's life",
        "budget_usd": "every task starts at once in the first job, so there is no task "
        "left to hold back: run fewer tasks, or bound each with --max-turns",
        "db": "it is a flag of --engine dbos",
        "name": "it is a flag of --engine dbos",
        "worker_concurrency": "it is a flag of --engine dbos",
    }
    for name, why in refused.items():
        if getattr(args, name, None) is not None:
            flag = "--" + name.replace("_", "-")
            raise CliError(f"{command}: {flag} does not apply to --engine {ENGINE}: {why}")


def state_path(out: str | Path) -> Path:
    """Return the state file of a batch writing ``out``: ``NAME.gemini-batch.jsonl`` beside it."""
    target = Path(out)
    return target.with_name(f"{target.stem}.{ENGINE}.jsonl")


def engine(
    args: argparse.Namespace, err: TextIO, on_job: Callable[[JobNote], None] | None = None
) -> GeminiBatch:
    """Return the engine of the flags, with its state file beside ``--out``.

    Raises:
        CliError: An option is out of range.
    """
    from agent.batch import GeminiBatch
    from agent.errors import ConfigurationError

    try:
        return GeminiBatch(
            state=state_path(args.out),
            poll_interval=args.poll_interval,
            max_enqueued_tokens=args.max_enqueued_tokens,
            tool_concurrency=args.concurrency,
            on_job=on_job if on_job is not None else job_printer(err),
        )
    except ConfigurationError as exc:
        raise CliError(f"--engine {ENGINE}: {exc}") from None


def job_printer(
    err: TextIO, note: Callable[[str], None] | None = None
) -> Callable[[JobNote], None]:
    """Return what prints a job's progress: a line when it is sent, resumed or ends."""

    def printed(job: JobNote) -> None:
        if job.kind == "created":
            text = f"job {job.job}: {job.requests} requests sent ({job.source})"
        elif job.kind == "resumed":
            text = f"job {job.job}: followed again after a restart ({job.state})"
        elif job.kind == "ended":
            text = f"job {job.job}: {job.state}"
        else:
            return
        if note is not None:
            note(text)
        else:
            err.write(text + "\n")
            err.flush()

    return printed


def retried_ids(out: str | Path, retried: set[str]) -> dict[str, str]:
    """Return the engine's id of each task run again: ``ID#N``, N its lines in ``out``.

    A task run again must not replay the steps its failed run recorded.
    """
    if not retried:
        return {}
    import json

    counts: Counter[str] = Counter()
    for line in Path(out).read_bytes().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and str(record.get("id")) in retried:
            counts[str(record["id"])] += 1
    return {task_id: f"{task_id}#{counts[task_id]}" for task_id in retried}


class AgentMaker:
    """Makes the agent of a task, one per distinct setting (as the local runner does)."""

    def __init__(
        self,
        args: argparse.Namespace,
        factory: AgentFactory,
        toolkit: Toolkit,
        system: str | None,
    ) -> None:
        self.args = args
        self.factory = factory
        self.toolkit = toolkit
        self.system = system
        self.agents: dict[tuple[Any, ...], Agent] = {}

    def __call__(self, task: Task) -> Agent:
        """Return the agent of ``task``."""
        args = self.args
        model = task.model or args.model
        prompt = task.system if task.system is not None else self.system
        max_turns = task.max_turns or args.max_turns
        key = (model, prompt, max_turns, task.allow)
        if key not in self.agents:
            policy = cli_policy(args.approval, self.toolkit, allow=task.allow, unattended=True)
            self.agents[key] = self.factory.make(
                self.toolkit,
                model=model,
                system=prompt,
                max_turns=max_turns,
                output_type=args.output_type,
                approval=policy,
            )
        return self.agents[key]


async def run_task_in_jobs(
    agent_for: Callable[[Task], Agent],
    task: Task,
    steps: Steps,
    default_model: str,
    deps_for: Callable[[Any], Any] | None,
) -> tuple[dict[str, Any], tuple[RetryEvent, ...]]:
    """Run one task with the engine's steps; return its output line and its retries."""
    import inspect

    from agent.cli.run import with_files
    from agent.errors import RunError

    start = time.monotonic()
    result: RunResult
    try:
        deps = deps_for(task) if deps_for is not None else None
        if inspect.isawaitable(deps):
            deps = await deps
        prompt = with_files(task.prompt, list(task.files))
        plan = agent_for(task).plan(prompt, deps=deps, steps=steps)
        result, error = await plan.result(), None
    except RunError as exc:
        result, error = exc.result, str(exc)
    except Exception as exc:  # one task's failure must not stop the batch
        model = task.model or default_model
        return crashed_record(task.id, model, exc, time.monotonic() - start), ()
    record = result_record(task.id, result, error, time.monotonic() - start)
    return record, result.retries


async def batch_in_jobs(
    args: argparse.Namespace,
    todo: list[Task],
    own: list[Any],
    system: str | None,
    output: Any,
    progress: Any,
    finished: dict[str, str],
    budget: Any,
    deps_for: Callable[[Any], Any] | None,
) -> None:
    """Run ``todo`` through batch jobs, appending each task's line to ``output`` as it ends.

    The counterpart of the local runner's loop (same arguments): every task starts at once.
    The state file is removed once every task is recorded.
    """
    import sys

    from agent.cli._model import open_agents
    from agent.cli._toolkit import check_tool_mix_flags

    batch = engine(args, sys.stderr, job_printer(sys.stderr, progress.note))
    failed = {task.id for task in todo if finished.get(task.id) == "failed"}
    ids = retried_ids(args.out, failed)
    async with open_agents(args, own) as (factory, toolkit):
        check_tool_mix_flags(factory, [task.model or factory.model for task in todo], toolkit)
        agent_for = AgentMaker(args, factory, toolkit, system)

        def work(task: Task) -> Callable[[Steps], Any]:
            async def run(steps: Steps) -> tuple[dict[str, Any], tuple[RetryEvent, ...]]:
                return await run_task_in_jobs(agent_for, task, steps, factory.model, deps_for)

            return run

        def done(_: str, value: tuple[dict[str, Any], tuple[RetryEvent, ...]]) -> None:
            record, retries = value
            budget.spent += record.get("cost_usd") or 0.0
            output.append(record)
            finished[record["id"]] = record["status"]
            progress.finished(record, retries)

        for _ in todo:
            progress.started()
        await batch.run_tasks({ids.get(t.id, t.id): work(t) for t in todo}, on_done=done)
        factory.report(sys.stderr)
    state_path(args.out).unlink(missing_ok=True)
