"""The ``bash`` built-in tool: run one shell command in the workspace.

The command runs in its own process group with stdin from ``/dev/null`` and the
workspace root (or ``workdir``) as its working directory. Output (stdout and stderr
combined) is read as it arrives and only the first ``Limits.max_bytes`` bytes are kept,
so a command printing gigabytes costs no memory. On a timeout, and when the call is
cancelled, the whole process group is killed.

This is not a sandbox: the command can do anything the host user can. Drop the tool
(``build(builtins={"tools": {"bash": False}})``) or replace it with your own for
untrusted models.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import math
import os
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolnexus._registry import BuiltinSettings, Limits, register
from toolnexus._schema import schema_validator
from toolnexus.builtins._output import cap
from toolnexus.builtins._workspace import Workspace
from toolnexus.tool import Tool, ToolContext, ToolError, ToolResult

__all__ = ["bash_tool"]

DEFAULT_TIMEOUT_MS = 60_000
_CHUNK = 65_536
_DRAIN_GRACE_S = 1.0
_POLL_S = 0.05
"""How long output may keep flowing after the shell exits (from background processes)."""

BASH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string"},
        "workdir": {"type": "string"},
        "timeout": {"type": "number"},
        "description": {"type": "string"},
    },
    "required": ["command"],
    "additionalProperties": False,
}

_DESCRIPTION = """\
Run one shell command (bash) and return its combined stdout and stderr.

Arguments: `command` (required); `workdir` (directory to run in, default the workspace \
root); `timeout` (milliseconds, default 60000); `description` (a few words on what the \
command does, for the human). stdin is empty, so interactive commands fail. A non-zero \
exit status is reported as an error with the exit code; on timeout the command and every \
process it started are killed. Long output is cut: redirect it to a file and search it \
with grep or read it in parts."""


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
    value = args.get("timeout", DEFAULT_TIMEOUT_MS)
    if not math.isfinite(value) or value <= 0:
        raise ToolError(
            f"Invalid arguments: `timeout` must be a positive number of milliseconds, got {value}"
        )
    return float(value) / 1000.0


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _pump(stream: asyncio.StreamReader, out: _Output) -> None:
    while chunk := await stream.read(_CHUNK):
        out.add(chunk)


async def _exited(proc: asyncio.subprocess.Process, reader: asyncio.Task[None]) -> None:
    """Return once the shell has exited, even if a background process keeps the pipe open.

    ``Process.wait`` on Python 3.11 also waits for the pipes to close, so while output is
    still open the exit status is polled instead.
    """
    while proc.returncode is None:
        if not reader.done():
            await asyncio.wait({reader}, timeout=_POLL_S)
        elif reader.cancelled():
            await asyncio.sleep(_POLL_S)
        else:
            await proc.wait()


async def _run(command: str, cwd: Path, seconds: float, limits: Limits) -> ToolResult:
    shell = shutil.which("bash") or "/bin/sh"
    try:
        proc = await asyncio.create_subprocess_exec(
            shell,
            "-c",
            command,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        raise ToolError(f"Could not start {shell}: {exc.strerror or exc}") from None
    assert proc.stdout is not None
    out = _Output(keep=limits.max_bytes)
    reader = asyncio.create_task(_pump(proc.stdout, out))
    timed_out = False
    stopped_background = False
    try:
        try:
            async with asyncio.timeout(seconds):
                await _exited(proc, reader)
        except TimeoutError:
            timed_out = True
            _kill_group(proc.pid)
        # Background processes may still hold the output pipe open after the shell exits.
        done, _ = await asyncio.wait({reader}, timeout=_DRAIN_GRACE_S)
        if not done:
            stopped_background = not timed_out
            _kill_group(proc.pid)
            done, _ = await asyncio.wait({reader}, timeout=_DRAIN_GRACE_S)
            if not done:  # a process that left our process group still holds the pipe
                reader.cancel()
        await _exited(proc, reader)
    except BaseException:  # cancelled: leave no process behind
        _kill_group(proc.pid)
        reader.cancel()
        # Let the loop see the exit and close the pipes, so nothing is left unclosed.
        await asyncio.wait({asyncio.ensure_future(proc.wait())}, timeout=_DRAIN_GRACE_S)
        raise
    return _result(out.render(limits), proc.returncode, timed_out, stopped_background, seconds)


def _result(
    text: str, code: int | None, timed_out: bool, stopped_background: bool, timeout: float
) -> ToolResult:
    body = text if text.strip() else "(no output)"
    if timed_out or stopped_background or code:
        body = body.rstrip("\n")
    meta: dict[str, Any] = {"exit_code": code, "timed_out": timed_out}
    if timed_out:
        return ToolResult(
            f"{body}\n[command timed out after {timeout * 1000:g} ms; it and every process "
            "it started were killed. Raise `timeout` or run it in the background with "
            "output redirected to a file.]",
            is_error=True,
            metadata=meta,
        )
    if stopped_background:
        body += "\n[background processes still writing to the output were stopped]"
    if code is not None and code < 0:
        return ToolResult(
            f"{body}\n[command was killed by signal {-code}]", is_error=True, metadata=meta
        )
    if code:
        return ToolResult(f"{body}\n[exit code {code}]", is_error=True, metadata=meta)
    return ToolResult(body, metadata=meta)


@register("bash")
def bash_tool(settings: BuiltinSettings) -> Tool:
    """Build the ``bash`` tool; commands run in ``settings.root`` unless ``workdir`` says."""
    workspace = Workspace(settings)
    schema = copy.deepcopy(BASH_SCHEMA)

    async def execute(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
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
        return await _run(command, cwd, timeout, settings.limits)

    return Tool(
        "bash",
        execute,
        _DESCRIPTION,
        schema,
        source="builtin",
        validate=schema_validator(schema),
    )
