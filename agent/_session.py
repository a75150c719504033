"""Sessions: a run's transcript loaded from a store, saved after each turn, its archive kept.

``run(prompt, session="id")`` holds the session's lock for the run, starts from the saved
transcript and saves it after every completed turn (atomically: a crash loses at most the
turn in flight). What compaction replaced is kept too: a store with ``append_archive``
(`agent._store.ArchivingStore`) gets what each run adds, appended before the save that drops
it from the transcript (a crash in between repeats a batch, never loses one); any other store
keeps the whole archive in the transcript's metadata.

A save hands the store the whole transcript; a store with ``save_appended``
(`agent._store.AppendingStore`) is also told how many leading Contents it holds already (the
very dicts it loaded or was last given), so it writes only what the turn added. The size of
the last request (``metadata["last_request"]``) is kept too, so the next run's compaction
check starts from it instead of measuring the whole conversation again. Any other metadata
key is the capabilities' (a context cache keeps its name and expiry there, see
`agent._state.RunState.session_metadata`): loaded with the session, kept from save to save.
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

_OWN_KEYS = frozenset({"model", "last_request", "archive"})
"""The metadata keys the session itself writes on every save."""


@dataclass
class Opened:
    """A session held for one run: its transcript, how to save it, and its archive."""

    contents: list[dict[str, Any]] | None = None
    """The saved transcript (``None`` for a new session, or without a session)."""
    save: Checkpoint | None = None
    """Saves the transcript (``None`` without a session)."""
    archive: list[dict[str, Any]] = field(default_factory=list)
    """Where compaction puts what it replaced (drained into the store on each save)."""
    sent: tuple[int, int] = (0, 0)
    """``(promptTokenCount, Contents it covered)`` of the session's last model turn, or
    ``(0, 0)`` when unknown (see `RunState.sent`)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """The capabilities' metadata: loaded with the session, written with every save."""


@contextlib.asynccontextmanager
async def open_session(
    store: Store | None, session: str | None, model: str
) -> AsyncIterator[Opened]:
    """Hold ``session``'s lock in ``store`` for the block; yield what the run needs of it."""
    if session is None or store is None:
        yield Opened()
        return
    from agent._session_lock import session_lock
    from agent._store import AppendingStore, ArchivingStore
    from agent._transcript import Transcript

    appender = store if isinstance(store, ArchivingStore) else None
    appending = store if isinstance(store, AppendingStore) else None
    archive: list[dict[str, Any]] = []
    written: list[dict[str, Any]] = []  # the Contents the store holds, as loaded or saved
    kept: dict[str, Any] = {}  # the capabilities' metadata, changed in place by the run

    async def save(
        contents: list[dict[str, Any]], pending: Request | None, sent: tuple[int, int]
    ) -> None:
        request = {"request": dict(pending)} if pending is not None else None
        metadata: dict[str, Any] = {**kept, "model": model}
        if sent != (0, 0):
            metadata["last_request"] = {"prompt_tokens": sent[0], "contents": sent[1]}
        if appender is not None:
            if archive:
                count = len(archive)
                await appender.append_archive(session, archive[:count])
                del archive[:count]
        elif archive:
            metadata["archive"] = archive
        transcript = Transcript(contents, pending=request, metadata=metadata)
        if appending is not None:
            await appending.save_appended(session, transcript, _kept(written, contents))
        else:
            await store.save(session, transcript)
        written[:] = contents

    async with session_lock(store, session):
        saved = await store.get(session)
        if saved is None:
            yield Opened(None, save, archive, metadata=kept)
            return
        kept.update((k, v) for k, v in saved.metadata.items() if k not in _OWN_KEYS)
        # For a store that appends, an archive saved in the metadata before it could
        # (an older version) moves to its archive on the first save.
        archive.extend(saved.metadata.get("archive") or [])
        written.extend(saved.contents)
        sent = _last_request(saved.metadata.get("last_request"), len(saved.contents))
        yield Opened(saved.contents, save, archive, sent, kept)


def _kept(written: list[dict[str, Any]], contents: list[dict[str, Any]]) -> int:
    """Count the leading Contents that are the very ones the store holds."""
    for index, (old, new) in enumerate(zip(written, contents, strict=False)):
        if old is not new:
            return index
    return min(len(written), len(contents))


def _last_request(value: Any, length: int) -> tuple[int, int]:
    """Read a saved ``last_request``; ``(0, 0)`` when it is missing or does not fit."""
    if not isinstance(value, dict):
        return 0, 0
    tokens, covered = value.get("prompt_tokens"), value.get("contents")
    if type(tokens) is not int or type(covered) is not int or not 0 <= covered <= length:
        return 0, 0
    return (tokens, covered) if tokens > 0 else (0, 0)
