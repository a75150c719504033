"""``toolnexus-agent batch``: run a file of tasks concurrently into a resumable JSON Lines file.

Every finished task is appended to the output as one JSON line, in a single write followed
by fsync, so a crash or Ctrl-C loses only the tasks in flight. On the next run, tasks whose
id is already in the output are skipped, and a partial last line (a write cut short by a
crash) is dropped first.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from agent.cli._approval import add_approval_flag, cli_policy
from agent.cli._engine_flags import add_engine_flags
from agent.cli._exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, CliError
from agent.cli._gemini_batch import add_gemini_batch_flags, check_gemini_batch_flags
from agent.cli._logs import agent_log
from agent.cli._model import open_agents
from agent.cli._options import add_agent_flags, add_toolkit_flags, read_system, yaml_problem
from agent.cli._printer import describe_retry
from agent.cli._rate import add_rate_flags
from agent.cli._records import crashed_record, result_record
from agent.cli._toolkit import check_tool_mix_flags, check_toolkit_flags, import_attr
from agent.cli.run import load_output_type, with_files
from agent.errors import RunError

if TYPE_CHECKING:
    from agent import Agent
    from agent.events import RetryEvent
    from toolnexus import Tool

__all__ = ["Task", "add_parser", "command", "load_tasks", "read_finished", "run_all"]

T = TypeVar("T")

_EPILOG = """\
tasks file (YAML or JSON): a list of tasks, or a mapping with `defaults` and `tasks`:

  defaults: {model: gemini-2.5-flash, max_turns: 10, system: "Be brief."}
  tasks:
    - id: readme
      prompt: Summarise README.md in one sentence.
    - id: todo
      prompt: List the TODO comments under src/.
      model: gemini-2.5-pro            # per-task overrides: model, system, max_turns
      allow: [write]                   # tools that may run without approval
    - id: chart
      prompt: What does this chart show?
      files: [chart.png]               # sent with the prompt (images, PDFs, audio...)

Each task needs a unique `id` and a `prompt`. A task's own fields win over `defaults`,
which win over the command-line flags. Nobody answers approvals in a batch: a call that
--approval would ask about (bash and file changes by default) is refused, and the model
is told why, unless the task's `allow` lists the tool; the result says which were refused.

output: one JSON line per finished task, written as it finishes:
  {"id": ..., "status": "completed", "text": ..., "usage": {...}, "turns": 2,
   "duration": 1.23, "model": ..., "tool_calls": 1, "reason": null, "limit": null,
   "cost_usd": 0.00041, "cost_estimated": false, "output": null,
   "denied": ["bash"]}
`output` is the typed answer with --output-schema (else null).
`status` is completed, pending, blocked, incomplete or failed (then `error` says why).
Run the same command again to resume: tasks already in the output are skipped
(--retry-failed runs the failed ones again). The file is only ever appended to, so a task
run again has several lines: the last line for an id is its result (the summary, the
resume and --retry-failed all read it that way). One batch at a time writes a file: a
second batch on the same --out refuses to start while the first runs.

budget: with --budget-usd X no new task starts once the tasks recorded in the output
(this run's and earlier runs') cost X dollars in total; tasks already running finish.
Run again with a higher X to go on.

examples:
  toolnexus-agent batch tasks.yaml --out results.jsonl
  toolnexus-agent batch tasks.yaml --out results.jsonl --concurrency 8 --skills ./skills
  toolnexus-agent batch tasks.yaml --out results.jsonl --fake scenario.yaml
  toolnexus-agent batch tasks.yaml --out results.jsonl --budget-usd 2.50

exit codes:
  0  every task completed
  1  a task did not complete (its line says failed, pending, blocked or incomplete)
  2  usage/config error (bad flags or tasks file, no API key, --out in use by another batch)
  130 interrupted (Ctrl-C): finished tasks are kept; run the same command again to resume"""

_TASK_KEYS = frozenset({"id", "prompt", "model", "system", "max_turns", "files", "allow"})
_DEFAULT_KEYS = _TASK_KEYS - {"id", "prompt"}
_BAR_WIDTH = 30


@dataclass(frozen=True, slots=True)
class Task:
    """One task of a batch file, with the defaults already applied."""

    id: str
    """The unique id that marks the task done in the output file."""
    prompt: str
    """What the task asks."""
    model: str | None = None
    """The task's model (else ``--model``)."""
    system: str | None = None
    """The task's system prompt (else ``--system``)."""
    max_turns: int | None = None
    """The task's turn limit (else ``--max-turns``)."""
    files: tuple[str, ...] = ()
    """Files sent with the prompt (paths relative to the current directory)."""
    allow: tuple[str, ...] = ()
    """Tools that run without asking in this task (else a call that would ask is refused)."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``batch`` and its flags."""
    parser = commands.add_parser(
        "batch",
        help="run a YAML file of tasks concurrently into a resumable JSONL file",
        description=(
            "Run every task of TASKS (a YAML or JSON file) with the chosen tools, N at a\n"
            "time, and append one JSON line per finished task to --out. Interrupted or\n"
            "crashed batches resume where they stopped."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("tasks", metavar="TASKS", help="the tasks file (.yaml, .yml or .json)")
    parser.add_argument(
        "--out",
        metavar="RESULTS.jsonl",
        help="where results are appended (required; with --engine dbos: wait for the "
        "batch and write its results there)",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=4,
        metavar="N",
        help="tasks run at the same time (default: 4; with --engine gemini-batch: tool "
        "calls run at the same time, every task being in the same job)",
    )
    parser.add_argument(
        "--output-schema",
        metavar="FILE|MODULE:MODEL",
        help="ask every task for a typed answer (as `run --output-schema`); each result "
        "line carries it as `output`",
    )
    parser.add_argument(
        "--deps",
        metavar="MODULE:ATTR",
        help="a function of the task that returns its run data (tools get it as context.deps)",
    )
    parser.add_argument(
        "--retry-failed",
        action="store_true",
        help="run again the tasks whose recorded status is `failed`",
    )
    parser.add_argument(
        "--budget-usd",
        type=float,
        metavar="USD",
        help="start no new task once the recorded tasks cost this many dollars in total",
    )
    add_toolkit_flags(parser)
    add_agent_flags(parser)
    add_rate_flags(parser, requests=False)
    add_approval_flag(parser, batch=True)
    add_engine_flags(parser)
    add_gemini_batch_flags(parser, engine_flag=False)
    parser.set_defaults(command=command, unattended=True)


# --------------------------------------------------------------------------- input


def load_tasks(path: str | Path) -> list[Task]:
    """Read a tasks file (YAML or JSON): a list of tasks, or ``defaults`` and ``tasks``.

    Args:
        path: The tasks file.

    Returns:
        The tasks in file order, each with the defaults applied.

    Raises:
        CliError: The file cannot be read, or a task is malformed (the message names the
            task and the field).
    """
    import yaml

    try:
        # libyaml's parser when it is there (many times faster on a large tasks file).
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        data: Any = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=loader)
    except OSError as exc:
        raise CliError(f"batch: cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CliError(f"batch: {path} is not valid YAML: {exc}") from None
    except (yaml.YAMLError, RecursionError) as exc:
        raise CliError(f"batch: {yaml_problem(path, exc)}") from None
    defaults: Mapping[str, Any] = {}
    if isinstance(data, Mapping):
        unknown = set(data) - {"defaults", "tasks"}
        if unknown:
            raise CliError(f"batch: {path}: unknown top-level key(s) {', '.join(sorted(unknown))}")
        defaults = data.get("defaults") or {}
        if not isinstance(defaults, Mapping):
            raise CliError(f"batch: {path}: `defaults` must be a mapping")
        _check_keys(defaults, _DEFAULT_KEYS, f"{path}: defaults")
        data = data.get("tasks")
    if not isinstance(data, list) or not data:
        raise CliError(f"batch: {path}: expected a non-empty list of tasks (or `tasks:` list)")
    tasks = [_task({**defaults, **_mapping(item, path, i)}, path, i) for i, item in enumerate(data)]
    seen: dict[str, int] = {}
    for index, task in enumerate(tasks):
        if task.id in seen:
            raise CliError(
                f"batch: {path}: duplicate task id {task.id!r} (tasks {seen[task.id] + 1} "
                f"and {index + 1}); ids must be unique to resume"
            )
        seen[task.id] = index
    return tasks


def _mapping(item: Any, path: str | Path, index: int) -> Mapping[str, Any]:
    if not isinstance(item, Mapping):
        raise CliError(f"batch: {path}: task {index + 1} is not a mapping with id and prompt")
    return item


def _check_keys(item: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = set(map(str, item)) - allowed
    if unknown:
        raise CliError(
            f"batch: {where}: unknown field(s) {', '.join(sorted(unknown))}; "
            f"allowed: {', '.join(sorted(allowed))}"
        )


def _task(item: Mapping[str, Any], path: str | Path, index: int) -> Task:
    where = f"{path}: task {index + 1}"
    _check_keys(item, _TASK_KEYS, where)
    task_id, prompt = item.get("id"), item.get("prompt")
    if not isinstance(task_id, str | int) or isinstance(task_id, bool) or str(task_id) == "":
        raise CliError(f"batch: {where}: `id` must be a non-empty string or number")
    if not isinstance(prompt, str) or not prompt.strip():
        raise CliError(f"batch: {where} ({task_id}): `prompt` must be non-empty text")
    max_turns = item.get("max_turns")
    if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
        raise CliError(f"batch: {where} ({task_id}): `max_turns` must be a whole number >= 1")
    model, system = item.get("model"), item.get("system")
    for name, value in (("model", model), ("system", system)):
        if value is not None and not isinstance(value, str):
            raise CliError(f"batch: {where} ({task_id}): `{name}` must be text")
    files = item.get("files") or []
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise CliError(f"batch: {where} ({task_id}): `files` must be a list of paths")
    allow = item.get("allow") or []
    if not isinstance(allow, list) or not all(isinstance(name, str) for name in allow):
        raise CliError(f"batch: {where} ({task_id}): `allow` must be a list of tool names")
    return Task(str(task_id), prompt, model, system, max_turns, tuple(files), tuple(allow))


def read_finished(path: str | Path, err: TextIO) -> dict[str, str]:
    """Return ``{task id: last recorded status}`` of an output file (empty when missing).

    A last line without its newline is a write a crash cut short: it is cut off the file,
    so the task runs again. Lines that are not JSON objects with an ``id`` are ignored.

    Args:
        path: The JSON Lines output of earlier runs.
        err: Where dropped or ignored lines are reported.

    Raises:
        CliError: The file exists but cannot be read.
    """
    target = Path(path)
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise CliError(f"batch: cannot read {path}: {exc.strerror or exc}") from None
    if raw and not raw.endswith(b"\n"):
        keep = raw.rfind(b"\n") + 1
        os.truncate(target, keep)
        err.write(f"{path}: dropped an unfinished last line ({len(raw) - keep} bytes)\n")
        raw = raw[:keep]
    finished: dict[str, str] = {}
    for number, line in enumerate(raw.splitlines(), 1):
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict) or "id" not in record:
            err.write(f"{path}:{number}: not a result line; ignored\n")
            continue
        finished[str(record["id"])] = str(record.get("status"))
    return finished


def spent_usd(path: str | Path) -> float:
    """Return the dollars the tasks recorded in an output file cost (0 when it is missing).

    Args:
        path: The JSON Lines output of earlier runs (after `read_finished` tidied it).
    """
    try:
        lines = Path(path).read_bytes().splitlines()
    except OSError:
        return 0.0
    total = 0.0
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        usd = record.get("cost_usd") if isinstance(record, dict) else None
        if isinstance(usd, int | float):
            total += usd
    return total


@dataclass
class _Budget:
    """The dollars the batch may spend and has spent (earlier runs included)."""

    limit: float | None
    spent: float
    stopped: bool = False
    """A task was left unstarted because the budget was reached."""

    def allows(self) -> bool:
        if self.limit is not None and self.spent >= self.limit:
            self.stopped = True
        return not self.stopped


# --------------------------------------------------------------------------- output


class _Output:
    """Appends one JSON line per result with one ``write`` and an ``fsync``.

    The file is locked (an exclusive ``flock``, released when the process ends, however it
    ends) so that two batches never write one output file.
    """

    def __init__(self, path: str | Path) -> None:
        if os.path.exists(path) and not os.path.isfile(path):  # a FIFO would block the open
            raise CliError(f"batch: --out {path} is not a regular file; name a file to write to")
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise CliError(f"batch: cannot open {path}: {exc.strerror or exc}") from None
        try:
            _lock(self._fd)
        except BlockingIOError:
            os.close(self._fd)
            raise CliError(
                f"batch: {path} is in use by another batch; wait for it to finish, or write "
                "to another --out file"
            ) from None

    def append(self, record: Mapping[str, Any]) -> None:
        data = (json.dumps(record, ensure_ascii=False) + "\n").encode()
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


def _lock(fd: int) -> None:
    """Take an exclusive lock on ``fd`` without waiting (``BlockingIOError`` if held)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no advisory locks to take
        return
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


@dataclass
class _Progress:
    """Counts, and a one-line bar on a terminal (a plain line per task otherwise)."""

    total: int
    err: TextIO
    tty: bool
    done: int = 0
    running: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    _drawn: int = 0

    def started(self) -> None:
        self.running += 1
        self._draw()

    def finished(self, record: Mapping[str, Any], retries: Sequence[RetryEvent] = ()) -> None:
        for retry in retries:
            self.note(f"{record['id']}: {describe_retry(retry)}")
        if self.tty and record.get("denied"):
            self.note(f"{record['id']}: refused without approval: {', '.join(record['denied'])}")
        self.running -= 1
        self.done += 1
        status = str(record["status"])
        self.statuses[status] = self.statuses.get(status, 0) + 1
        if self.tty:
            self._draw()
        else:
            detail = f": {record['error']}" if record.get("error") else ""
            if record.get("denied"):
                detail += f"; refused without approval: {', '.join(record['denied'])}"
            self.err.write(
                f"[{self.done}/{self.total}] {record['id']} {status} "
                f"({record['duration']:.1f} s){detail}\n"
            )
            self.err.flush()

    def _draw(self) -> None:
        if not self.tty:
            return
        filled = _BAR_WIDTH * self.done // max(self.total, 1)
        bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
        failed = sum(n for status, n in self.statuses.items() if status != "completed")
        line = (
            f"[{bar}] {self.done}/{self.total} done, {self.running} running, "
            f"{failed} not completed "
        )
        self.err.write("\r" + line)
        self.err.flush()
        self._drawn = len(line)

    def note(self, text: str) -> None:
        """Write a line of its own (over the bar on a terminal; it is drawn again next)."""
        if self.tty:
            self.err.write("\r" + text.ljust(self._drawn) + "\n")
        else:
            self.err.write(text + "\n")

    def close(self) -> None:
        if self.tty:
            self.err.write("\n")


# --------------------------------------------------------------------------- running


async def run_all(
    items: Sequence[T], concurrency: int, work: Callable[[T], Awaitable[None]]
) -> None:
    """Call ``work`` on every item, ``concurrency`` at a time (``eval`` runs on this too).

    Raises:
        ExceptionGroup: ``work`` raised; the other workers are cancelled.
    """
    queue: asyncio.Queue[T] = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)

    async def worker() -> None:
        while not queue.empty():
            await work(queue.get_nowait())

    async with asyncio.TaskGroup() as group:
        for _ in range(min(concurrency, len(items))):
            group.create_task(worker())


DepsFactory = Callable[[Any], Any] | None
"""``--deps``: returns a task's (or an eval case's) run data, sync or async; ``None``
without the flag."""


def load_deps_factory(spec: str | None) -> DepsFactory:
    """Return the function ``--deps MODULE:ATTR`` names (``None`` without the flag).

    Raises:
        CliError: The spec cannot be imported or is not callable.
    """
    if spec is None:
        return None
    factory = import_attr("--deps", spec, "mydeps:for_task")
    if not callable(factory):
        raise CliError(f"--deps {spec}: {type(factory).__name__} is not callable")
    return factory  # type: ignore[no-any-return]


def check_prices(tasks: Sequence[Task], default_model: str, budget: float | None) -> None:
    """Refuse ``--budget-usd`` when a task's model has no price (its cost would read $0).

    Raises:
        CliError: A budget is set and the price table lacks a task's model.
    """
    if budget is None:
        return
    from agent import Cost

    for task in tasks:
        model = task.model or default_model
        if not Cost.priced(model):
            raise CliError(
                f"batch: --budget-usd needs a price for {model!r} (task {task.id}), and the "
                "price table has none (docs/budgets.md lists the priced models); check the "
                "model name, or run without --budget-usd"
            )


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def command(args: argparse.Namespace) -> int:
    """Run ``batch`` and return its exit code."""
    if args.concurrency < 1:
        raise CliError(f"--concurrency must be at least 1, got {args.concurrency}")
    if args.budget_usd is not None and args.budget_usd < 0:
        raise CliError(f"--budget-usd must be 0 or more, got {args.budget_usd}")
    tasks = load_tasks(args.tasks)
    if args.engine == "gemini-batch":
        check_gemini_batch_flags(args, "batch")
    if args.engine == "dbos":
        from agent.cli._dbos_submit import submit

        return submit(args, tasks)  # without the Gemini SDK: the workers make the calls
    if args.out is None:
        raise CliError("batch: --out RESULTS.jsonl is required (or use --engine dbos)")
    own = check_toolkit_flags(args)
    system = read_system(args.system)
    args.output_type = load_output_type(args.output_schema)
    output = _Output(args.out)  # locked before it is read, so no other batch is writing
    try:
        return _run_batch(args, tasks, own, system, output)
    finally:
        output.close()


def _run_batch(
    args: argparse.Namespace,
    tasks: list[Task],
    own: list[Tool],
    system: str | None,
    output: _Output,
) -> int:
    err = sys.stderr
    deps_for = load_deps_factory(args.deps)
    finished = read_finished(args.out, err)
    todo = [
        task
        for task in tasks
        if task.id not in finished or (args.retry_failed and finished[task.id] == "failed")
    ]
    skipped = len(tasks) - len(todo)
    if skipped:
        err.write(f"{skipped} of {len(tasks)} tasks are already in {args.out}; skipping them\n")
    budget = _Budget(args.budget_usd, spent_usd(args.out))
    progress = _Progress(len(todo), err, err.isatty())
    try:
        if todo and budget.allows():
            with agent_log(args.verbose):
                runner = _batch
                if args.engine == "gemini-batch":
                    from agent.cli._gemini_batch import batch_in_jobs as runner
                asyncio.run(
                    runner(args, todo, own, system, output, progress, finished, budget, deps_for)
                )
    except KeyboardInterrupt:
        progress.close()
        err.write(f"interrupted: {progress.done} tasks recorded this run; run again to resume\n")
        return EXIT_INTERRUPTED
    progress.close()
    statuses = [finished.get(task.id, "missing") for task in tasks]
    counts = {status: statuses.count(status) for status in dict.fromkeys(statuses)}
    summary = ", ".join(f"{count} {status}" for status, count in counts.items())
    err.write(f"cost: ${budget.spent:.6f} for the tasks recorded in {args.out}\n")
    if budget.stopped:
        left = statuses.count("missing")
        err.write(
            f"budget of ${budget.limit:g} reached: {left} tasks not started; "
            "run again with a higher --budget-usd to go on\n"
        )
    err.write(f"{len(tasks)} tasks: {summary}; results in {args.out}\n")
    return EXIT_OK if set(statuses) == {"completed"} else EXIT_FAILED


async def _batch(
    args: argparse.Namespace,
    todo: list[Task],
    own: list[Tool],
    system: str | None,
    output: _Output,
    progress: _Progress,
    finished: dict[str, str],
    budget: _Budget,
    deps_for: DepsFactory,
) -> None:
    queue: asyncio.Queue[Task] = asyncio.Queue()
    for task in todo:
        queue.put_nowait(task)
    async with open_agents(args, own) as (factory, toolkit):
        models = [task.model or factory.model for task in todo]
        check_prices(todo, factory.model, budget.limit)
        check_tool_mix_flags(factory, models, toolkit)
        # Tasks with the same settings share one agent (an agent serves concurrent runs).
        agents: dict[tuple[Any, ...], Agent] = {}

        def agent_for(task: Task) -> Agent:
            model = task.model or args.model
            prompt = task.system if task.system is not None else system
            max_turns = task.max_turns or args.max_turns
            key = (model, prompt, max_turns, task.allow)
            if key not in agents:
                policy = cli_policy(args.approval, toolkit, allow=task.allow, unattended=True)
                agents[key] = factory.make(
                    toolkit,
                    model=model,
                    system=prompt,
                    max_turns=max_turns,
                    output_type=args.output_type,
                    approval=policy,
                )
            return agents[key]

        async def worker() -> None:
            while not queue.empty() and budget.allows():
                task = queue.get_nowait()
                progress.started()
                record, retries = await _run_task(agent_for, task, factory.model, deps_for)
                budget.spent += record.get("cost_usd") or 0.0
                output.append(record)
                finished[task.id] = record["status"]
                progress.finished(record, retries)

        async with asyncio.TaskGroup() as group:
            for _ in range(min(args.concurrency, len(todo))):
                group.create_task(worker())
        factory.report(sys.stderr)


async def _run_task(
    agent_for: Callable[[Task], Agent], task: Task, default_model: str, deps_for: DepsFactory
) -> tuple[dict[str, Any], tuple[RetryEvent, ...]]:
    """Run one task; return its output record and the model-call retries it took."""
    start = time.monotonic()
    try:
        deps = await _maybe(deps_for(task)) if deps_for is not None else None
        result = await agent_for(task).run(with_files(task.prompt, list(task.files)), deps=deps)
        error = None
    except RunError as exc:
        result, error = exc.result, str(exc)
    except Exception as exc:  # one task's failure must not stop the batch
        model = task.model or default_model
        return crashed_record(task.id, model, exc, time.monotonic() - start), ()
    record = result_record(task.id, result, error, time.monotonic() - start)
    return record, result.retries
