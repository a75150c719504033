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

import json
import posixpath
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from agent.errors import ConfigurationError

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
_MAX_PATH = 4096
"""The longest path the built-in file tools take (characters)."""


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
    ignore_args: tuple[str, ...] = ()
    """Argument names left out when calls are compared (volatile ids, timestamps)."""
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


@dataclass(frozen=True, slots=True)
class Score:
    """How close a run's tool calls came to the expected ones, order aside.

    Each expected call is paired with at most one call the run made that fits it, so that
    as many as possible are paired (duplicates count: two expected ``read`` calls need two).
    """

    precision: float
    """Paired calls / calls made (1.0 when none were made)."""
    recall: float
    """Paired calls / calls expected (1.0 when none were expected)."""
    f1: float
    """The harmonic mean of the two (0.0 when either is 0)."""
    matched: int
    """How many expected calls were paired with a call the run made."""
    expected: int
    """How many calls were expected."""
    made: int
    """How many calls the run made."""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (rates rounded to 4 places)."""
        return {
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "f1": round(self.f1, 4),
            "matched": self.matched,
            "expected": self.expected,
            "made": self.made,
        }


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
        checks.append(_trajectory(*expect.tools, result.tool_calls, expect.ignore_args))
    return checks


_Call = tuple[str, Any]


def score(expect: Expect, result: Any) -> Score | None:
    """Score the run's tool calls against ``expect.tools`` (``None`` without that check).

    Args:
        expect: The case's expectations.
        result: The `RunResult` (``None`` when the run had none: no calls were made).
    """
    if expect.tools is None:
        return None
    made = [_call(call, expect.ignore_args) for call in getattr(result, "tool_calls", ())]
    wanted = [_call_pattern(item, expect.ignore_args) for item in expect.tools[1]]
    matched = _pairs(wanted, made)
    precision = matched / len(made) if made else 1.0
    recall = matched / len(wanted) if wanted else 1.0
    total = precision + recall
    f1 = 2 * precision * recall / total if total else 0.0
    return Score(precision, recall, f1, matched, len(wanted), len(made))


def _trajectory(mode: str, expected: Sequence[Any], calls: Sequence[Any], ignore: Any) -> Check:
    turns = _by_turn(calls, ignore)
    wanted = [_call_pattern(item, ignore) for item in expected]
    if mode == "exact":
        ok = _exact(wanted, turns)
    elif mode == "in_order":
        ok = _in_order(wanted, turns)
    else:
        made = [call for turn in turns for call in turn]
        ok = len(made) == len(wanted) and _pairs(wanted, made) == len(wanted)
    names = ", ".join(want[0] for want in wanted)
    return Check(f"tools {mode} [{names}]", ok, "" if ok else f"the calls were: {_shown(turns)}")


def _by_turn(calls: Sequence[Any], ignore: Any) -> list[list[_Call]]:
    """Group the calls by model turn, in turn order (the calls of one turn run together)."""
    turns: dict[int, list[_Call]] = {}
    for call in calls:
        turns.setdefault(int(getattr(call, "turn", 0) or 0), []).append(_call(call, ignore))
    return [turns[turn] for turn in sorted(turns)]


def _exact(wanted: Sequence[_Call], turns: Sequence[Sequence[_Call]]) -> bool:
    """Tell whether these are the calls, turn after turn in order (any order within a turn)."""
    if sum(map(len, turns)) != len(wanted):
        return False
    start = 0
    for turn in turns:
        segment = wanted[start : start + len(turn)]
        if _pairs(segment, turn) != len(turn):
            return False
        start += len(turn)
    return True


def _in_order(wanted: Sequence[_Call], turns: Sequence[Sequence[_Call]]) -> bool:
    """Tell whether the expected calls come in order across turns, others allowed.

    Order within a turn does not count. Each turn takes the longest run of the next
    expected calls it holds: taking more in an earlier turn never leaves less for later.
    """
    start = 0
    for turn in turns:
        size = 0
        while start + size < len(wanted) and size < len(turn):
            if _pairs(wanted[start : start + size + 1], turn) != size + 1:
                break
            size += 1
        start += size
    return start == len(wanted)


def _pairs(wanted: Sequence[_Call], made: Sequence[_Call]) -> int:
    """Count the most expected calls that can each be paired with its own fitting call."""
    owner: dict[int, int] = {}  # index in made -> index in wanted

    def place(want: int, seen: set[int]) -> bool:
        for index, call in enumerate(made):
            if index in seen or not _fits(call, wanted[want]):
                continue
            seen.add(index)
            if index not in owner or place(owner[index], seen):
                owner[index] = want
                return True
        return False

    return sum(1 for want in range(len(wanted)) if place(want, set()))


def _shown(turns: Sequence[Sequence[_Call]]) -> str:
    if not any(turns):
        return "no calls"
    if len(turns) == 1:
        return ", ".join(f"{name}({_dump(args)})" for name, args in turns[0])
    return "; ".join(
        f"turn {number}: " + ", ".join(f"{name}({_dump(args)})" for name, args in turn)
        for number, turn in enumerate(turns, start=1)
    )


def _call(call: Any, ignore: Sequence[str]) -> _Call:
    return call.name, _without(call.args, ignore)


def _call_pattern(item: Any, ignore: Sequence[str] = ()) -> _Call:
    if isinstance(item, str):
        return item, None
    args = item.get("args")
    return str(item["name"]), None if args is None else _without(args, ignore)


def _without(value: Any, ignore: Sequence[str]) -> Any:
    """``value`` with the keys named in ``ignore`` left out of every mapping in it."""
    if not ignore:
        return value
    if isinstance(value, Mapping):
        return {k: _without(v, ignore) for k, v in value.items() if k not in ignore}
    if isinstance(value, list):
        return [_without(item, ignore) for item in value]
    return value


def _fits(call: _Call, want: _Call) -> bool:
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
        raise ConfigurationError(f"{where} is not valid YAML: {_one_line(exc)}") from None
    except RecursionError:
        raise ConfigurationError(
            f"{where}: the YAML is nested too deeply to read (at most {MAX_DEPTH} levels)"
        ) from None
    _check_size(data, where)
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


MAX_VALUES = 1_000_000
"""The most values (counted through YAML aliases) an eval file may expand to."""
MAX_DEPTH = 100
"""The deepest nesting of lists and mappings an eval file may hold."""


def _check_size(data: Any, where: Path) -> None:
    """Refuse data that expands past `MAX_VALUES` values or nests past `MAX_DEPTH`.

    YAML aliases share one object, so a few lines of anchors can stand for billions of
    values (an "alias bomb") that every later step (checks, messages) would walk; the walk
    here stops at the limit instead, without recursion.
    """
    count = 0
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise ConfigurationError(
                f"{where}: the file expands to more than {MAX_VALUES:,} values (YAML anchors "
                "and aliases that repeat each other?); write the values out instead"
            )
        if depth > MAX_DEPTH:
            raise ConfigurationError(
                f"{where}: the data is nested more than {MAX_DEPTH} levels deep"
            )
        if isinstance(value, Mapping):
            stack.extend((item, depth + 1) for pair in value.items() for item in pair)
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:500]


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
    if any(unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp") for char in str(case_id)):
        raise ConfigurationError(
            f"{where}: `id` {str(case_id)[:100]!r} holds a control character; ids are "
            "printed and written to JUnit XML, so use plain text"
        )
    where = f"{where} ({case_id})"
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigurationError(f"{where}: `prompt` must be non-empty text")
    files = _mapping(item.get("files") or {}, f"{where}: files")
    if not all(isinstance(v, str) for v in files.values()):
        raise ConfigurationError(f"{where}: `files` maps file names to their text")
    for name in files:
        _check_file_name(name, where)
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


def _tools(tools: Any, where: str) -> tuple[tuple[str, tuple[Any, ...]] | None, tuple[str, ...]]:
    """Read ``expect.tools``: a list (``exact``), or one mode with an optional ``ignore_args``."""
    if tools is None:
        return None, ()
    if isinstance(tools, list):
        tools = {"exact": tools}
    usage = (
        f"{where}: expect.tools must be one of exact, in_order, any_order with a list "
        "(and optionally ignore_args: a list of argument names)"
    )
    if not isinstance(tools, Mapping):
        raise ConfigurationError(usage)
    ignore = tools.get("ignore_args") or []
    modes = {key: value for key, value in tools.items() if key != "ignore_args"}
    if not isinstance(ignore, list) or not all(isinstance(name, str) for name in ignore):
        raise ConfigurationError(f"{where}: expect.tools.ignore_args must be a list of names")
    if len(modes) != 1:
        raise ConfigurationError(usage)
    ((mode, calls),) = modes.items()
    if mode not in _TRAJECTORY_MODES or not isinstance(calls, list):
        raise ConfigurationError(usage)
    for call in calls:
        if not isinstance(call, str) and not (isinstance(call, Mapping) and "name" in call):
            raise ConfigurationError(f"{where}: each expected tool call needs a `name`")
    return (str(mode), tuple(calls)), tuple(ignore)


def _check_file_name(name: Any, where: str) -> None:
    """Refuse a ``files`` name that would be written outside the sample's workspace.

    The workspace is a fresh directory, so the built-in tools' rule (a path must resolve
    inside the root) comes down to: relative, no ``~``, no ``..`` that climbs out of it.
    """
    text = str(name)
    shown = repr(text[:200])
    problem = None
    if not isinstance(name, str) or not text.strip() or "\x00" in text:
        problem = "is empty, not text, or holds a NUL character"
    elif PurePosixPath(text).is_absolute() or text.startswith("~"):
        problem = "is an absolute path, outside the sample's workspace"
    elif len(text) > _MAX_PATH:
        problem = f"is longer than {_MAX_PATH} characters"
    elif posixpath.normpath(text).split("/")[0] == "..":
        problem = "climbs out of the sample's workspace with .."
    elif posixpath.normpath(text) == ".":
        problem = "names the workspace itself, not a file in it"
    if problem is not None:
        raise ConfigurationError(
            f"{where}: files: {shown} {problem}; name a file inside the workspace, e.g. "
            "notes.txt or data/input.csv"
        )


def _expect(data: Mapping[str, Any], where: str) -> Expect:
    _keys(data, _EXPECT_KEYS, f"{where}: expect")
    contains = data.get("text_contains") or ()
    contains = (contains,) if isinstance(contains, str) else tuple(map(str, contains))
    trajectory, ignore = _tools(data.get("tools"), where)
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
        ignore_args=ignore,
        rubric=data.get("rubric"),
        has_output_check="output_equals" in data,
    )
