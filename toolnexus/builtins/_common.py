"""What every built-in tool shares: the handler guard, numeric arguments, path locks.

`guarded` wraps a built-in's handler so an unexpected ``OSError`` (a race, an odd path)
becomes a message a model can read.
`whole_number` and `positive_number` read the numeric arguments (``offset``, ``limit``,
``timeout``) with one wording for every tool, huge values included. `path_locks` makes
the read-modify-write of the file tools one step per file when calls run concurrently.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from toolnexus.tool import Handler, ToolContext, ToolError, ToolResult

__all__ = [
    "MAX_PATH",
    "clip",
    "guarded",
    "os_error",
    "path_locks",
    "positive_number",
    "whole_number",
]

MAX_PATH = 4096
"""Longest path (characters) a built-in accepts."""

_SHOWN_DIGITS = 20

SyncHandler = Callable[[dict[str, Any], ToolContext], str | ToolResult]
AsyncHandler = Callable[[dict[str, Any], ToolContext], Awaitable[str | ToolResult]]


def clip(text: str, most: int, note: str = "... [line cut at {most} characters]") -> str:
    """Return ``text`` cut to ``most`` characters, with ``note`` (``{most}`` filled) appended."""
    if len(text) <= most:
        return text
    return text[:most] + note.format(most=most, length=len(text))


def os_error(exc: OSError) -> ToolError:
    """Return a `ToolError` for an unexpected ``OSError`` (a race, an odd path)."""
    where = str(exc.filename or "the file")
    if len(where) > 200:
        where = f"{where[:200]}... ({len(where)} characters)"
    return ToolError(f"Cannot access {where}: {exc.strerror or exc}.")


def guarded(handler: SyncHandler | AsyncHandler) -> Handler:
    """Return ``handler`` with an unexpected ``OSError`` turned into a `ToolError`."""
    if inspect.iscoroutinefunction(handler):

        async def guarded_async(args: dict[str, Any], ctx: ToolContext) -> str | ToolResult:
            try:
                result: str | ToolResult = await handler(args, ctx)
            except OSError as exc:
                raise os_error(exc) from None
            return result

        return guarded_async

    def guarded_sync(args: dict[str, Any], ctx: ToolContext) -> str | ToolResult:
        try:
            result: str | ToolResult = handler(args, ctx)  # type: ignore[assignment]
        except OSError as exc:
            raise os_error(exc) from None
        return result

    return guarded_sync


# -- numeric arguments ------------------------------------------------------------------


def _show(value: float) -> str:
    if isinstance(value, int):
        if abs(value) < 10**_SHOWN_DIGITS:
            return str(value)
        sign = "-" if value < 0 else ""
        return f"about {sign}1e{int(math.log10(abs(value)))}"
    return f"{value:g}"


def _finite(value: float) -> bool:
    return isinstance(value, int) or math.isfinite(value)


def whole_number(args: Mapping[str, Any], name: str, default: int, maximum: int) -> int:
    """Return the whole-number argument ``name`` (1 .. ``maximum``), or raise naming it.

    The schema already made it a number; this checks the value. Python ints of any size
    (JSON allows ``1e400`` digits) are handled without overflow.
    """
    value = args.get(name)
    if value is None:
        return default
    whole = _finite(value) and value == int(value)
    if not whole and not value >= 1:
        raise ToolError(
            f"Invalid arguments: `{name}` must be a positive whole number, got {_show(value)}."
        )
    if not whole:
        raise ToolError(f"Invalid arguments: `{name}` must be a whole number, got {_show(value)}.")
    if value < 1:
        raise ToolError(f"Invalid arguments: `{name}` must be 1 or more, got {_show(value)}.")
    if value > maximum:
        raise ToolError(
            f"Invalid arguments: `{name}` must be at most {maximum}, got {_show(value)}."
        )
    return int(value)


def positive_number(
    args: Mapping[str, Any], name: str, default: float, maximum: float, unit: str
) -> float:
    """Return the positive number argument ``name`` (at most ``maximum``), or raise naming it.

    ``unit`` ("milliseconds", "seconds") goes into the message.
    """
    value = args.get(name)
    if value is None:
        return default
    if not _finite(value) or value <= 0:
        raise ToolError(
            f"Invalid arguments: `{name}` must be a positive number of {unit}, got {_show(value)}."
        )
    if value > maximum:
        raise ToolError(
            f"Invalid arguments: `{name}` must be at most {maximum:g} {unit}, got {_show(value)}."
        )
    return float(value)


# -- per-file locks ---------------------------------------------------------------------

_LOCKS: weakref.WeakValueDictionary[Path, threading.Lock] = weakref.WeakValueDictionary()
_LOCKS_GUARD = threading.Lock()


def _lock_for(path: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        lock = _LOCKS.get(path)
        if lock is None:
            lock = threading.Lock()
            _LOCKS[path] = lock
        return lock


@contextlib.contextmanager
def path_locks(paths: Iterable[Path]) -> Iterator[None]:
    """Hold the lock of every resolved path in ``paths`` (taken in sorted order).

    The file tools are sync callables that `toolnexus.execute` runs on worker threads, so
    two calls of one turn can change one file at once; under these locks each call's
    read-modify-write of a file is one step and no edit is lost. Sorted order lets
    ``apply_patch`` take several locks without deadlocking against another call.
    """
    locks = [_lock_for(path) for path in sorted(set(paths))]
    with contextlib.ExitStack() as stack:
        for lock in locks:
            stack.enter_context(lock)
        yield
