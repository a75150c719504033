"""The ``question`` and ``todowrite`` built-in tools: asking the human, keeping a plan.

``question`` never blocks: it *suspends*. Its result carries ``metadata["pending"]``, a
`Request` the host shows to a human; the host re-runs the call with the `Answer` in
``ToolContext.answer`` and the tool then returns the answer's data as JSON.

Example::

    import toolnexus as tn

    tk = tn.build()
    first = tn.execute(tk, "question", {"questions": [{"question": "Proceed?",
                                                       "options": ["yes", "no"]}]})
    request = first.pending           # {"id": ..., "kind": "question", "prompt": ...}
    answer = {"id": request["id"], "ok": True, "data": {"answers": ["yes"]}}
    tn.execute(tk, "question", {"questions": [...]}, tn.ToolContext(answer=answer))
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from toolnexus._registry import BuiltinSettings
from toolnexus.tool import Handler, Request, ToolContext, ToolError, ToolResult

__all__ = ["question_handler", "render_prompt", "render_todos", "todowrite_handler"]


def render_prompt(questions: Sequence[Mapping[str, Any]]) -> str:
    """Return the human-readable prompt for ``questions``, one question per line.

    A question with options gets `` (options: a, b)`` appended.

    Example::

        render_prompt([{"question": "Color?", "options": ["red", "blue"]}, {"question": "Why?"}])
        # "Color? (options: red, blue)" + newline + "Why?"
    """
    lines = []
    for item in questions:
        text = str(item["question"])
        options = item.get("options") or []
        if options:
            text += f" (options: {', '.join(options)})"
        lines.append(text)
    return "\n".join(lines)


def _check_questions(questions: list[dict[str, Any]]) -> None:
    if not questions:
        raise ToolError("Invalid arguments: `questions` needs at least one question.")
    for index, item in enumerate(questions):
        if not item["question"].strip():
            raise ToolError(f"Invalid arguments: `questions[{index}].question` is empty.")


def _answered(answer: object, request_id: str | None) -> ToolResult:
    if not isinstance(answer, Mapping):
        return ToolResult(
            "The answer to the question(s) is not a mapping with `id`, `ok` and `data` "
            f"(got {type(answer).__name__}); the host passed a malformed Answer.",
            is_error=True,
        )
    if request_id is not None and answer.get("id") != request_id:
        return ToolResult(
            f"The answer is for request {str(answer.get('id'))[:100]!r}, not for this "
            f"question's request {request_id!r}; the host passed the wrong Answer.",
            is_error=True,
        )
    if not answer.get("ok"):
        reason = answer.get("data")
        detail = (
            f": {json.dumps(reason, ensure_ascii=False, default=str)}"
            if reason is not None
            else "."
        )
        return ToolResult(
            f"The human did not answer the question(s){detail} Continue without the answer "
            "or ask differently.",
            is_error=True,
        )
    return ToolResult(json.dumps(answer.get("data"), ensure_ascii=False, default=str))


def _new_id() -> str:
    return uuid.uuid4().hex


def question_handler(settings: BuiltinSettings) -> Handler:
    """Return the handler of ``question``, which suspends with a ``kind="question"`` Request."""

    def handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        questions: list[dict[str, Any]] = args["questions"]
        _check_questions(questions)
        if ctx.answer is not None:
            return _answered(ctx.answer, ctx.call_id)
        prompt = render_prompt(questions)
        request: Request = {
            "id": ctx.call_id or _new_id(),
            "kind": "question",
            "prompt": prompt,
            "data": {"questions": copy.deepcopy(questions)},
        }
        return ToolResult(
            f"Waiting for the human to answer:\n{prompt}",
            metadata={"pending": request},
        )

    return handler


def render_todos(todos: Sequence[Mapping[str, Any]]) -> str:
    """Render a todo list as ``[x] text`` / ``[ ] text`` lines under a count line.

    Example::

        render_todos([{"id": "1", "text": "Write tests", "completed": True}])
        # 1 of 1 todos completed
        # [x] Write tests
    """
    done = sum(1 for todo in todos if todo["completed"])
    lines = [f"{done} of {len(todos)} todos completed"]
    lines += [f"[{'x' if todo['completed'] else ' '}] {todo['text']}" for todo in todos]
    return "\n".join(lines)


def _check_todos(todos: list[dict[str, Any]]) -> None:
    seen: dict[str, int] = {}
    for index, todo in enumerate(todos):
        if not todo["text"].strip():
            raise ToolError(f"Invalid arguments: `todos[{index}].text` is empty.")
        if todo["id"] in seen:
            raise ToolError(
                f"Invalid arguments: `todos[{index}].id` {todo['id']!r} is already used by "
                f"`todos[{seen[todo['id']]}]`; ids must be unique."
            )
        seen[todo["id"]] = index


def todowrite_handler(settings: BuiltinSettings) -> Handler:
    """Return the handler of ``todowrite``: stateless, each call replaces and renders the list."""

    def handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        todos: list[dict[str, Any]] = args["todos"]
        _check_todos(todos)
        if not todos:
            return ToolResult("Todo list cleared (0 todos).", metadata={"todos": []})
        return ToolResult(render_todos(todos), metadata={"todos": copy.deepcopy(todos)})

    return handler
