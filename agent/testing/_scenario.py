"""Scenario files: a fake conversation written in YAML instead of Python.

A scenario is a mapping with ``turns`` (or just the list of turns). Each turn is one model
reply, in the vocabulary of the reply builders::

    description: The model reads a file, then answers.
    prompt: What does notes.txt say?        # optional, for runners such as the demo
    strict: true                            # optional (default true)
    batches: {progression: [], endings: [FAILED]}   # Batch API jobs (optional; see FakeGemini)
    turns:
      - thought: I should read the file.    # a thought part first (optional)
        calls:                              # function calls; several = parallel calls
          - name: read
            args: {path: notes.txt}
            id: call_1                      # optional; null = a 2.5-style call without id
        signature: true                     # false sends the calls unsigned
      - expect:                             # checks on the request before answering
          function_response: read           # the last content answers a call to "read"
          contains: hello                   # ... and its response contains "hello"
        capture:                            # values read from the request, used as {name}
          first_line:
            function_response: read
            pattern: "^(.*)$"
        text: "The file starts with: {first_line}"
        finish_reason: STOP
        usage: {promptTokenCount: 12, candidatesTokenCount: 8, totalTokenCount: 20}
      - error: {code: 429, retry_delay: 1.5}  # an HTTP error (also: status, message, quota_id)
      - delay: 0.2                          # wait before answering this turn
        text: Late but fine.
      - blocked: SAFETY                     # a blocked prompt
      - raw: {candidates: [...]}            # a raw GenerateContentResponse

``expect`` may also hold ``user_text`` (the latest user text contains it) and ``tools``
(these function names are declared). A failed expectation or capture answers HTTP 400
``FAILED_PRECONDITION`` (final, so clients do not retry it) and fails ``assert_consumed()``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from agent.errors import AgentError
from agent.testing._fake import FakeGemini
from agent.testing._replies import (
    AUTO,
    Reply,
    ReplyLike,
    TextPart,
    blocked,
    delay,
    error,
    function_call,
    reply,
    thought,
)

__all__ = ["Scenario", "ScenarioError", "load_scenario", "read_scenario"]

_TURN_KEYS = frozenset(
    {
        "text",
        "thought",
        "calls",
        "signature",
        "finish_reason",
        "usage",
        "delay",
        "error",
        "blocked",
        "raw",
        "expect",
        "capture",
        "finish_message",
    }
)
_N = TypeVar("_N", int, float)
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class ScenarioError(AgentError):
    """A scenario file is not valid; the message names the turn and the field."""


@dataclass
class Scenario:
    """A parsed scenario: its replies and the optional fields runners use."""

    turns: list[Any]
    """One script entry per turn (replies, or functions for turns that read the request)."""
    description: str = ""
    """What the scenario shows."""
    prompt: str | None = None
    """The user prompt the scenario answers, if it names one."""
    strict: bool = True
    """Whether the fake validates requests."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Other top-level fields, left for the runner."""

    def fake(self, **kwargs: Any) -> FakeGemini:
        """Return a fresh `FakeGemini` playing this scenario.

        Args:
            **kwargs: Passed on to `FakeGemini`; ``strict`` defaults to the scenario's,
                and the scenario's ``model`` (when it names one) is served beside the
                known models.

        Returns:
            A new fake, its script the scenario's turns.
        """
        kwargs.setdefault("strict", self.strict)
        model = self.extra.get("model")
        if isinstance(model, str) and model:
            kwargs["extra_models"] = [*kwargs.get("extra_models", ()), model]
        fake = FakeGemini(list(self.turns), **kwargs)
        batches = self.extra.get("batches") or {}
        if "progression" in batches:
            fake.batches.progression = tuple(batches["progression"])
        fake.batches.endings = list(batches.get("endings") or ())
        return fake


def read_scenario(source: str | Path | Mapping[str, Any] | list[Any]) -> Scenario:
    """Parse a scenario from a YAML file, YAML text or already-loaded data.

    Example::

        scenario = read_scenario("examples/scenarios/weather.yaml")
        fake = scenario.fake()

    Args:
        source: A path (a ``Path``, or a ``str`` without a newline), YAML text (a ``str``
            with newlines), or the loaded mapping or list of turns.

    Returns:
        The parsed scenario.

    Raises:
        ScenarioError: The scenario is not valid; the message names the turn and field.
        OSError: The file cannot be read.
        yaml.YAMLError: The text is not YAML.
    """
    data: Any = source
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source):
        data = yaml.safe_load(Path(source).read_text(encoding="utf-8"))
    elif isinstance(source, str):
        data = yaml.safe_load(source)
    if isinstance(data, list):
        data = {"turns": data}
    if not isinstance(data, Mapping) or not isinstance(data.get("turns"), list):
        raise ScenarioError("a scenario is a list of turns or a mapping with a 'turns' list")
    captures: dict[str, str] = {}
    names = {
        name
        for turn in data["turns"]
        if isinstance(turn, Mapping) and isinstance(turn.get("capture"), Mapping)
        for name in turn["capture"]
    }
    turns = [_turn(turn, index, captures, names) for index, turn in enumerate(data["turns"])]
    extra = {k: v for k, v in data.items() if k not in ("turns", "description", "prompt", "strict")}
    _check_batches(extra.get("batches"))
    return Scenario(
        turns=turns,
        description=str(data.get("description") or ""),
        prompt=None if data.get("prompt") is None else str(data["prompt"]),
        strict=bool(data.get("strict", True)),
        extra=extra,
    )


_BATCH_STATES = frozenset({"PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "EXPIRED"})


def _check_batches(batches: Any) -> None:
    """Check the scenario's ``batches``: ``progression`` and ``endings``, lists of states.

    Raises:
        ScenarioError: It is not such a mapping.
    """
    if batches is None:
        return
    if not isinstance(batches, Mapping) or set(batches) - {"progression", "endings"}:
        raise ScenarioError("'batches' is a mapping of 'progression' and 'endings' (lists)")
    for name in ("progression", "endings"):
        states = batches.get(name) or []
        if not isinstance(states, list) or not {str(s).upper() for s in states} <= _BATCH_STATES:
            raise ScenarioError(f"batches.{name} is a list of {', '.join(sorted(_BATCH_STATES))}")


def load_scenario(source: str | Path | Mapping[str, Any] | list[Any], **kwargs: Any) -> FakeGemini:
    """Return a `FakeGemini` playing a YAML scenario (see the module docs for the format).

    Example::

        fake = load_scenario("examples/scenarios/weather.yaml")

    Args:
        source: As for `read_scenario`: a path, YAML text, or the loaded data.
        **kwargs: Passed on to `FakeGemini`; ``strict`` defaults to the scenario's.

    Returns:
        A new fake playing the scenario's turns.

    Raises:
        ScenarioError: The scenario is not valid; the message names the turn and field.
        OSError: The file cannot be read.
        yaml.YAMLError: The text is not YAML.
    """
    return read_scenario(source).fake(**kwargs)


def _turn(turn: Any, index: int, captures: dict[str, str], names: set[str]) -> Any:
    where = f"turn {index + 1}"
    if isinstance(turn, str):
        return turn
    if not isinstance(turn, Mapping):
        raise ScenarioError(f"{where}: expected a mapping or a string, got {type(turn).__name__}")
    unknown = sorted(set(turn) - _TURN_KEYS)
    if unknown:
        raise ScenarioError(f"{where}: unknown field(s) {', '.join(unknown)}")
    checks = _expectations(turn.get("expect"), where)
    capture = _capture_rules(turn.get("capture"), where)
    static = _reply(turn, where)  # also reports a malformed turn now, not at request time
    if not checks and not capture and not _uses_placeholders(turn, names):
        return static
    template = {k: v for k, v in turn.items() if k not in ("expect", "capture")}

    def step(body: dict[str, Any]) -> ReplyLike:
        for check in checks:
            check(body)
        for name, (function, pattern) in capture.items():
            found = pattern.search(_response_text(body, function))
            if found is None:
                raise AssertionError(
                    f"{where}: capture {name!r} found no match for {pattern.pattern!r} in the "
                    f"response to {function!r}"
                )
            captures[name] = found.group(1) if pattern.groups else found.group(0)
        return _reply(_substitute(template, captures, names, where), where)

    return step


def _reply(turn: Mapping[str, Any], where: str) -> ReplyLike:
    if "raw" in turn:
        if not isinstance(turn["raw"], Mapping):
            raise ScenarioError(f"{where}: raw must be a GenerateContentResponse mapping")
        value: ReplyLike = dict(turn["raw"])
    elif "error" in turn:
        spec = turn["error"]
        if isinstance(spec, int):
            spec = {"code": spec}
        if not isinstance(spec, Mapping) or "code" not in spec:
            raise ScenarioError(f"{where}: error needs at least a code, e.g. {{code: 429}}")
        value = error(
            _number(spec["code"], int, f"{where}: error code"),
            spec.get("status"),
            spec.get("message"),
            retry_delay=spec.get("retry_delay"),
            quota_id=spec.get("quota_id"),
            mid_stream=bool(spec.get("mid_stream", False)),
        )
    elif "blocked" in turn:
        value = blocked(str(turn["blocked"]))
    else:
        value = _model_turn(turn, where)
    if turn.get("delay") is not None:
        value = delay(_number(turn["delay"], float, f"{where}: delay"), value)
    return value


def _number(value: Any, kind: type[_N], what: str) -> _N:
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ScenarioError(f"{what} must be a number, got {value!r}") from None


def _model_turn(turn: Mapping[str, Any], where: str) -> Reply:
    parts: list[Any] = []
    if turn.get("thought") is not None:
        parts.append(thought(str(turn["thought"])))
    texts = turn.get("text")
    for piece in texts if isinstance(texts, list) else [] if texts is None else [texts]:
        parts.append(TextPart(str(piece)))
    for c_index, call in enumerate(turn.get("calls") or []):
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            raise ScenarioError(f"{where}: calls[{c_index}] needs a name")
        args = call.get("args") or {}
        if not isinstance(args, Mapping):
            raise ScenarioError(f"{where}: calls[{c_index}].args must be a mapping")
        call_id = call.get("id", AUTO)
        parts.append(function_call(call["name"], args, id=call_id))
    signature = turn.get("signature", True)
    return reply(
        *parts,
        finish_reason=turn.get("finish_reason", "STOP"),
        usage=turn.get("usage"),
        signature=AUTO if signature is True else None if signature is False else signature,
        finish_message=turn.get("finish_message"),
    )


def _expectations(spec: Any, where: str) -> list[Callable[[dict[str, Any]], None]]:
    if spec is None:
        return []
    if not isinstance(spec, Mapping):
        raise ScenarioError(f"{where}: expect must be a mapping")
    unknown = sorted(set(spec) - {"function_response", "contains", "user_text", "tools"})
    if unknown:
        raise ScenarioError(f"{where}: unknown expect field(s) {', '.join(unknown)}")
    checks: list[Callable[[dict[str, Any]], None]] = []
    if "function_response" in spec:
        checks.append(_answered(str(spec["function_response"]), spec.get("contains"), where))
    if "user_text" in spec:
        checks.append(_said(str(spec["user_text"]), where))
    if "tools" in spec:
        checks.append(_declared({str(name) for name in spec["tools"]}, where))
    return checks


def _answered(name: str, needle: Any, where: str) -> Callable[[dict[str, Any]], None]:
    def answered(body: dict[str, Any]) -> None:
        text = _response_text(body, name, last_only=True)
        if not text:
            raise AssertionError(f"{where}: expected a function response for {name!r}")
        if needle is not None and str(needle) not in text:
            raise AssertionError(
                f"{where}: the response to {name!r} does not contain {needle!r}: {text[:300]}"
            )

    return answered


def _said(wanted: str, where: str) -> Callable[[dict[str, Any]], None]:
    def said(body: dict[str, Any]) -> None:
        texts = [
            part.get("text", "")
            for content in body.get("contents", [])
            if content.get("role", "user") == "user"
            for part in content.get("parts", [])
        ]
        if not any(wanted in text for text in texts):
            raise AssertionError(f"{where}: no user text contains {wanted!r}")

    return said


def _declared(wanted: set[str], where: str) -> Callable[[dict[str, Any]], None]:
    def declared(body: dict[str, Any]) -> None:
        names = {
            decl.get("name")
            for tool in body.get("tools") or []
            for decl in tool.get("functionDeclarations") or []
        }
        missing = sorted(wanted - names)
        if missing:
            raise AssertionError(f"{where}: functions not declared: {', '.join(missing)}")

    return declared


def _capture_rules(spec: Any, where: str) -> dict[str, tuple[str, re.Pattern[str]]]:
    if spec is None:
        return {}
    if not isinstance(spec, Mapping):
        raise ScenarioError(f"{where}: capture must be a mapping of name -> rule")
    rules: dict[str, tuple[str, re.Pattern[str]]] = {}
    for name, rule in spec.items():
        if (
            not isinstance(rule, Mapping)
            or "function_response" not in rule
            or "pattern" not in rule
        ):
            raise ScenarioError(f"{where}: capture {name!r} needs function_response and pattern")
        try:
            pattern = re.compile(str(rule["pattern"]), re.MULTILINE)
        except re.error as exc:
            raise ScenarioError(f"{where}: capture {name!r}: bad pattern: {exc}") from None
        rules[str(name)] = (str(rule["function_response"]), pattern)
    return rules


def _response_text(body: Mapping[str, Any], name: str, *, last_only: bool = False) -> str:
    """Return the latest function response to ``name`` as text (its output, or the JSON)."""
    contents = body.get("contents") or []
    for content in reversed(contents[-1:] if last_only else contents):
        for part in content.get("parts", []):
            response = part.get("functionResponse")
            if isinstance(response, Mapping) and response.get("name") == name:
                payload = response.get("response") or {}
                for key in ("output", "result", "error"):
                    if isinstance(payload.get(key), str):
                        return str(payload[key])
                return str(payload)
    return ""


def _uses_placeholders(value: Any, names: set[str]) -> bool:
    if isinstance(value, str):
        return any(m.group(1) in names for m in _PLACEHOLDER.finditer(value))
    if isinstance(value, Mapping):
        return any(_uses_placeholders(v, names) for v in value.values())
    if isinstance(value, list):
        return any(_uses_placeholders(v, names) for v in value)
    return False


def _substitute(value: Any, captures: Mapping[str, str], names: set[str], where: str) -> Any:
    if isinstance(value, str):

        def fill(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in names:
                return match.group(0)
            if name not in captures:
                raise AssertionError(f"{where}: {{{name}}} is used before it was captured")
            return captures[name]

        return _PLACEHOLDER.sub(fill, value)
    if isinstance(value, Mapping):
        return {k: _substitute(v, captures, names, where) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, captures, names, where) for v in value]
    return value
