"""Asking an MCP client: a `Request` as an elicitation form, the client's reply as an `Answer`.

A served call that needs a human (an approval the policy asks for, the ``question`` tool,
any tool that suspends on a `Request`) asks the MCP client with a form-mode elicitation.
`form_for` turns the request into the form; `answer_from` turns the client's reply into the
`Answer` the agent (or the served tool) reads.

Approval is the security control here, so reading it fails closed: only an ``accept`` whose
content picks ``approve`` (or ``edit`` with arguments that parse as a JSON object) approves.
A decline, a cancel, a client that cannot be asked, content in any other shape, or an
``approve`` whose arguments were changed all refuse; the reason says which. Edited
arguments are checked against the tool's schema by whoever runs the tool (the agent's
approval step, or the server for a direct call).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolnexus import Answer, Request

__all__ = [
    "APPROVE",
    "DENY",
    "EDIT",
    "Form",
    "answer_from",
    "form_for",
    "unanswered",
]

APPROVE, DENY, EDIT = "approve", "deny", "edit"
"""The decisions of an approval form."""

_SHOWN_ARGS = 8_000
"""Characters of the arguments shown in an approval's message (the form's field has all)."""


@dataclass(frozen=True, slots=True)
class Form:
    """An elicitation form: the message shown and the flat JSON Schema of the answer."""

    message: str
    """What the human reads."""
    schema: dict[str, Any]
    """The ``requestedSchema``: an object of top-level string (or string-array) fields."""


def form_for(request: Request, asker: str) -> Form:
    """Return the form that asks ``request``.

    Args:
        request: What a tool (or the approval policy) asks.
        asker: Who asks, for the message (``"Agent 'helper'"``, ``"The server"``).
    """
    kind = request.get("kind")
    if kind == "approval":
        return _approval_form(request, asker)
    if kind == "question" and _questions(request):
        return _question_form(request, asker)
    return Form(
        f"{asker} asks:\n{request['prompt']}",
        {
            "type": "object",
            "properties": {"answer": {"type": "string", "title": "Answer"}},
            "required": ["answer"],
        },
    )


def answer_from(request: Request, action: str | None, content: Any, why: str = "") -> Answer:
    """Return the `Answer` to ``request`` that the client's reply gives.

    Args:
        request: The request the form asked.
        action: The reply's ``action`` (``"accept"``, ``"decline"``, ``"cancel"``), or
            ``None`` when the client was not (or could not be) asked.
        content: The reply's ``content`` (only read with ``"accept"``).
        why: With ``action=None``: why nobody answered (the model reads it).
    """
    if action != "accept":
        return unanswered(request, _not_accepted(action, why))
    if not isinstance(content, Mapping):
        return unanswered(request, "the MCP client accepted without an answer")
    if request.get("kind") == "approval":
        return _approval_answer(request, content)
    questions = _questions(request) if request.get("kind") == "question" else []
    if questions:
        return _question_answer(request, questions, content)
    answer = content.get("answer")
    if not isinstance(answer, str):
        return unanswered(request, "the MCP client's answer had no text")
    return {"id": request["id"], "ok": True, "data": answer}


def unanswered(request: Request, reason: str) -> Answer:
    """Return the refusal of ``request``: nothing approved, nothing answered, with why."""
    if request.get("kind") == "approval":
        return {"id": request["id"], "ok": False, "data": {"reason": reason}}
    return {"id": request["id"], "ok": False, "data": reason}


def _not_accepted(action: str | None, why: str) -> str:
    if action == "decline":
        return "declined in the MCP client"
    if action == "cancel":
        return "dismissed in the MCP client without an answer"
    if action is None:
        return why or "the MCP client could not be asked"
    return f"the MCP client answered with the unknown action {action[:40]!r}"


# -- approvals ------------------------------------------------------------------------------


def _approval_form(request: Request, asker: str) -> Form:
    data = request.get("data")
    tool = str(data.get("tool")) if isinstance(data, Mapping) else "a tool"
    args = data.get("args") if isinstance(data, Mapping) else None
    shown = json.dumps(args, ensure_ascii=False, indent=2)
    if len(shown) > _SHOWN_ARGS:
        left = len(shown) - _SHOWN_ARGS
        shown = f"{shown[:_SHOWN_ARGS]}\n... ({left} more characters; the Arguments field has all)"
    message = (
        f"{asker} wants to run the tool {tool!r} with these arguments:\n{shown}\n\n"
        "Approve runs it as shown; deny refuses it (the reason is passed on); edit runs it "
        "with the arguments you write in the Arguments field."
    )
    schema = {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "oneOf": [
                    {"const": APPROVE, "title": "Approve: run it as shown"},
                    {"const": DENY, "title": "Deny: do not run it"},
                    {"const": EDIT, "title": "Edit: run it with the arguments below"},
                ],
            },
            "arguments": {
                "type": "string",
                "title": "Arguments (JSON)",
                "description": "With edit: the arguments to run the tool with, a JSON object.",
                "default": json.dumps(args, ensure_ascii=False),
            },
            "reason": {
                "type": "string",
                "title": "Reason",
                "description": "With deny: why (the model reads it).",
            },
        },
        "required": ["decision"],
    }
    return Form(message, schema)


def _approval_answer(request: Request, content: Mapping[str, Any]) -> Answer:
    """Read an accepted approval form; anything but a clear decision refuses."""
    decision = content.get("decision")
    reason = content.get("reason")
    reason = reason.strip() if isinstance(reason, str) and reason.strip() else None
    if decision == DENY:
        why = reason or "denied in the MCP client"
        return {"id": request["id"], "ok": True, "data": {"approved": False, "reason": why}}
    if decision not in (APPROVE, EDIT):
        return unanswered(
            request, "the MCP client's answer named no decision (approve, deny, edit)"
        )
    data = request.get("data")
    shown = data.get("args") if isinstance(data, Mapping) else None
    written = content.get("arguments")
    edited = _parsed(written) if written is not None else shown
    if edited is None:
        return unanswered(request, "the edited arguments are not a JSON object")
    if decision == APPROVE:
        if edited != shown:
            return unanswered(
                request, "the arguments were changed but the decision was approve; choose edit"
            )
        return {"id": request["id"], "ok": True, "data": {"approved": True}}
    return {"id": request["id"], "ok": True, "data": {"approved": True, "args": edited}}


def _parsed(written: object) -> dict[str, Any] | None:
    """Return the JSON object ``written`` holds, or ``None``."""
    if not isinstance(written, str):
        return None
    try:
        value = json.loads(written)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# -- questions ------------------------------------------------------------------------------


def _questions(request: Request) -> list[Mapping[str, Any]]:
    """Return the ``question`` tool's questions (empty when the data holds none)."""
    data = request.get("data")
    items = data.get("questions") if isinstance(data, Mapping) else None
    if not isinstance(items, list):
        return []
    questions = [item for item in items if isinstance(item, Mapping) and item.get("question")]
    return questions if len(questions) == len(items) else []


def _question_form(request: Request, asker: str) -> Form:
    properties: dict[str, Any] = {}
    for number, item in enumerate(_questions(request), 1):
        text = str(item["question"])
        field: dict[str, Any] = {"title": str(item.get("header") or text), "description": text}
        options = _options(item)
        if options and item.get("multiple"):
            field.update(type="array", items={"type": "string", "enum": options})
        elif options:
            field.update(type="string", enum=options)
        else:
            field["type"] = "string"
        properties[f"answer_{number}"] = field
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return Form(f"{asker} asks:\n{request['prompt']}", schema)


def _options(item: Mapping[str, Any]) -> list[str]:
    options = item.get("options")
    return [str(option) for option in options] if isinstance(options, list) else []


def _question_answer(
    request: Request, questions: Sequence[Mapping[str, Any]], content: Mapping[str, Any]
) -> Answer:
    """Read an accepted question form: one reply per question, as the terminal gives them."""
    replies: dict[str, Any] = {}
    for number, item in enumerate(questions, 1):
        reply = content.get(f"answer_{number}")
        if not _fits(reply, item):
            return unanswered(
                request, f"the MCP client's answer to {item['question']!r} is missing"
            )
        replies[str(item["question"])] = reply
    data = next(iter(replies.values())) if len(replies) == 1 else replies
    return {"id": request["id"], "ok": True, "data": data}


def _fits(reply: object, item: Mapping[str, Any]) -> bool:
    """Whether ``reply`` answers ``item``: text, or among its options when it has some."""
    options = _options(item)
    if options and item.get("multiple"):
        return isinstance(reply, list) and all(choice in options for choice in reply)
    if options:
        return reply in options
    return isinstance(reply, str)
