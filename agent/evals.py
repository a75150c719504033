"""Evaluation cases and their checks, as pure functions: `load_evals`, `check`, `matches`.

An eval file holds cases; each case is a prompt (with optional workspace files) and what is
expected of the run. The checks read a `RunResult` and never call a model, except the
optional rubric, which `toolnexus-agent eval` hands to a judge model. See ``docs/eval.md``.

Example::

    cases = load_evals("evals.yaml").cases
    outcome = check(cases[0].expect, result)     # [Check(name, passed, detail), ...]
    calls = score(cases[0].expect, result)       # Score(precision, recall, f1, ...) or None
"""

from __future__ import annotations

from agent._eval_checks import Check, Expect, Score, check, matches, score
from agent._eval_file import EvalCase, EvalFile, load_evals

__all__ = [
    "Check",
    "EvalCase",
    "EvalFile",
    "Expect",
    "Score",
    "check",
    "load_evals",
    "matches",
    "score",
]
