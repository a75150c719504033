"""The page's conversations: each is a session of the store, driven through its run plans.

A conversation starts from a prompt, and goes on with more prompts and with the answers to
what its runs ask (an approval, a question). Each of those is one run: ``agent.plan(...,
session=id, streaming=True).events()``, driven by a task of its own so that it goes on
whoever watches. Its events are kept in order in the conversation's log, as the page
receives them (`agent.web.event_json`), with a few notes of the page's own between them
(the prompt sent, a decision, a stop, a failure). Every run is recorded
(`agent.recording.record`) for the trace.

A decision is bound to the request it answers: it is taken only when that request is the
one the conversation waits on now, once; any other (stale, repeated, for another request)
is refused and changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent.recording import Recording, record
from agent.web._events import event_json

if TYPE_CHECKING:
    from agent import Agent, Prompt, Store
    from toolnexus import Answer, Request

__all__ = [
    "AgentMaker",
    "AgentOptions",
    "Conversation",
    "Conversations",
    "Entry",
    "Refused",
]

logger = logging.getLogger("agent.web")

IDLE = ("idle", "completed", "pending", "blocked", "incomplete", "failed", "stopped")
"""The states of a conversation with no run going on."""


class Refused(Exception):
    """A request the page cannot carry out: its HTTP status and the reason shown."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True)
class AgentOptions:
    """What the agent of one conversation is made with."""

    session: str
    """The conversation (the store's session id)."""
    model: str | None = None
    """The model; ``None`` for the command's."""
    temperature: float | None = None
    """The sampling temperature; ``None`` for the model's default."""
    turns_kept: int = 0
    """A fork's history already holds this many model turns (a scripted model skips as
    many of its replies)."""


AgentMaker = Callable[[AgentOptions], Awaitable["Agent"]]
"""Makes the agent of a conversation (called once per conversation, when it first runs)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One item of a conversation's log."""

    seq: int
    """Its position, from 1."""
    kind: str
    """``"agent"`` (an event of the run, as `event_json` writes it) or ``"note"``."""
    data: dict[str, Any]
    """The event, or the note (``{"note": "prompt" | "decision" | "stopped" | ...}``)."""


@dataclass(eq=False)
class Conversation:
    """One conversation of the page: a session, its agent, its log and what it waits on."""

    id: str
    """The session id in the store."""
    options: AgentOptions
    """What its agent is made with."""
    title: str = ""
    """Its first prompt, shortened."""
    status: str = "idle"
    """``"running"`` while a run goes on, else how the last one ended (`IDLE`)."""
    pending: Request | None = None
    """The request it waits on, if any."""
    log: list[Entry] = field(default_factory=list)
    """Every event and note of its runs in this process, in order."""
    recording: Recording = field(default_factory=Recording)
    """The trace of its runs in this process."""
    created: float = field(default_factory=time.time)
    """When it started (or was first opened here)."""
    forked_from: tuple[str, int] | None = None
    """``(conversation, turn)`` it was forked from, if it was."""
    history: int = 0
    """Contents its transcript held before its first run here (the log shows the rest)."""
    agent: Agent | None = None
    task: asyncio.Task[None] | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def running(self) -> bool:
        """Whether a run of it is going on."""
        return self.status == "running"

    def add(self, kind: str, data: dict[str, Any]) -> None:
        """Append an entry to the log and wake whoever follows it."""
        self.log.append(Entry(len(self.log) + 1, kind, data))
        self._wake.set()
        self._wake = asyncio.Event()

    async def follow(self, after: int, keepalive: float) -> AsyncIterator[list[Entry]]:
        """Yield the entries after ``after``, then new ones as they come, until it is idle.

        Entries come in batches: all those logged since the last batch (an empty batch when
        ``keepalive`` seconds pass with nothing new: a heartbeat).
        """
        while True:
            wake = self._wake
            if after < len(self.log):
                batch = self.log[after:]
                after += len(batch)
                yield batch
                continue
            if not self.running:
                return
            try:
                await asyncio.wait_for(wake.wait(), keepalive)
            except TimeoutError:
                yield []

    def summary(self) -> dict[str, Any]:
        """Return what the list of conversations shows of it."""
        return {
            "id": self.id,
            "title": self.title,
            "status": self.status,
            "created": self.created,
            "live": bool(self.log),
            "model": self.agent.model if self.agent is not None else self.options.model,
            "forked_from": list(self.forked_from) if self.forked_from else None,
        }


class Conversations:
    """The conversations of one page: started here, or opened from the store."""

    def __init__(self, store: Store, maker: AgentMaker) -> None:
        self.store = store
        self.maker = maker
        self.live: dict[str, Conversation] = {}
        self._ids = itertools.count(1)
        self._stored: dict[str, dict[str, Any]] = {}
        """What the list shows of the store's sessions, read once each."""

    # -- finding ---------------------------------------------------------------------------------

    def new_id(self, prefix: str = "run") -> str:
        """Return a session id no conversation has (``run-20250102-150405-1``)."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        return f"{prefix}-{stamp}-{next(self._ids)}"

    async def get(self, conversation_id: str) -> Conversation:
        """Return the conversation, opening it from the store when it is not live here.

        Raises:
            Refused: 404, no such conversation.
        """
        found = self.live.get(conversation_id)
        if found is not None:
            return found
        transcript = await _saved(self.store, conversation_id)
        if transcript is None:
            raise Refused(404, f"no conversation {conversation_id!r}")
        pending = (transcript.pending or {}).get("request")
        opened = Conversation(
            conversation_id,
            AgentOptions(conversation_id, model=transcript.metadata.get("model")),
            title=title_of(transcript.contents),
            status="pending" if pending else "idle",
            pending=pending,
            created=transcript.updated_at or time.time(),
            history=len(transcript.contents),
        )
        return self.live.setdefault(conversation_id, opened)

    async def listing(self) -> list[dict[str, Any]]:
        """Return every conversation, live ones and the store's, newest first."""
        items = {c.id: c.summary() for c in self.live.values()}
        ids = getattr(self.store, "session_ids", None)
        for session in await ids() if callable(ids) else []:
            if session not in items:
                found = self._stored.get(session) or await self._describe(session)
                if found is not None:
                    items[session] = found
        return sorted(items.values(), key=lambda item: -float(item["created"] or 0))

    async def _describe(self, session: str) -> dict[str, Any] | None:
        """Read a stored session once for the list (the page polls the list)."""
        transcript = await _saved(self.store, session)
        if transcript is None:
            return None
        pending = (transcript.pending or {}).get("request")
        self._stored[session] = {
            "id": session,
            "title": title_of(transcript.contents),
            "status": "pending" if pending else "idle",
            "created": transcript.updated_at or 0.0,
            "live": False,
            "model": transcript.metadata.get("model"),
            "forked_from": None,
        }
        return self._stored[session]

    # -- starting and steering -------------------------------------------------------------------

    async def start(
        self, prompt: Prompt | None, note: dict[str, Any], options: AgentOptions, history: int = 0
    ) -> Conversation:
        """Start a conversation on ``prompt``; the session holds ``history`` Contents already."""
        conversation = Conversation(options.session, options, title=_title(note), history=history)
        self.live[conversation.id] = conversation
        try:
            await self.send(conversation, prompt, note)
        except Refused:
            del self.live[conversation.id]  # it never started
            raise
        return conversation

    async def send(
        self, conversation: Conversation, prompt: Prompt | None, note: dict[str, Any]
    ) -> None:
        """Run the conversation on a new prompt (``None``: go on from its history).

        Raises:
            Refused: 409, a run of it is going on.
        """
        async with conversation.lock:
            if conversation.running:
                raise Refused(409, "a run of this conversation is going on; stop it first")
            conversation.title = conversation.title or _title(note)
            conversation.add("note", note)
            conversation.pending = None
            await self._launch(conversation, prompt=prompt)

    async def decide(self, conversation: Conversation, request_id: Any, answer: Answer) -> None:
        """Resume the conversation with ``answer`` to the request it waits on.

        Raises:
            Refused: 409, the conversation does not wait on ``request_id`` now (it was
                answered already, never asked, or a run is going on).
        """
        async with conversation.lock:
            waiting = conversation.pending
            if conversation.running or waiting is None or waiting.get("id") != request_id:
                raise Refused(
                    409,
                    f"the conversation does not wait on request {request_id!r} now; "
                    "nothing was changed",
                )
            conversation.pending = None  # taken: the same decision again is refused
            try:
                await self._launch(conversation, answer=answer)
            except BaseException:
                conversation.pending = waiting  # nothing ran: it still waits
                raise
            conversation.add("note", {"note": "decision", "request": request_id, "answer": answer})

    async def stop(self, conversation: Conversation) -> None:
        """Stop the run going on: its tool calls are cancelled, its completed turns kept.

        Raises:
            Refused: 409, no run is going on.
        """
        task = conversation.task
        if task is None or task.done():
            raise Refused(409, "no run of this conversation is going on")
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def aclose(self) -> None:
        """Stop every run still going on (the page is closing)."""
        for conversation in list(self.live.values()):
            if conversation.task is not None and not conversation.task.done():
                await self.stop(conversation)

    async def agent_of(self, conversation: Conversation) -> Agent:
        """Return the conversation's agent, made on first use.

        Raises:
            Refused: 500, the agent could not be made (the reason is shown).
        """
        if conversation.agent is None:
            try:
                conversation.agent = await self.maker(conversation.options)
            except Exception as exc:  # the maker is the host's code: any failure is reported
                raise Refused(500, f"could not make the agent: {exc}") from exc
        return conversation.agent

    async def _launch(
        self,
        conversation: Conversation,
        *,
        prompt: Prompt | None = None,
        answer: Answer | None = None,
    ) -> None:
        if conversation.agent is None:
            conversation.agent = await self.agent_of(conversation)
        conversation.status = "running"
        conversation.task = asyncio.create_task(self._drive(conversation, prompt, answer))

    async def _drive(
        self, conversation: Conversation, prompt: Prompt | None, answer: Answer | None
    ) -> None:
        """Run once and log every event; the run's end sets the conversation's state.

        A run that fails or is stopped leaves the session as its last save has it: what the
        conversation waits on then is read back from the store.
        """
        from agent import ConfigurationError, RunError, SessionError

        status, pending = "failed", None
        try:
            status, pending = await self._events(conversation, prompt, answer)
        except asyncio.CancelledError:
            status = "stopped"
            conversation.add("note", {"note": "stopped"})
        except (RunError, ConfigurationError, SessionError, TypeError) as exc:
            conversation.add("note", _failure(exc))
        except Exception as exc:  # a defect, not the run's: shown, and logged with its trace
            logger.exception("the run of conversation %s failed", conversation.id)
            conversation.add("note", _failure(exc))
        if status in ("failed", "stopped"):
            saved = await _saved(self.store, conversation.id)
            pending = (saved.pending or {}).get("request") if saved is not None else None
        conversation.pending = pending
        conversation.status = status
        conversation.add("note", {"note": "idle", "status": status})

    async def _events(
        self, conversation: Conversation, prompt: Prompt | None, answer: Answer | None
    ) -> tuple[str, Request | None]:
        """Drive one run through its plan, logging each event; return how it ended."""
        from agent.events import DoneEvent

        assert conversation.agent is not None
        plan = conversation.agent.plan(
            prompt, session=conversation.id, answer=answer, streaming=True
        )
        ended: tuple[str, Request | None] = ("failed", None)
        with record(conversation.recording):
            async with contextlib.aclosing(plan.events()) as events:
                async for event in events:
                    conversation.add("agent", event_json(event))
                    if isinstance(event, DoneEvent):
                        ended = (event.result.status, event.result.pending)
        return ended


def _failure(exc: BaseException) -> dict[str, Any]:
    return {"note": "error", "error": type(exc).__name__, "message": str(exc)}


def title_of(contents: list[dict[str, Any]]) -> str:
    """Return the first user text of a transcript, shortened: the conversation's title."""
    for content in contents:
        if content.get("role") != "user":
            continue
        for part in content.get("parts") or ():
            text = part.get("text")
            if isinstance(text, str) and text.strip():
                return _shorten(text)
    return ""


def _title(note: Mapping[str, Any]) -> str:
    text = note.get("text")
    return _shorten(text) if isinstance(text, str) else ""


def _shorten(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 80 else line[:79] + "…"


async def _saved(store: Store, session: str) -> Any:
    """Return the store's transcript of ``session`` (``None`` when unknown or unreadable)."""
    from agent import SessionError, TranscriptError

    try:
        return await store.get(session)
    except (ValueError, SessionError, TranscriptError):
        return None
