"""Approval: whether a tool call may run, must be refused, or waits for a human's yes.

An `ApprovalPolicy` decides per call — by tool name, by the tool's source, by the tool's
own ``requires_approval`` flag, and then by a default — and each of those may be a fixed
decision or a function of the call. ``"ask"`` suspends the call with a `Request` of kind
``"approval"`` whose ``data`` is ``{"tool": name, "args": {...}}``; the answer's ``data`` is
``{"approved": bool, "reason"?: str, "args"?: {...}}``. Asking rides on the suspension
machinery every tool has: an agent's ``wait_for`` answers it inline, otherwise the run ends
``"pending"`` and is resumed later, possibly in another process.

Example::

    from agent import Agent, ApprovalPolicy

    def bash_rule(call):
        safe = call.args.get("command", "").split()[:1] in (["ls"], ["git"])
        return "allow" if safe else "ask"

    policy = ApprovalPolicy(tools={"bash": bash_rule}, sources={"mcp": "ask"})
    agent = Agent(toolkit=tk, approval=policy, wait_for=ask_on_the_terminal)
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from agent.errors import ConfigurationError
from toolnexus import Answer, ArgumentError, Request, Tool, ToolResult
from toolnexus._schema import schema_validator

if TYPE_CHECKING:
    from agent._calls import HookCaller
    from agent.events import ToolCall

__all__ = [
    "APPROVAL",
    "ApprovalPolicy",
    "Decision",
    "Deny",
    "Rule",
    "Verdict",
    "approval_request",
    "check_edit",
    "decide_call",
    "denied",
    "read_answer",
    "waiting",
]

APPROVAL = "approval"
"""The ``kind`` of an approval `Request`."""

Decision: TypeAlias = Literal["allow", "deny", "ask"]
"""What happens to a call: it runs, it is refused, or a human is asked first."""


@dataclass(frozen=True, slots=True)
class Deny:
    """A refusal with the reason the model reads (a rule may return it instead of ``"deny"``)."""

    reason: str


Verdict: TypeAlias = "Decision | Deny"
"""A decision, or a refusal with its reason."""

Rule: TypeAlias = "Verdict | Callable[[ToolCall], Verdict | Awaitable[Verdict]]"
"""A fixed decision, or a function (sync or async) of the `ToolCall` that returns one."""


@dataclass(frozen=True, slots=True)
class ApprovalPolicy:
    """Decides, per tool call, ``"allow"``, ``"deny"`` or ``"ask"``.

    The first of these that applies decides: ``tools[call.name]``, then
    ``sources[tool.source]``, then ``"ask"`` for a tool made with ``requires_approval=True``,
    then ``default``. Each may be a decision (``"allow"``, ``"deny"``, ``"ask"``, or
    ``Deny("why")``) or a function of the `ToolCall` returning one, for rules such as "ask
    for bash unless the command is on an allow-list". A call to a tool that does not exist
    is never asked about (it fails as an unknown tool).

    Example::

        ApprovalPolicy(tools={"write": "ask", "bash": bash_rule}, sources={"mcp": "deny"})
    """

    tools: Mapping[str, Rule] = field(default_factory=dict)
    """Rules by tool name."""
    sources: Mapping[str, Rule] = field(default_factory=dict)
    """Rules by tool source (``"builtin"``, ``"mcp"``, ``"native"``, ``"agent"``, ...)."""
    default: Rule = "allow"
    """The rule for every other call."""

    def rule_for(self, tool: Tool) -> Rule:
        """Return the rule that decides calls to ``tool``."""
        if tool.name in self.tools:
            return self.tools[tool.name]
        if tool.source in self.sources:
            return self.sources[tool.source]
        if tool.requires_approval:
            return "ask"
        return self.default

    @classmethod
    def of(cls, value: ApprovalPolicy | Rule | None) -> ApprovalPolicy:
        """Return ``value`` as a policy: a bare rule becomes the ``default`` of one."""
        if value is None:
            return cls()
        if isinstance(value, ApprovalPolicy):
            return value
        return cls(default=value)


_DECISIONS = ("allow", "deny", "ask")


async def decide_call(
    policy: ApprovalPolicy, tool: Tool | None, call: ToolCall, call_hook: HookCaller
) -> Decision | Deny:
    """Return what ``policy`` decides for ``call`` (``"allow"`` when the tool is unknown).

    Raises:
        HookError: A rule function raised (wrapped by ``call_hook``).
        ConfigurationError: A rule returned something other than a decision.
    """
    if tool is None:
        return "allow"
    rule = policy.rule_for(tool)
    decision = await call_hook("approval", rule, call) if callable(rule) else rule
    if isinstance(decision, Deny) or decision in _DECISIONS:
        return decision
    raise ConfigurationError(
        f"the approval rule for {call.name!r} returned {decision!r}; "
        "expected 'allow', 'deny', 'ask' or Deny(reason)"
    )


def approval_request(call: ToolCall, args: Mapping[str, Any]) -> Request:
    """Return the `Request` that asks a human to approve ``call`` with ``args``."""
    shown = json.dumps(args, ensure_ascii=False)
    return {
        "id": f"approval-{uuid.uuid4().hex}",
        "kind": APPROVAL,
        "prompt": f"Allow {call.name} {shown}?",
        "data": {"tool": call.name, "args": dict(args)},
    }


def waiting(request: Request) -> ToolResult:
    """Return the result of a call that waits for approval (it suspends the run)."""
    return ToolResult(
        f"Waiting for a human to approve {request['data']['tool']!r}.",
        metadata={"pending": request},
    )


def denied(name: str, reason: str | None, *, by: str = "the user") -> ToolResult:
    """Return the error result of a refused call; the model reads why.

    Its metadata is ``{"approval": "denied"}``, so hosts can count refusals.
    """
    text = f"{by[0].upper()}{by[1:]} did not approve this call to {name!r}"
    text += f": {reason}" if reason else "."
    return ToolResult(
        text.rstrip(".") + ". The tool was not run.",
        is_error=True,
        metadata={"approval": "denied"},
    )


def read_answer(answer: Answer) -> tuple[bool, str | None, Any]:
    """Return ``(approved, reason, edited args or None)`` from an answer to an approval request.

    ``ok: False`` (declined or expired) is a refusal. ``ok: True`` without ``data`` approves.
    """
    data = answer.get("data")
    fields: Mapping[str, Any] = data if isinstance(data, Mapping) else {}
    reason = fields.get("reason")
    reason = str(reason) if reason else None
    if not answer.get("ok"):
        return False, reason or "no answer was given", None
    approved = bool(fields.get("approved", True))
    return approved, reason, fields.get("args") if approved else None


def check_edit(tool: Tool | None, args: Any) -> str | None:
    """Validate edited arguments against the tool's schema; return the problem, if any."""
    if not isinstance(args, Mapping):
        return "the edited arguments are not a JSON object"
    if tool is None:
        return None
    validate = tool.validate or schema_validator(tool.input_schema)
    try:
        validate(dict(args))
    except ArgumentError as exc:
        return str(exc)
    return None
