"""The pure checks of an eval case: matchers, trajectories, typed output."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent import ConfigurationError, ToolCallRecord
from agent.evals import Expect, check, load_evals, matches, score
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


def calls(
    *pairs: tuple[str, dict[str, Any]], turns: tuple[int, ...] = ()
) -> tuple[ToolCallRecord, ...]:
    return tuple(
        ToolCallRecord(n, a, None, ToolResult(""), turns[i] if turns else i + 1)
        for i, (n, a) in enumerate(pairs)
    )


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


def _passes(mode: str, expected: list[Any], made: tuple[ToolCallRecord, ...]) -> bool:
    return check(Expect(tools=(mode, tuple(expected))), Result(tool_calls=made))[-1].passed


def test_parallel_calls_of_one_turn_match_in_any_order_but_turns_keep_their_order() -> None:
    parallel = calls(("b", {}), ("a", {}), ("c", {}), turns=(1, 1, 2))
    assert _passes("exact", ["a", "b", "c"], parallel)
    assert _passes("exact", ["b", "a", "c"], parallel)
    assert not _passes("exact", ["c", "a", "b"], parallel)
    assert not _passes("exact", ["a", "c", "b"], parallel)
    assert _passes("in_order", ["a", "c"], parallel)
    assert _passes("in_order", ["a", "b"], parallel)
    assert not _passes("in_order", ["c", "a"], parallel)
    detail = check(Expect(tools=("exact", ("c",))), Result(tool_calls=parallel))[-1].detail
    assert detail == "the calls were: turn 1: b({}), a({}); turn 2: c({})"


def test_duplicates_are_counted() -> None:
    made = calls(("a", {}), ("a", {}), ("b", {}), turns=(1, 1, 1))
    assert not _passes("any_order", ["a", "b"], made)
    assert not _passes("exact", ["a", "b"], made)
    assert _passes("any_order", ["b", "a", "a"], made)
    assert not _passes("any_order", ["a", "b", "b"], made)
    assert _passes("in_order", ["a", "b"], made)


def test_a_specific_pattern_is_not_starved_by_a_general_one() -> None:
    made = calls(("read", {"path": "x"}), ("read", {"path": "y"}), turns=(1, 1))
    expected = ["read", {"name": "read", "args": {"path": "x"}}]
    assert _passes("any_order", expected, made)
    assert _passes("exact", expected, made)


def test_score_is_precision_recall_and_f1_of_the_calls() -> None:
    made = calls(("a", {}), ("a", {}), ("c", {}))
    found = score(Expect(tools=("exact", ("a", "b"))), Result(tool_calls=made))
    assert found is not None
    assert (found.matched, found.expected, found.made) == (1, 2, 3)
    assert (round(found.precision, 4), found.recall, round(found.f1, 4)) == (0.3333, 0.5, 0.4)
    assert found.to_dict()["f1"] == 0.4
    perfect = score(Expect(tools=("any_order", ("c", "a", "a"))), Result(tool_calls=made))
    assert perfect is not None and perfect.f1 == 1.0
    none = score(Expect(tools=("exact", ())), Result())
    assert none is not None and (none.precision, none.recall, none.f1) == (1.0, 1.0, 1.0)
    missed = score(Expect(tools=("exact", ("a",))), Result())
    assert missed is not None and (missed.precision, missed.recall, missed.f1) == (1.0, 0.0, 0.0)
    assert score(Expect(), Result(tool_calls=made)) is None


def test_ignored_arguments_are_left_out_of_the_comparison(tmp_path: Path) -> None:
    (tmp_path / "e.yaml").write_text(
        """
cases:
  - id: c
    prompt: p
    expect:
      tools:
        exact:
          - {name: fetch, args: {url: u, request_id: 41, meta: {trace: t1, kind: k}}}
        ignore_args: [request_id, trace]
""",
        encoding="utf-8",
    )
    expect = load_evals(tmp_path / "e.yaml").cases[0].expect
    assert expect.ignore_args == ("request_id", "trace")
    made = calls(("fetch", {"url": "u", "request_id": 97, "meta": {"trace": "t9", "kind": "k"}}))
    assert check(expect, Result(tool_calls=made))[-1].passed
    other = calls(("fetch", {"url": "v", "request_id": 41, "meta": {"trace": "t1", "kind": "k"}}))
    assert not check(expect, Result(tool_calls=other))[-1].passed
    without = Expect(tools=expect.tools)
    assert not check(without, Result(tool_calls=made))[-1].passed
    (tmp_path / "bad.yaml").write_text(
        "cases: [{id: c, prompt: p, expect: {tools: {exact: [], ignore_args: id}}}]",
        encoding="utf-8",
    )
    with pytest.raises(ConfigurationError, match="ignore_args must be a list of names"):
        load_evals(tmp_path / "bad.yaml")


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
