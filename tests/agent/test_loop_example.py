"""The quick-start example runs offline (no key) end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_runs_offline():
    env = {k: v for k, v in os.environ.items() if k not in ("GEMINI_API_KEY", "GOOGLE_API_KEY")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "agent_quickstart.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "-> skill({'name': 'hello-world'})" in done.stdout
    assert "<- forecast: Sunny in Paris, 21 C" in done.stdout
    assert "[completed] 3 turns" in done.stdout
