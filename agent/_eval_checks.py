"""The checks of an eval case: what a run is held to, and how its tool calls score.

Pure functions of a `RunResult` (any object with its fields): they never call a model. The
rubric, the one check that needs a judge model, is run by ``toolnexus-agent eval``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.errors import ConfigurationError

__all__ = ["TRAJECTORY_MODES", "Check", "Expect", "Score", "check", "matches", "score"]

TRAJECTORY_MODES = ("exact", "in_order", "any_order")
"""How ``expect.tools`` compares the calls: as a whole, in order with others allowed, or
paired in any order."""


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
    return _shortened(json.dumps(value, ensure_ascii=False, default=str))


def _quote(text: str) -> str:
    return f"the text was {_shortened(text)!r}"


def _shortened(text: str) -> str:
    """Cut ``text`` to at most 200 characters for a failure's detail."""
    return text if len(text) <= 200 else text[:197] + "..."
