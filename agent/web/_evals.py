"""Eval reports on the page: pass rates per case, and how a failing sample's calls differ.

A report is what ``toolnexus-agent eval --json`` writes. Each case gives its pass rate and
score; each failing sample its failed checks and, when the case checks the tool trajectory,
the calls it made beside the calls expected, lined up (`trajectory_rows`).
"""

from __future__ import annotations

import asyncio
import difflib
import json
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent.web._runs import Refused

__all__ = ["eval_view", "run_eval", "trajectory_rows"]

_EVAL_TIMEOUT = 900.0
"""Seconds an offline eval run from the page may take."""


def eval_view(report: Any) -> dict[str, Any]:
    """Return the page's view of an eval report.

    Raises:
        Refused: 422, the data is not an eval report.
    """
    if not isinstance(report, Mapping) or not isinstance(report.get("cases"), list):
        raise Refused(422, "this is not a report of `toolnexus-agent eval --json` (no cases)")
    cases = [_case(case) for case in report["cases"] if isinstance(case, Mapping)]
    return {
        "file": str(report.get("file", "")),
        "samples": _int(report.get("samples")),
        "passed_samples": _int(report.get("passed_samples")),
        "pass_rate": _rate(report.get("pass_rate")),
        "min_pass": _rate(report.get("min_pass")),
        "passed": bool(report.get("passed")),
        "cases": cases,
    }


def _case(case: Mapping[str, Any]) -> dict[str, Any]:
    expected = case.get("expected_tools")
    failures = []
    for failure in case.get("failures") or []:
        if not isinstance(failure, Mapping):
            continue
        made = failure.get("tool_calls")
        rows = (
            trajectory_rows(expected.get("calls") or [], made)
            if isinstance(expected, Mapping) and isinstance(made, list)
            else None
        )
        failures.append(
            {
                "sample": failure.get("sample"),
                "failed": [c for c in failure.get("failed") or [] if isinstance(c, Mapping)],
                "error": failure.get("error"),
                "trajectory": rows,
                "mode": expected.get("mode") if isinstance(expected, Mapping) else None,
            }
        )
    return {
        "id": str(case.get("id", "")),
        "samples": _int(case.get("samples")),
        "passed": _int(case.get("passed")),
        "pass_rate": _rate(case.get("pass_rate")),
        "score": case.get("score") if isinstance(case.get("score"), Mapping) else None,
        "failures": failures,
    }


def trajectory_rows(expected: Sequence[Any], made: Sequence[Any]) -> list[dict[str, Any]]:
    """Line up the expected calls with the calls made, as a diff by tool name.

    Each row is ``{"expected": text | None, "made": text | None, "same": bool}``: a call in
    both (its arguments fitting the expected pattern), one expected but not made, or one
    made but not expected.
    """
    from agent.evals import matches

    want = [_pattern(item) for item in expected]
    got = [_made(item) for item in made]
    rows: list[dict[str, Any]] = []
    matcher = difflib.SequenceMatcher(a=[w[0] for w in want], b=[g[0] for g in got])
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for w, g in zip(want[i1:i2], got[j1:j2], strict=True):
                fits = w[1] is None or matches(g[1], w[1])
                rows.append({"expected": _shown(*w), "made": _shown(*g), "same": fits})
            continue
        for w in want[i1:i2]:
            rows.append({"expected": _shown(*w), "made": None, "same": False})
        for g in got[j1:j2]:
            rows.append({"expected": None, "made": _shown(*g), "same": False})
    return rows


def _pattern(item: Any) -> tuple[str, Any]:
    if isinstance(item, Mapping):
        return str(item.get("name", "")), item.get("args")
    return str(item), None


def _made(item: Any) -> tuple[str, Any]:
    if isinstance(item, Mapping):
        return str(item.get("name", "")), item.get("args") or {}
    return str(item), {}


def _shown(name: str, args: Any) -> str:
    if args is None:
        return name
    text = json.dumps(args, ensure_ascii=False, sort_keys=True)
    return f"{name}({text if len(text) <= 160 else text[:159] + '…'})"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _rate(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


async def run_eval(command: Sequence[str], path: str) -> dict[str, Any]:
    """Run ``command PATH --offline`` (``toolnexus-agent eval`` with the page's tool flags).

    Returns:
        The JSON report it wrote.

    Raises:
        Refused: 422, the eval file is unusable (the command's own message); 504, it ran
            past the time allowed.
    """
    with tempfile.TemporaryDirectory(prefix="toolnexus-web-eval-") as scratch:
        out, report = Path(scratch) / "runs.jsonl", Path(scratch) / "report.json"
        process = await asyncio.create_subprocess_exec(
            *command,
            path,
            "--offline",
            "--out",
            str(out),
            "--json",
            str(report),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            _, err = await asyncio.wait_for(process.communicate(), _EVAL_TIMEOUT)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise Refused(504, f"the eval ran longer than {_EVAL_TIMEOUT:g} s") from None
        if not report.is_file():
            lines = err.decode("utf-8", "replace").strip().splitlines()
            raise Refused(422, lines[-1] if lines else f"eval exited with {process.returncode}")
        data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
        return data
