"""The ``grep`` and ``glob`` built-in tools: search file names and contents in the workspace.

Both walk the search directory in a deterministic order (sorted path segments), never
enter version-control directories (``.git``, ``.hg``, ``.svn``, ...), follow symlinks
but, when confined, skip anything that resolves outside the workspace (and the
read-only skill directories), and cap their output.
"""

from __future__ import annotations

import copy
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolnexus._registry import BuiltinSettings, register
from toolnexus._schema import schema_validator
from toolnexus.builtins._match import (
    VCS_DIRS,
    GlobPattern,
    decode_text,
    matching_lines,
    path_sort_key,
)
from toolnexus.builtins._output import cap
from toolnexus.builtins._workspace import Workspace
from toolnexus.tool import Tool, ToolContext, ToolError, ToolResult

__all__ = ["glob_tool", "grep_tool"]

DEFAULT_LIMIT = 100

GREP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string"},
        "path": {"type": "string"},
        "include": {"type": "string"},
        "limit": {"type": "number"},
    },
    "required": ["pattern"],
    "additionalProperties": False,
}

GLOB_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string"},
        "path": {"type": "string"},
        "limit": {"type": "number"},
    },
    "required": ["pattern"],
    "additionalProperties": False,
}

_GREP_DESCRIPTION = """\
Search file contents with a regular expression (Python `re` syntax).

Arguments: `pattern` (regex, required); `path` (file or directory to search, default the \
workspace root); `include` (glob filter on file names, e.g. "*.py", "*.{py,md}", \
"src/**/*.ts"); `limit` (maximum matching lines, default 100).
Output: one `file:line:text` line per match, paths relative to the workspace, sorted by \
path then line. Binary and non-UTF-8 files and version-control directories are skipped."""

_GLOB_DESCRIPTION = """\
Find files by name with a glob pattern.

Arguments: `pattern` (required; `*`, `?`, `**` for any depth, `[ab]`, `{py,md}`; a pattern \
without "/" matches file names at any depth, e.g. "*.py"); `path` (directory to search, \
default the workspace root); `limit` (maximum paths, default 100).
Output: matching file paths relative to the workspace, one per line, sorted."""


def _limit(args: dict[str, Any]) -> int:
    value = args.get("limit", DEFAULT_LIMIT)
    if not math.isfinite(value) or value < 1 or value != int(value):
        raise ToolError(f"Invalid arguments: `limit` must be a positive whole number, got {value}")
    return int(value)


@dataclass(frozen=True, slots=True)
class _Walker:
    """Walks a directory tree in sorted order, staying inside the allowed bases."""

    workspace: Workspace

    def allowed(self, real: Path) -> bool:
        if not self.workspace.confine:
            return True
        bases = (self.workspace.root, *self.workspace.read_only)
        return any(real == base or base in real.parents for base in bases)

    def files(self, base: Path) -> Iterator[tuple[Path, str]]:
        """Yield ``(path, path relative to base)`` for every file under ``base``."""
        seen: set[Path] = {base.resolve()}
        yield from self._walk(base, "", seen)

    def _walk(self, directory: Path, prefix: str, seen: set[Path]) -> Iterator[tuple[Path, str]]:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: path_sort_key(e.name))
        except OSError:
            return
        for entry in entries:
            relative = prefix + entry.name
            path = Path(entry.path)
            try:
                is_dir = entry.is_dir()
                is_file = entry.is_file()
                if entry.is_symlink():
                    real = path.resolve()
                    if not self.allowed(real):
                        continue
                else:
                    real = path
            except OSError:
                continue
            if is_dir:
                if entry.name in VCS_DIRS:
                    continue
                real = real.resolve()
                if real in seen:  # a symlink loop, or a tree already walked
                    continue
                yield from self._walk(path, relative + "/", seen | {real})
            elif is_file:
                yield path, relative


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


def _clip(line: str, width: int) -> str:
    if len(line) <= width:
        return line
    return line[:width] + f"... [line cut at {width} characters]"


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
        candidates = _Walker(workspace).files(base)
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
            found.append(f"{shown}:{number}:{_clip(line, limits.max_line_length)}")
        if more:
            break
    return _grep_report(found, limit, more, skipped, limits.max_lines, limits.max_bytes)


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
    for path, relative in _Walker(workspace).files(base):
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


@register("grep")
def grep_tool(settings: BuiltinSettings) -> Tool:
    """Build the ``grep`` tool for ``settings``' workspace."""
    workspace = Workspace(settings)
    schema = copy.deepcopy(GREP_SCHEMA)

    def execute(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult(_run_grep(settings, workspace, args))

    return Tool(
        "grep",
        execute,
        _GREP_DESCRIPTION,
        schema,
        source="builtin",
        validate=schema_validator(schema),
    )


@register("glob")
def glob_tool(settings: BuiltinSettings) -> Tool:
    """Build the ``glob`` tool for ``settings``' workspace."""
    workspace = Workspace(settings)
    schema = copy.deepcopy(GLOB_SCHEMA)

    def execute(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult(_run_glob(settings, workspace, args))

    return Tool(
        "glob",
        execute,
        _GLOB_DESCRIPTION,
        schema,
        source="builtin",
        validate=schema_validator(schema),
    )
