"""The runnable examples of examples/ work offline (no key), end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

EXPECTED = {
    "subagents.py": [
        "lead -> researcher",
        "  researcher (depth 1) -> grep",
        "Critique: It never says what the skill is for.",
    ],
    "approval.py": [
        'write {"path": "hello.txt", "content": "HELLO."} -> Wrote 6 bytes',
        "not approve this call to 'write': secrets",
        "files: ['hello.txt']",
    ],
    "run_data.py": ['Ada: Your orders: ["kettle"]', 'Bob: Your orders: ["lamp","rug"]'],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_offline(name: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("GEMINI_API_KEY", "GOOGLE_API_KEY")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for line in EXPECTED[name]:
        assert line in done.stdout
