"""The ``grep`` and ``glob`` built-in tools: search file names and contents in the workspace.

Both walk the search directory in a deterministic order (sorted path segments), never
enter version-control directories (``.git``, ``.hg``, ``.svn``, ...), and skip the
dependency, cache and environment directories in `GENERATED_DIRS` (``node_modules``,
``.venv``, ``venv``, ``__pycache__``, ``.mypy_cache``, ``.pytest_cache``, ``.ruff_cache``,
``.tox``, ``.nox``) unless the search ``path`` is inside one of them. They follow symlinks
but visit each real directory once, and, when confined, skip anything that resolves
outside the workspace (and the read-only skill directories). Output is capped.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import re
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from toolnexus._registry import BuiltinSettings
from toolnexus.builtins._arguments import whole_number
from toolnexus.builtins._match import (
    GENERATED_DIRS,
    VCS_DIRS,
    GlobError,
    GlobPattern,
    decode_text,
)
from toolnexus.builtins._output import cap, clip
from toolnexus.builtins._workspace import MAX_PATH, Workspace
from toolnexus.tool import Handler, ToolContext, ToolError, ToolResult

__all__ = ["glob_handler", "grep_handler"]

DEFAULT_LIMIT = 100
_MOST_RESULTS = 1_000_000_000


def _limit(args: dict[str, Any]) -> int:
    return whole_number(args, "limit", DEFAULT_LIMIT, _MOST_RESULTS)


class _Walker:
    """Walks a directory tree in sorted order, staying inside the allowed bases.

    Iterative (a tree of any depth is fine) and through directory descriptors opened
    without following symlinks (`Workspace.directory`), so a directory swapped for a
    symlink during the walk is skipped rather than listed. A symlink found in a listing is
    resolved and followed only when its target is allowed. Each real directory is visited
    once (by device and inode), so a symlink to a directory already walked, or a loop,
    adds nothing. Version-control directories are never entered; `GENERATED_DIRS` only
    when the search base is inside one. Once ``stop`` is set (the call ended) the walk
    raises `_Stopped`, so it does not go on in the background.
    """

    __slots__ = ("_bases", "_seen", "_skip", "_stop", "workspace")

    def __init__(self, workspace: Workspace, base: Path, stop: threading.Event) -> None:
        self.workspace = workspace
        self._stop = stop
        self._bases = (workspace.root, *workspace.read_only)
        shown = workspace.display(base)
        inside_generated = any(part in GENERATED_DIRS for part in Path(shown).parts)
        self._skip = VCS_DIRS if inside_generated else VCS_DIRS | GENERATED_DIRS
        self._seen: set[tuple[int, int]] = set()

    def allowed(self, real: Path) -> bool:
        if not self.workspace.confine:
            return True
        return any(real == base or base in real.parents for base in self._bases)

    def files(self, base: Path) -> Iterator[tuple[Path, str, Path]]:
        """Yield ``(shown path, path relative to base, real path)`` for files under ``base``."""
        stack = [self._entries(base, base)]
        while stack:
            if self._stop.is_set():
                raise _Stopped
            entry = next(stack[-1], None)
            if entry is None:
                stack.pop()
            elif entry[0]:
                _, shown, real = entry
                stack.append(self._entries(real, shown))
            else:
                _, shown, real = entry
                yield shown, shown.relative_to(base).as_posix(), real

    def _entries(self, real: Path, shown: Path) -> Iterator[tuple[bool, Path, Path]]:
        """``(is a directory, shown path, real path)`` of each entry of ``real``, sorted."""
        try:
            with self.workspace.directory(real) as fd:
                info = os.fstat(fd)
                if (info.st_dev, info.st_ino) in self._seen:
                    return iter(())  # a symlink loop, or a tree already walked
                self._seen.add((info.st_dev, info.st_ino))
                with os.scandir(fd) as scan:
                    listed = sorted(scan, key=lambda e: e.name)
                found = [self._classify(entry, real, shown) for entry in listed]
        except (OSError, ToolError):
            return iter(())
        return iter([item for item in found if item is not None])

    def _classify(
        self, entry: os.DirEntry[str], real: Path, shown: Path
    ) -> tuple[bool, Path, Path] | None:
        try:
            target = real / entry.name
            if entry.is_symlink():
                target = target.resolve()
                if not self.allowed(target):
                    return None
                kind = target.stat().st_mode
            else:
                kind = entry.stat(follow_symlinks=False).st_mode
        except (OSError, RuntimeError):
            return None
        if stat.S_ISDIR(kind):
            if entry.name in self._skip:
                return None
            return True, shown / entry.name, target
        if stat.S_ISREG(kind):
            return False, shown / entry.name, target
        return None


def _read_text(workspace: Workspace, real: Path, most: int) -> str | None:
    """Return the UTF-8 text of the regular file ``real`` (at most ``most`` bytes), or None.

    None also for a file with other hard links, unless the host allows them.
    """
    try:
        fd = workspace.open_file(real)
    except (OSError, ToolError):
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > most:
            return None
        if workspace.linked_elsewhere(info):
            return None
        raw = handle.read(most + 1)
    return None if len(raw) > most else decode_text(raw)


def _glob(pattern: str, field: str) -> GlobPattern:
    if len(pattern) > MAX_PATH:
        raise ToolError(f"`{field}` is too long ({len(pattern)} characters; at most {MAX_PATH}).")
    try:
        return GlobPattern(pattern)
    except GlobError as exc:
        raise ToolError(f"Invalid glob pattern in `{field}`: {exc}") from None


def _search_base(workspace: Workspace, args: dict[str, Any]) -> Path:
    raw = args.get("path") or "."
    try:
        base = workspace.resolve(raw)
        exists = base.exists()
    except OSError as exc:
        raise ToolError(f"Search path {raw!r} cannot be used: {exc.strerror}") from None
    if not exists:
        raise ToolError(f"Search path {raw!r} does not exist. Check `path` with the glob tool.")
    return base


_WORKER = str(Path(__file__).with_name("_regex_worker.py"))


class _Stopped(Exception):
    """The matcher process was stopped (the call timed out or was cancelled)."""


class _Matcher:
    """Python ``re`` matching in a child process, so that `stop` can end a runaway pattern.

    A backtracking pattern on a long line holds the GIL until it ends; in a child process
    it freezes nothing here, and killing the child ends it (see `_regex_worker`).
    """

    def __init__(self, pattern: str) -> None:
        self._pattern = pattern
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._stopped = False

    def _start(self) -> subprocess.Popen[bytes]:
        with self._lock:
            if self._stopped:
                raise _Stopped
            if self._process is None:
                self._process = subprocess.Popen(
                    [sys.executable, "-I", "-S", _WORKER],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                )
                self._send(self._process, json.dumps(self._pattern).encode() + b"\n")
            return self._process

    @staticmethod
    def _send(process: subprocess.Popen[bytes], data: bytes) -> None:
        assert process.stdin is not None
        try:
            process.stdin.write(data)
            process.stdin.flush()
        except (OSError, ValueError):
            raise _Stopped from None

    def lines(self, text: str, most: int) -> list[tuple[int, str]]:
        """Return at most ``most`` ``(line number, line)`` pairs of ``text`` that match."""
        process = self._start()
        data = text.encode("utf-8")
        self._send(process, json.dumps([len(data), most]).encode() + b"\n" + data)
        assert process.stdout is not None
        try:
            reply = process.stdout.readline()
        except (OSError, ValueError):
            reply = b""
        if not reply:
            raise _Stopped
        return [(number, line) for number, line in json.loads(reply)]

    def stop(self) -> None:
        """Kill the child process (if any) and release its pipes; later calls fail."""
        with self._lock:
            self._stopped = True
            process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait()
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()


def _run_grep(
    settings: BuiltinSettings,
    workspace: Workspace,
    args: dict[str, Any],
    matcher: _Matcher,
    stop: threading.Event,
) -> str:
    limit = _limit(args)
    include = _glob(args["include"], "include") if args.get("include") else None
    base = _search_base(workspace, args)
    limits = settings.limits
    if base.is_file():
        candidates: Iterator[tuple[Path, str, Path]] = iter([(base, base.name, base)])
    else:
        candidates = _Walker(workspace, base, stop).files(base)
    found: list[str] = []
    skipped = 0
    more = False
    for path, relative, real in candidates:
        if include is not None and not include.matches(relative):
            continue
        text = _read_text(workspace, real, limits.max_read_bytes)
        if text is None:
            skipped += 1
            continue
        shown = workspace.display(path)
        for number, line in matcher.lines(text, limit + 1 - len(found)):
            if len(found) == limit:
                more = True
                break
            found.append(
                _match_line(f"{shown}:{number}:", line, limits.max_line_length, limits.max_bytes)
            )
        if more:
            break
    return _grep_report(found, limit, more, skipped, limits.max_lines, limits.max_bytes)


def _match_line(prefix: str, line: str, most_chars: int, most_bytes: int) -> str:
    """``prefix`` and ``line``, the line cut (and saying so) to fit both output caps."""
    length = len(line)
    line = clip(line, most_chars, "... [line truncated: {length} characters]")
    room = most_bytes - len(prefix.encode("utf-8"))
    if len(line.encode("utf-8")) > room:
        kept = line.encode("utf-8")[: max(room - 60, 0)].decode("utf-8", errors="ignore")
        line = f"{kept}... [line truncated: {length} characters, over the output cap]"
    return prefix + line


def _grep_report(
    found: list[str], limit: int, more: bool, skipped: int, max_lines: int, max_bytes: int
) -> str:
    notes = []
    if more:
        notes.append(
            f"[stopped at the limit of {limit} matches; narrow `pattern`, `path` or "
            "`include`, or raise `limit` to see more]"
        )
    if skipped:
        notes.append(
            f"[skipped {skipped} binary, non-UTF-8, unreadable, oversized or hard-linked file(s)]"
        )
    if not found:
        return "\n".join(["No matches found.", *notes])
    body = cap(
        "\n".join(found),
        max_lines=max_lines,
        max_bytes=max_bytes,
        hint="Narrow `pattern`, `path` or `include` to see the rest.",
    )
    return "\n".join([body, *notes])


def _run_glob(
    settings: BuiltinSettings, workspace: Workspace, args: dict[str, Any], stop: threading.Event
) -> str:
    pattern = args["pattern"]
    if not pattern.strip():
        raise ToolError("Invalid arguments: `pattern` is empty.")
    limit = _limit(args)
    matcher = _glob(pattern, "pattern")
    base = _search_base(workspace, args)
    if not base.is_dir():
        raise ToolError(f"Search path {args.get('path')!r} is a file, not a directory.")
    found: list[str] = []
    more = False
    for path, relative, _ in _Walker(workspace, base, stop).files(base):
        if matcher.matches(relative):
            if len(found) == limit:
                more = True
                break
            found.append(workspace.display(path))
    if not found:
        return "No files found."
    body = cap(
        "\n".join(found),
        max_lines=settings.limits.max_lines,
        max_bytes=settings.limits.max_bytes,
        hint="Narrow `pattern` or `path` to see the rest.",
    )
    if more:
        body += (
            f"\n[stopped at the limit of {limit} paths; narrow `pattern` or `path`, "
            "or raise `limit` to see more]"
        )
    return body


def grep_handler(settings: BuiltinSettings) -> Handler:
    """Return the handler of the ``grep`` tool for ``settings``' workspace.

    The handler is async: the search runs on a thread and the matching in a child process
    (`_Matcher`), and when the call times out or is cancelled the child is killed and the
    walk stops, so a catastrophic pattern neither freezes the event loop nor outlives its
    call. ``include`` is a `GlobPattern`, whose matching is linear and needs no process.
    """
    workspace = Workspace(settings)

    async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            re.compile(args["pattern"])
        except re.error as exc:
            raise ToolError(f"Invalid regular expression in `pattern`: {exc}") from None
        matcher, stop = _Matcher(args["pattern"]), threading.Event()
        try:
            run = functools.partial(_run_grep, settings, workspace, args, matcher, stop)
            return ToolResult(await asyncio.to_thread(run))
        finally:
            stop.set()
            matcher.stop()

    return handler


def glob_handler(settings: BuiltinSettings) -> Handler:
    """Return the handler of the ``glob`` tool for ``settings``' workspace.

    The walk runs on a thread and stops when the call times out or is cancelled; matching
    a name is linear in its length (`GlobPattern`), so no pattern can stall it.
    """
    workspace = Workspace(settings)

    async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        stop = threading.Event()
        try:
            run = functools.partial(_run_glob, settings, workspace, args, stop)
            return ToolResult(await asyncio.to_thread(run))
        finally:
            stop.set()

    return handler
