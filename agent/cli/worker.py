"""``toolnexus-agent worker``: run the tasks of distributed batches (``batch --engine dbos``).

Start any number of workers, on any machines that reach the database; each dequeues tasks
from every batch queue within the batch's limits and runs them as durable agent runs. A
worker stopped with Ctrl-C or SIGTERM, or killed, leaves its unfinished tasks to the
others: they resume from the last finished step (a model call that finished is not made
again; a tool that was cut off runs again).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from typing import TYPE_CHECKING

from agent.cli._engine_flags import add_db_flag
from agent.cli._exits import EXIT_CODES_HELP, EXIT_OK, CliError
from agent.cli._logs import agent_log
from agent.cli._model import open_agents
from agent.cli._options import add_agent_flags, add_toolkit_flags
from agent.cli._toolkit import check_toolkit_flags

if TYPE_CHECKING:
    from agent.cli import _dbos_liveness
    from toolnexus import Tool

__all__ = ["add_parser", "command"]

_EPILOG = f"""\
The worker uses its own tool and model flags (--skills, --tools, --root, --model, ...):
give every worker the same ones. A task's model, system prompt and turn limit come with
the task (from its tasks file and the flags of `batch`).

examples:
  toolnexus-agent worker                                    # SQLite: toolnexus-batch.sqlite
  toolnexus-agent worker --db postgresql://agent:secret@db.internal/batches --skills ./skills

{EXIT_CODES_HELP}"""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``worker`` and its flags."""
    parser = commands.add_parser(
        "worker",
        help="run the tasks of distributed batches (batch --engine dbos)",
        description=(
            "Dequeue and run the tasks that `batch --engine dbos` enqueued, until stopped\n"
            "(Ctrl-C or SIGTERM)."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_flag(parser)
    parser.add_argument(
        "--recover-every",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="how often to look for dead workers whose tasks to take back (default: 1)",
    )
    parser.add_argument(
        "--dead-after",
        type=float,
        default=None,
        metavar="SECONDS",
        help=(
            "take a worker for dead when its lock stays free this long (default: 10); keep it "
            "well above every worker's --recover-every, which is how soon a live worker whose "
            "database connection dropped takes its lock again"
        ),
    )
    add_toolkit_flags(parser)
    add_agent_flags(parser)
    parser.set_defaults(command=command)


def command(args: argparse.Namespace) -> int:
    """Run ``worker`` until stopped and return its exit code."""
    from agent.cli import _dbos_batch, _dbos_liveness

    url = _dbos_batch.db_url(args.db)
    if args.dead_after is None:
        args.dead_after = _dbos_liveness.DEFAULT_DEAD_AFTER
    if not args.recover_every > 0:
        raise CliError(f"--recover-every must be more than 0 seconds, got {args.recover_every}")
    if not args.dead_after >= 0:
        raise CliError(f"--dead-after must be 0 seconds or more, got {args.dead_after}")
    own = check_toolkit_flags(args)
    with agent_log(args.verbose):
        asyncio.run(_serve(args, url, own))
    return EXIT_OK


async def _serve(args: argparse.Namespace, url: str, own: list[Tool]) -> None:
    from dbos import DBOS

    from agent.cli import (
        _dbos_batch,
        _dbos_liveness,
        _dbos_submit,  # noqa: F401  (registers the submission workflow)
        _dbos_worker,
    )

    me = _dbos_worker.executor_id()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with open_agents(args, own) as (factory, toolkit):
        runtime = _dbos_worker.WorkerRuntime(factory, toolkit, url)
        _dbos_worker.WorkerRuntime.current = runtime
        with _dbos_batch.client(url):  # creates the database when it is new
            pass
        # The lock before launch: from launch on, this worker may hold tasks.
        try:
            liveness = _dbos_liveness.hold_liveness(url, me)
        except _dbos_liveness.DATABASE_ERRORS as exc:
            raise CliError(f"--db: cannot use {_dbos_batch.redact(url)}: {_reason(exc)}") from None
        try:
            DBOS(config=_dbos_batch.dbos_config(url, me))
            DBOS.launch()  # from the event loop: the tasks run on it, with its agents
            sys.stderr.write(f"worker {me} ready on {_dbos_batch.redact(url)}\n")
            sys.stderr.flush()
            try:
                await _watch(args, me, liveness, stop)
            finally:
                DBOS.destroy()
        finally:
            liveness.close()
            runtime.close()
            _dbos_worker.WorkerRuntime.current = None
    sys.stderr.write(f"worker {me} stopped\n")


async def _watch(
    args: argparse.Namespace, me: str, liveness: _dbos_liveness.Liveness, stop: asyncio.Event
) -> None:
    """Until stopped: keep this worker's lock, and take back the tasks of dead workers.

    A lost database is waited out: DBOS retries its own work, this loop looks again at its
    next turn (the lock's connection is made again then), and nobody is taken for dead on
    a look that failed.
    """
    from agent.cli import _dbos_liveness

    watch = _dbos_liveness.DeadWorkers(liveness, me, args.dead_after)
    lost = False
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), args.recover_every)
        if stop.is_set():
            break
        try:
            retaken = await asyncio.to_thread(liveness.renew)
            dead = await _dbos_liveness.recover_dead(watch)
        except _dbos_liveness.DATABASE_ERRORS as exc:
            if not lost:
                _say(f"worker {me} lost its database connection ({_reason(exc)}); retrying")
            lost = True
            continue
        if lost or retaken:
            _say(f"worker {me} reconnected to the database and holds its lock again")
        lost = False
        for executor in dead:
            _say(f"worker {executor} is gone; its tasks go back")


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _reason(exc: BaseException) -> str:
    """Return the first line of the driver's message (SQLAlchemy adds the statement, a link)."""
    cause = getattr(exc, "orig", None) or exc
    lines = str(cause).strip().splitlines()
    return lines[0] if lines else type(cause).__name__
