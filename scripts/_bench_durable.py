"""The DBOS part of the benchmark (``python scripts/bench.py --durable``).

Two figures:

- **Durable overhead per step**: the ``pair`` conversation (a tool call, then the answer:
  two model calls and one tool call, three steps) run as a DBOS workflow, against the same
  run in process, alternated in one process, on SQLite and on Postgres. Reported as the
  ratio of the p50 run times and as milliseconds added per step.
- **Batch throughput**: 1,000 one-turn tasks through ``batch --engine dbos`` and four
  ``toolnexus-agent worker`` processes, against a fake Gemini that takes 200 ms per
  request; reported as the fraction of the ideal the concurrency allows
  (tasks x latency / concurrency).

``python scripts/_bench_durable.py overhead DB_URL RUNS`` is the child process of the
first figure (DBOS is one per process); it prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

STEPS_PER_PAIR = 3  # two model calls and one tool call


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


# --------------------------------------------------------------------------- overhead


def _pair_model(body: dict[str, Any]) -> Any:
    from agent.testing import function_call, reply

    part = body["contents"][-1]["parts"][0]
    if "text" in part:
        return reply(function_call("lookup", {"key": "answer"}))
    return "The answer is 42."


async def _overhead(db: str, runs: int, warmup: int) -> dict[str, Any]:
    from dbos import DBOS

    import toolnexus as tn
    from agent import Agent, ClientSettings
    from agent.dbos import DurableAgent
    from agent.testing import FakeGemini

    @tn.define_tool
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
        }
        DBOS(config={"name": "bench", "system_database_url": db, "log_level": "WARNING"})
        DBOS.launch()
        try:
            times: dict[str, list[float]] = {side: [] for side in sides}
            for index in range(warmup + runs):
                order = list(sides)[index % len(sides) :] + list(sides)[: index % len(sides)]
                for side in order:
                    durable = sides[side]
                    began = time.perf_counter_ns()
                    if durable is None:
                        result = await agent.run("What is the answer?")
                    else:
                        run_id = f"pair-{uuid.uuid4().hex}"
                        result = await durable.run("What is the answer?", run_id=run_id)
                    elapsed = (time.perf_counter_ns() - began) / 1e6
                    assert result.status == "completed", result
                    if index >= warmup:
                        times[side].append(elapsed)
        finally:
            DBOS.destroy()
            await agent.aclose()
    p50 = {side: statistics.median(values) for side, values in times.items()}
    plain = p50["in_process"]
    return {
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


def _one_turn_model(latency: float) -> Any:
    from agent.testing import delay

    def model(body: dict[str, Any]) -> Any:
        return delay(latency, "Done.")

    return model


def throughput(
    db: str, tasks: int, workers: int, per_worker: int, latency: float
) -> dict[str, Any]:
    """Run ``tasks`` one-turn tasks through ``workers`` worker processes; time the batch."""
    from dbos import DBOSClient

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
            with _workers(cli, db, workers, env, folder):
                concurrency = workers * per_worker
                submitted = time.perf_counter()
                limits = [
                    "--concurrency",
                    str(concurrency),
                    "--worker-concurrency",
                    str(per_worker),
                ]
                subprocess.run(
                    [*cli, "batch", str(tasks_file), "--engine", "dbos", "--db", db, *limits],
                    check=True,
                    env=env,
                    cwd=folder,
                    capture_output=True,
                )
                enqueued = time.perf_counter()
                client = DBOSClient(system_database_url=db)
                try:
                    while True:
                        done = client.list_workflows(
                            name="toolnexus.batch_task",
                            status=["SUCCESS", "ERROR"],
                            load_input=False,
                            load_output=False,
                        )
                        if len(done) >= tasks:
                            break
                        time.sleep(0.1)
                finally:
                    client.destroy()
                finished = time.perf_counter()
    ideal = tasks * latency / concurrency
    elapsed = finished - submitted
    return {
        "tasks": tasks,
        "workers": workers,
        "worker_concurrency": per_worker,
        "latency_s": latency,
        "ideal_s": ideal,
        "enqueue_s": enqueued - submitted,
        "elapsed_s": elapsed,
        "fraction_of_ideal": ideal / elapsed,
        "requests": len(fake.requests),
    }


@contextmanager
def _workers(
    cli: list[str], db: str, count: int, env: dict[str, str], folder: Path
) -> Iterator[None]:
    """Start ``count`` workers, wait until each is ready, stop them afterwards."""
    logs = [folder / f"worker-{i}.log" for i in range(count)]
    processes = [
        subprocess.Popen(
            [*cli, "worker", "--db", db, "--no-builtins"],
            env=env,
            cwd=folder,
            stdout=subprocess.DEVNULL,
            stderr=log.open("w"),
        )
        for log in logs
    ]
    try:
        deadline = time.monotonic() + 120
        while not all("ready" in log.read_text() for log in logs):
            if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
                raise RuntimeError("a worker did not start: " + logs[0].read_text())
            time.sleep(0.05)
        yield
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(60)


# --------------------------------------------------------------------------- all


def bench_durable(runs: int, tasks: int, folder: Path) -> dict[str, Any]:
    """Both figures, on SQLite and (when a server can be started) on Postgres."""
    from tests.dbos.postgres import Unavailable, temporary_server

    out: dict[str, Any] = {"overhead": {}}
    sqlite = f"sqlite:///{folder / 'bench-overhead.sqlite'}"
    out["overhead"]["sqlite"] = overhead(sqlite, runs)
    try:
        with temporary_server() as server:
            out["overhead"]["postgres"] = overhead(f"{server}/bench_overhead", runs)
            out["batch"] = throughput(f"{server}/bench_batch", tasks, 4, 8, 0.2)
            out["batch"]["database"] = "postgres"
    except Unavailable as exc:
        out["postgres_skipped"] = str(exc)
        out["batch"] = throughput(f"sqlite:///{folder / 'bench-batch.sqlite'}", tasks, 4, 8, 0.2)
        out["batch"]["database"] = "sqlite"
    return out


def table(results: dict[str, Any]) -> list[str]:
    """The benchmark table's lines for the durable figures."""
    lines = [""]
    for database, r in results["overhead"].items():
        lines.append(
            f"durable pair ({database:8}) {r['durable_ms']:7.2f} ms vs {r['in_process_ms']:6.2f}"
            f" ms in process p50: {r['ratio']:.2f} x, +{r['per_step_ms']:.2f} ms per step; "
            f"without events {r['no_events_ratio']:.2f} x, +{r['no_events_per_step_ms']:.2f} ms"
        )
    b = results["batch"]
    lines.append(
        f"batch on {b['database']}: {b['tasks']} tasks, {b['workers']} workers x "
        f"{b['worker_concurrency']}, {b['latency_s'] * 1000:.0f} ms per request: "
        f"{b['elapsed_s']:.1f} s (ideal {b['ideal_s']:.2f} s, enqueue {b['enqueue_s']:.1f} s)"
        f" = {b['fraction_of_ideal']:.0%} of ideal"
    )
    if "postgres_skipped" in results:
        lines.append(f"postgres skipped: {results['postgres_skipped']}")
    return lines


if __name__ == "__main__":
    if sys.argv[1] == "overhead":
        figures = asyncio.run(_overhead(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
        print(json.dumps(figures))
