"""Smoke test of the durable overhead probe of ``scripts/bench.py --durable`` (no figures)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dbos.conftest import REPO, env

pytest.importorskip("dbos", reason="needs the dbos extra: pip install '.[dbos]'")


def test_the_overhead_probe_runs_a_pair_durably_and_in_process(tmp_path: Path) -> None:
    probe = REPO / "scripts" / "_bench_durable.py"
    db = f"sqlite:///{tmp_path / 'bench.sqlite'}"
    done = subprocess.run(
        [sys.executable, str(probe), "overhead", db, "2", "1"],
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["runs"] == 2
    assert figures["durable_ms"] > 0 and figures["in_process_ms"] > 0
    assert set(figures) >= {"ratio", "per_step_ms", "no_events_ratio", "no_events_per_step_ms"}
    # DBOS alone: three empty steps, and the same with the run's two stream writes.
    assert figures["dbos_only_per_step_ms"] > 0 and figures["dbos_only_writes_per_step_ms"] > 0


@pytest.mark.timeout(300)
def test_the_floor_and_the_batch_run_and_the_table_reads_them(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import _bench_durable as bench
    finally:
        sys.path.remove(str(REPO / "scripts"))
    results = bench._batches(lambda name: f"sqlite:///{tmp_path / f'{name}.sqlite'}", 6)
    floor, batch, floor_sdk = results["floor"], results["batch"], results["floor_sdk"]
    assert floor["tasks"] == batch["tasks"] == floor_sdk["tasks"] == 6
    assert batch["requests"] == floor_sdk["requests"] == 6
    assert floor["worker_cpu_ms_per_task"] > 0 and batch["worker_cpu_ms_per_task"] > 0
    assert results["submit_floor_s"] > 0
    batch["of_floor"] = floor["elapsed_s"] / batch["elapsed_s"]
    batch["of_floor_sdk"] = floor_sdk["elapsed_s"] / batch["elapsed_s"]
    floor["database"] = batch["database"] = floor_sdk["database"] = "sqlite"
    overhead = {"durable_ms": 1.0, "in_process_ms": 1.0, "ratio": 1.0, "per_step_ms": 0.0}
    overhead |= {"no_events_ratio": 1.0, "no_events_per_step_ms": 0.0}
    overhead |= {"cpu_per_step_ms": 0.0, "no_events_cpu_per_step_ms": 0.0}
    overhead |= {"dbos_only_per_step_ms": 0.5, "dbos_only_cpu_per_step_ms": 0.5}
    overhead |= {"dbos_only_writes_per_step_ms": 0.75}
    lines = bench.table({"overhead": {"sqlite": overhead}, **results})
    assert any(line.startswith("bare DBOS floor") for line in lines)
    assert any("DBOS alone (sqlite)" in line for line in lines)
    assert any(line.startswith("DBOS + raw SDK") for line in lines)
    assert any("of the floor's throughput" in line for line in lines)
    assert any("DBOS's floor, a new process" in line for line in lines)
