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
