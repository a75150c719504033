"""A durable run's events in its DBOS stream: written a turn at a time, read once each.

The run keeps its events until the next write. Before each model call they are written
from inside the call's step: a stream write made in a step is one database transaction and
no step record of its own, where a write made by the workflow costs a step record too. The
events of the last turn, and those before a wait for an answer, are written by the
workflow, as there is no step to carry them.

A step that a crash cut off runs again when the run recovers, and writes its entry again.
So each entry carries its number in the run (the same in a replay: the writes happen at
the same points), and a reader skips an entry whose number it has read already.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from dbos import DBOS

if TYPE_CHECKING:
    from agent.events import Event

__all__ = ["EVENTS_STREAM", "EventLog", "read_events", "write_entry"]

EVENTS_STREAM = "toolnexus.events"
"""The DBOS stream a durable run writes its events to (see `agent.dbos.follow`)."""


class EventLog:
    """A durable run's events since its last write to the stream, and the writes' count."""

    def __init__(self) -> None:
        self.pending: list[Event] = []
        """The events not written yet."""
        self.written = 0
        """How many entries the run has written (the next entry's number)."""

    def add(self, event: Event) -> None:
        """Keep ``event`` for the next write."""
        self.pending.append(event)

    def take(self) -> dict[str, Any] | None:
        """Return the next entry (the events kept so far, numbered), or ``None`` when empty.

        Taken in a replay too, where the step that would write it hands back its recorded
        outcome instead: the numbers stay those of the first execution.
        """
        if not self.pending:
            return None
        entry = {"number": self.written, "events": self.pending}
        self.pending = []
        self.written += 1
        return entry

    async def flush(self) -> None:
        """Write the events kept so far from the workflow (nothing when there are none)."""
        entry = self.take()
        if entry is not None:
            await write_entry(entry)


async def write_entry(entry: dict[str, Any]) -> None:
    """Write one entry of events to the run's stream (from its workflow or one of its steps)."""
    await DBOS.write_stream_async(EVENTS_STREAM, entry)


async def read_events(entries: AsyncIterator[Any]) -> AsyncGenerator[Event, None]:
    """Yield the events of a run's stream entries in order, each once.

    An entry whose number was read already (written again by a step that a crash cut off)
    is skipped. Runs of older versions wrote a list per turn, or one event per entry.
    """
    read = -1
    async for entry in entries:
        if isinstance(entry, Mapping):
            if entry["number"] <= read:
                continue
            read = entry["number"]
            events = entry["events"]
        else:
            events = entry if isinstance(entry, list) else [entry]
        for event in events:
            yield event
