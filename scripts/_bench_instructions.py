"""Instruction counts of ``scripts/bench.py``'s figures, for development on a busy machine.

Wall-clock ratios are the targets; on shared cores they are noise. Valgrind's callgrind
counts the instructions a process executes, the same total for the same code and inputs,
so a change's effect shows in one measurement whatever the load. Each figure is a
difference of two processes run under callgrind, which cancels what both do:

- ``pair`` / ``fanout`` per run: a worker doing N runs minus one doing M runs (after the
  same warm-up), divided by N - M; the floor (raw SDK) and ours (``agent.Agent``), each
  against the strict fake Gemini served on 127.0.0.1 by this process (not counted);
- ``traced``: what a pair run's spans add, per run, to ours (``traced`` minus ``ours``) and
  to the floor creating the same spans by hand (``floor-traced`` minus ``floor``), on an
  OpenTelemetry SDK provider; ours beyond the SDK is the difference of the two. The fake
  answers in the measured process, on its in-process transport: it does the same work on
  both sides of each difference, and no socket's timing changes how often the event loop
  turns (over a socket that moves a run's count by more than the spans cost);
- ``first``: a new process's import + init + first pair run, ours minus the floor's;
- ``import``: ``import agent; agent.Agent`` after ``import google.genai``, minus the SDK
  import alone;
- ``agents``: loading 100 Markdown agent files, minus the same process without the load.

Usage::

    python scripts/_bench_instructions.py                  # every figure (a few minutes)
    python scripts/_bench_instructions.py pair import      # some of them

Needs ``valgrind`` on the PATH. Instructions are not time (a cache miss costs more than an
add), but on the same interpreter they move with the CPU time of the Python code.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

FIGURES = ("pair", "fanout", "traced", "first", "import", "agents")
# Runs per measured process: (N, M, warm-up); the figure is (Ir(N) - Ir(M)) / (N - M).
RUNS = {"pair": (12, 4, 3), "fanout": (6, 2, 2)}
IN_PROCESS = "in-process"
"""The URL argument of a probe whose fake Gemini answers in the measured process."""
AGENT_FILES = 100


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # Hash randomisation changes dict and set layouts, and so the count, from one process
    # to the next: fixed, two runs of the same code give the same total.
    env["PYTHONHASHSEED"] = "0"
    return env


def callgrind(args: list[str], folder: Path) -> int:
    """Run ``python args...`` under callgrind; return the instructions it executed."""
    out = folder / f"callgrind.{len(list(folder.iterdir()))}.out"
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        sys.executable,
        *args,
    ]
    done = subprocess.run(
        command, cwd=ROOT, env=_env(), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed under callgrind:\n{done.stderr[-3000:]}")
    match = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"no instruction total in {out}")
    return int(match.group(1))


# -- the measured processes ------------------------------------------------------------------


def _probe_runs(impl: str, scenario: str, url: str, decls: str, warmup: int, runs: int) -> None:
    """Build the worker's floor or ours (traced or not), then make ``warmup + runs`` runs."""
    import asyncio

    sys.path.insert(0, str(HERE))
    import _bench_worker as worker

    raw = json.loads(Path(decls).read_text(encoding="utf-8"))
    worker._tracing(impl)
    transport = None
    if url == IN_PROCESS:
        import _bench_scenarios as sc

        from agent.testing import FakeGemini

        url = "http://127.0.0.1:9"  # named on the spans, never reached
        transport = FakeGemini(sc.decide, strict=True).async_transport()

    async def main() -> None:
        if impl in ("floor", "floor-traced"):
            traced = impl == "floor-traced"
            run, _, _ = await worker._floor(scenario, url, raw, traced, transport)
        else:
            run, _, _ = await worker._ours(scenario, url, transport)
        for _ in range(warmup + runs):
            await run()

    asyncio.run(main())


def _probe_import(with_agent: str) -> None:
    """``import google.genai``, then (with ``"agent"``) ``import agent; agent.Agent``."""
    import google.genai  # noqa: F401

    if with_agent == "agent":
        import agent

        agent.Agent  # noqa: B018


def _probe_agents(folder: str, load: str) -> None:
    """Import agent and build the default toolkit; then (with ``"load"``) load the files."""
    import toolnexus as tn
    from agent import ClientSettings, load_agents

    toolkit = tn.build()
    if load == "load":
        client = ClientSettings(api_key="bench", base_url="http://127.0.0.1:9")
        load_agents(folder, toolkit=toolkit, client=client)


# -- the figures -----------------------------------------------------------------------------


def _runs_of(impl: str, scenario: str, url: str, decls: Path, folder: Path) -> float:
    """Return the instructions of one run of ``impl`` (a worker implementation)."""
    many, few, warmup = RUNS[scenario]
    probe = [str(Path(__file__)), "probe-runs", impl, scenario, url, str(decls), str(warmup)]
    counts = [callgrind([*probe, str(n)], folder) for n in (many, few)]
    return (counts[0] - counts[1]) / (many - few)


def _per_run(scenario: str, url: str, decls: Path, folder: Path) -> dict[str, Any]:
    out: dict[str, Any] = {
        impl: _runs_of(impl, scenario, url, decls, folder) for impl in ("floor", "ours")
    }
    out["ratio"] = out["ours"] / out["floor"]
    return out


def _traced(decls: Path, folder: Path) -> dict[str, Any]:
    impls = ("floor", "floor-traced", "ours", "traced")
    out: dict[str, Any] = {
        impl: _runs_of(impl, "pair", IN_PROCESS, decls, folder) for impl in impls
    }
    out["ours_spans"] = out["traced"] - out["ours"]
    out["sdk_spans"] = out["floor-traced"] - out["floor"]
    out["own"] = out["ours_spans"] - out["sdk_spans"]
    return out


def _first(url: str, decls: Path, folder: Path) -> dict[str, Any]:
    me = str(Path(__file__))
    out: dict[str, Any] = {
        impl: callgrind([me, "probe-runs", impl, "pair", url, str(decls), "0", "1"], folder)
        for impl in ("floor", "ours")
    }
    out["extra"] = out["ours"] - out["floor"]
    return out


def _import(folder: Path) -> dict[str, Any]:
    me = str(Path(__file__))
    sdk = callgrind([me, "probe-import", "sdk"], folder)
    both = callgrind([me, "probe-import", "agent"], folder)
    return {"sdk_process": sdk, "agent_process": both, "extra": both - sdk}


def _agents(folder: Path) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    from bench import make_agent_files

    files = make_agent_files(folder, AGENT_FILES)
    me = str(Path(__file__))
    without = callgrind([me, "probe-agents", str(files), "none"], folder)
    loaded = callgrind([me, "probe-agents", str(files), "load"], folder)
    return {"files": AGENT_FILES, "extra": loaded - without}


def measure(figures: list[str]) -> dict[str, Any]:
    """Measure ``figures``; return their instruction counts."""
    sys.path.insert(0, str(HERE))
    import bench

    results: dict[str, Any] = {}
    server = bench.start_server(bench._Timing())
    try:
        with tempfile.TemporaryDirectory(prefix="toolnexus-instructions-") as tmp:
            folder = Path(tmp)
            # Compiled once, so no measured process pays for compiling a module.
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "import _bench_worker, agent, agent.testing, toolnexus; "
                    "agent.Agent; toolnexus.build()",
                ],
                cwd=HERE,
                env=_env(),
                check=True,
            )
            for figure in figures:
                print(f"counting {figure}...", file=sys.stderr, flush=True)
                if figure in RUNS:
                    decls = bench.declarations(figure, server.base_url, folder)
                    results[figure] = _per_run(figure, server.base_url, decls, folder)
                elif figure == "traced":
                    decls = bench.declarations("pair", server.base_url, folder)
                    results[figure] = _traced(decls, folder)
                elif figure == "first":
                    decls = bench.declarations("pair", server.base_url, folder)
                    results[figure] = _first(server.base_url, decls, folder)
                elif figure == "import":
                    results[figure] = _import(folder)
                elif figure == "agents":
                    results[figure] = _agents(folder)
    finally:
        server.stop()
    return results


def table(results: dict[str, Any]) -> list[str]:
    """Render the counts, in millions of instructions."""

    def m(count: float) -> str:
        return f"{count / 1e6:8.2f} M"

    lines = ["", "instructions (callgrind; deterministic, a development figure, not a target):"]
    for scenario in ("pair", "fanout"):
        if scenario in results:
            r = results[scenario]
            lines.append(
                f"  {scenario:7} per run  floor {m(r['floor'])}, ours {m(r['ours'])}, "
                f"ratio {r['ratio']:.3f}"
            )
    if "traced" in results:
        r = results["traced"]
        lines.append(
            f"  pair spans per run: ours {m(r['ours_spans'])}, the floor's by hand "
            f"{m(r['sdk_spans'])} (ours beyond the OpenTelemetry SDK {r['own'] / 1e6:+.2f} M)"
        )
    if "first" in results:
        r = results["first"]
        lines.append(
            f"  new process, import + init + first pair run: floor {m(r['floor'])}, "
            f"ours {m(r['ours'])} (ours = floor {r['extra'] / 1e6:+.2f} M)"
        )
    if "import" in results:
        lines.append(
            f"  import agent; agent.Agent after google.genai: {m(results['import']['extra'])}"
        )
    if "agents" in results:
        r = results["agents"]
        lines.append(f"  {r['files']} agent files loaded: {m(r['extra'])}")
    return lines


def main(argv: list[str]) -> None:
    """Measure the figures named in ``argv`` (all by default), or run one measured probe."""
    if argv and argv[0] == "probe-runs":
        impl, scenario, url, decls, warmup, runs = argv[1:7]
        _probe_runs(impl, scenario, url, decls, int(warmup), int(runs))
        return
    if argv and argv[0] == "probe-import":
        _probe_import(argv[1])
        return
    if argv and argv[0] == "probe-agents":
        _probe_agents(argv[1], argv[2])
        return
    figures = argv or list(FIGURES)
    unknown = sorted(set(figures) - set(FIGURES))
    if unknown:
        raise SystemExit(f"unknown figures {unknown}; choose from {', '.join(FIGURES)}")
    results = measure(figures)
    print("\n".join(table(results)))
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
