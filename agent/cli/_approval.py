"""``--approval ask|edits|never-ask``: which tool calls the commands ask about; the prompt.

- ``ask`` (the default): ask before ``bash``, the file-changing tools (``write``, ``edit``,
  ``apply_patch``) and any tool made with ``requires_approval``;
- ``edits``: file changes run without asking; ``bash`` and ``requires_approval`` tools ask;
- ``never-ask``: nothing asks.

``run`` and ``chat`` ask on the terminal: ``y`` approves, ``n`` refuses (text after it is the
reason the model reads, e.g. ``n use a temp file``), ``e`` approves with edited arguments
typed as JSON (checked against the tool's schema); anything else (Enter, ``ok``) is asked
again. ``batch`` has nobody to ask: a call that
would ask is refused, unless the tasks file allows the tool.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent import ApprovalPolicy
    from toolnexus import Answer, Request, Toolkit

__all__ = ["MODES", "add_approval_flag", "answer_approval", "cli_policy"]

MODES = ("ask", "edits", "never-ask")
"""The values of ``--approval``."""

EDIT_TOOLS = ("write", "edit", "apply_patch")
"""The built-in tools that change files."""

COMMAND_TOOLS = ("bash",)
"""The built-in tools that run commands."""

_EDIT_TRIES = 3
_ASK_TRIES = 10
"""Replies that are not y/n/e before the call is refused (a feed that never says)."""


def add_approval_flag(parser: argparse.ArgumentParser, *, batch: bool = False) -> None:
    """Declare ``--approval``."""
    where = (
        "in a batch, a call that would ask is refused unless the task's `allow` lists it"
        if batch
        else "asked on the terminal: y, n [reason] or e (edit the arguments)"
    )
    parser.add_argument(
        "--approval",
        choices=MODES,
        default="ask",
        help=(
            "ask before bash, file changes and tools that require approval (ask, the "
            f"default); let file changes through (edits); or never ask (never-ask); {where}"
        ),
    )


def cli_policy(
    mode: str, toolkit: Toolkit, *, allow: Iterable[str] = (), unattended: bool = False
) -> ApprovalPolicy:
    """Return the approval policy of ``--approval MODE`` over ``toolkit``.

    Args:
        mode: ``"ask"``, ``"edits"`` or ``"never-ask"``.
        toolkit: The tools (``never-ask`` and ``allow`` name them one by one).
        allow: Tool names that run without asking (a batch task's ``allow``).
        unattended: Nobody can answer: a call that would ask is refused instead, with a
            reason that says how to allow it.

    Returns:
        The policy to give the agent.
    """
    from agent import ApprovalPolicy, Deny

    rules: dict[str, Any] = {}
    if mode == "never-ask":
        rules.update((name, "allow") for name in toolkit.names)
    else:
        asked = COMMAND_TOOLS + (EDIT_TOOLS if mode == "ask" else ())
        rules.update((name, "ask") for name in asked if name in toolkit)
        if mode == "edits":
            rules.update((name, "allow") for name in EDIT_TOOLS if name in toolkit)
    rules.update((name, "allow") for name in allow)
    policy = ApprovalPolicy(tools=rules)
    if not unattended:
        return policy
    asking = {
        tool.name: Deny(
            "nobody can approve it in a batch run; the tasks file can allow it with "
            f"`allow: [{tool.name}]`"
        )
        for tool in toolkit
        if policy.rule_for(tool) == "ask"
    }
    return ApprovalPolicy(tools={**rules, **asking})


Ask = Callable[[str], Awaitable[str | None]]
"""Shows a question and returns the reply (``None``: no answer)."""


async def answer_approval(
    request: Request, ask: Ask, tell: Callable[[str], None], toolkit: Toolkit | None
) -> Answer:
    """Ask y/n/e about an approval request; return the answer.

    ``y`` approves; ``n`` refuses, with any text after it as the reason; ``e`` asks for
    the edited arguments as a JSON object and checks them against the tool's schema (up
    to three tries; ``tell`` shows why one was refused). Any other reply (Enter, ``ok``)
    approves nothing: ``tell`` says what is accepted and the question is asked again. No
    answer refuses.
    """
    prompt = f"{request['prompt']} [y]es / [n]o [reason] / [e]dit"
    for _ in range(_ASK_TRIES):
        reply = await ask(prompt)
        if reply is None:
            return _no(request, "no answer was given")
        choice, _, rest = reply.strip().partition(" ")
        choice = choice.lower().rstrip(":")
        if choice in ("y", "yes"):
            return {"id": request["id"], "ok": True, "data": {"approved": True}}
        if choice in ("e", "edit"):
            return await _edit(request, rest.strip() or None, ask, tell, toolkit)
        if choice in ("n", "no"):
            return _no(request, rest.strip() or None)
        tell(
            f"{reply.strip()!r} is not an answer: type y to approve, n (and a reason) to "
            "refuse, or e to edit the arguments"
        )
    return _no(request, "no y/n/e answer was given")


async def _edit(
    request: Request,
    text: str | None,
    ask: Ask,
    tell: Callable[[str], None],
    toolkit: Toolkit | None,
) -> Answer:
    """Approve with the arguments typed as JSON (``text``, else asked), once they fit."""
    from agent import ApprovalPolicy

    data = request.get("data") or {}
    name = str(data.get("tool", ""))
    tool = toolkit.get(name) if toolkit is not None else None
    for _ in range(_EDIT_TRIES):
        if text is None:
            text = await ask(f"the arguments for {name} as JSON (was {_json(data)})")
        if text is None:
            break
        try:
            edited = json.loads(text)
        except ValueError as exc:
            problem: str | None = f"not JSON: {exc}"
        else:
            problem = ApprovalPolicy.edit_problem(tool, edited)
        if problem is None:
            return {"id": request["id"], "ok": True, "data": {"approved": True, "args": edited}}
        tell(f"cannot use these arguments: {problem}")
        text = None
    return _no(request, "the edited arguments were not usable")


def _no(request: Request, reason: str | None) -> Answer:
    data: dict[str, Any] = {"approved": False}
    if reason:
        data["reason"] = reason
    return {"id": request["id"], "ok": True, "data": data}


def _json(data: Any) -> str:
    return json.dumps(data.get("args", {}), ensure_ascii=False)
