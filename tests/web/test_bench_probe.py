"""The web page's probe of ``scripts/bench.py`` runs and reports its ratios (none asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(120)
def test_the_web_probe_measures_a_run_through_the_page_and_through_agent_stream() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "_bench_web.py"), "1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout.strip().splitlines()[-1])
    assert data["events"] == 110
    assert data["ratio"] == pytest.approx(data["wall_ms"]["page"] / data["wall_ms"]["stream"])
    assert data["cpu_ratio"] > 0 and isinstance(data["per_event_us"], float)
