"""Answers to the ``question`` tool: from ``--answer`` values, else typed on the terminal."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from agent.cli._secrets import scrub_text

if TYPE_CHECKING:
    from toolnexus import Answer, Request, Toolkit

__all__ = ["Asker"]


class Asker:
    """The ``wait_for`` of the commands: answers questions from ``--answer``, else the terminal.

    Each question of a request takes the next ``--answer`` value; when they run out, it
    reads a line of stdin if stdin is a terminal (or ``tty=True``), else declines (the model
    is told nobody answered). End of input declines too. A request of kind ``approval`` is
    asked as y/n/e (see `agent.cli._approval`); ``toolkit`` checks edited arguments.

    Args:
        answers: The ``--answer`` values, used in order.
        err: Where the questions are shown.
        tty: Whether to read answers from stdin (default: when stdin is a terminal).
        toolkit: The tools, to check the arguments of an approval's edit against.
    """

    def __init__(
        self,
        answers: Sequence[str],
        err: TextIO,
        *,
        tty: bool | None = None,
        toolkit: Toolkit | None = None,
    ) -> None:
        self._answers = list(answers)
        self._err = err
        self._tty = sys.stdin.isatty() if tty is None else tty
        self._toolkit = toolkit

    def available(self) -> bool:
        """Whether any answer source exists (given answers or a terminal)."""
        return bool(self._answers) or self._tty

    async def __call__(self, request: Request) -> Answer:
        """Answer ``request``: one answer per question, from ``--answer`` or the terminal."""
        if request.get("kind") == "approval":
            from agent.cli._approval import answer_approval

            return await answer_approval(request, self._one, self._tell, self._toolkit)
        questions = _questions(request)
        replies: dict[str, str] = {}
        for key, shown in questions:
            reply = await self._one(shown)
            if reply is None:
                return {"id": request["id"], "ok": False, "data": "no answer was given"}
            replies[key] = reply
        data: Any = replies[questions[0][0]] if len(questions) == 1 else replies
        return {"id": request["id"], "ok": True, "data": data}

    def _tell(self, text: str) -> None:
        self._err.write(f"  {scrub_text(text)}\n")

    async def _one(self, question: str) -> str | None:
        question = scrub_text(question)  # the model wrote it
        if self._answers:
            reply = self._answers.pop(0)
            self._err.write(f"? {question}\n  (answered from --answer: {reply})\n")
            return reply
        if not self._tty:
            return None
        self._err.write(f"? {question}\n> ")
        self._err.flush()
        line = await asyncio.to_thread(sys.stdin.readline)
        return line.rstrip("\n") if line else None


def _questions(request: Request) -> list[tuple[str, str]]:
    """Return (question, question as shown with its options) for each question asked."""
    data = request.get("data")
    items = data.get("questions") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        return [(request["prompt"], request["prompt"])]
    pairs = []
    for item in items:
        fields = item if isinstance(item, dict) else {"question": item}
        text = str(fields.get("question", ""))
        options = fields.get("options")
        shown = f"{text} (options: {', '.join(map(str, options))})" if options else text
        pairs.append((text, shown))
    return pairs
