"""One run per session: `session_lock` refuses a second run on a session that is in use.

Two runs on one session are **refused**, never interleaved: the second gets `SessionBusyError`.
Refusing (rather than queueing) keeps a run's outcome independent of whoever else is talking
in the same conversation, and it tells the caller at once.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator

from agent._store import LockingStore, Store, check_session_id
from agent.errors import SessionBusyError

__all__ = ["session_lock"]

# Sessions held in this process: id(store) -> (store, held session ids). The store itself is
# kept referenced while it has holders, so its id cannot be reused by another object meanwhile.
_held: dict[int, tuple[Store, set[str]]] = {}
_held_mutex = threading.Lock()


@contextlib.asynccontextmanager
async def session_lock(store: Store, session_id: str) -> AsyncIterator[None]:
    """Hold a session for the length of one run.

    Works for any store within this process (across tasks, threads and event loops). When the
    store is a `LockingStore` (as `SqliteStore` is), it also excludes runs in other processes.

    Example::

        async with session_lock(store, "alice"):
            transcript = await store.get("alice")
            ...
            await store.save("alice", transcript)

    Args:
        store: Where the session is kept.
        session_id: The session's id (a non-empty string).

    Yields:
        Nothing; the session is held until the block exits, however it exits.

    Raises:
        SessionBusyError: another run holds the session.
        ValueError: ``session_id`` is not a non-empty string.
    """
    check_session_id(session_id)
    key = id(store)
    with _held_mutex:
        _, held = _held.setdefault(key, (store, set()))
        if session_id in held:
            raise SessionBusyError(session_id, "this process")
        held.add(session_id)
    try:
        if isinstance(store, LockingStore):
            async with store.lock_session(session_id):
                yield
        else:
            yield
    finally:
        with _held_mutex:
            held.discard(session_id)
            if not held:
                _held.pop(key, None)
