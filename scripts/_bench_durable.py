"""The DBOS part of the benchmark (``python scripts/bench.py --durable``).

The figures:

- **Durable overhead per step**: the ``pair`` conversation (a tool call, then the answer:
  two model calls and one tool call, three steps) run as a DBOS workflow, against the same
  run in process, alternated in one process, on SQLite and on Postgres, with DBOS set up
  as docs/durable.md advises (`agent.dbos.engine_options`). Reported as the ratio of the
  p50 run times, as milliseconds added per step, and as CPU milliseconds added per step
  (this process's CPU: less sensitive to a loaded machine than the wall time).
- **Bare DBOS floor**: 1,000 tasks, each a workflow of one step (a one-turn task's model
  call) that only waits 200 ms, through four bare DBOS worker processes of eight slots,
  on the same database with the same queue settings, enqueued with DBOS's client.
- **Distributed batch**: 1,000 one-turn tasks through ``batch --engine dbos`` and four
  ``toolnexus-agent worker`` processes of eight slots, against a fake Gemini that takes
  200 ms per request: its throughput as a share of the floor's, the fraction of the ideal
  (tasks x latency / concurrency), the workers' (and Postgres's) CPU per task, and the
  time of the submit (a new process, as a user runs it).
- **DBOS + raw SDK**: the floor again, its step making the model call with the raw SDK to
  the same fake (a reference: what a batch of model calls costs without anything of
  ours), and DBOS's floor of a submit (a new process enqueueing one workflow).

The floors are timed from the moment every task is enqueued, the batch from the end of its
submit (which enqueues one workflow: the workers' fan-out of the tasks counts in its time).
The processes start with compiled bytecode, as a user's do.

``python scripts/_bench_durable.py overhead DB_URL RUNS WARMUP`` is the child process of the
first figure (DBOS is one per process); it prints one JSON line.
``python scripts/_bench_durable.py floor-worker DB_URL LATENCY [sdk]`` is a worker of the floor.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

STEPS_PER_PAIR = 3  # two model calls and one tool call


PYCACHE = str(Path(tempfile.gettempdir()) / "toolnexus-bench-pycache")
"""Where the measured processes keep their compiled bytecode (the cache `bench.py` uses)."""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    # Processes start as a user's do, with compiled bytecode: an environment that forbids
    # writing it would have every worker and every submit compile the package again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = PYCACHE
    return env


def prime_bytecode() -> None:
    """Import what the workers, the submit and the probes import, so they find bytecode."""
    code = (
        "import dbos, agent, agent.dbos, agent.testing, agent.cli.batch, agent.cli.worker, "
        "agent.cli._dbos_batch, agent.cli._dbos_submit, agent.cli._dbos_worker, "
        "agent.cli._dbos_liveness, agent._loop, agent._plan"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), check=True)


# --------------------------------------------------------------------------- overhead


def _pair_model(body: dict[str, Any]) -> Any:
    from agent.testing import function_call, reply

    part = body["contents"][-1]["parts"][0]
    if "text" in part:
        return reply(function_call("lookup", {"key": "answer"}))
    return "The answer is 42."


async def _overhead(db: str, runs: int, warmup: int) -> dict[str, Any]:
    from dbos import DBOS, DBOSConfig, SetWorkflowID

    import toolnexus as tn
    from agent import Agent, ClientSettings
    from agent.dbos import DurableAgent, engine_options
    from agent.testing import FakeGemini

    async def nothing() -> None:
        pass

    async def write() -> None:
        await DBOS.write_stream_async("bench.events", {"number": 0, "events": []})

    @DBOS.workflow(name="bench_empty_steps")
    async def empty_steps(prompt: str, writes: bool) -> str:
        # With ``writes``, the two stream writes of a durable pair run: the first turn's
        # events from the second model call's step, the last turn's from the workflow.
        for step in range(STEPS_PER_PAIR):
            work = write if writes and step == 1 else nothing
            await DBOS.run_step_async({"name": "bench.empty"}, work)
        if writes:
            await write()
        return prompt

    @tn.define_tool(idempotent=True)  # a read: a crash may run it again (no begin mark)
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"{key} = 42"

    fake = FakeGemini(_pair_model)
    with fake.serve() as server:
        agent = Agent(
            toolkit=tn.toolkit([lookup]),
            client=ClientSettings(base_url=server.base_url, api_key="bench-key"),
        )
        sides = {
            "in_process": None,
            "durable": DurableAgent(agent, name="bench_pair"),
            "durable_no_events": DurableAgent(agent, name="bench_quiet", events=False),
            "dbos_only": None,
            "dbos_only_writes": None,
        }
        config: DBOSConfig = {"name": "bench", "system_database_url": db, "log_level": "WARNING"}
        # As docs/durable.md advises: on SQLite, commits that need not wait for the disk.
        config["db_engine_kwargs"] = engine_options(db)
        DBOS(config=config)
        DBOS.launch()
        try:
            times: dict[str, list[float]] = {side: [] for side in sides}
            cpu: dict[str, list[float]] = {side: [] for side in sides}
            for index in range(warmup + runs):
                order = list(sides)[index % len(sides) :] + list(sides)[: index % len(sides)]
                for side in order:
                    durable = sides[side]
                    began, began_cpu = time.perf_counter_ns(), time.process_time_ns()
                    if side.startswith("dbos_only"):
                        # DBOS's own cost of the run's steps (and stream writes): a workflow
                        # of as many empty steps, which the durable run cannot go below.
                        with SetWorkflowID(f"bare-{uuid.uuid4().hex}"):
                            result = await empty_steps("What?", side == "dbos_only_writes")
                    elif durable is None:
                        result = await agent.run("What is the answer?")
                    else:
                        run_id = f"pair-{uuid.uuid4().hex}"
                        result = await durable.run("What is the answer?", run_id=run_id)
                    elapsed = (time.perf_counter_ns() - began) / 1e6
                    assert side.startswith("dbos_only") or result.status == "completed", result
                    if index >= warmup:
                        times[side].append(elapsed)
                        cpu[side].append((time.process_time_ns() - began_cpu) / 1e6)
        finally:
            DBOS.destroy()
            await agent.aclose()
    p50 = {side: statistics.median(values) for side, values in times.items()}
    cpu50 = {side: statistics.median(values) for side, values in cpu.items()}
    plain = p50["in_process"]
    return {
        # DBOS alone: what its steps cost a run (and with the run's two stream writes).
        "dbos_only_per_step_ms": p50["dbos_only"] / STEPS_PER_PAIR,
        "dbos_only_cpu_per_step_ms": cpu50["dbos_only"] / STEPS_PER_PAIR,
        "dbos_only_writes_per_step_ms": p50["dbos_only_writes"] / STEPS_PER_PAIR,
        # CPU of this process (the fake's thread included on both sides): less sensitive
        # to a loaded machine than the wall time, but blind to waiting on the database.
        "cpu_per_step_ms": (cpu50["durable"] - cpu50["in_process"]) / STEPS_PER_PAIR,
        "no_events_cpu_per_step_ms": (cpu50["durable_no_events"] - cpu50["in_process"])
        / STEPS_PER_PAIR,
        "runs": runs,
        "in_process_ms": plain,
        "durable_ms": p50["durable"],
        "ratio": p50["durable"] / plain,
        "per_step_ms": (p50["durable"] - plain) / STEPS_PER_PAIR,
        "no_events_ms": p50["durable_no_events"],
        "no_events_ratio": p50["durable_no_events"] / plain,
        "no_events_per_step_ms": (p50["durable_no_events"] - plain) / STEPS_PER_PAIR,
    }


def overhead(db: str, runs: int, warmup: int = 3) -> dict[str, Any]:
    """Measure one database's durable overhead in a fresh child process."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__)), "overhead", db, str(runs), str(warmup)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the overhead probe failed:\n{done.stderr}")
    value: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return value


# --------------------------------------------------------------------------- throughput

BARE_WORKFLOW = "toolnexus.bench_bare_task"
"""The floor's task: the same number of steps as a one-turn task, each only waiting."""


def _one_turn_model(latency: float) -> Any:
    from agent.testing import delay

    def model(body: dict[str, Any]) -> Any:
        return delay(latency, "Done.")

    return model


def _cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of a live process, its reaped children included."""
    fields = _stat(Path(f"/proc/{pid}"))
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _stat(proc: Path) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name."""
    return (proc / "stat").read_text().rsplit(")", 1)[1].split()


def _database_cpu(url: str) -> float | None:
    """CPU seconds of the Postgres server behind ``url`` so far (None for SQLite/unknown).

    The server's main process (its exited backends included) plus its live backends.
    """
    if not url.startswith("postgresql"):
        return None
    port = str(urllib.parse.urlsplit(url).port).encode()
    processes = [proc for proc in Path("/proc").iterdir() if proc.name.isdigit()]
    server = None
    for proc in processes:
        with contextlib.suppress(OSError):
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if argv and argv[0].endswith(b"postgres") and port in argv:
                server = int(proc.name)
    if server is None:
        return None
    total = _cpu_seconds(server)
    tick = os.sysconf("SC_CLK_TCK")
    for proc in processes:
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = _stat(proc)
            if int(stat[1]) == server:
                total += (int(stat[11]) + int(stat[12])) / tick
    return total


def _wait_done(db: str, queue: str, workflow: str, tasks: int) -> None:
    """Wait until the ``tasks`` workflows of ``queue`` are done.

    Each look asks for one workflow of the queue still waiting or running (a cheap query
    that stays cheap as tasks finish): the waiting loads the machine the same for both
    batches, however long they take. The finished ones are counted once nothing is left.
    """
    from dbos import DBOSClient

    client = DBOSClient(system_database_url=db)
    try:
        while True:
            active = client.list_workflows(
                queue_name=queue,
                status=["ENQUEUED", "PENDING"],
                limit=1,
                load_input=False,
                load_output=False,
            )
            if not active:
                done = client.list_workflows(
                    name=workflow, status=["SUCCESS", "ERROR"], load_input=False, load_output=False
                )
                if len(done) >= tasks:
                    return
            time.sleep(0.05)
    finally:
        client.destroy()


class _Measured:
    """Wall time and CPU of one batch, from the moment its tasks were enqueued."""

    def __init__(self, db: str, workers: list[subprocess.Popen[bytes]]) -> None:
        self.db = db
        self.workers = workers
        self.figures: dict[str, Any] = {}

    def __enter__(self) -> _Measured:
        self.cpu = [_cpu_seconds(w.pid) for w in self.workers]
        self.database = _database_cpu(self.db)
        self.load = os.getloadavg()[0]
        return self

    def started(self) -> None:
        """The tasks are enqueued: the batch's time starts now."""
        self.began = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        elapsed = time.perf_counter() - self.began
        cpu = sum(_cpu_seconds(w.pid) for w in self.workers) - sum(self.cpu)
        database = _database_cpu(self.db)
        self.figures = {"elapsed_s": elapsed, "worker_cpu_s": cpu, "load": self.load}
        if database is not None and self.database is not None:
            self.figures["database_cpu_s"] = database - self.database


def throughput(
    db: str, tasks: int, workers: int, per_worker: int, latency: float
) -> dict[str, Any]:
    """Run ``tasks`` one-turn tasks through ``workers`` worker processes; time the batch.

    The time runs from the end of the submit (every task enqueued) to the last task done;
    the submit is timed on its own, as a whole command (a new process).
    """
    from agent.testing import FakeGemini

    fake = FakeGemini(_one_turn_model(latency))
    with tempfile.TemporaryDirectory(prefix="toolnexus-bench-batch-") as temp:
        folder = Path(temp)
        tasks_file = folder / "bench.yaml"
        tasks_file.write_text(
            "tasks:\n" + "".join(f"  - id: t{i}\n    prompt: task {i}\n" for i in range(tasks))
        )
        with fake.serve() as server:
            env = {
                **_env(),
                "GOOGLE_GEMINI_BASE_URL": server.base_url,
                "GEMINI_API_KEY": "bench-key",
            }
            cli = [sys.executable, "-m", "agent"]
            command = [*cli, "worker", "--db", db, "--no-builtins"]
            with _workers(command, workers, env, folder) as running, _Measured(db, running) as m:
                limits = ["--concurrency", str(workers * per_worker)]
                limits += ["--worker-concurrency", str(per_worker)]
                began = time.perf_counter()
                subprocess.run(
                    [*cli, "batch", str(tasks_file), "--engine", "dbos", "--db", db, *limits],
                    check=True,
                    env=env,
                    cwd=folder,
                    capture_output=True,
                )
                submit = time.perf_counter() - began
                m.started()
                _wait_done(db, "toolnexus-bench", "toolnexus.batch_task", tasks)
    figures = _figures(m.figures, tasks, workers, per_worker, latency)
    figures.update(submit_s=submit, requests=len(fake.requests))
    return figures


def floor(
    db: str, tasks: int, workers: int, per_worker: int, latency: float, *, sdk: bool = False
) -> dict[str, Any]:
    """DBOS's own floor: the same batch of bare workflows, one step each.

    Same database, same queue settings (`register_queue`), same number of worker processes
    and slots; each task is a workflow with one step (a one-turn task's model call). The
    step only waits ``latency`` seconds; with ``sdk``, it makes the model call with the raw
    SDK instead, to a fake answering in ``latency`` (the floor of a batch of model calls:
    DBOS and the SDK, nothing of ours). The tasks are enqueued with DBOS's client, 100 per
    transaction, before the time starts (the batch's own fan-out counts in its time).
    """
    from agent.cli import _dbos_batch, _dbos_submit
    from agent.testing import FakeGemini

    queue = "toolnexus-bench-floor"
    fake = FakeGemini(_one_turn_model(latency))
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="toolnexus-floor-")))
        command = [sys.executable, str(Path(__file__)), "floor-worker", db, str(latency)]
        env = _env()
        if sdk:
            server = stack.enter_context(fake.serve())
            env |= {"GOOGLE_GEMINI_BASE_URL": server.base_url, "GEMINI_API_KEY": "bench-key"}
            command.append("sdk")
        running = stack.enter_context(_workers(command, workers, env, folder))
        with _Measured(db, running) as m:
            with _dbos_batch.client(db) as client:
                _dbos_batch.register_queue(
                    client,
                    queue,
                    tasks=tasks,
                    concurrency=workers * per_worker,
                    worker_concurrency=per_worker,
                )
                items = [(f"floor:t{i}", {"id": f"t{i}"}) for i in range(tasks)]
                engine = _dbos_batch.engine_for(db)
                for start in range(0, tasks, _dbos_submit.ENQUEUE_CHUNK):
                    chunk = items[start : start + _dbos_submit.ENQUEUE_CHUNK]
                    _dbos_batch.enqueue(client, engine, BARE_WORKFLOW, queue, chunk)
                engine.dispose()
            m.started()
            _wait_done(db, queue, BARE_WORKFLOW, tasks)
    figures = _figures(m.figures, tasks, workers, per_worker, latency)
    if sdk:
        figures["requests"] = len(fake.requests)
    return figures


def submit_floor(db: str, tasks: int) -> float:
    """DBOS's floor of a submit: a new process that imports DBOS and enqueues one workflow.

    The workflow carries ``tasks`` small inputs, as a batch's submission does; the database
    is set up beforehand, as a worker leaves it. Returns the seconds the process took.
    """
    code = (
        "import sys\n"
        "from dbos import DBOSClient\n"
        "client = DBOSClient(system_database_url=sys.argv[1])\n"
        "count = int(sys.argv[2])\n"
        "tasks = [(f'floor:t{i}', {'id': f't{i}', 'prompt': f'task {i}'}) for i in range(count)]\n"
        "options = {'workflow_name': 'bench.submission', 'queue_name': 'bench-submit'}\n"
        "client.enqueue(options, tasks)\n"
        "client.destroy()\n"
    )
    migrate = "import dbos, sys; dbos.DBOS.migrate(sys.argv[1])"
    subprocess.run([sys.executable, "-c", migrate, db], env=_env(), check=True)
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, db, str(tasks)], env=_env(), check=True)
    return time.perf_counter() - began


def _figures(
    measured: dict[str, Any], tasks: int, workers: int, per_worker: int, latency: float
) -> dict[str, Any]:
    ideal = tasks * latency / (workers * per_worker)
    figures = {
        "tasks": tasks,
        "workers": workers,
        "worker_concurrency": per_worker,
        "latency_s": latency,
        "ideal_s": ideal,
        **measured,
        "fraction_of_ideal": ideal / measured["elapsed_s"],
        "worker_cpu_ms_per_task": measured["worker_cpu_s"] / tasks * 1000,
    }
    if "database_cpu_s" in measured:
        figures["database_cpu_ms_per_task"] = measured["database_cpu_s"] / tasks * 1000
    return figures


def _floor_worker(db: str, latency: float, sdk: bool) -> None:
    """A bare DBOS worker: the floor's workflow, launched like ``toolnexus-agent worker``.

    Its step waits ``latency`` seconds, or (``sdk``) calls the model with the raw SDK as a
    hand-written worker would: one client, automatic function calling off.
    """
    import signal

    from dbos import DBOS

    from agent.cli import _dbos_batch

    async def wait(prompt: str) -> str:
        await asyncio.sleep(latency)
        return "Done."

    call = wait
    if sdk:
        from google import genai
        from google.genai import types

        client = genai.Client()  # the key and the fake's URL come from the environment
        config = types.GenerateContentConfig(
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True)
        )

        async def call(prompt: str) -> str:
            response = await client.aio.models.generate_content(
                model="gemini-2.5-flash", contents=prompt, config=config
            )
            return response.text or ""

    @DBOS.workflow(name=BARE_WORKFLOW)
    async def bare_task(task: dict[str, Any]) -> dict[str, Any]:
        text = await DBOS.run_step_async({"name": "bench.model_call"}, call, f"task {task['id']}")
        return {"id": task["id"], "status": "completed", "text": text}

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        DBOS(config=_dbos_batch.dbos_config(db, f"bench-floor-{os.getpid()}"))
        DBOS.launch()
        print("worker ready", file=sys.stderr, flush=True)
        await stop.wait()
        DBOS.destroy()

    asyncio.run(serve())


@contextlib.contextmanager
def _workers(
    command: list[str], count: int, env: dict[str, str], folder: Path
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Start ``count`` workers, wait until each is ready, stop them afterwards."""
    logs = [folder / f"worker-{i}.log" for i in range(count)]
    processes: list[subprocess.Popen[bytes]] = []

    def start(log: Path) -> None:
        with log.open("w") as err:  # the child keeps its own copy of the descriptor
            processes.append(
                subprocess.Popen(
                    command, env=env, cwd=folder, stdout=subprocess.DEVNULL, stderr=err
                )
            )

    def wait_ready(started: list[Path]) -> None:
        deadline = time.monotonic() + 120
        while not all("ready" in log.read_text() for log in started):
            if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
                raise RuntimeError(
                    "a worker did not start:\n"
                    + "\n".join(log.read_text()[-1500:] for log in started)
                )
            time.sleep(0.05)

    try:
        # The first worker alone makes a new database's tables; the others launch on them
        # (workers launching together on a new SQLite file could fail at start).
        start(logs[0])
        wait_ready(logs[:1])
        for log in logs[1:]:
            start(log)
        wait_ready(logs)
        yield processes
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(60)


# --------------------------------------------------------------------------- all


def bench_durable(runs: int, tasks: int, folder: Path) -> dict[str, Any]:
    """The figures, on SQLite and (when a server can be started) on Postgres."""
    from tests.dbos.postgres import Unavailable, temporary_server

    prime_bytecode()
    out: dict[str, Any] = {"overhead": {}}
    sqlite = f"sqlite:///{folder / 'bench-overhead.sqlite'}"
    out["overhead"]["sqlite"] = overhead(sqlite, runs)
    try:
        with temporary_server() as server:
            out["overhead"]["postgres"] = overhead(f"{server}/bench_overhead", runs)
            out |= _batches(lambda name: f"{server}/bench_{name}", tasks)
            database = "postgres"
    except Unavailable as exc:
        out["postgres_skipped"] = str(exc)
        out |= _batches(lambda name: f"sqlite:///{folder / f'bench-{name}.sqlite'}", tasks)
        database = "sqlite"
    for name in ("floor", "floor_sdk", "batch"):
        out[name]["database"] = database
    out["batch"]["of_floor"] = out["floor"]["elapsed_s"] / out["batch"]["elapsed_s"]
    out["batch"]["of_floor_sdk"] = out["floor_sdk"]["elapsed_s"] / out["batch"]["elapsed_s"]
    return out


def _batches(url: Callable[[str], str], tasks: int) -> dict[str, Any]:
    """The floor, the batch and the floor with the SDK's call, one after the other."""
    return {
        "floor": floor(url("floor"), tasks, 4, 8, 0.2),
        "batch": throughput(url("batch"), tasks, 4, 8, 0.2),
        "floor_sdk": floor(url("floor_sdk"), tasks, 4, 8, 0.2, sdk=True),
        "submit_floor_s": submit_floor(url("submit_floor"), tasks),
    }


FLOOR_TARGET = 0.85
"""The distributed batch's throughput as a share of DBOS's floor, at least."""

SUBMIT_TARGET_S = 1.0
"""The longest a submit of the batch may take."""

STEP_TARGET_MS = 10.0
"""The most a durable step may add to a run."""


def table(results: dict[str, Any]) -> list[str]:
    """The benchmark table's lines for the durable figures."""
    lines = [""]
    for database, r in results["overhead"].items():
        met = "met" if r["per_step_ms"] <= STEP_TARGET_MS else "MISSED"
        lines.append(
            f"durable pair ({database:8}) {r['durable_ms']:7.2f} ms vs {r['in_process_ms']:6.2f}"
            f" ms in process p50: {r['ratio']:.2f} x, +{r['per_step_ms']:.2f} ms per step; "
            f"without events {r['no_events_ratio']:.2f} x, +{r['no_events_per_step_ms']:.2f} ms"
            f"; target <= {STEP_TARGET_MS:.0f} ms: {met}; CPU per step +"
            f"{r['cpu_per_step_ms']:.2f} ms (+{r['no_events_cpu_per_step_ms']:.2f} without events)"
        )
        alone, writes = r["dbos_only_per_step_ms"], r["dbos_only_writes_per_step_ms"]
        lines.append(
            f"  DBOS alone ({database}): a workflow of {STEPS_PER_PAIR} empty steps {alone:.2f}"
            f" ms per step (CPU {r['dbos_only_cpu_per_step_ms']:.2f} ms), with the run's two "
            f"stream writes {writes:.2f} ms; the durable run beyond DBOS: "
            f"+{r['per_step_ms'] - writes:.2f} ms per step, "
            f"+{r['no_events_per_step_ms'] - alone:.2f} without events"
        )
    f, b, k = results["floor"], results["batch"], results["floor_sdk"]
    for name, r in (("bare DBOS floor", f), ("distributed batch", b), ("DBOS + raw SDK", k)):
        database_cpu = r.get("database_cpu_ms_per_task")
        db_part = f", database {database_cpu:.1f} ms" if database_cpu is not None else ""
        lines.append(
            f"{name:17} on {r['database']}: {r['tasks']} tasks, {r['workers']} workers x "
            f"{r['worker_concurrency']}, {r['latency_s'] * 1000:.0f} ms per call: "
            f"{r['elapsed_s']:.1f} s (ideal {r['ideal_s']:.2f} s) = "
            f"{r['fraction_of_ideal']:.0%} of ideal; CPU per task: workers "
            f"{r['worker_cpu_ms_per_task']:.1f} ms{db_part} (load {r['load']:.1f})"
        )
    met = "met" if b["of_floor"] >= FLOOR_TARGET else "MISSED"
    lines.append(
        f"distributed batch = {b['of_floor']:.0%} of the floor's throughput; target >= "
        f"{FLOOR_TARGET:.0%}: {met} ({b['of_floor_sdk']:.0%} of the floor whose step makes "
        "the model call with the raw SDK)"
    )
    met = "met" if b["submit_s"] <= SUBMIT_TARGET_S else "MISSED"
    lines.append(
        f"submit of {b['tasks']} tasks (a new process): {b['submit_s']:.2f} s (DBOS's floor, "
        f"a new process enqueueing one workflow that carries them: "
        f"{results['submit_floor_s']:.2f} s); target <= {SUBMIT_TARGET_S:.0f} s: {met}"
    )
    if "postgres_skipped" in results:
        lines.append(f"postgres skipped: {results['postgres_skipped']}")
    return lines


if __name__ == "__main__":
    if sys.argv[1] == "overhead":
        figures = asyncio.run(_overhead(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
        print(json.dumps(figures))
    elif sys.argv[1] == "floor-worker":
        _floor_worker(sys.argv[2], float(sys.argv[3]), sdk=sys.argv[4:] == ["sdk"])
