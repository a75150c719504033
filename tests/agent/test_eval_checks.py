"""The pure checks of an eval case: matchers, trajectories, typed output."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from agent import ConfigurationError, ToolCallRecord
from agent._eval import Expect, check, matches
from toolnexus import ToolResult


@dataclass
class Result:
    status: str = "completed"
    text: str = ""
    tool_calls: tuple[ToolCallRecord, ...] = ()
    limit: str | None = None
    reason: str | None = None
    output: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


def calls(*pairs: tuple[str, dict[str, Any]]) -> tuple[ToolCallRecord, ...]:
    return tuple(ToolCallRecord(n, a, None, ToolResult(""), 1) for n, a in pairs)


def test_matchers() -> None:
    assert matches({"a": 1, "b": [1, 2]}, {"a": 1})
    assert not matches({"a": 1}, {"a": 1, "b": 2})
    assert matches({"path": "src/x.py"}, {"path": {"$regex": r"\.py$"}})
    assert matches("hello world", {"$contains": "world"})
    assert matches(3, {"$oneof": [1, 3]}) and not matches(4, {"$oneof": [1, 3]})
    assert matches(None, {"$any": True})
    assert matches([1, {"k": "v", "x": 0}], [1, {"k": "v"}])
    assert not matches([1], [1, 2])
    with pytest.raises(ConfigurationError, match=r"\$nope"):
        matches(1, {"$nope": 1})


@pytest.mark.parametrize(
    ("mode", "expected", "ok"),
    [
        ("exact", ["read", "write"], True),
        ("exact", ["write", "read"], False),
        ("exact", ["read"], False),
        ("in_order", ["read", {"name": "write", "args": {"path": "b"}}], True),
        ("in_order", [{"name": "write", "args": {"path": "b"}}, "read"], False),
        ("any_order", [{"name": "write"}, {"name": "read", "args": {"path": "a"}}], True),
        ("any_order", ["write", "write"], False),
    ],
)
def test_trajectories(mode: str, expected: list[Any], ok: bool) -> None:
    made = calls(("read", {"path": "a"}), ("write", {"path": "b", "content": "x"}))
    outcome = check(Expect(tools=(mode, tuple(expected))), Result(tool_calls=made))
    assert outcome[-1].passed is ok
    if not ok:
        assert 'read({"path": "a"})' in outcome[-1].detail


def test_typed_output_equals_and_satisfies() -> None:
    class Model:
        def model_dump(self, mode: str) -> dict[str, Any]:
            return {"city": "Paris", "temp": 21}

    expect = Expect(
        output_equals={"city": "Paris", "temp": 21},
        output_satisfies={"temp": {"$oneof": [20, 21]}},
        has_output_check=True,
    )
    assert all(c.passed for c in check(expect, Result(output=Model())))
    failed = [c for c in check(expect, Result(output={"city": "Rome"})) if not c.passed]
    assert [c.name for c in failed] == ["output_equals", "output_satisfies"]
    assert failed[0].detail == 'output was {"city": "Rome"}'
