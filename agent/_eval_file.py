"""Eval files: how one is read and checked into cases, with the defaults applied.

An eval file (YAML or JSON) holds cases; each case is a prompt, optional workspace files,
and what is expected of its run (an `Expect`, whose checks `agent._eval_checks` runs).
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from agent._eval_checks import TRAJECTORY_MODES, Expect
from agent.errors import ConfigurationError

__all__ = ["MAX_DEPTH", "MAX_VALUES", "EvalCase", "EvalFile", "load_evals"]

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
_MAX_PATH = 4096
"""The longest path the built-in file tools take (characters)."""


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
    if mode not in TRAJECTORY_MODES or not isinstance(calls, list):
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
