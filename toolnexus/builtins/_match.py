"""Pure matching for the ``glob`` and ``grep`` tools: no file system access here.

Glob patterns (used by ``glob`` and by ``grep``'s ``include``):

- ``*`` matches any run of characters except ``/``; ``?`` one character except ``/``.
- ``**`` as a whole path segment matches zero or more directories (``src/**/*.py``).
- ``[ab]``, ``[a-z]`` and ``[!ab]`` (or ``[^ab]``) match one character from a set.
- ``{py,md}`` matches any one of the comma-separated alternatives (they may nest).
- A pattern without ``/`` matches a file's name at any depth (``*.py`` finds
  ``pkg/mod.py``); a pattern with ``/`` matches the whole path relative to the search
  directory.

Example::

    from toolnexus.builtins._match import GlobPattern

    GlobPattern("*.{py,md}").matches("docs/index.md")   # True
    GlobPattern("src/**/[ab].py").matches("src/a.py")    # True
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath

from toolnexus.builtins._declared import GENERATED_DIRS
from toolnexus.builtins._regex_worker import matching_lines
from toolnexus.builtins._text import decode_text
from toolnexus.builtins._text import looks_binary as is_binary

__all__ = [
    "GENERATED_DIRS",
    "VCS_DIRS",
    "GlobPattern",
    "compile_glob",
    "decode_text",
    "is_binary",
    "matching_lines",
    "path_sort_key",
    "sort_paths",
]

VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", "CVS", ".jj", ".pijul", ".fossil"})
"""Version-control directories that ``glob`` and ``grep`` never descend into."""


def _class_end(pattern: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start``, or -1 when unclosed."""
    i = start + 1
    if i < len(pattern) and pattern[i] in "!^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 1
    return i if i < len(pattern) else -1


def _translate_class(body: str) -> str:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    escaped = "".join("\\" + c if c in "\\^[]" else c for c in body)
    return f"[^/{escaped}]" if negate else f"[{escaped}]"


def _brace_end(pattern: str, start: int) -> int:
    """Index of the ``}`` matching the ``{`` at ``start``, or -1 when unbalanced."""
    depth = 0
    for i in range(start, len(pattern)):
        if pattern[i] == "{":
            depth += 1
        elif pattern[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _split_alternatives(body: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current = ""
    for char in body:
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        current += char
    parts.append(current)
    return parts


def _translate(pattern: str) -> str:
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        char = pattern[i]
        at_segment_start = i == 0 or pattern[i - 1] == "/"
        if (
            pattern.startswith("**", i)
            and at_segment_start
            and (i + 2 == n or pattern[i + 2] == "/")
        ):
            if i + 2 == n:
                out.append(".*")
                i += 2
            else:
                out.append("(?:[^/]*/)*")
                i += 3
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = _class_end(pattern, i)
            if end < 0:
                out.append(re.escape(char))
            else:
                out.append(_translate_class(pattern[i + 1 : end]))
                i = end
        elif char == "{":
            end = _brace_end(pattern, i)
            if end < 0:
                out.append(re.escape(char))
            else:
                alternatives = _split_alternatives(pattern[i + 1 : end])
                out.append("(?:" + "|".join(_translate(a) for a in alternatives) + ")")
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def compile_glob(pattern: str) -> re.Pattern[str]:
    """Compile a glob pattern into a regex that must match a whole ``/``-separated path."""
    return re.compile(r"\A" + _translate(pattern) + r"\Z", re.DOTALL)


class GlobPattern:
    """A compiled glob pattern; `matches` takes a relative ``/``-separated path."""

    __slots__ = ("_regex", "anchored", "pattern")

    def __init__(self, pattern: str) -> None:
        cleaned = pattern.removeprefix("./")
        self.pattern = pattern
        self.anchored = "/" in cleaned
        """True when the pattern holds a ``/`` and so matches whole relative paths."""
        self._regex = compile_glob(cleaned.lstrip("/") if self.anchored else cleaned)

    def matches(self, relative_path: str) -> bool:
        """Tell whether ``relative_path`` (for a pattern without ``/``: its name) matches."""
        target = relative_path if self.anchored else relative_path.rsplit("/", 1)[-1]
        return self._regex.match(target) is not None

    def __repr__(self) -> str:
        return f"GlobPattern({self.pattern!r})"


def path_sort_key(relative_path: str) -> tuple[str, ...]:
    """Sort key ordering paths segment by segment (``a/b`` before ``a.b``, like a tree)."""
    return PurePosixPath(relative_path).parts


def sort_paths(paths: Iterable[str]) -> list[str]:
    """Return ``paths`` in the deterministic order the tools report them."""
    return sorted(paths, key=path_sort_key)
