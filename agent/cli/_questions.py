"""Answers to the requests a run asks: from ``--answer`` values, else typed on the terminal.

An ``--answer`` value is bound to the kind of request it is meant for, and to one request
when it names its id:

- ``TEXT`` (or ``question=TEXT``) answers a question: the ``question`` tool, or any request
  that is not an approval;
- ``approval=REPLY`` answers an approval: ``y``, ``n [reason]`` or ``e {...json...}``;
- ``question:ID=TEXT`` and ``approval:ID=REPLY`` answer only the request with that id.

So ``--answer yes`` meant for a question never approves a ``bash`` call the model makes
first: that approval finds no answer of its kind and is refused (or asked on the terminal).
"""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from agent.cli._exits import CliError
from agent.cli._secrets import scrub_text

if TYPE_CHECKING:
    from toolnexus import Answer, Request, Toolkit

__all__ = ["Asker", "Given", "parse_answer"]

_KINDS = ("question", "approval")
"""The kinds an ``--answer`` can name."""


@dataclass(frozen=True, slots=True)
class Given:
    """One ``--answer`` value: its text and the request it is meant for."""

    text: str
    """The reply itself."""
    kind: str = "question"
    """``"question"`` (any request that is not an approval) or ``"approval"``."""
    id: str | None = None
    """The one request it answers; ``None``: the next request of its kind."""


def parse_answer(value: str) -> Given:
    """Read an ``--answer`` value: ``TEXT``, ``KIND=TEXT`` or ``KIND:ID=TEXT``.

    Text before the first ``=`` that is not a kind (``x=1``) is part of a plain answer.

    Raises:
        CliError: ``KIND:=TEXT``, a binding with an empty id.
    """
    head, sep, text = value.partition("=")
    kind, colon, request_id = head.partition(":")
    if not sep or kind not in _KINDS:
        return Given(value)
    if colon and not request_id.strip():
        raise CliError(f"--answer {value!r}: give the request id after '{kind}:', or leave it out")
    return Given(text, kind, request_id.strip() or None)


def _kind(request: Request) -> str:
    return "approval" if request.get("kind") == "approval" else "question"


class Asker:
    """The ``wait_for`` of the commands: answers requests from ``--answer``, else the terminal.

    Each question of a request takes the next ``--answer`` value meant for it (one bound to
    the request's id first, then the next one of its kind, see `parse_answer`); when there
    is none, it reads a line of stdin if stdin is a terminal (or ``tty=True``), else
    declines (the model is told nobody answered). End of input declines too. A request of
    kind ``approval`` is asked as y/n/e (see `agent.cli._approval`); ``toolkit`` checks
    edited arguments.

    Args:
        answers: The ``--answer`` values, in order.
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
        self._answers = [parse_answer(answer) for answer in answers]
        self._err = err
        self._tty = sys.stdin.isatty() if tty is None else tty
        self._toolkit = toolkit

    def available(self) -> bool:
        """Whether any answer source exists (given answers or a terminal)."""
        return bool(self._answers) or self._tty

    async def __call__(self, request: Request) -> Answer:
        """Answer ``request``: one answer per question, from ``--answer`` or the terminal."""
        ask = functools.partial(self._one, _kind(request), str(request["id"]))
        if request.get("kind") == "approval":
            from agent.cli._approval import answer_approval

            return await answer_approval(request, ask, self._tell, self._toolkit)
        questions = _questions(request)
        replies: dict[str, str] = {}
        for key, shown in questions:
            reply = await ask(shown)
            if reply is None:
                return {"id": request["id"], "ok": False, "data": "no answer was given"}
            replies[key] = reply
        data: Any = replies[questions[0][0]] if len(questions) == 1 else replies
        return {"id": request["id"], "ok": True, "data": data}

    def _tell(self, text: str) -> None:
        self._err.write(f"  {scrub_text(text)}\n")

    def _take(self, kind: str, request_id: str) -> str | None:
        """Use up the answer meant for this request: bound to its id, else to its kind."""
        for bound in (True, False):
            for index, given in enumerate(self._answers):
                wanted = request_id if bound else None
                if given.kind == kind and given.id == wanted:
                    return self._answers.pop(index).text
        return None

    async def _one(self, kind: str, request_id: str, question: str) -> str | None:
        question = scrub_text(question)  # the model wrote it
        reply = self._take(kind, request_id)
        if reply is not None:
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
