"""Sessions: a run's transcript loaded from a store, saved after each turn, its archive kept.

``run(prompt, session="id")`` holds the session's lock for the run, starts from the saved
transcript and saves it after every completed turn (atomically: a crash loses at most the
turn in flight). What compaction replaced is kept too: a store with ``append_archive``
(`agent._store.ArchivingStore`) gets what each run adds, appended before the save that drops
it from the transcript (a crash in between repeats a batch, never loses one); any other store
keeps the whole archive in the transcript's metadata.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent._loop import Checkpoint
    from agent._store import Store
    from toolnexus import Request

__all__ = ["Opened", "open_session"]


@dataclass
class Opened:
    """A session held for one run: its transcript, how to save it, and its archive."""

    contents: list[dict[str, Any]] | None = None
    """The saved transcript (``None`` for a new session, or without a session)."""
    save: Checkpoint | None = None
    """Saves the transcript (``None`` without a session)."""
    archive: list[dict[str, Any]] = field(default_factory=list)
    """Where compaction puts what it replaced (drained into the store on each save)."""


@contextlib.asynccontextmanager
async def open_session(
    store: Store | None, session: str | None, model: str
) -> AsyncIterator[Opened]:
    """Hold ``session``'s lock in ``store`` for the block; yield what the run needs of it."""
    if session is None or store is None:
        yield Opened()
        return
    from agent._session_lock import session_lock
    from agent._store import ArchivingStore
    from agent._transcript import Transcript

    appender = store if isinstance(store, ArchivingStore) else None
    archive: list[dict[str, Any]] = []

    async def save(contents: list[dict[str, Any]], pending: Request | None) -> None:
        request = {"request": dict(pending)} if pending is not None else None
        metadata: dict[str, Any] = {"model": model}
        if appender is not None:
            if archive:
                count = len(archive)
                await appender.append_archive(session, archive[:count])
                del archive[:count]
        elif archive:
            metadata["archive"] = archive
        await store.save(session, Transcript(contents, pending=request, metadata=metadata))

    async with session_lock(store, session):
        saved = await store.get(session)
        if saved is not None:
            # For a store that appends, an archive saved in the metadata before it could
            # (an older version) moves to its archive on the first save.
            archive.extend(saved.metadata.get("archive") or [])
        yield Opened(saved.contents if saved else None, save, archive)
