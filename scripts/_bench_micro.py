"""Single-shot probes of ``scripts/bench.py``, each run in a fresh interpreter.

Usage::

    python scripts/_bench_micro.py import toolnexus        (or MODULE:ATTR [AFTER_MODULE])
    python scripts/_bench_micro.py build SKILLS_DIR REPEATS
    python scripts/_bench_micro.py discover SKILLS_DIR REPEATS
    python scripts/_bench_micro.py agents AGENTS_DIR

Each prints one JSON line.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import warnings
from typing import Any


def _import(target: str, after: str | None = None) -> dict[str, Any]:
    """Time ``import module`` (``module:attr`` also fetches the attribute).

    With ``after``, that module is imported first, untimed: the figure is what ``target``
    adds to it.
    """
    if after is not None:
        __import__(after)
    module, _, attr = target.partition(":")
    start = time.perf_counter_ns()
    loaded = __import__(module)
    if attr:
        getattr(loaded, attr)
    took = time.perf_counter_ns() - start
    return {"ns": took, "genai_loaded": "google.genai" in sys.modules}


def _repeat(label: str, action: Any, repeats: int) -> dict[str, Any]:
    start = time.perf_counter_ns()
    action()
    first = time.perf_counter_ns() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        action()
        times.append(time.perf_counter_ns() - start)
    return {"first_ns": first, "repeat_ns": statistics.median(times), "what": label}


def main(argv: list[str]) -> dict[str, Any]:
    """Run one probe and return its figures."""
    mode = argv[0]
    if mode == "import":
        return _import(argv[1], argv[2] if len(argv) > 2 else None)
    import toolnexus as tn  # after the import probe, which must find it not loaded yet

    warnings.simplefilter("ignore")
    if mode == "build":
        skills = argv[1]
        return _repeat("tn.build(skills=...)", lambda: tn.build(skills=skills), int(argv[2]))
    if mode == "discover":
        folder = argv[1]
        result = _repeat("tn.list_skills(...)", lambda: tn.list_skills(folder), int(argv[2]))
        result["found"] = len(tn.list_skills(folder).skills)
        return result
    if mode == "agents":
        return _agents(argv[1])
    raise SystemExit(f"unknown probe {mode!r}")


def _agents(folder: str) -> dict[str, Any]:
    """Time loading a folder of Markdown agent files as sub-agent tools (agent imported first).

    The first load pays what any first load does (the shared SDK client, the files read
    cold); the repeat shows the steady cost.
    """
    import toolnexus as tn
    from agent import ClientSettings, load_agents

    toolkit = tn.build()
    options = {"client": ClientSettings(api_key="bench", base_url="http://127.0.0.1:9")}
    start = time.perf_counter_ns()
    tools = load_agents(folder, toolkit=toolkit, **options)
    first = time.perf_counter_ns() - start
    start = time.perf_counter_ns()
    load_agents(folder, toolkit=toolkit, **options)
    return {"first_ns": first, "repeat_ns": time.perf_counter_ns() - start, "found": len(tools)}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])), flush=True)
