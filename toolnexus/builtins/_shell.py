"""The ``bash`` built-in tool: run one shell command in the workspace.

The command runs in its own process group with stdin from ``/dev/null`` and the
workspace root (or ``workdir``) as its working directory. Output (stdout and stderr
combined) is read as it arrives and only the first ``Limits.max_bytes`` bytes are kept,
so a command printing gigabytes costs no memory. On a timeout, and when the call is
cancelled, the whole process group is killed; a process that left the group (``setsid``)
is not, and the output pipe is closed even while such a process still holds it.

The command inherits the host's environment except the variables in
``BuiltinSettings.hidden_env`` (by default ``GEMINI_API_KEY`` and ``GOOGLE_API_KEY``, so a
command cannot print the agent's key into the transcript; ``build(hidden_env=...)``
changes the set).

Hiding the variables is not enough on its own: ``/proc/<pid>/environ`` (what
``cat /proc/$PPID/environ`` and ``ps eww`` read) shows the environment a process was
*started* with, so the agent's key stays readable there whatever the agent later removes
from ``os.environ``. So each command runs in its own PID namespace under bubblewrap
(``bwrap``) with a fresh ``/proc``: it sees only its own processes, never the agent's.
Everything else stays as on the host (the whole file system, the network, the user); as
root the command also loses ``CAP_SYS_ADMIN``, which could otherwise unmount the fresh
``/proc``. Every process of a command ends when the command does, background ones
included. Where ``bwrap`` is missing or cannot create namespaces, commands run plainly (a
warning is logged once) and can read the agent's environment; ``build(isolate_shell=False)``
asks for that on purpose.

This is not a sandbox: the command can do anything the host user can. Drop the tool
(``build(builtins={"tools": {"bash": False}})``) or replace it with your own for
untrusted models.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolnexus._registry import BuiltinSettings, Limits
from toolnexus.builtins._arguments import positive_number
from toolnexus.builtins._output import cap
from toolnexus.builtins._workspace import Workspace
from toolnexus.tool import Handler, ToolContext, ToolError, ToolResult

__all__ = ["bash_handler"]

logger = logging.getLogger("toolnexus.bash")

DEFAULT_TIMEOUT_MS = 60_000
MAX_TIMEOUT_MS = 86_400_000
"""Longest ``timeout`` a call may ask for (one day)."""
_DRAIN_GRACE_S = 1.0
"""How long output may keep flowing after the shell exits (from background processes)."""


@dataclass
class _Output:
    """The first ``keep`` bytes of a stream, and how much there was in total."""

    keep: int
    head: bytearray = field(default_factory=bytearray)
    total_bytes: int = 0
    total_lines: int = 0
    ends_with_newline: bool = True

    def add(self, chunk: bytes) -> None:
        room = self.keep - len(self.head)
        if room > 0:
            self.head += chunk[:room]
        self.total_bytes += len(chunk)
        self.total_lines += chunk.count(b"\n")
        self.ends_with_newline = chunk.endswith(b"\n")

    def render(self, limits: Limits) -> str:
        text = self.head.decode("utf-8", errors="replace")
        hint = "Redirect the output to a file and use grep or read on it to see the rest."
        if self.total_bytes <= self.keep:
            return cap(text, max_lines=limits.max_lines, max_bytes=limits.max_bytes, hint=hint)
        lines = text.splitlines(keepends=True)[: limits.max_lines]
        kept = "".join(lines)
        if not kept.endswith("\n"):
            kept += "\n"
        total_lines = self.total_lines + (0 if self.ends_with_newline else 1)
        return (
            f"{kept}[output truncated: showed {kept.count(chr(10))} of {total_lines} lines, "
            f"{len(kept.encode('utf-8'))} of {self.total_bytes} bytes. {hint}]"
        )


def _timeout_seconds(args: dict[str, Any]) -> float:
    milliseconds = positive_number(
        args, "timeout", DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS, "milliseconds"
    )
    return milliseconds / 1000.0


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class _Shell(asyncio.SubprocessProtocol):
    """Collects the output of one command and tells when it exited and its pipe closed."""

    def __init__(self, out: _Output) -> None:
        self.out = out
        self.exited = asyncio.Event()
        self.drained = asyncio.Event()
        """Set once every writer of the output pipe (background processes too) is gone."""

    def pipe_data_received(self, fd: int, data: bytes | bytearray) -> None:
        self.out.add(bytes(data))

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self.drained.set()

    def process_exited(self) -> None:
        self.exited.set()


async def _within(event: asyncio.Event, seconds: float) -> bool:
    """Wait up to ``seconds`` for ``event``; tell whether it is set."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()
    return event.is_set()


@dataclass
class _Outcome:
    """How a command ended, besides its exit code."""

    timed_out: bool = False
    """The command ran past its timeout and its process group was killed."""
    stopped_background: bool = False
    """Background processes in the group still held the output and were killed."""
    escaped: bool = False
    """A process that left the process group (setsid) still holds the output."""


def _environment(hidden: frozenset[str]) -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name not in hidden}


def _bwrap_prefix(bwrap: str, cwd: Path) -> list[str]:
    """Return the ``bwrap`` arguments running a command in a new PID namespace, all else shared."""
    prefix = [bwrap, "--dev-bind", "/", "/", "--unshare-pid", "--proc", "/proc"]
    prefix += ["--die-with-parent", "--chdir", str(cwd)]
    if os.geteuid() == 0:
        # Root keeps its capabilities inside; without this one it cannot unmount the new
        # /proc to uncover the host's.
        prefix += ["--cap-drop", "CAP_SYS_ADMIN"]
    return [*prefix, "--"]


_isolation: dict[str, str | None] = {}
"""Whether ``bwrap`` works on this host: its path, or ``None``; probed once per process."""


async def _working_bwrap() -> str | None:
    """Return the path of a ``bwrap`` that can create a PID namespace here, or ``None``."""
    if "bwrap" in _isolation:
        return _isolation["bwrap"]
    found = shutil.which("bwrap")
    works = False
    if found:
        with contextlib.suppress(OSError):
            probe = await asyncio.create_subprocess_exec(
                *_bwrap_prefix(found, Path("/")),
                "true",
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
            )
            works = await probe.wait() == 0
    if not works:
        logger.warning(
            "bash commands run without their own PID namespace (%s): they can read the "
            "agent's process environment, API keys included. Install bubblewrap to isolate "
            "them.",
            "bwrap cannot create namespaces here" if found else "bwrap is not installed",
        )
    _isolation["bwrap"] = found if works else None
    return _isolation["bwrap"]


async def _command_line(shell: str, command: str, cwd: Path, isolate: bool) -> list[str]:
    bwrap = await _working_bwrap() if isolate else None
    prefix = _bwrap_prefix(bwrap, cwd) if bwrap else []
    return [*prefix, shell, "-c", command]


async def _run(command: str, cwd: Path, seconds: float, settings: BuiltinSettings) -> ToolResult:
    limits = settings.limits
    shell = shutil.which("bash") or "/bin/sh"
    out = _Output(keep=limits.max_bytes)
    protocol = _Shell(out)
    loop = asyncio.get_running_loop()
    argv = await _command_line(shell, command, cwd, settings.isolate_shell)
    starting = asyncio.ensure_future(
        loop.subprocess_exec(
            lambda: protocol,
            *argv,
            cwd=cwd,
            env=_environment(settings.hidden_env),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
    )
    try:
        transport, _ = await asyncio.shield(starting)
    except OSError as exc:
        raise ToolError(f"Could not start {shell}: {exc.strerror or exc}") from None
    except asyncio.CancelledError:
        # The command may already run (asyncio only kills the shell itself when a start
        # is cancelled): let the start finish, then kill the whole group.
        with contextlib.suppress(Exception):
            started, _ = await starting
            _kill_group(started.get_pid())
            started.close()
        raise
    pid = transport.get_pid()
    outcome = _Outcome()
    try:
        if not await _within(protocol.exited, seconds):
            outcome.timed_out = True
            _kill_group(pid)
            await _within(protocol.exited, _DRAIN_GRACE_S)
        # Background processes may still hold the output pipe open after the shell exits.
        if not await _within(protocol.drained, _DRAIN_GRACE_S):
            outcome.stopped_background = not outcome.timed_out
            _kill_group(pid)
            outcome.escaped = not await _within(protocol.drained, _DRAIN_GRACE_S)
    except BaseException:  # cancelled: leave no process behind
        _kill_group(pid)
        transport.close()
        await asyncio.shield(_within(protocol.exited, _DRAIN_GRACE_S))
        raise
    # Closes the pipe even while a process that left the group still holds it open.
    transport.close()
    return _result(out.render(limits), transport.get_returncode(), outcome, seconds)


_LEFT_GROUP = "processes that left the process group (setsid, daemons) may still run"
_ESCAPED = (
    "a process that left the process group (setsid) still held the output open and was "
    "not killed; its later output is not shown"
)


def _result(text: str, code: int | None, outcome: _Outcome, timeout: float) -> ToolResult:
    body = text if text.strip() else "(no output)"
    if outcome.timed_out or outcome.stopped_background or code:
        body = body.rstrip("\n")
    meta: dict[str, Any] = {"exit_code": code, "timed_out": outcome.timed_out}
    survivors = _ESCAPED if outcome.escaped else _LEFT_GROUP
    if outcome.timed_out:
        return ToolResult(
            f"{body}\n[command timed out after {timeout * 1000:g} ms; it and the processes "
            f"in its process group were killed; {survivors}. Raise `timeout` or run it in "
            "the background with output redirected to a file.]",
            is_error=True,
            metadata=meta,
        )
    if outcome.escaped:
        body += f"\n[{_ESCAPED}]"
    elif outcome.stopped_background:
        body += f"\n[background processes still writing to the output were stopped; {_LEFT_GROUP}]"
    if code is not None and code < 0:
        return ToolResult(
            f"{body}\n[command was killed by signal {-code}]", is_error=True, metadata=meta
        )
    if code:
        return ToolResult(f"{body}\n[exit code {code}]", is_error=True, metadata=meta)
    return ToolResult(body, metadata=meta)


def bash_handler(settings: BuiltinSettings) -> Handler:
    """Return the handler of ``bash``; commands run in ``settings.root`` unless ``workdir`` says."""
    workspace = Workspace(settings)

    async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        command = args["command"]
        if not command.strip():
            raise ToolError("Invalid arguments: `command` is empty.")
        if "\x00" in command:
            raise ToolError("Invalid arguments: `command` contains a NUL character.")
        timeout = _timeout_seconds(args)
        try:
            cwd = workspace.resolve(args["workdir"]) if args.get("workdir") else settings.root
            usable = cwd.is_dir()
        except OSError as exc:
            raise ToolError(
                f"`workdir` {args['workdir']!r} cannot be used: {exc.strerror}"
            ) from None
        if not usable:
            raise ToolError(f"`workdir` {args.get('workdir')!r} is not an existing directory.")
        return await _run(command, cwd, timeout, settings)

    return handler
