"""Smoke test of ``scripts/bench.py``: one tiny real run of the ``pair`` scenario.

It starts the strict fake Gemini on 127.0.0.1 and two worker processes (raw SDK floor and
``agent.Agent``), so it proves both loops complete a real conversation the fake accepts and
that the JSON keeps its shape. The figures themselves are not asserted: this is no benchmark.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


# A limit for a hung bench, not a speed check: the tiny run (with its tracing probe's five
# workers) took over 60 s on two cores shared with other work.
@pytest.mark.timeout(240)
def test_bench_pair_tiny_run_writes_json_with_ratio(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "bench.py"),
            "--runs",
            "2",
            "--warmup",
            "1",
            "--rounds",
            "1",
            "--scenarios",
            "pair",
            "--no-micro",
            "--no-compaction",
            "--no-growth",
            "--no-web",
            "--no-mcp",
            "--no-caching",
            "--no-prime",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=230,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["fake_failures"] == []
    pair = data["scenarios"]["pair"]
    for impl in ("floor", "ours"):
        side = pair[impl]
        assert side["requests_per_run"] == 2
        assert 0 < side["run_ms"]["p50"] <= side["run_ms"]["p95"]
        assert side["request_ms"]["p50"] == pytest.approx(side["run_ms"]["p50"] / 2)
        assert side["maxrss_mib"] > 10
        assert side["init_ms"] > 0
    assert pair["ratio"] == pytest.approx(
        pair["ours"]["run_ms"]["p50"] / pair["floor"]["run_ms"]["p50"]
    )
    assert pair["target"] == 1.05 and isinstance(pair["met"], bool)
    for impl in ("floor", "ours"):
        side = pair[impl]
        assert side["cold_ms"] == pytest.approx(
            side["import_ms"] + side["init_ms"] + side["first_run_ms"]
        )
    assert pair["cold_extra_ms"] == pytest.approx(
        pair["ours"]["cold_ms"] - pair["floor"]["cold_ms"]
    )
    assert pair["server_request_ms"]["p50"] > 0
    assert "pair" in done.stdout and "x floor" in done.stdout
    assert "import + init + first run" in done.stdout


@pytest.mark.timeout(120)
def test_the_context_cache_probe_compares_one_run_without_and_with() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import bench
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    data = bench.bench_caching()
    plain, cached = data["without"], data["with"]
    assert len(plain["bytes"]) == len(cached["bytes"]) == data["turns"] == 30
    assert cached["cache_calls"] == ["GET", "POST"]  # looked up, then made: once
    assert all(tokens == cached["cache_tokens"][0] for tokens in cached["cached_tokens"])
    assert plain["cached_tokens"] == [0] * 30
    # The prefix (200 declarations and the system prompt) leaves every request.
    assert all(w < p / 10 for w, p in zip(cached["bytes"], plain["bytes"], strict=True))
    assert cached["usd"] < plain["usd"] and cached["storage_usd"] > 0
    assert "context cache: 200 tools, 30 turns" in bench.table({"scenarios": {}, "caching": data})


@pytest.mark.timeout(300)
def test_bench_batch_api_probe_runs_both_runners() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "_bench_batchapi.py"), "20"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout.strip().splitlines()[-1])
    assert data["tasks"] == 20 and data["jobs"] == 1 and data["fake_failures"] == []
    for side in ("local", "gemini_batch"):
        assert data[side]["wall_s"] > 0 and data[side]["cpu_s"] > 0
    assert data["cpu_ratio"] == pytest.approx(
        data["gemini_batch"]["cpu_s"] / data["local"]["cpu_s"]
    )
