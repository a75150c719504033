#!/usr/bin/env python
"""Measure what ``agent.Agent`` costs over a hand loop on the raw google-genai SDK.

One command, offline, several minutes on two cores::

    python scripts/bench.py                       # all scenarios, default run counts
    python scripts/bench.py --runs 10 --scenarios pair,long --json out.json

A strict fake Gemini (``agent.testing.FakeGemini``, Gemini 3 style thought signatures)
serves real HTTP on 127.0.0.1 from this process. Each round of a scenario starts two fresh
worker processes, the floor (raw SDK, automatic function calling off, calls run by a dict
lookup) and ours (``agent.Agent``), and alternates their runs (floor, ours, floor, ours...),
so both see the same machine state; a scenario's ratio is the median over its rounds
(``--rounds``, 3 by default). Every figure of ours is reported as a ratio to the floor of
the same run, next to its target. Exit status is 0 even when a target is missed: this
is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _bench_batchapi  # noqa: E402
import _bench_durable  # noqa: E402
import _bench_scenarios as sc  # noqa: E402

# Ratio targets (ours / floor, same run) and absolute ones.
TARGETS = {"pair": 1.05, "fanout": 1.02, "wide": 1.15, "long": 1.10}
IMPORT_TOOLNEXUS_MS = 60.0
# `import agent; agent.Agent` in a process that has imported google.genai already: what the
# package adds to the SDK. Optional subsystems (compaction, typed output, OpenTelemetry, the
# skill tool's helpers) load when used; measured 61 -> 44 ms (sum of the extra modules'
# self times, min of 11 fresh processes, two busy cores) when they stopped loading here.
IMPORT_AGENT_EXTRA_MS = 35.0
# A new process's first `pair` run, import and init included, over the floor's.
FIRST_RUN_EXTRA_MS = 60.0
# The first build parses SKILL.md frontmatter with PyYAML, whose import is most of its
# time: measured 22-27 ms first (0.3 ms repeated) on two shared cores, against 8-18 ms
# when a hand-written parser skipped PyYAML for simple frontmatter. That fast path was
# removed for clarity; the target moved from 20 ms to 40 ms instead. The same change
# took 1,000-skill discovery from 50-70 ms to 80-180 ms, far inside DISCOVER_S.
BUILD_MS = 40.0
DISCOVER_S = 1.0
RSS_EXTRA_MIB = 10.0
# Runs per scenario when --runs/--warmup are not given: a full run stays well under 5 minutes
# on two busy cores (a `long` run is 61 round trips, a `fanout` run sleeps 100 ms).
DEFAULT_RUNS = {"pair": 40, "fanout": 10, "wide": 20, "long": 5}
DEFAULT_WARMUP = {"pair": 5, "fanout": 2, "wide": 3, "long": 1}
# Each scenario runs this many rounds, each on two new worker processes; the figures are
# the round with the median ratio, and the ratio is the median of the rounds' ratios.
DEFAULT_ROUNDS = 3
# 100 Markdown agent files loaded as sub-agent tools, in a process that imported agent.
AGENT_FILES_S = 1.0


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    # Measure imports as users see them, with compiled bytecode: an environment with
    # PYTHONDONTWRITEBYTECODE would recompile every module in every fresh process. The cache
    # goes to a private folder (primed once by `prime_bytecode`), not into the checkout.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = _PYCACHE
    return env


_PYCACHE = str(Path(tempfile.gettempdir()) / "toolnexus-bench-pycache")


def prime_bytecode() -> None:
    """Import everything the workers import once, so every measured process finds bytecode."""
    code = "import google.genai, httpx, toolnexus, agent, agent.testing; toolnexus.build()"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), check=True)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


class _Timing:
    """The fake server's own time per request (handler entry to last byte written)."""

    def __init__(self) -> None:
        self.ns: list[int] = []
        self.lock = threading.Lock()


def start_server(timing: _Timing) -> Any:
    """Start the strict fake Gemini over HTTP; record its own time per request."""
    from agent.testing import FakeGemini

    fake = FakeGemini(sc.decide, strict=True)
    server = fake.serve()
    handler = server._server.RequestHandlerClass

    class TimedHandler(handler):  # type: ignore[misc,valid-type]
        # Headers and body go out in two writes; TCP_NODELAY keeps Nagle's algorithm from
        # holding the body back for the client's delayed ACK on a kept-alive connection.
        disable_nagle_algorithm = True

        def _serve(self) -> None:
            start = time.perf_counter_ns()
            super()._serve()
            took = time.perf_counter_ns() - start
            with timing.lock:
                timing.ns.append(took)

    server._server.RequestHandlerClass = TimedHandler
    return server.start()


def declarations(scenario: str, base_url: str, folder: Path) -> Path:
    """Write the scenario's declarations as ``agent.Agent`` sends them (the floor reuses them)."""
    import warnings

    import toolnexus as tn
    from agent import Agent, ClientSettings

    tools = [tn.define_tool(fn, name=name) for name, fn in sc.functions(scenario).items()]
    toolkit = tn.build(tools=tools) if scenario == "wide" else tn.toolkit(tools)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = Agent(
            model=sc.MODEL,
            toolkit=toolkit,
            client=ClientSettings(api_key="bench", base_url=base_url),
        )
    path = folder / f"decls-{scenario}.json"
    path.write_text(json.dumps(list(agent.declarations)), encoding="utf-8")
    return path


class Worker:
    """A measured child process answering ``run`` commands with one JSON line each."""

    def __init__(self, impl: str, scenario: str, base_url: str, decls: Path) -> None:
        self.impl = impl
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "_bench_worker.py"), impl, scenario, base_url, str(decls)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=_env(),
        )
        self.start = self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            raise RuntimeError(f"the {self.impl} worker died (exit {code}); see its stderr above")
        value: dict[str, Any] = json.loads(line)
        return value

    def run(self) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        final = self._read()
        self.proc.wait(timeout=30)
        return final


def _summary(runs: list[dict[str, Any]], requests: int) -> dict[str, Any]:
    ms = [r["ns"] / 1e6 for r in runs]
    per_request = [m / requests for m in ms]
    out: dict[str, Any] = {
        "run_ms": {"p50": statistics.median(ms), "p95": _pct(ms, 0.95)},
        "request_ms": {"p50": statistics.median(per_request), "p95": _pct(per_request, 0.95)},
        "requests_per_run": requests,
    }
    stamps = runs[0]["stamps"] if runs else []
    if len(stamps) > 10:
        last10 = [(r["stamps"][-1] - r["stamps"][-11]) / 1e6 for r in runs]
        first10 = [(r["stamps"][10] - r["stamps"][0]) / 1e6 for r in runs]
        out["last10_ms"] = {"p50": statistics.median(last10), "p95": _pct(last10, 0.95)}
        out["first10_ms"] = {"p50": statistics.median(first10), "p95": _pct(first10, 0.95)}
    return out


def bench_scenario(
    scenario: str, base_url: str, runs: int, warmup: int, folder: Path, timing: _Timing
) -> dict[str, Any]:
    """Measure floor and ours on one scenario, runs interleaved ABAB."""
    decls = declarations(scenario, base_url, folder)
    workers = {"floor": Worker("floor", scenario, base_url, decls)}
    workers["ours"] = Worker("ours", scenario, base_url, decls)
    results: dict[str, list[dict[str, Any]]] = {"floor": [], "ours": []}
    first: dict[str, float] = {}
    with timing.lock:
        timing.ns.clear()
    for index in range(warmup + runs):
        order = ("floor", "ours") if index % 2 == 0 else ("ours", "floor")
        for impl in order:
            result = workers[impl].run()
            first.setdefault(impl, result["ns"] / 1e6)
            if index >= warmup:
                results[impl].append(result)
        if index == warmup - 1:
            with timing.lock:
                timing.ns.clear()
    requests = {"pair": 2, "fanout": 2, "wide": 2, "long": sc.LONG_TURNS + 1}[scenario]
    out: dict[str, Any] = {}
    for impl, worker in workers.items():
        final = worker.close()
        out[impl] = {
            **_summary(results[impl], requests),
            "import_ms": worker.start["import_ns"] / 1e6,
            "init_ms": worker.start["init_ns"] / 1e6,
            "first_run_ms": first[impl],
            "maxrss_mib": final["maxrss_kib"] / 1024,
        }
        out[impl]["cold_ms"] = out[impl]["import_ms"] + out[impl]["init_ms"] + first[impl]
    with timing.lock:
        server_ms = [n / 1e6 for n in timing.ns]
    out["server_request_ms"] = {"p50": statistics.median(server_ms), "p95": _pct(server_ms, 0.95)}
    key = "last10_ms" if scenario == "long" else "run_ms"
    out["ratio"] = out["ours"][key]["p50"] / out["floor"][key]["p50"]
    out["ratio_of"] = key + " p50"
    # The same ratio with the fake's own time taken out of both sides (it is in every request).
    fake_ms = out["server_request_ms"]["p50"] * (10 if scenario == "long" else requests)
    ours_net = out["ours"][key]["p50"] - fake_ms
    floor_net = out["floor"][key]["p50"] - fake_ms
    out["net_ratio"] = ours_net / floor_net if floor_net > 0 else float("nan")
    out["target"] = TARGETS[scenario]
    out["met"] = out["ratio"] <= TARGETS[scenario]
    if scenario == "pair":
        extra = out["ours"]["maxrss_mib"] - out["floor"]["maxrss_mib"]
        out["rss_extra_mib"] = extra
        out["rss_met"] = extra <= RSS_EXTRA_MIB
        out["cold_extra_ms"] = out["ours"]["cold_ms"] - out["floor"]["cold_ms"]
        out["cold_met"] = out["cold_extra_ms"] <= FIRST_RUN_EXTRA_MS
    return out


# Tracing on: what our own code adds per pair run beyond what the OpenTelemetry SDK itself
# costs for the same spans (the floor creating them by hand on the same provider).
TRACING_OWN_MS = 0.1


def bench_tracing(base_url: str, runs: int, warmup: int, folder: Path) -> dict[str, Any]:
    """Pair runs with tracing on, off (API only) and absent, and the floor with and without spans.

    All five workers take turns, so each round of five runs sees one machine state; the
    figures are medians over rounds of per-round differences.
    """
    decls = declarations("pair", base_url, folder)
    impls = ("nootel", "ours", "traced", "floor", "floor-traced")
    workers = {impl: Worker(impl, "pair", base_url, decls) for impl in impls}
    times: dict[str, list[float]] = {impl: [] for impl in impls}
    for index in range(warmup + runs):
        order = impls[index % len(impls) :] + impls[: index % len(impls)]
        for impl in order:
            result = workers[impl].run()
            if index >= warmup:
                times[impl].append(result["ns"] / 1e6)
    for worker in workers.values():
        worker.close()
    p50 = {impl: statistics.median(values) for impl, values in times.items()}
    ours_spans = [t - o for t, o in zip(times["traced"], times["ours"], strict=True)]
    sdk_spans = [t - f for t, f in zip(times["floor-traced"], times["floor"], strict=True)]
    own = statistics.median(o - b for o, b in zip(ours_spans, sdk_spans, strict=True))
    return {
        "run_ms_p50": p50,
        "spans_ms": statistics.median(ours_spans),
        "sdk_spans_ms": statistics.median(sdk_spans),
        "own_ms": own,
        "on_ratio": p50["traced"] / p50["ours"],
        "off_ratio": p50["ours"] / p50["nootel"],
        "target_own_ms": TRACING_OWN_MS,
        "met": own <= TRACING_OWN_MS,
    }


# Compaction: a 300-turn session's request size and turn latency, late vs early (after
# the first compaction), stay within this factor.
COMPACTION_FLAT_MAX = 1.25


def bench_compaction() -> dict[str, Any]:
    """Run the 300-turn session probe in a fresh process."""
    out = _probe_script("_bench_compaction.py")
    out["target"] = COMPACTION_FLAT_MAX
    out["met"] = max(out["size_ratio"], out["latency_ratio"]) <= COMPACTION_FLAT_MAX
    return out


# How cost grows with the work in a run (the `_bench_growth.py` probe): a session's save
# and compaction's check at the last 50 of 300 runs against runs 10 to 59 stay within this.
GROWTH_FLAT_MAX = 1.25


def bench_growth(runs: int) -> dict[str, Any]:
    """Run the growth probe (tools, turns, a 300-run SQLite chat) in a fresh process."""
    out = _probe_script("_bench_growth.py", str(runs))
    session = out["session"]
    session["target"] = GROWTH_FLAT_MAX
    session["met"] = max(session["save_ratio"], session["check_ratio"]) <= GROWTH_FLAT_MAX
    return out


def bench_mcp(calls: int) -> dict[str, Any] | None:
    """Run the MCP server probe (ours against the SDK's bare server); ``None`` without mcp."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        return None
    return _probe_script("_bench_mcp.py", str(calls))


def bench_caching() -> dict[str, Any]:
    """Run the context-cache probe (200 tools, 30 turns, without and with) in a fresh process."""
    return _probe_script("_bench_caching.py")


def _mcp_lines(served: dict[str, Any]) -> list[str]:
    """Render the MCP server probe: server CPU and round trip per call, ours vs the bare SDK."""
    lines = ["", "MCP server, per tools/call of a quick tool (ours / the SDK's bare server):"]
    for era, label in (("legacy", "2025-11-25"), ("modern", "2026-07-28")):
        m = served[era]
        lines.append(
            f"  {label}  server CPU {m['cpu_ms']['bare']:.2f} -> {m['cpu_ms']['ours']:.2f} ms "
            f"({m['cpu_ratio']:.2f}x); round trip p50 {m['round_trip_ms']['bare']:.2f} -> "
            f"{m['round_trip_ms']['ours']:.2f} ms ({m['round_trip_ratio']:.2f}x)"
        )
    return lines


def _caching_lines(caching: dict[str, Any]) -> list[str]:
    """Render the context-cache probe: request bytes and dollars per turn, without and with."""
    plain, cached = caching["without"], caching["with"]
    lines = [
        "",
        f"context cache: {caching['tools']} tools, {caching['turns']} turns on "
        f"{caching['model']}, without vs ContextCache(ttl=600) (the fake's 4-chars-a-token "
        "usage, the price table's dollars)",
        f"{'turn':>6} {'bytes without':>14} {'bytes with':>11} {'$ without':>10} {'$ with':>10}",
    ]
    for turn in (1, 2, 3, 5, 10, 15, 20, 25, 30):
        i = turn - 1
        lines.append(
            f"{turn:>6} {plain['bytes'][i]:>14,} {cached['bytes'][i]:>11,} "
            f"{plain['turn_usd'][i]:>10.6f} {cached['turn_usd'][i]:>10.6f}"
        )
    lines += [
        f"{'total':>6} {sum(plain['bytes']):>14,} {sum(cached['bytes']):>11,} "
        f"{plain['usd']:>10.6f} {cached['usd']:>10.6f}  (with: storage "
        f"${cached['storage_usd']:.6f} included, net saving ${cached['saving_usd']:.6f})",
        f"{'':6} with/without: bytes {caching['bytes_ratio']:.3f}, dollars "
        f"{caching['usd_ratio']:.3f}; cache calls {', '.join(cached['cache_calls'])} "
        f"(one cache of {', '.join(f'{t:,}' for t in cached['cache_tokens'])} tokens)",
    ]
    return lines


def _probe(*args: str) -> dict[str, Any]:
    return _probe_script("_bench_micro.py", *args)


def _probe_script(script: str, *args: str) -> dict[str, Any]:
    """Run a probe script in a fresh process; return the JSON of its last line."""
    done = subprocess.run(
        [sys.executable, str(HERE / script), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        check=True,
    )
    value: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return value


def bench_imports(repeats: int) -> dict[str, Any]:
    """Median import time of each module, each in a fresh interpreter.

    ``agent`` loads its names lazily, so its probe also touches ``agent.Agent``: the
    figure is what a program that builds an agent pays, not just the package stub.
    """
    out: dict[str, Any] = {}
    probes = {"google.genai": "google.genai", "toolnexus": "toolnexus", "agent": "agent:Agent"}
    for module, target in probes.items():
        samples = [_probe("import", target) for _ in range(repeats)]
        out[module] = {
            "ms": statistics.median(s["ns"] / 1e6 for s in samples),
            "genai_loaded": any(s["genai_loaded"] for s in samples),
        }
    out["toolnexus"]["met"] = (
        out["toolnexus"]["ms"] <= IMPORT_TOOLNEXUS_MS and not out["toolnexus"]["genai_loaded"]
    )
    # What agent adds is timed in a process that has the SDK loaded already: the difference
    # of two fresh-process medians swings by more than the figure on a busy machine.
    after = [_probe("import", "agent:Agent", "google.genai") for _ in range(repeats)]
    extra = [s["ns"] / 1e6 for s in after]
    out["agent"]["extra_ms"] = statistics.median(extra)
    out["agent"]["extra_spread_ms"] = [min(extra), max(extra)]
    out["agent"]["met"] = out["agent"]["extra_ms"] <= IMPORT_AGENT_EXTRA_MS
    return out


def make_skills(folder: Path, count: int) -> Path:
    """Write ``count`` small skill folders under ``folder/skills``."""
    root = folder / "skills"
    for i in range(count):
        skill = root / f"group-{i // 100:02d}" / f"skill-{i:04d}"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(
            f"---\nname: skill-{i:04d}\ndescription: Generated skill number {i} for the "
            f"discovery benchmark. Use when asked about item {i}.\n---\n\n# Skill {i}\n\n"
            "Do the thing, then report.\n",
            encoding="utf-8",
        )
    return root


def bench_toolkit(folder: Path, repeats: int) -> dict[str, Any]:
    """Default toolkit build (fresh process: first, then repeated) and 1,000-skill discovery."""
    build = _probe("build", str(ROOT / "examples" / "skills"), str(repeats))
    build["met"] = build["first_ns"] / 1e6 <= BUILD_MS and build["repeat_ns"] / 1e6 <= BUILD_MS
    discover = _probe("discover", str(make_skills(folder, 1000)), "3")
    discover["met"] = discover["first_ns"] / 1e9 <= DISCOVER_S
    agents = _probe("agents", str(make_agent_files(folder, 100)))
    agents["met"] = agents["first_ns"] / 1e9 <= AGENT_FILES_S
    return {"build": build, "discover": discover, "agents": agents}


def rounds_of(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Return one scenario's figures over rounds: the median round, with the median ratio.

    Each round ran on its own pair of worker processes, so a process that happened to land
    on a busy core (or a lucky one) is one round of several, not the whole figure.
    """
    ordered = sorted(results, key=lambda r: r["ratio"])
    out = dict(ordered[len(ordered) // 2])
    out["rounds"] = len(results)
    out["ratios"] = [r["ratio"] for r in results]
    out["ratio"] = statistics.median(out["ratios"])
    out["net_ratio"] = statistics.median(r["net_ratio"] for r in results)
    out["met"] = out["ratio"] <= out["target"]
    if "cold_extra_ms" in out:
        # The median round's own figure stays beside its two sides; the target reads the
        # median over the rounds (a new process's first run is one sample per round).
        out["cold_extra_rounds_ms"] = [r["cold_extra_ms"] for r in results]
        out["cold_extra_median_ms"] = statistics.median(out["cold_extra_rounds_ms"])
        out["cold_met"] = out["cold_extra_median_ms"] <= FIRST_RUN_EXTRA_MS
    return out


def make_agent_files(folder: Path, count: int) -> Path:
    """Write ``count`` Markdown agent files (Claude Code style frontmatter) under ``folder``."""
    root = folder / "agents"
    root.mkdir()
    for i in range(count):
        (root / f"helper-{i:03d}.md").write_text(
            f"---\nname: helper-{i:03d}\ndescription: Helper number {i}: reviews one part of "
            "a change and reports what it finds, with file and line.\ntools: Read, Glob, Grep\n"
            f"model: gemini-2.5-flash\n---\n\nYou are helper {i}. Review the part you are "
            "given and report what you find.\n",
            encoding="utf-8",
        )
    return root


def _mark(met: bool) -> str:
    return "met" if met else "MISSED"


def table(results: dict[str, Any]) -> str:
    """Render the results as a readable text table."""
    lines = [
        f"{'scenario':8} {'impl':5} {'run p50':>9} {'run p95':>9} {'req p50':>8} "
        f"{'req p95':>8} {'init':>8} {'rss MiB':>8}",
    ]
    for name, r in results["scenarios"].items():
        lines += _scenario_lines(name, r)
    tracing = results.get("tracing")
    if tracing:
        p50 = tracing["run_ms_p50"]
        lines += [
            "",
            f"tracing (pair p50)  on {p50['traced']:.2f} ms, off {p50['ours']:.2f} ms, no "
            f"OpenTelemetry {p50['nootel']:.2f} ms; on/off {tracing['on_ratio']:.3f}, off/absent "
            f"{tracing['off_ratio']:.3f} (absent within noise: 1.00)",
            f"tracing on          spans add {tracing['spans_ms']:+.3f} ms per run; the same spans "
            f"made by hand on the floor {tracing['sdk_spans_ms']:+.3f} ms; ours beyond the "
            f"OpenTelemetry SDK {tracing['own_ms']:+.3f} ms, target <= "
            f"{tracing['target_own_ms']:.1f} ms: {_mark(tracing['met'])}",
        ]
    compaction = results.get("compaction")
    if compaction:
        size, ms = compaction["size_tokens"], compaction["turn_ms"]
        lines.append(
            f"300-turn session   request {size['early']:.0f} -> {size['late']:.0f} tokens, "
            f"turn {ms['early']:.2f} -> {ms['late']:.2f} ms (early -> late p50 after the "
            f"first compaction); ratios {compaction['size_ratio']:.2f} / "
            f"{compaction['latency_ratio']:.2f}, target <= {compaction['target']:.2f}: "
            f"{_mark(compaction['met'])}"
        )
    growth = results.get("growth")
    if growth:
        lines += _growth_lines(growth)
    served = results.get("mcp")
    if served:
        lines += _mcp_lines(served)
    caching = results.get("caching")
    if caching:
        lines += _caching_lines(caching)
    imports = results.get("imports")
    if imports:
        sdk = imports["google.genai"]["ms"]
        tnx, ag = imports["toolnexus"], imports["agent"]
        lines += [
            "",
            f"import google.genai {sdk:7.1f} ms (baseline)",
            f"import toolnexus    {tnx['ms']:7.1f} ms, loads google.genai: {tnx['genai_loaded']}"
            f"; target <= {IMPORT_TOOLNEXUS_MS:.0f} ms, no genai: {_mark(tnx['met'])}",
            f"import agent.Agent  {ag['ms']:7.1f} ms = SDK {ag['extra_ms']:+.1f} ms (what it adds"
            f" once the SDK is loaded, {ag['extra_spread_ms'][0]:.0f}-"
            f"{ag['extra_spread_ms'][1]:.0f} over the repeats); target <= "
            f"SDK +{IMPORT_AGENT_EXTRA_MS:.0f} ms: {_mark(ag['met'])}",
        ]
    if "durable" in results:
        lines += _bench_durable.table(results["durable"])
    if "batch_api" in results:
        lines += _bench_batchapi.table(results["batch_api"])
    if "toolkit" in results:
        lines += _toolkit_lines(results["toolkit"])
    return "\n".join(lines)


def _scenario_lines(name: str, r: dict[str, Any]) -> list[str]:
    """Render one scenario: both sides, its rounds, the ratio and the pair-only figures."""
    lines: list[str] = []
    for impl in ("floor", "ours"):
        x = r[impl]
        lines.append(
            f"{name:8} {impl:5} {x['run_ms']['p50']:8.2f}ms {x['run_ms']['p95']:8.2f}ms "
            f"{x['request_ms']['p50']:7.2f}ms {x['request_ms']['p95']:7.2f}ms "
            f"{x['init_ms']:6.1f}ms {x['maxrss_mib']:8.1f}"
        )
    if name == "long":
        lines.append(
            f"{'':8} last 10 turns p50: floor {r['floor']['last10_ms']['p50']:.2f} ms, "
            f"ours {r['ours']['last10_ms']['p50']:.2f} ms "
            f"(first 10: floor {r['floor']['first10_ms']['p50']:.2f}, "
            f"ours {r['ours']['first10_ms']['p50']:.2f})"
        )
    if r.get("rounds", 1) > 1:
        shown = ", ".join(f"{x:.3f}" for x in r["ratios"])
        lines.append(f"{'':8} rounds (each on new processes): {shown}; the median round above")
    lines.append(
        f"{'':8} ratio ({r['ratio_of']}) {r['ratio']:.3f} x floor "
        f"({r['net_ratio']:.3f} without the fake's time), target <= "
        f"{r['target']:.2f}: {_mark(r['met'])}; fake server {r['server_request_ms']['p50']:.2f}"
        f" ms/request p50 ({r['server_request_ms']['p95']:.2f} p95)"
    )
    if "rss_extra_mib" in r:
        lines.append(
            f"{'':8} peak RSS ours - floor = {r['rss_extra_mib']:+.1f} MiB, target <= "
            f"+{RSS_EXTRA_MIB:.0f}: {_mark(r['rss_met'])}"
        )
    if "cold_extra_ms" in r:
        extra = r.get("cold_extra_median_ms", r["cold_extra_ms"])
        lines.append(
            f"{'':8} new process, import + init + first run: floor "
            f"{r['floor']['cold_ms']:.0f} ms, ours {r['ours']['cold_ms']:.0f} ms; ours = "
            f"floor {extra:+.0f} ms (median over rounds), target <= "
            f"+{FIRST_RUN_EXTRA_MS:.0f}: {_mark(r['cold_met'])}"
        )
    return lines


def _toolkit_lines(tk: dict[str, Any]) -> list[str]:
    """Render the toolkit build, skill discovery and agent-file probes."""
    b, d, a = tk["build"], tk["discover"], tk["agents"]
    return [
        f"default toolkit     first {b['first_ns'] / 1e6:6.1f} ms, repeated "
        f"{b['repeat_ns'] / 1e6:6.1f} ms; target <= {BUILD_MS:.0f} ms: {_mark(b['met'])}",
        f"1,000 skills        first {d['first_ns'] / 1e6:6.1f} ms, repeated "
        f"{d['repeat_ns'] / 1e6:6.1f} ms ({d['found']} found); target <= "
        f"{DISCOVER_S:.0f} s: {_mark(d['met'])}",
        f"100 agent files     first {a['first_ns'] / 1e6:6.1f} ms, repeated "
        f"{a['repeat_ns'] / 1e6:6.1f} ms ({a['found']} loaded); target <= "
        f"{AGENT_FILES_S:.0f} s: {_mark(a['met'])}",
    ]


def _growth_lines(growth: dict[str, Any]) -> list[str]:
    """Render the growth probe: each figure also as a ratio to the smallest size."""
    tools, turns, session = growth["tools"], growth["turns"], growth["session"]

    def row(label: str, figures: dict[str, Any], key: str) -> str:
        base = next(iter(figures.values()))[key]
        shown = ", ".join(
            f"{size}: {f[key]:+.3f} ms ({f[key] / base:.2f}x)"
            if abs(base) > 1e-3
            else f"{size}: {f[key]:+.3f} ms"
            for size, f in figures.items()
        )
        return f"{label} {shown}"

    return [
        "",
        "how cost grows (ours' own time outside the SDK call, minus the floor's):",
        row("  per run, by tools ", tools, "overhead_ms"),
        row("  per turn, by turns", turns, "overhead_per_turn_ms"),
        f"  {session['runs']}-run SQLite chat: save {session['save_ms']['early']:.2f} -> "
        f"{session['save_ms']['late']:.2f} ms ({session['save_ratio']:.2f}x, "
        f"{session['save_bytes']['early']:.0f} -> {session['save_bytes']['late']:.0f} bytes of "
        f"Contents written), compaction check {session['check_ms']['early']:.3f} -> "
        f"{session['check_ms']['late']:.3f} ms ({session['check_ratio']:.2f}x) at "
        f"{session['contents']} Contents; target <= {session['target']:.2f}x: "
        f"{_mark(session['met'])}",
    ]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table, write the JSON; always return 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--runs", type=int, help="measured runs per side [pair 40, fanout 10, wide 20, long 5]"
    )
    parser.add_argument("--warmup", type=int, help="warm-up runs per side [pair 5, ... long 1]")
    parser.add_argument(
        "--rounds",
        type=int,
        default=DEFAULT_ROUNDS,
        help=f"rounds per scenario, each on new worker processes [{DEFAULT_ROUNDS}]",
    )
    parser.add_argument("--scenarios", default=",".join(sc.SCENARIOS), help="comma-separated")
    parser.add_argument("--json", default="bench-results.json", help="where to write the JSON")
    parser.add_argument("--repeats", type=int, default=5, help="import/build probe repeats [5]")
    parser.add_argument("--no-micro", action="store_true", help="skip import/build/skill probes")
    parser.add_argument("--no-tracing", action="store_true", help="skip the tracing probe")
    parser.add_argument(
        "--no-compaction", action="store_true", help="skip the 300-turn compaction probe"
    )
    parser.add_argument(
        "--no-prime", action="store_true", help="skip compiling the bytecode cache first"
    )
    parser.add_argument(
        "--no-growth",
        action="store_true",
        help="skip the growth probe (1-500 tools, 1-100 turns, a 300-run SQLite chat)",
    )
    parser.add_argument(
        "--no-mcp", action="store_true", help="skip the MCP server probe (ours vs the bare SDK)"
    )
    parser.add_argument(
        "--no-caching",
        action="store_true",
        help="skip the context-cache probe (200 tools, 30 turns, without and with a cache)",
    )
    parser.add_argument(
        "--durable",
        action="store_true",
        help="also measure DBOS: durable overhead per step (SQLite, Postgres) and a "
        "1,000-task batch on 4 workers (needs the dbos extra; about a minute)",
    )
    parser.add_argument(
        "--durable-tasks", type=int, default=1000, help="tasks of the --durable batch [1000]"
    )
    parser.add_argument(
        "--batch-api",
        action="store_true",
        help="also measure `batch --engine gemini-batch` against the local runner over "
        "1,000 one-turn tasks, instant jobs (wall and CPU per task; a few minutes)",
    )
    parser.add_argument(
        "--batch-api-tasks", type=int, default=1000, help="tasks of --batch-api [1000]"
    )
    args = parser.parse_args(argv)
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown = sorted(set(scenarios) - set(sc.SCENARIOS))
    bad_counts = (args.runs is not None and args.runs < 1) or (args.warmup or 0) < 0
    if unknown or bad_counts or args.rounds < 1:
        parser.error(
            f"bad options: scenarios must be among {', '.join(sc.SCENARIOS)}, runs and rounds >= 1"
        )
    began = time.perf_counter()
    results: dict[str, Any] = {
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "scenarios": {},
    }
    if not args.no_prime:
        prime_bytecode()
    timing = _Timing()
    server = start_server(timing)
    try:
        with tempfile.TemporaryDirectory(prefix="toolnexus-bench-") as tmp:
            folder = Path(tmp)
            for scenario in scenarios:
                print(f"running {scenario}...", file=sys.stderr, flush=True)
                runs = args.runs if args.runs is not None else DEFAULT_RUNS[scenario]
                warmup = args.warmup if args.warmup is not None else DEFAULT_WARMUP[scenario]
                results["scenarios"][scenario] = rounds_of(
                    [
                        bench_scenario(scenario, server.base_url, runs, warmup, folder, timing)
                        for _ in range(args.rounds)
                    ]
                )
                results["scenarios"][scenario]["runs"] = runs
                results["scenarios"][scenario]["warmup"] = warmup
            if not args.no_tracing:
                print("probing tracing...", file=sys.stderr, flush=True)
                runs = args.runs if args.runs is not None else DEFAULT_RUNS["pair"]
                warmup = args.warmup if args.warmup is not None else DEFAULT_WARMUP["pair"]
                results["tracing"] = bench_tracing(server.base_url, runs, warmup, folder)
            if not args.no_compaction:
                print("probing a 300-turn session...", file=sys.stderr, flush=True)
                results["compaction"] = bench_compaction()
            if not args.no_growth:
                print("probing how cost grows...", file=sys.stderr, flush=True)
                results["growth"] = bench_growth(args.runs if args.runs is not None else 20)
            if not args.no_mcp:
                print("probing the MCP server...", file=sys.stderr, flush=True)
                results["mcp"] = bench_mcp(10 * (args.runs if args.runs is not None else 20))
            if not args.no_caching:
                print("probing a context cache...", file=sys.stderr, flush=True)
                results["caching"] = bench_caching()
            if args.durable:
                print("measuring durable runs and a batch on DBOS...", file=sys.stderr, flush=True)
                results["durable"] = _bench_durable.bench_durable(20, args.durable_tasks, folder)
            if args.batch_api:
                print("measuring the Gemini Batch engine...", file=sys.stderr, flush=True)
                results["batch_api"] = _bench_batchapi.bench_batch_api(args.batch_api_tasks)
            if not args.no_micro:
                print("probing imports and toolkit build...", file=sys.stderr, flush=True)
                results["imports"] = bench_imports(args.repeats)
                results["toolkit"] = bench_toolkit(folder, args.repeats)
    finally:
        server.stop()
    results["fake_failures"] = list(server.fake.failures)
    results["seconds"] = time.perf_counter() - began
    print(table(results))
    if results["fake_failures"]:
        print("fake Gemini problems: " + "; ".join(results["fake_failures"]))
    print(f"total {results['seconds']:.0f} s; JSON written to {args.json}")
    Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
