"""Replay a stored conversation through the fake Gemini, and fork one at a turn.

`replay` plays a transcript again: a `FakeGemini` answers each model call with the model
turn the transcript recorded (thought signatures included), and each tool call is answered
with the result the transcript recorded, so nothing runs twice. The replayed transcript is
then compared with the recorded one, Content by Content: the loop must send the same
history and keep the same turns, byte for byte.

`fork_point` says where a fork at model turn ``k`` cuts a transcript: after that turn and
the function responses that answered it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ReplayReport", "fork_point", "model_turns", "replay"]

_REPLAY_KEY = "replay-not-a-secret"


@dataclass
class ReplayReport:
    """What a replay found."""

    identical: bool
    """Whether the replayed transcript equals the recorded one, Content for Content."""
    recorded: int
    """Contents in the recorded transcript."""
    replayed: int
    """Contents in the replayed one."""
    requests: int
    """Model calls the replay made."""
    turns: list[dict[str, Any]] = field(default_factory=list)
    """Each recorded model turn: ``{"turn", "calls", "text", "identical"}``."""
    difference: str | None = None
    """Where the two first differ, when they do."""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "identical": self.identical,
            "recorded": self.recorded,
            "replayed": self.replayed,
            "requests": self.requests,
            "turns": self.turns,
            "difference": self.difference,
        }


def model_turns(contents: Sequence[Mapping[str, Any]]) -> list[int]:
    """Return the index of each model turn in a transcript, in order."""
    return [i for i, content in enumerate(contents) if content.get("role") == "model"]


def fork_point(contents: Sequence[Mapping[str, Any]], turn: int) -> int:
    """Return how many leading Contents hold the first ``turn`` model turns.

    The cut comes after model turn ``turn`` and, when it called tools, after the Content
    of their function responses, so the kept history is one a run can continue.

    Raises:
        ValueError: The transcript has no model turn ``turn``.
    """
    turns = model_turns(contents)
    if not 1 <= turn <= len(turns):
        raise ValueError(f"turn {turn} does not exist: the conversation has {len(turns)} turns")
    end = turns[turn - 1] + 1
    if end < len(contents) and _is_responses(contents[end]):
        end += 1
    return end


async def replay(contents: list[dict[str, Any]], model: str) -> ReplayReport:
    """Play ``contents`` again through a fake Gemini and the recorded tool results.

    Args:
        contents: A stored transcript (``Transcript.contents``).
        model: The model it was recorded with (the fake serves any name).

    Returns:
        The `ReplayReport`.
    """
    import toolnexus as tn
    from agent import Agent, ClientSettings, RetryPolicy, RunError, RunLimits
    from agent.testing import FakeGemini, Reply

    script = [
        Reply(tuple(content.get("parts") or ()), signature=None)
        for content in contents
        if content.get("role") == "model"
    ]
    fake = FakeGemini(script, extra_models=[model])
    tools = _recorded_tools(contents)
    limits = RunLimits(max_turns=len(script) + 1, retry=RetryPolicy(attempts=1))
    replayed: list[dict[str, Any]] = []
    async with fake.http_client() as http:
        agent = Agent(
            model,
            tn.toolkit(tools),
            limits=limits,
            client=ClientSettings(api_key=_REPLAY_KEY, http_client=http),
            compaction=False,
        )
        index = 0
        while index < len(contents) and _is_prompt(contents[index]):
            try:
                result = await agent.run(history=[*replayed, contents[index]])
            except RunError as exc:
                result = exc.result
            if len(result.contents) <= len(replayed):
                break
            replayed = result.contents
            index = len(replayed)
    return _compare(contents, replayed, len(fake.requests))


def _is_responses(content: Mapping[str, Any]) -> bool:
    parts = content.get("parts") or []
    return content.get("role") == "user" and any("functionResponse" in p for p in parts)


def _is_prompt(content: Mapping[str, Any]) -> bool:
    return content.get("role", "user") == "user" and not _is_responses(content)


def _recorded_tools(contents: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Return one tool per function name called, answering with the recorded results."""
    from toolnexus import Tool

    answers: dict[str, _Answers] = {}
    for content in contents:
        if not _is_responses(content):
            continue
        for part in content.get("parts") or ():
            response = part.get("functionResponse")
            if isinstance(response, Mapping):
                name = str(response.get("name"))
                answers.setdefault(name, _Answers()).add(response)
    for content in contents:
        for part in content.get("parts") or ():
            call = part.get("functionCall")
            if content.get("role") == "model" and isinstance(call, Mapping):
                answers.setdefault(str(call.get("name")), _Answers())
    return [
        Tool(name, recorded.handler, f"Answers {name} calls from the recording.")
        for name, recorded in answers.items()
    ]


class _Answers:
    """The recorded responses to one tool: by call id, and in order for calls without one."""

    def __init__(self) -> None:
        self.by_id: dict[str, Mapping[str, Any]] = {}
        self.in_order: list[Mapping[str, Any]] = []

    def add(self, response: Mapping[str, Any]) -> None:
        body = response.get("response")
        body = body if isinstance(body, Mapping) else {}
        if isinstance(response.get("id"), str):
            self.by_id[response["id"]] = body
        else:
            self.in_order.append(body)

    def handler(self, args: dict[str, Any], ctx: Any) -> Any:
        from toolnexus import ToolResult

        call_id = getattr(ctx, "call_id", None)
        body = self.by_id.get(call_id) if call_id is not None else None
        if body is None:
            if not self.in_order:
                return ToolResult("the recording has no result for this call", is_error=True)
            body = self.in_order.pop(0)
        output = body.get("output")
        text = output if isinstance(output, str) else json.dumps(body, ensure_ascii=False)
        pending = body.get("pending")
        return ToolResult(
            text,
            is_error=bool(body.get("isError")),
            metadata={"pending": dict(pending)} if isinstance(pending, Mapping) else None,
        )


def _compare(
    recorded: list[dict[str, Any]], replayed: list[dict[str, Any]], requests: int
) -> ReplayReport:
    same = [_canonical(a) == _canonical(b) for a, b in zip(recorded, replayed, strict=False)]
    identical = len(recorded) == len(replayed) and all(same)
    turns = []
    for number, index in enumerate(model_turns(recorded), start=1):
        content = recorded[index]
        parts = content.get("parts") or []
        turns.append(
            {
                "turn": number,
                "calls": [p["functionCall"].get("name") for p in parts if "functionCall" in p],
                "text": "".join(p.get("text", "") for p in parts if not p.get("thought")),
                "identical": index < len(same) and same[index],
            }
        )
    report = ReplayReport(identical, len(recorded), len(replayed), requests, turns)
    if not identical:
        first = next((i for i, ok in enumerate(same) if not ok), len(same))
        if first < len(same):
            report.difference = f"Content {first + 1} differs"
        else:
            report.difference = (
                f"the replay kept {len(replayed)} Contents, the recording {len(recorded)}"
            )
    return report


def _canonical(content: Mapping[str, Any]) -> str:
    return json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
