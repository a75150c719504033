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

import dataclasses
import functools
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from agent._calls import call_hook
from agent._capability import Capability, Invocation, Proceed, RunCapability
from agent.errors import ConfigurationError
from toolnexus import ArgumentError, Request, Tool, ToolResult, schema_validator

if TYPE_CHECKING:
    from agent._state import RunState
    from agent.events import ToolCall

HookCaller = Callable[..., Awaitable[Any]]
"""``call_hook(name, hook, *args)``: calls a rule (sync or async), wrapping what it raises."""

__all__ = [
    "ANSWER_SHAPES",
    "APPROVAL",
    "APPROVE_WORDS",
    "DENY_WORDS",
    "Approval",
    "ApprovalPolicy",
    "MalformedAnswer",
    "Decision",
    "Deny",
    "Rule",
    "Verdict",
    "approval_request",
    "check_edit",
    "decide_call",
    "denied",
    "is_approval",
    "read_answer",
    "read_approval",
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

    @staticmethod
    def edit_problem(tool: Tool | None, args: Any) -> str | None:
        """Check arguments a human edited against the tool's schema; return the problem.

        Args:
            tool: The tool the call goes to (``None``: unknown, nothing to check against).
            args: The edited arguments.

        Returns:
            What is wrong with them, or ``None`` when the tool can run with them.
        """
        return check_edit(tool, args)

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


def approval_request(call: ToolCall, args: Mapping[str, Any], request_id: str) -> Request:
    """Return the `Request` that asks a human to approve ``call`` with ``args``."""
    shown = json.dumps(args, ensure_ascii=False)
    return {
        "id": f"approval-{request_id}",
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


APPROVE_WORDS = frozenset({"yes", "y", "approve", "approved", "allow"})
"""Answer data that approves, as a word (case and surrounding spaces do not matter)."""
DENY_WORDS = frozenset({"no", "n", "deny", "denied", "reject"})
"""Answer data that refuses, as a word."""
ANSWER_SHAPES = (
    '{"ok": true} or {"ok": true, "data": {"approved": true}} to approve (with "args": '
    '{...} to run it with edited arguments), {"ok": true, "data": {"approved": false, '
    '"reason": "..."}} or {"ok": false} to refuse; "yes"/"no" as the data also work'
)
"""The answer shapes an approval request takes, as error messages name them."""


class MalformedAnswer(ValueError):
    """An answer to an approval request that neither approves nor refuses in a known shape."""


def read_answer(answer: Any) -> tuple[bool, str | None, Any]:
    """Return ``(approved, reason, edited args or None)`` from an answer to an approval request.

    Only an explicit yes approves: ``ok`` the boolean ``True`` with no data, the data
    ``{"approved": True}`` (a real boolean), ``True`` or a word of `APPROVE_WORDS`. ``ok:
    False``, ``{"approved": False}``, ``False`` or a word of `DENY_WORDS` refuse.

    Raises:
        MalformedAnswer: Anything else (``{"reason": ...}`` alone, ``"maybe"``, ``0``, ``[]``,
            ``{"approved": "false"}``): it neither approves nor refuses.
    """
    if not isinstance(answer, Mapping) or not isinstance(answer.get("ok"), bool):
        raise MalformedAnswer(f"expected an answer mapping with a boolean 'ok': {ANSWER_SHAPES}")
    data = answer.get("data")
    reason = data.get("reason") if isinstance(data, Mapping) else None
    if reason is not None and not isinstance(reason, str):
        raise MalformedAnswer(f"'reason' must be a string: {ANSWER_SHAPES}")
    if answer["ok"] is False:
        return False, reason or "no answer was given", None
    if data is None or data is True:
        return True, None, None
    if data is False:
        return False, None, None
    if isinstance(data, str) and data.strip().lower() in APPROVE_WORDS | DENY_WORDS:
        return data.strip().lower() in APPROVE_WORDS, None, None
    if isinstance(data, Mapping) and isinstance(data.get("approved"), bool):
        approved = bool(data["approved"])
        return approved, reason or None, data.get("args") if approved else None
    shown = _shown(data)
    raise MalformedAnswer(f"the answer {shown} neither approves nor refuses: {ANSWER_SHAPES}")


def _shown(data: Any) -> str:
    text = json.dumps(data, ensure_ascii=False, default=repr)
    return text if len(text) <= 80 else text[:77] + "..."


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


def is_approval(request: Request) -> bool:
    """Whether ``request`` asks to approve a call of this run (not one inside a sub-agent)."""
    return request.get("kind") == APPROVAL and "state" not in request


class Approval(Capability):
    """Asks the `ApprovalPolicy` about each tool call: run it, refuse it, or ask a human."""

    def __init__(self, policy: ApprovalPolicy) -> None:
        self.policy = policy

    def start(self, run: RunState) -> RunCapability:
        return _ApprovalRun(self.policy)


class _ApprovalRun(RunCapability):
    def __init__(self, policy: ApprovalPolicy) -> None:
        self.policy = policy

    async def tool(self, run: RunState, invocation: Invocation, proceed: Proceed) -> ToolResult:
        if invocation.answered is not None:
            request, answer = invocation.answered
            if not is_approval(request):  # the tool's own question: the tool takes it
                return await proceed(invocation)
            return await _apply(run, invocation, request, answer, proceed)
        tool = run.toolkit.get(invocation.call.name)
        if tool is None or self.policy.rule_for(tool) == "allow":
            return await proceed(invocation)  # most calls: nothing to decide
        # The rule sees the arguments the tool would run with (after a before-tool hook).
        call = dataclasses.replace(invocation.call, args=invocation.args)
        rules = functools.partial(call_hook, run)
        decision = await decide_call(self.policy, tool, call, rules)
        if isinstance(decision, Deny):
            return denied(call.name, decision.reason, by="the approval policy")
        if decision == "deny":
            return denied(call.name, None, by="the approval policy")
        if decision == "allow":
            return await proceed(invocation)
        request = approval_request(call, invocation.args, await run.steps.new_id())
        if run.wait_for is None:
            return waiting(request)
        reply = await call_hook(run, "wait_for", run.wait_for, request)
        return await _apply(run, invocation, request, reply, proceed)


def read_approval(
    tool: Tool | None, name: str, answer: Any
) -> tuple[ToolResult | None, dict[str, Any] | None]:
    """Return what an answer to an approval request decides for a call to ``name``.

    Args:
        tool: The tool called (its schema checks edited arguments), or ``None``.
        name: The tool's name, for the refusal's text.
        answer: The answer, in any shape (see `read_answer`).

    Returns:
        ``(refusal, None)`` when the call must not run (refused, unreadable, or edited
        arguments that do not fit the schema); ``(None, edited arguments)`` when it runs
        with edits; ``(None, None)`` when it runs as asked.
    """
    try:
        approved, reason, edited = read_answer(answer)
    except MalformedAnswer as exc:
        return denied(name, f"the answer could not be read ({exc})", by="the approval check"), None
    if not approved:
        return denied(name, reason), None
    if edited is None:
        return None, None
    problem = check_edit(tool, edited)
    if problem is not None:
        message = f"The approved call to {name!r} was edited, but {problem}"
        refusal = ToolResult(
            message.rstrip(".") + ". The tool was not run.",
            is_error=True,
            metadata={"approval": "invalid-edit"},
        )
        return refusal, None
    return None, dict(edited)


async def _apply(
    run: RunState, invocation: Invocation, request: Request, answer: Any, proceed: Proceed
) -> ToolResult:
    """Apply a human's answer to an approval request: run (maybe with edits) or refuse."""
    name = invocation.call.name
    refusal, edited = read_approval(run.toolkit.get(name), name, answer)
    if refusal is not None:
        return refusal
    if edited is not None:
        invocation.args = edited
    invocation.answered = None  # approved: the tool runs afresh
    return await proceed(invocation)
