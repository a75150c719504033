"""Evaluation cases and their checks, as pure functions: `load_evals`, `check`, `matches`.

An eval file holds cases; each case is a prompt (with optional workspace files) and what is
expected of the run. The checks read a `RunResult` and never call a model, except the
optional rubric, which `toolnexus-agent eval` hands to a judge model. See ``docs/eval.md``.

Example::

    cases = load_evals("evals.yaml").cases
    outcome = check(cases[0].expect, result)     # [Check(name, passed, detail), ...]
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.errors import ConfigurationError

__all__ = ["Check", "EvalCase", "EvalFile", "Expect", "check", "load_evals", "matches"]

_CASE_KEYS = frozenset(
    {"id", "prompt", "files", "expect", "scenario", "model", "system", "max_turns", "allow"}
)
_DEFAULT_KEYS = frozenset({"model", "system", "max_turns", "allow", "expect"})
_EXPECT_KEYS = frozenset(
    {
        "status",
        "text_contains",
        "text_matches",
        "output_equals",
        "output_satisfies",
        "tools",
        "rubric",
    }
)
_TRAJECTORY_MODES = ("exact", "in_order", "any_order")


@dataclass(frozen=True, slots=True)
class Expect:
    """What a case expects of its run; each field that is set is one check."""

    status: str = "completed"
    """The run's status."""
    text_contains: tuple[str, ...] = ()
    """Pieces the answer text contains (each one a check)."""
    text_matches: str | None = None
    """A regular expression the answer text matches (``re.search``)."""
    output_equals: Any = None
    """The typed output, as JSON data, equals this."""
    output_satisfies: Any = None
    """The typed output matches this pattern (see `matches`)."""
    tools: tuple[str, tuple[Any, ...]] | None = None
    """``(mode, calls)``: the tool trajectory, ``exact``, ``in_order`` or ``any_order``."""
    rubric: str | None = None
    """What a judge model is asked to confirm about the answer."""
    has_output_check: bool = False
    """Whether ``output_equals`` was given (``None`` is a value to compare with)."""


@dataclass(frozen=True, slots=True)
class EvalCase:
    """One case of an eval file, with the defaults applied."""

    id: str
    """The unique id; sample ``k`` is recorded as ``<id>#<k>``."""
    prompt: str
    """What the agent is asked."""
    expect: Expect
    """The checks."""
    files: Mapping[str, str] = field(default_factory=dict)
    """Files written into a fresh workspace for each sample (the tools' root)."""
    scenario: Any = None
    """The scripted model that plays it with ``--offline`` (a path or inline data)."""
    model: str | None = None
    """The case's model (else ``--model``)."""
    system: str | None = None
    """The case's system prompt (else ``--system``)."""
    max_turns: int | None = None
    """The case's turn limit (else ``--max-turns``)."""
    allow: tuple[str, ...] = ()
    """Tools that may run without approval (nobody approves during an eval)."""


@dataclass(frozen=True, slots=True)
class EvalFile:
    """A parsed eval file."""

    path: Path
    """Where it was read from (relative scenario paths start at its directory)."""
    cases: tuple[EvalCase, ...]
    """The cases, in file order."""
    judge_model: str | None = None
    """The model that judges rubrics (else the cases' model)."""
    judge_scenario: Any = None
    """The scripted judge for ``--offline`` (a path or inline data)."""


@dataclass(frozen=True, slots=True)
class Check:
    """The outcome of one check."""

    name: str
    """What was checked, e.g. ``text_contains 'Paris'``."""
    passed: bool
    """Whether it held."""
    detail: str = ""
    """Why it failed (what was found instead)."""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {"name": self.name, "passed": self.passed, "detail": self.detail}


# --------------------------------------------------------------------------- matching


def matches(value: Any, pattern: Any) -> bool:
    """Whether ``value`` (JSON data) matches ``pattern``.

    A mapping pattern matches a mapping holding at least its keys, each matching; a list
    pattern matches a list of the same length, item by item; anything else must be equal.
    Operator mappings match one value: ``{"$any": true}`` anything, ``{"$regex": "..."}`` a
    string it is found in, ``{"$contains": x}`` a string or list containing ``x``,
    ``{"$oneof": [...]}`` one of the values.
    """
    if isinstance(pattern, Mapping) and pattern and all(str(k).startswith("$") for k in pattern):
        return all(_operator(str(op), arg, value) for op, arg in pattern.items())
    if isinstance(pattern, Mapping):
        return isinstance(value, Mapping) and all(
            key in value and matches(value[key], sub) for key, sub in pattern.items()
        )
    if isinstance(pattern, list):
        return (
            isinstance(value, list)
            and len(value) == len(pattern)
            and all(matches(v, p) for v, p in zip(value, pattern, strict=True))
        )
    return bool(value == pattern)


def _operator(op: str, arg: Any, value: Any) -> bool:
    if op == "$any":
        return bool(arg)
    if op == "$regex":
        return isinstance(value, str) and re.search(str(arg), value) is not None
    if op == "$contains":
        return isinstance(value, str | list) and arg in value
    if op == "$oneof":
        return isinstance(arg, list) and value in arg
    raise ConfigurationError(f"unknown matcher {op!r}; use $any, $regex, $contains or $oneof")


# --------------------------------------------------------------------------- checks


def check(expect: Expect, result: Any) -> list[Check]:
    """Run every check of ``expect`` except the rubric on a `RunResult`; return outcomes."""
    checks = [
        Check(
            f"status {expect.status}",
            result.status == expect.status,
            "" if result.status == expect.status else _status(result),
        )
    ]
    text = result.text or ""
    for piece in expect.text_contains:
        found = piece in text
        checks.append(Check(f"text_contains {piece!r}", found, "" if found else _quote(text)))
    if expect.text_matches is not None:
        found = re.search(expect.text_matches, text) is not None
        name = f"text_matches {expect.text_matches!r}"
        checks.append(Check(name, found, "" if found else _quote(text)))
    output = _json_data(getattr(result, "output", None))
    if expect.has_output_check:
        same = output == expect.output_equals
        checks.append(Check("output_equals", same, "" if same else f"output was {_dump(output)}"))
    if expect.output_satisfies is not None:
        fits = matches(output, expect.output_satisfies)
        detail = "" if fits else f"output was {_dump(output)}"
        checks.append(Check("output_satisfies", fits, detail))
    if expect.tools is not None:
        checks.append(_trajectory(*expect.tools, result.tool_calls))
    return checks


def _trajectory(mode: str, expected: Sequence[Any], calls: Sequence[Any]) -> Check:
    made = [(call.name, call.args) for call in calls]
    shown = ", ".join(f"{name}({_dump(args)})" for name, args in made) or "no calls"
    wanted = [_call_pattern(item) for item in expected]
    if mode == "exact":
        ok = len(made) == len(wanted) and all(
            _fits(call, want) for call, want in zip(made, wanted, strict=True)
        )
    elif mode == "in_order":
        position = 0
        for call in made:
            if position < len(wanted) and _fits(call, wanted[position]):
                position += 1
        ok = position == len(wanted)
    else:
        unused = list(made)
        ok = True
        for want in wanted:
            hit = next((call for call in unused if _fits(call, want)), None)
            if hit is None:
                ok = False
                break
            unused.remove(hit)
    names = ", ".join(want[0] for want in wanted)
    return Check(f"tools {mode} [{names}]", ok, "" if ok else f"the calls were: {shown}")


def _call_pattern(item: Any) -> tuple[str, Any]:
    if isinstance(item, str):
        return item, None
    return str(item["name"]), item.get("args")


def _fits(call: tuple[str, Any], want: tuple[str, Any]) -> bool:
    return call[0] == want[0] and (want[1] is None or matches(call[1], want[1]))


def _status(result: Any) -> str:
    detail = result.limit or result.reason
    return f"status was {result.status}" + (f" ({detail})" if detail else "")


def _json_data(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    return value


def _dump(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 200 else text[:197] + "..."


def _quote(text: str) -> str:
    shown = text if len(text) <= 200 else text[:197] + "..."
    return f"the text was {shown!r}"


# --------------------------------------------------------------------------- loading


def load_evals(path: str | Path) -> EvalFile:
    """Read an eval file (YAML or JSON).

    Raises:
        ConfigurationError: The file cannot be read, or a case or check is malformed (the
            message names the case and the field).
    """
    import yaml

    where = Path(path)
    try:
        data: Any = yaml.safe_load(where.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(f"cannot read {where}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigurationError(f"{where} is not valid YAML: {exc}") from None
    if isinstance(data, list):
        data = {"cases": data}
    if not isinstance(data, Mapping):
        raise ConfigurationError(f"{where}: expected a mapping with `cases` (or a list of cases)")
    unknown = set(map(str, data)) - {"cases", "defaults", "judge"}
    if unknown:
        raise ConfigurationError(f"{where}: unknown top-level key(s) {', '.join(sorted(unknown))}")
    defaults = _mapping(data.get("defaults") or {}, f"{where}: defaults")
    _keys(defaults, _DEFAULT_KEYS, f"{where}: defaults")
    judge = _mapping(data.get("judge") or {}, f"{where}: judge")
    _keys(judge, frozenset({"model", "scenario"}), f"{where}: judge")
    items = data.get("cases")
    if not isinstance(items, list) or not items:
        raise ConfigurationError(f"{where}: `cases` must be a non-empty list")
    cases = [_case(item, defaults, f"{where}: case {i + 1}") for i, item in enumerate(items)]
    ids = [case.id for case in cases]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ConfigurationError(f"{where}: duplicate case id(s) {', '.join(duplicates)}")
    return EvalFile(where, tuple(cases), judge.get("model"), judge.get("scenario"))


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"{where} must be a mapping")
    return value


def _keys(item: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = set(map(str, item)) - allowed
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown field(s) {', '.join(sorted(unknown))}; "
            f"allowed: {', '.join(sorted(allowed))}"
        )


def _case(item: Any, defaults: Mapping[str, Any], where: str) -> EvalCase:
    item = _mapping(item, where)
    _keys(item, _CASE_KEYS, where)
    case_id, prompt = item.get("id"), item.get("prompt")
    if not isinstance(case_id, str | int) or isinstance(case_id, bool) or str(case_id) == "":
        raise ConfigurationError(f"{where}: `id` must be a non-empty string or number")
    where = f"{where} ({case_id})"
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigurationError(f"{where}: `prompt` must be non-empty text")
    files = _mapping(item.get("files") or {}, f"{where}: files")
    if not all(isinstance(v, str) for v in files.values()):
        raise ConfigurationError(f"{where}: `files` maps file names to their text")
    expect = {
        **_mapping(defaults.get("expect") or {}, where),
        **_mapping(item.get("expect") or {}, where),
    }
    merged = {**defaults, **item}
    max_turns = merged.get("max_turns")
    if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
        raise ConfigurationError(f"{where}: `max_turns` must be a whole number >= 1")
    allow = merged.get("allow") or []
    if not isinstance(allow, list) or not all(isinstance(name, str) for name in allow):
        raise ConfigurationError(f"{where}: `allow` must be a list of tool names")
    return EvalCase(
        id=str(case_id),
        prompt=prompt,
        expect=_expect(expect, where),
        files=dict(files),
        scenario=item.get("scenario"),
        model=merged.get("model"),
        system=merged.get("system"),
        max_turns=max_turns,
        allow=tuple(allow),
    )


def _expect(data: Mapping[str, Any], where: str) -> Expect:
    _keys(data, _EXPECT_KEYS, f"{where}: expect")
    contains = data.get("text_contains") or ()
    contains = (contains,) if isinstance(contains, str) else tuple(map(str, contains))
    tools = data.get("tools")
    trajectory: tuple[str, tuple[Any, ...]] | None = None
    if tools is not None:
        if isinstance(tools, list):
            tools = {"exact": tools}
        if not isinstance(tools, Mapping) or len(tools) != 1:
            raise ConfigurationError(
                f"{where}: expect.tools must be one of exact, in_order, any_order with a list"
            )
        ((mode, calls),) = tools.items()
        if mode not in _TRAJECTORY_MODES or not isinstance(calls, list):
            raise ConfigurationError(
                f"{where}: expect.tools must be one of exact, in_order, any_order with a list"
            )
        for call in calls:
            if not isinstance(call, str) and not (isinstance(call, Mapping) and "name" in call):
                raise ConfigurationError(f"{where}: each expected tool call needs a `name`")
        trajectory = (str(mode), tuple(calls))
    pattern = data.get("text_matches")
    if pattern is not None:
        try:
            re.compile(str(pattern))
        except re.error as exc:
            raise ConfigurationError(f"{where}: text_matches is not a valid regex: {exc}") from None
    return Expect(
        status=str(data.get("status", "completed")),
        text_contains=contains,
        text_matches=None if pattern is None else str(pattern),
        output_equals=data.get("output_equals"),
        output_satisfies=data.get("output_satisfies"),
        tools=trajectory,
        rubric=data.get("rubric"),
        has_output_check="output_equals" in data,
    )
