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

from collections.abc import Callable, Iterable
from pathlib import PurePosixPath

from toolnexus.builtins._declared import GENERATED_DIRS
from toolnexus.builtins._regex_worker import matching_lines
from toolnexus.builtins._text import decode_text
from toolnexus.builtins._text import looks_binary as is_binary

__all__ = [
    "GENERATED_DIRS",
    "VCS_DIRS",
    "MAX_BRACE_DEPTH",
    "GlobError",
    "GlobPattern",
    "decode_text",
    "is_binary",
    "matching_lines",
    "path_sort_key",
    "sort_paths",
]

VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", "CVS", ".jj", ".pijul", ".fossil"})
"""Version-control directories that ``glob`` and ``grep`` never descend into."""


MAX_BRACE_DEPTH = 64
"""How deep ``{...}`` groups may nest in one glob pattern."""

Test = Callable[[str], bool]
"""What one step of a compiled pattern accepts: a test of one character."""


class GlobError(ValueError):
    """A glob pattern that cannot be compiled (a reversed range, braces nested too deep)."""


def _not_slash(char: str) -> bool:
    return char != "/"


def _anything(char: str) -> bool:
    return True


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


def _class_test(body: str) -> Test:
    """Return the test of a ``[...]`` class body: single characters and ``a-z`` ranges."""
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    singles: set[str] = set()
    ranges: list[tuple[str, str]] = []
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            low, high = body[i], body[i + 2]
            if low > high:
                raise GlobError(f"bad character range {low}-{high}")
            ranges.append((low, high))
            i += 3
        else:
            singles.add(body[i])
            i += 1

    def test(char: str) -> bool:
        inside = char in singles or any(low <= char <= high for low, high in ranges)
        return char != "/" and not inside if negate else inside

    return test


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


class _Automaton:
    """A glob pattern compiled to a nondeterministic automaton (Thompson's construction).

    Each state either reads one character that passes its test, or (test ``None``) is a
    fork that moves on without reading. Matching follows every possible state at once, so
    it costs at most (states x characters) steps for any pattern and name. A backtracking
    regex tries the ways a pattern can match one after another instead, and
    ``*a*a*a*a*a*b`` on a long name of ``a`` has millions of them.
    """

    def __init__(self, pattern: str) -> None:
        self.tests: list[Test | None] = []
        self.edges: list[list[int]] = []
        start, self.accept = self._sequence(pattern, 0)
        self._steps: dict[tuple[frozenset[int], str], frozenset[int]] = {}
        self._initial = self._closure([start])

    # -- building ---------------------------------------------------------------------

    def _state(self, test: Test | None = None) -> int:
        self.tests.append(test)
        self.edges.append([])
        return len(self.tests) - 1

    def _read(self, at: int, test: Test) -> int:
        """Add a step reading one character that passes ``test``; return the state after."""
        step, after = self._state(test), self._state()
        self.edges[at].append(step)
        self.edges[step].append(after)
        return after

    def _repeat(self, at: int, test: Test) -> int:
        """Add zero or more characters that pass ``test``; return the state after."""
        loop, step = self._state(), self._state(test)
        self.edges[at].append(loop)
        self.edges[loop].append(step)
        self.edges[step].append(loop)
        return loop

    def _directories(self, at: int) -> int:
        """Add ``**/``: zero or more whole directory names, each ending in ``/``."""
        loop = self._state()
        self.edges[at].append(loop)
        slash = self._read(self._repeat(loop, _not_slash), "/".__eq__)
        self.edges[slash].append(loop)
        return loop

    def _alternatives(self, at: int, body: str, depth: int) -> int:
        if depth >= MAX_BRACE_DEPTH:
            raise GlobError(f"braces nested more than {MAX_BRACE_DEPTH} deep")
        join = self._state()
        for alternative in _split_alternatives(body):
            first, last = self._sequence(alternative, depth + 1)
            self.edges[at].append(first)
            self.edges[last].append(join)
        return join

    def _sequence(self, pattern: str, depth: int) -> tuple[int, int]:
        """Compile ``pattern``; return its first and last state."""
        first = at = self._state()
        i, n = 0, len(pattern)
        while i < n:
            char = pattern[i]
            whole_segment = (i == 0 or pattern[i - 1] == "/") and pattern.startswith("**", i)
            if whole_segment and i + 2 == n:
                at = self._repeat(at, _anything)
                i += 1
            elif whole_segment and pattern[i + 2] == "/":
                at = self._directories(at)
                i += 2
            elif char == "*":
                at = self._repeat(at, _not_slash)
            elif char == "?":
                at = self._read(at, _not_slash)
            elif char == "[" and (end := _class_end(pattern, i)) >= 0:
                at = self._read(at, _class_test(pattern[i + 1 : end]))
                i = end
            elif char == "{" and (end := _brace_end(pattern, i)) >= 0:
                at = self._alternatives(at, pattern[i + 1 : end], depth)
                i = end
            else:
                at = self._read(at, char.__eq__)
            i += 1
        return first, at

    # -- matching ---------------------------------------------------------------------

    def _closure(self, states: Iterable[int]) -> frozenset[int]:
        """Return the reading states (and the accepting one) ``states`` reach by forks."""
        found: set[int] = set()
        seen: set[int] = set()
        stack = list(states)
        while stack:
            state = stack.pop()
            if state in seen:
                continue
            seen.add(state)
            if self.tests[state] is not None or state == self.accept:
                found.add(state)
            if self.tests[state] is None:
                stack.extend(self.edges[state])
        return frozenset(found)

    def _step(self, states: frozenset[int], char: str) -> frozenset[int]:
        key = (states, char)
        found = self._steps.get(key)
        if found is None:
            moved = []
            for state in states:
                test = self.tests[state]
                if test is not None and test(char):
                    moved.extend(self.edges[state])
            found = self._closure(moved)
            if len(self._steps) >= _MOST_STEPS:  # a hostile tree of names: keep memory flat
                self._steps.clear()
            self._steps[key] = found
        return found

    def matches(self, text: str) -> bool:
        """Tell whether the whole of ``text`` matches."""
        states = self._initial
        for char in text:
            states = self._step(states, char)
            if not states:
                return False
        return self.accept in states


_MOST_STEPS = 10_000
"""Transitions one pattern remembers; names seen again (``.py`` endings) then cost a lookup."""


class GlobPattern:
    """A compiled glob pattern; `matches` takes a relative ``/``-separated path.

    Matching takes time linear in the path's length times the pattern's, whatever the
    pattern: ``*a*a*a*a*a*a*a*a*a*a*b`` against a 200-character name is as quick as
    ``*.py``.

    Raises:
        GlobError: The pattern has a reversed range (``[z-a]``) or braces nested more
            than `MAX_BRACE_DEPTH` deep.
    """

    __slots__ = ("_automaton", "anchored", "pattern")

    def __init__(self, pattern: str) -> None:
        cleaned = pattern.removeprefix("./")
        self.pattern = pattern
        self.anchored = "/" in cleaned
        """True when the pattern holds a ``/`` and so matches whole relative paths."""
        self._automaton = _Automaton(cleaned.lstrip("/") if self.anchored else cleaned)

    def matches(self, relative_path: str) -> bool:
        """Tell whether ``relative_path`` (for a pattern without ``/``: its name) matches."""
        target = relative_path if self.anchored else relative_path.rsplit("/", 1)[-1]
        return self._automaton.matches(target)

    def __repr__(self) -> str:
        return f"GlobPattern({self.pattern!r})"


def path_sort_key(relative_path: str) -> tuple[str, ...]:
    """Sort key ordering paths segment by segment (``a/b`` before ``a.b``, like a tree)."""
    return PurePosixPath(relative_path).parts


def sort_paths(paths: Iterable[str]) -> list[str]:
    """Return ``paths`` in the deterministic order the tools report them."""
    return sorted(paths, key=path_sort_key)
