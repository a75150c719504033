"""The examples run offline (no key) end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_example(name: str) -> str:
    """Run ``examples/NAME`` without an API key (so against the fake); return its stdout."""
    env = {k: v for k, v in os.environ.items() if k not in ("GEMINI_API_KEY", "GOOGLE_API_KEY")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_quickstart_runs_offline():
    out = run_example("agent_quickstart.py")
    assert "-> skill({'name': 'hello-world'})" in out
    assert "<- forecast: Sunny in Paris, 21 C" in out
    assert "[completed] 3 turns" in out
