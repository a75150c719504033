"""Run a tool by name: `execute` (sync) and `execute_async`.

Neither raises for anything a model can cause. An unknown name, arguments that are not
an object or do not fit the schema, a tool that raises (any `BaseException`, including
``GeneratorExit`` and a ``CancelledError`` of its own), hangs past its timeout or returns
something other than text all come back as ``ToolResult(is_error=True)`` with a message
the model can act on, and so does a tool that calls ``sys.exit`` (or argparse on bad
input). Cancellation of the call and ``KeyboardInterrupt`` still propagate.

A call ends at the first of two limits: the tool's own ``Tool.timeout`` (by default
`DEFAULT_TOOL_TIMEOUT`) and the caller's ``ToolContext.timeout``. A sync tool that is
still running then is left to finish on its daemon thread; its result is dropped.

A sync tool runs on a worker thread, unless it says it never blocks (``Tool.inline``): then
it runs on the event loop, with no time limit (nothing could stop it part-way).

What no wrapper can catch: a sync tool that calls ``os._exit`` (or crashes the
interpreter) ends the whole process, agent included. Run such code in a subprocess.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import os
import queue
import threading
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from toolnexus._schema import json_type
from toolnexus.errors import ToolError, describe_failure
from toolnexus.tool import Tool, ToolContext, Toolkit, ToolResult

__all__ = ["execute", "execute_async"]

_DEFAULT_CONTEXT = ToolContext()
T = TypeVar("T")


def _error(message: str) -> ToolResult:
    return ToolResult(message, is_error=True)


def _unknown(tk: Toolkit, name: object) -> ToolResult:
    available = ", ".join(tk.names) or "none"
    return _error(f"Unknown tool {name!r}. Available tools: {available}")


def _as_result(name: str, value: object) -> ToolResult:
    if isinstance(value, str):
        return ToolResult(value)
    if isinstance(value, ToolResult):
        if isinstance(value.output, str):
            return value
        return _error(  # type: ignore[unreachable]
            f"Tool {name!r} returned output of type {type(value.output).__name__}; "
            "expected text. This is a bug in the tool, not in the call."
        )
    return _error(
        f"Tool {name!r} returned {type(value).__name__}; expected text. "
        "This is a bug in the tool, not in the call."
    )


def _settle(future: asyncio.Future[Any], value: object, error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(value)
    elif isinstance(error, StopIteration):
        # A Future refuses StopIteration; hand it on as an ordinary error.
        future.set_exception(RuntimeError("the tool raised StopIteration"))
    else:
        future.set_exception(error)


class _Escaped(Exception):
    """A sync tool raised a `BaseException` that must not cross into the event loop.

    ``SystemExit`` or ``GeneratorExit`` from a worker thread would, if handed to the loop
    as is, end the loop (and with it the agent) instead of failing one call.
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


def _passes_through(error: BaseException) -> bool:
    """Whether ``error`` from a worker thread is handed to the loop as is: Ctrl-C only.

    A thread cannot be cancelled, so a ``CancelledError`` from a sync tool is the tool's
    own and fails the call like any other exception.
    """
    return isinstance(error, KeyboardInterrupt)


def _cancelled() -> bool:
    """Whether the running task is being cancelled (rather than a tool raising the error)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _escaped_result(name: str, error: BaseException) -> ToolResult:
    if isinstance(error, SystemExit):
        code = error.code if error.code is not None else 0
        return _error(f"Tool {name!r} tried to exit the process (exit code {code}).")
    return _error(describe_failure(name, error))


class _Workers:
    """Daemon threads that run sync tools, reused between calls.

    Not the loop's default executor: a tool that hangs past its timeout would keep that
    executor, and with it ``asyncio.run`` (so `execute`) and interpreter exit, waiting for
    it. A hung tool here only occupies its own daemon thread; the next call gets another.
    Idle threads are kept for reuse, so there are at most as many as calls ever ran at once.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1
        if spawn:
            threading.Thread(target=self._work, name="toolnexus-worker", daemon=True).start()
        self._jobs.put(job)

    def _work(self) -> None:
        while True:
            self._jobs.get()()
            with self._lock:
                self._idle += 1


_WORKERS = _Workers()


def _reset_workers_after_fork() -> None:
    # A forked child inherits the idle count but none of the threads.
    global _WORKERS  # noqa: PLW0603
    _WORKERS = _Workers()


os.register_at_fork(after_in_child=_reset_workers_after_fork)


async def in_worker(func: Callable[[], T]) -> T:
    """Run ``func`` on a daemon worker thread and await its outcome.

    Unlike ``asyncio.to_thread``, a ``func`` still running when the caller gives up
    (a timeout) holds neither ``asyncio.run`` nor interpreter exit.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def job() -> None:
        value: object = None
        error: BaseException | None = None
        try:
            value = context.run(func)
        except BaseException as exc:
            error = exc if isinstance(exc, Exception) or _passes_through(exc) else _Escaped(exc)
        # A closed loop means the caller gave up on this call long ago.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle, future, value, error)

    _WORKERS.submit(job)
    return await future


async def _in_thread(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> object:
    """Run a sync handler on a worker thread and await its outcome."""
    return await in_worker(functools.partial(tool.handler, args, ctx))


async def _invoke(tool: Tool, args: dict[str, Any], ctx: ToolContext, is_async: bool) -> object:
    # An async tool, or a sync one that says it never blocks, runs here; any other sync tool
    # on a worker thread.
    if is_async or tool.inline:
        value: object = tool.handler(args, ctx)
    else:
        value = await _in_thread(tool, args, ctx)
    if inspect.isawaitable(value):
        value = await value
    return value


class _Expired(Exception):
    """The call ran past its time limit (not a TimeoutError raised by the tool)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)
        self.seconds = seconds


def _time_limit(tool: Tool, ctx: ToolContext) -> float | None:
    """Return the earlier of the tool's own limit and the caller's (``None``: neither)."""
    return min((s for s in (tool.timeout, ctx.timeout) if s is not None), default=None)


async def _run_bounded(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> object:
    seconds = _time_limit(tool, ctx)
    is_async = inspect.iscoroutinefunction(tool.handler)
    # A sync tool run inline holds the loop from start to end: no timer could ever fire.
    if seconds is None or (tool.inline and not is_async):
        return await _invoke(tool, args, ctx, is_async)
    scope = asyncio.timeout(seconds)
    try:
        async with scope:
            return await _invoke(tool, args, ctx, is_async)
    except TimeoutError:
        if scope.expired():
            raise _Expired(seconds) from None
        raise


async def execute_async(
    tk: Toolkit,
    name: str,
    args: Any = None,
    context: ToolContext | None = None,
) -> ToolResult:
    """Run tool ``name`` of ``tk`` with ``args`` and return its `ToolResult`; never raises.

    Every failure is an error result (``is_error=True``) whose ``output`` has one shape
    per kind of failure, the same however the tool was made (a plain `Tool`,
    `define_tool`, `http_tool`, an MCP server or a built-in):

    - the tool raised `ToolError` (or `ArgumentError`): its message, exactly;
    - the tool raised anything else: ``Tool '<name>' failed: <ExceptionType>: <message>``
      (just ``<ExceptionType>`` when the message is empty);
    - it ran past ``tool.timeout`` or ``context.timeout``, whichever is shorter:
      ``Tool '<name>' timed out after <n> s.``;
    - it called ``sys.exit``: ``Tool '<name>' tried to exit the process (exit code <n>).``;
    - an unknown name: ``Unknown tool '<name>'. Available tools: ...``;
    - arguments that are not an object, or do not fit the schema: a message naming each
      problem.

    Args:
        tk: The toolkit to look ``name`` up in.
        name: The tool's name, as the model sent it.
        args: The arguments, a JSON object; ``None`` means none (Gemini omits ``args``
            for a call without parameters).
        context: The caller's timeout, the model's call id, and on a re-run after a
            suspension the `Answer`; default: no timeout beyond the tool's own.

    Returns:
        The tool's `ToolResult`, or an error result as above.

    Raises:
        asyncio.CancelledError: The call was cancelled (never caught). A tool that raises
            ``CancelledError`` itself while its call is not being cancelled fails the call.
        KeyboardInterrupt: Ctrl-C while the tool ran (never caught).

    Example::

        result = await toolnexus.execute_async(tk, "read", {"path": "README.md"})
        if result.is_error:
            ...
    """
    ctx = context or _DEFAULT_CONTEXT
    tool = tk.get(name) if isinstance(name, str) else None
    if tool is None:
        return _unknown(tk, name)
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        got = json_type(args, article=True)
        return _error(f"Arguments for tool {name!r} must be a JSON object, got {got}.")
    try:
        call_args = tool.validate(args) if tool.validate else dict(args)
        value = await _run_bounded(tool, call_args, ctx)
    except ToolError as exc:
        return _error(str(exc) or type(exc).__name__)
    except _Expired as exc:
        return _error(f"Tool {name!r} timed out after {exc.seconds:g} s.")
    except _Escaped as exc:
        return _escaped_result(name, exc.error)
    except Exception as exc:
        return _error(describe_failure(name, exc))
    except asyncio.CancelledError as exc:
        if _cancelled():
            raise
        return _escaped_result(name, exc)  # the tool's own, not a cancellation of the call
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # from an async tool: fail the call, never end the agent
        return _escaped_result(name, exc)
    return _as_result(name, value)


def execute(
    tk: Toolkit,
    name: str,
    args: Any = None,
    context: ToolContext | None = None,
) -> ToolResult:
    """Run tool ``name`` of ``tk`` from synchronous code; never raises (see `execute_async`).

    Inside a running event loop the call runs on a helper thread with its own loop, so
    it never deadlocks the caller's loop.

    Args:
        tk: The toolkit to look ``name`` up in.
        name: The tool's name, as the model sent it.
        args: The arguments, a JSON object; ``None`` means none.
        context: The per-call timeout, call id and `Answer` (see `ToolContext`).

    Returns:
        The tool's `ToolResult`; any failure is an error result whose message has the
        shapes listed in `execute_async`.

    Raises:
        KeyboardInterrupt: Ctrl-C while the tool ran (never caught).

    Example::

        result = toolnexus.execute(tk, "skill", {"name": "hello-world"})
        print(result.output)
    """
    coro: Awaitable[ToolResult] = execute_async(tk, name, args, context)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)  # type: ignore[arg-type]
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()  # type: ignore[arg-type]
