"""The typed-output, image and grounding examples run offline (no key) end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(name: str) -> str:
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


def test_typed_output_example_runs_offline() -> None:
    out = _run("typed_output.py")
    assert "[completed] mode=native" in out
    assert "Forecast(city='Paris', temp_c=21, advice='Sunglasses.')" in out


def test_search_grounding_example_runs_offline() -> None:
    out = _run("search_grounding.py")
    assert "jazz festival" in out
    assert "searched: paris events today" in out
    assert "[1] example.org <https://example.org/paris-jazz>" in out


def test_image_question_example_runs_offline() -> None:
    out = _run("image_question.py")
    assert "the photo matches the swatch" in out
    assert "[completed] 2 turns" in out
