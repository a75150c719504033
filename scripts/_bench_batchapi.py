"""The Gemini Batch engine part of the benchmark (``python scripts/bench.py --batch-api``).

1,000 one-turn tasks through ``toolnexus-agent batch``, once on the local runner and once
with ``--engine gemini-batch``, against one fake Gemini whose batch jobs end at the first
look (so the figure is the engine's own cost, not a job's wait). Each runner is a fresh
process; its wall time and CPU time (user + system, from ``getrusage`` of the child) are
divided by the tasks and reported beside each other, with their ratio. The fake runs in
this process, so its time is in neither CPU figure (it is in both wall figures).

``python scripts/_bench_batchapi.py TASKS`` runs it alone and prints one JSON line.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

CONCURRENCY = 16
"""``--concurrency`` of both runners (tasks at once locally; tool calls at once in jobs)."""


def _env(base_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["GOOGLE_GEMINI_BASE_URL"] = base_url
    env["GEMINI_API_KEY"] = "bench-key"
    return env


def _run(engine: str, folder: Path, env: dict[str, str], tasks: int) -> dict[str, Any]:
    """Run the batch on ``engine`` in a fresh process; return its times per task."""
    out = folder / f"{engine}.jsonl"
    command = [sys.executable, "-m", "agent", "batch", "tasks.yaml", "--out", str(out)]
    command += ["--no-builtins", "--concurrency", str(CONCURRENCY), "--engine", engine]
    if engine == "gemini-batch":
        command += ["--poll-interval", "0"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run(command, cwd=folder, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = out.read_text(encoding="utf-8").splitlines()
    completed = sum(1 for line in lines if json.loads(line)["status"] == "completed")
    if completed != tasks:
        raise RuntimeError(f"{engine}: {completed} of {tasks} tasks completed")
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "wall_ms_per_task": wall * 1000 / tasks,
        "cpu_ms_per_task": cpu * 1000 / tasks,
    }


def bench_batch_api(tasks: int) -> dict[str, Any]:
    """Both runners over ``tasks`` one-turn tasks against one fake with instant jobs."""
    from agent.testing import FakeGemini

    fake = FakeGemini(lambda body: "Done.")
    fake.batches.progression = ()
    with tempfile.TemporaryDirectory(prefix="toolnexus-bench-batchapi-") as temp:
        folder = Path(temp)
        (folder / "tasks.yaml").write_text(
            "tasks:\n" + "".join(f"  - id: t{i}\n    prompt: task {i}\n" for i in range(tasks)),
            encoding="utf-8",
        )
        with fake.serve() as server:
            env = _env(server.base_url)
            local = _run("local", folder, env, tasks)
            jobs = _run("gemini-batch", folder, env, tasks)
    return {
        "tasks": tasks,
        "concurrency": CONCURRENCY,
        "local": local,
        "gemini_batch": jobs,
        "jobs": fake.batches.created,
        "wall_ratio": jobs["wall_s"] / local["wall_s"],
        "cpu_ratio": jobs["cpu_s"] / local["cpu_s"],
        "fake_failures": list(fake.failures),
    }


def table(result: dict[str, Any]) -> list[str]:
    """Render the figures as lines of the benchmark's table."""
    local, jobs = result["local"], result["gemini_batch"]
    return [
        "",
        f"gemini-batch vs local runner, {result['tasks']} one-turn tasks, instant jobs "
        f"({result['jobs']} job):",
        f"  local         wall {local['wall_ms_per_task']:6.2f} ms/task, "
        f"CPU {local['cpu_ms_per_task']:6.2f} ms/task ({local['wall_s']:.1f} s in all)",
        f"  gemini-batch  wall {jobs['wall_ms_per_task']:6.2f} ms/task, "
        f"CPU {jobs['cpu_ms_per_task']:6.2f} ms/task ({jobs['wall_s']:.1f} s in all)",
        f"  ratio (gemini-batch / local): wall {result['wall_ratio']:.2f}x, "
        f"CPU {result['cpu_ratio']:.2f}x",
    ]


if __name__ == "__main__":
    print(json.dumps(bench_batch_api(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)))
