"""The runnable examples of examples/ work offline (no key), end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent.test_loop_example import run_example

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
    "web_page.py": [
        "waits on: Allow deploy",
        "approve: 202",
        "again: 409",
        "result: deployed to staging | Deployed to staging",
        "replay identical: True",
        "trace: ['generate_content gemini-2.5-flash', 'execute_tool deploy']",
    ],
    "token_rate.py": ["6 runs, 18 requests", "researcher ask", "at most 6,000 tokens per 2 s"],
    "routing.py": [
        "gemini-3.1-pro-preview failed (UNAVAILABLE); turn 2 -> gemini-3-flash-preview",
        "billing: filed: notes on billing: ok | turns on gemini-3.1-pro-preview, "
        "gemini-3-flash-preview",
        "hiring: filed: notes on hiring: ok | turns on gemini-3-flash-preview, "
        "gemini-3-flash-preview",
        "flash got pro's call with the signature 'skip_thought_signature_validator'",
        "requests: 8, refused for a signature: 0",
    ],
    "serve_agent.py": [
        "asked about draft.txt: deny",
        "asked about final.txt: approve",
        "agent: You asked me to save a draft and a final version.",
        "files: ['final.txt']",
    ],
    "context_cache.py": [
        "  cache created: cachedContents/fakecache0001 (9,070 tokens)",
        "  Is product 5 in stock? -> Found it: product 5: fine (from desk 5)",
        "  6 requests, $0.003826, 4,803 characters of request bodies",
        "  6 requests, $0.017008, 222,381 characters of request bodies",
    ],
    "gemini_batch.py": [
        "batches/fakebatch000002: 3 requests sent (inline)",
        "oslo: It is rain, 12 C. ($0.00110, 2 turns)",
        "the same task, direct: $0.00220",
        "run again: It is rain, 12 C. with 2 jobs in all",
    ],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_offline(name: str) -> None:
    out = run_example(name, timeout=120)
    for line in EXPECTED[name]:
        assert line in out


def test_the_example_eval_passes_offline(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("GEMINI_API_KEY", "GOOGLE_API_KEY")}
    command = [sys.executable, "-m", "agent", "eval", "evals.yaml", "--offline", "--no-builtins"]
    command += ["--tools", "tools:TOOLS", "--samples", "2", "--out", str(tmp_path / "r.jsonl")]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"},
        cwd=ROOT / "examples" / "evals",
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "6/6 samples passed (100%; needed 100%): passed" in done.stderr
