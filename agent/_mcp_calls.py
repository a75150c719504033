"""A served call: one ``tools/call`` whose work runs in a task of its own, and how it is watched.

Every ``tools/call`` the MCP server takes becomes a `ServedCall`. Its work (a tool, or an
agent run) runs in its own asyncio task and reaches the client only through the call:
`ServedCall.ask` puts a `Request` to the human, `ServedCall.note` says what it is doing.
How the answers come back and the progress goes out depends on the client; each way is a
front door over the same call:

- `inline`, for clients of the handshake protocol (2025-11-25 and earlier): a question is
  sent as ``elicitation/create`` on the call's own request; progress notifications say what
  the call does, on every change and at least every `PROGRESS_EVERY` seconds.
- `rounds`, for 2026-07-28 clients: a question ends the request with an
  ``InputRequiredResult`` carrying the form and the call's `ServedCall.token`; the client
  answers and retries, and the call goes on where it waited (`Calls` keeps it meanwhile).
- tasks, for 2026-07-28 clients that declare the tasks extension: the request returns a
  task at once; ``tasks/get`` reads `snapshot` (the question, the result) and
  ``tasks/update`` answers, so no request lasts longer than a poll.

A client that cannot be asked (no form elicitation) gets every question refused at once,
with the reason: the documented default, and an approval then never runs the tool.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import mcp_types as types
from pydantic import ValidationError

from agent._mcp_forms import Form, answer_from, form_for, unanswered
from agent._redact import scrub

if TYPE_CHECKING:
    from mcp.server.session import ServerSession

    from toolnexus import Answer, Request

__all__ = [
    "ASK_TIMEOUT",
    "NO_ELICITATION",
    "PROGRESS_EVERY",
    "Calls",
    "ServedCall",
    "deliver",
    "error_result",
    "inline",
    "rounds",
    "scrubbed",
    "snapshot",
]

logger = logging.getLogger("agent.mcp")

PROGRESS_EVERY = 10.0
"""Seconds between progress notifications while nothing changes (a host may reset its
request timeout on each one)."""
ASK_TIMEOUT = 1800.0
"""Seconds a question waits for its answer before it counts as refused."""
KEEP_FINISHED = 3600.0
"""Seconds a finished call stays readable (``tasks/get``, a late retry) before it is dropped."""
MAX_CALLS = 1000
"""Calls kept at most for tasks and retries; the oldest finished ones go first."""
POLL_INTERVAL_MS = 1000
"""The ``pollIntervalMs`` a task suggests."""
NO_ELICITATION = "the MCP client cannot ask (it has no form elicitation)"
"""Why a question of a client without elicitation is refused."""

_KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")

Work = Callable[["ServedCall"], Awaitable[types.CallToolResult]]
"""The work of a call: a tool or an agent run, given the call to ask and note through."""


def scrubbed(text: str) -> str:
    """Return ``text`` with the Gemini API keys of the environment replaced by ``***``.

    Model text (an answer, a question, the arguments of a call) could quote the key; nothing
    the server sends carries it.
    """
    for name in _KEY_VARIABLES:
        text = scrub(text, os.environ.get(name))
    return text


def error_result(message: str) -> types.CallToolResult:
    """Return an ``isError`` result whose text is ``message``."""
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


@dataclass(slots=True)
class _Asked:
    """A question the call waits on."""

    key: str
    """Its key in ``inputRequests`` (unique over the call's life)."""
    request: Request
    """What was asked."""
    form: Form
    """The form that asks it."""
    reply: asyncio.Future[Answer]
    """Set once, by the first answer bound to this key."""
    sent: bool = False
    """Whether a front door has put it to the client."""


class ServedCall:
    """One ``tools/call`` in progress: its work's task, its open question, what it is doing.

    Args:
        name: The tool called.
        args: Its arguments, as the client sent them.
        asker: Who asks, in the forms' messages (``"Agent 'helper'"``).
        work: The work; it is started at once in a task of its own.
        can_ask: Whether the client can answer forms; if not, every question is refused.
    """

    def __init__(
        self,
        name: str,
        args: Mapping[str, Any] | None,
        asker: str,
        work: Work,
        *,
        can_ask: bool,
    ) -> None:
        self.token = secrets.token_urlsafe(24)
        """The call's unguessable id: the task id, and the ``requestState`` of a retry."""
        self.name = name
        self.args: dict[str, Any] = dict(args or {})
        self.asker = asker
        self.can_ask = can_ask
        self.status = "started"
        """What the call is doing, in a few words."""
        self.asked: _Asked | None = None
        self.created = time.time()
        self.updated = self.created
        self.finished: float | None = None
        self._started = time.monotonic()
        self._changed = asyncio.Event()
        self._asks = 0
        self.task: asyncio.Task[types.CallToolResult] = asyncio.create_task(self._run(work))

    async def _run(self, work: Work) -> types.CallToolResult:
        try:
            return await work(self)
        except Exception as exc:  # a failure is the client's result, never a crashed server
            logger.exception("served call to %r failed", self.name)
            detail = scrubbed(f"{type(exc).__name__}: {exc}")
            return error_result(f"The call to {self.name!r} failed: {detail}")
        finally:
            self.finished = time.time()
            self._touch()

    async def ask(self, request: Request) -> Answer:
        """Put ``request`` to the client and return its answer (a refusal when none comes)."""
        if not self.can_ask:
            return unanswered(request, NO_ELICITATION)
        self._asks += 1
        loop = asyncio.get_running_loop()
        key = f"{request.get('kind') or 'request'}-{self._asks}"
        form = form_for(request, self.asker)
        form = Form(scrubbed(form.message), form.schema)
        self.asked = _Asked(key, request, form, loop.create_future())
        self._touch()
        try:
            return await asyncio.wait_for(self.asked.reply, ASK_TIMEOUT)
        except TimeoutError:
            return unanswered(request, f"nobody answered within {ASK_TIMEOUT / 60:.0f} minutes")
        finally:
            self.asked = None
            self._touch()

    def reply(self, key: str, action: str | None, content: Any, why: str = "") -> bool:
        """Answer the open question ``key`` with the client's reply; ``False`` if none is open.

        An answer for a key that is not the open question's (never asked, answered already)
        is ignored: an answer binds to the one question it names.
        """
        asked = self.asked
        if asked is None or asked.key != key or asked.reply.done():
            return False
        asked.reply.set_result(answer_from(asked.request, action, content, why))
        return True

    @property
    def question(self) -> _Asked | None:
        """The question the call waits on, unless its answer has come."""
        asked = self.asked
        return asked if asked is not None and not asked.reply.done() else None

    def note(self, status: str) -> None:
        """Say what the call does now (for progress notifications and ``tasks/get``)."""
        if status != self.status:
            self.status = status
            self._touch()

    def status_line(self) -> str:
        """Return the status with the seconds the call has run."""
        return f"{self.status} ({time.monotonic() - self._started:.0f} s)"

    def result(self) -> types.CallToolResult:
        """Return the finished call's result (a cancelled one says so)."""
        if self.task.cancelled():
            return error_result(f"The call to {self.name!r} was cancelled.")
        return self.task.result()

    def _touch(self) -> None:
        self.updated = time.time()
        self._changed.set()

    async def changed(self, within: float) -> bool:
        """Wait until the call changes (a question, a status, its end), at most ``within`` s."""
        try:
            await asyncio.wait_for(self._changed.wait(), max(within, 0.0))
        except TimeoutError:
            return False
        self._changed.clear()
        return True


class Calls:
    """The calls a client may come back to: tasks, and calls waiting on a retry's answer."""

    def __init__(self) -> None:
        self._by_token: dict[str, ServedCall] = {}

    def keep(self, call: ServedCall) -> None:
        """Keep ``call`` findable by its token."""
        self._purge(room=1)
        self._by_token[call.token] = call

    def get(self, token: str) -> ServedCall | None:
        """Return the kept call with this token, or ``None``."""
        self._purge(room=0)
        return self._by_token.get(token)

    def forget(self, call: ServedCall) -> None:
        """Stop keeping ``call`` (its result was delivered)."""
        self._by_token.pop(call.token, None)

    def _purge(self, room: int) -> None:
        """Drop calls finished long ago; leave ``room`` under `MAX_CALLS` (oldest out first).

        A call dropped while it still runs is cancelled: nobody could reach it any more.
        """
        now = time.time()
        for token, call in list(self._by_token.items()):
            if call.finished is not None and now - call.finished > KEEP_FINISHED:
                del self._by_token[token]
        excess = len(self._by_token) + room - MAX_CALLS
        if excess <= 0:
            return
        oldest = sorted(self._by_token.values(), key=lambda c: (c.finished is None, c.created))
        for call in oldest[:excess]:
            call.task.cancel()
            del self._by_token[call.token]


# -- the front doors ----------------------------------------------------------------------


class _Progress:
    """Progress notifications of one request: on each new status, and at least every beat."""

    def __init__(self, session: ServerSession) -> None:
        self.session = session
        self.count = 0
        self.last = time.monotonic()
        self.said = ""

    def wait(self) -> float:
        """Seconds until the next notification is due."""
        return PROGRESS_EVERY - (time.monotonic() - self.last)

    async def tell(self, call: ServedCall) -> None:
        """Send the call's status if it is new or the beat is due."""
        if call.status == self.said and self.wait() > 0:
            return
        self.count += 1
        self.said = call.status
        self.last = time.monotonic()
        await self.session.report_progress(self.count, None, scrubbed(call.status_line()))


async def inline(
    call: ServedCall, session: ServerSession, request_id: types.RequestId | None
) -> types.CallToolResult:
    """Serve ``call`` to a handshake-era client: elicit on its request, report progress.

    Raises:
        asyncio.CancelledError: The request was cancelled (the call is cancelled with it).
    """
    progress = _Progress(session)
    try:
        while not call.task.done():
            asked = call.question
            if asked is not None and not asked.sent:
                asked.sent = True
                action, content, why = await _elicit(session, asked.form, request_id)
                call.reply(asked.key, action, content, why)
                continue
            await call.changed(progress.wait())
            if not call.task.done():
                await progress.tell(call)
    finally:
        if not call.task.done():
            call.task.cancel()
    return call.result()


async def _elicit(
    session: ServerSession, form: Form, request_id: types.RequestId | None
) -> tuple[str | None, Any, str]:
    """Ask ``form`` with ``elicitation/create``; return (action, content, why not answered)."""
    try:
        reply = await asyncio.wait_for(
            session.elicit_form(form.message, form.schema, related_request_id=request_id),
            ASK_TIMEOUT,
        )
    except TimeoutError:
        return None, None, f"nobody answered within {ASK_TIMEOUT / 60:.0f} minutes"
    except Exception as exc:  # any failure to ask refuses: fail closed
        return None, None, f"the MCP client did not answer ({type(exc).__name__})"
    return reply.action, reply.content, ""


async def rounds(
    call: ServedCall, session: ServerSession, calls: Calls
) -> types.CallToolResult | types.InputRequiredResult:
    """Serve ``call`` to a 2026-07-28 client: a question ends this round with its form.

    Raises:
        asyncio.CancelledError: The request was cancelled (the call is cancelled with it).
    """
    progress = _Progress(session)
    try:
        while not call.task.done():
            asked = call.question
            if asked is not None:
                asked.sent = True
                calls.keep(call)
                form = types.ElicitRequestFormParams(
                    message=asked.form.message, requested_schema=asked.form.schema
                )
                return types.InputRequiredResult(
                    input_requests={asked.key: types.ElicitRequest(params=form)},
                    request_state=call.token,
                )
            await call.changed(progress.wait())
            if not call.task.done():
                await progress.tell(call)
    except asyncio.CancelledError:
        call.task.cancel()
        raise
    calls.forget(call)
    return call.result()


def deliver(call: ServedCall, responses: Mapping[str, Any] | None) -> None:
    """Answer the call's open question from a retry's (or ``tasks/update``'s) responses.

    A response in any shape but an elicitation result refuses the question; responses for
    other keys are ignored.
    """
    asked = call.question
    if asked is None or not responses or asked.key not in responses:
        return
    reply = responses[asked.key]
    with contextlib.suppress(ValidationError):
        if not isinstance(reply, types.ElicitResult):
            reply = types.ElicitResult.model_validate(reply, by_name=False)
    if isinstance(reply, types.ElicitResult):
        call.reply(asked.key, reply.action, reply.content)
    else:
        call.reply(asked.key, None, None, "the MCP client's answer was not an elicitation result")


def snapshot(call: ServedCall) -> dict[str, Any]:
    """Return the call as a task of the tasks extension (what ``tasks/get`` answers)."""
    task: dict[str, Any] = {
        "taskId": call.token,
        "status": "working",
        "statusMessage": scrubbed(call.status),
        "createdAt": _iso(call.created),
        "lastUpdatedAt": _iso(call.updated),
        "ttlMs": None,
        "pollIntervalMs": POLL_INTERVAL_MS,
    }
    if call.task.cancelled():
        task["status"] = "cancelled"
    elif call.task.done():
        task["status"] = "completed"
        task["result"] = call.result().model_dump(by_alias=True, mode="json", exclude_none=True)
    elif (asked := call.question) is not None:
        asked.sent = True
        params = {
            "mode": "form",
            "message": asked.form.message,
            "requestedSchema": asked.form.schema,
        }
        task["status"] = "input_required"
        task["inputRequests"] = {asked.key: {"method": "elicitation/create", "params": params}}
    return task


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")
