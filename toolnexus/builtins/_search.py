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

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from toolnexus._registry import BuiltinSettings
from toolnexus.builtins._arguments import whole_number
from toolnexus.builtins._match import (
    GENERATED_DIRS,
    VCS_DIRS,
    GlobPattern,
    decode_text,
    matching_lines,
)
from toolnexus.builtins._output import cap, clip
from toolnexus.builtins._workspace import Workspace
from toolnexus.tool import Handler, ToolContext, ToolError, ToolResult

__all__ = ["glob_handler", "grep_handler"]

DEFAULT_LIMIT = 100
_MOST_RESULTS = 1_000_000_000


def _limit(args: dict[str, Any]) -> int:
    return whole_number(args, "limit", DEFAULT_LIMIT, _MOST_RESULTS)


class _Walker:
    """Walks a directory tree in sorted order, staying inside the allowed bases.

    Each real directory is visited once (by device and inode), so a symlink to a
    directory already walked, or a loop, adds nothing. Version-control directories are
    never entered; `GENERATED_DIRS` only when the search base is inside one.
    """

    __slots__ = ("_bases", "_seen", "_skip", "workspace")

    def __init__(self, workspace: Workspace, base: Path) -> None:
        self.workspace = workspace
        self._bases = (workspace.root, *workspace.read_only)
        shown = workspace.display(base)
        inside_generated = any(part in GENERATED_DIRS for part in Path(shown).parts)
        self._skip = VCS_DIRS if inside_generated else VCS_DIRS | GENERATED_DIRS
        self._seen: set[tuple[int, int]] = set()

    def allowed(self, real: Path) -> bool:
        if not self.workspace.confine:
            return True
        return any(real == base or base in real.parents for base in self._bases)

    def files(self, base: Path) -> Iterator[tuple[Path, str]]:
        """Yield ``(path, path relative to base)`` for every file under ``base``."""
        try:
            info = base.stat()
        except OSError:
            return
        self._seen.add((info.st_dev, info.st_ino))
        yield from self._walk(str(base), "")

    def _walk(self, directory: str, prefix: str) -> Iterator[tuple[Path, str]]:
        try:
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            try:
                if entry.is_symlink() and not self.allowed(Path(entry.path).resolve()):
                    continue
                if entry.is_dir():
                    if entry.name in self._skip:
                        continue
                    info = entry.stat()
                    key = (info.st_dev, info.st_ino)
                    if key in self._seen:  # a symlink loop, or a tree already walked
                        continue
                    self._seen.add(key)
                    yield from self._walk(entry.path, f"{prefix}{entry.name}/")
                elif entry.is_file():
                    yield Path(entry.path), prefix + entry.name
            except (OSError, RuntimeError):
                continue


def _glob(pattern: str, field: str) -> GlobPattern:
    try:
        return GlobPattern(pattern)
    except re.error as exc:
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


def _run_grep(settings: BuiltinSettings, workspace: Workspace, args: dict[str, Any]) -> str:
    try:
        regex = re.compile(args["pattern"])
    except re.error as exc:
        raise ToolError(f"Invalid regular expression in `pattern`: {exc}") from None
    limit = _limit(args)
    include = _glob(args["include"], "include") if args.get("include") else None
    base = _search_base(workspace, args)
    limits = settings.limits
    if base.is_file():
        candidates: Iterator[tuple[Path, str]] = iter([(base, base.name)])
    else:
        candidates = _Walker(workspace, base).files(base)
    found: list[str] = []
    skipped = 0
    more = False
    for path, relative in candidates:
        if include is not None and not include.matches(relative):
            continue
        try:
            if path.stat().st_size > limits.max_read_bytes:
                skipped += 1
                continue
            text = decode_text(path.read_bytes())
        except OSError:
            text = None
        if text is None:
            skipped += 1
            continue
        shown = workspace.display(path)
        for number, line in matching_lines(text, regex):
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
        notes.append(f"[skipped {skipped} binary, non-UTF-8, unreadable or oversized file(s)]")
    if not found:
        return "\n".join(["No matches found.", *notes])
    body = cap(
        "\n".join(found),
        max_lines=max_lines,
        max_bytes=max_bytes,
        hint="Narrow `pattern`, `path` or `include` to see the rest.",
    )
    return "\n".join([body, *notes])


def _run_glob(settings: BuiltinSettings, workspace: Workspace, args: dict[str, Any]) -> str:
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
    for path, relative in _Walker(workspace, base).files(base):
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


def _search_handler(
    run: Callable[[BuiltinSettings, Workspace, dict[str, Any]], str],
    settings: BuiltinSettings,
) -> Handler:
    workspace = Workspace(settings)

    def handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult(run(settings, workspace, args))

    return handler


def grep_handler(settings: BuiltinSettings) -> Handler:
    """Return the handler of the ``grep`` tool for ``settings``' workspace."""
    return _search_handler(_run_grep, settings)


def glob_handler(settings: BuiltinSettings) -> Handler:
    """Return the handler of the ``glob`` tool for ``settings``' workspace."""
    return _search_handler(_run_glob, settings)
