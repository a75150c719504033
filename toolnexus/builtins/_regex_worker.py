"""Match ``grep`` patterns in a child process that a timeout or a cancellation can kill.

Python's ``re`` backtracks: a pattern such as ``(a+)+$`` on a line of many ``a`` runs for
minutes, and it holds the GIL the whole time, so matching it on a thread of the agent's own
process would freeze the event loop and no timeout could stop it. ``grep`` promises Python
``re`` syntax (backreferences and lookarounds included), which linear-time engines do not
offer, so the matching runs here instead, in a separate interpreter the caller kills.

This module uses the standard library only: it runs as a script (``python -I -S <file>``),
without the package on the path. The protocol, over the child's stdin and stdout, is lines:

- first line: the pattern, as JSON;
- then for each file: a JSON header ``[size, most]``, then ``size`` bytes of UTF-8 text;
  the child answers one JSON line, at most ``most`` ``[line_number, line]`` pairs.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator

__all__ = ["matching_lines"]


def matching_lines(text: str, regex: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` for each line of ``text`` that ``regex`` searches into.

    Lines split on newlines (a carriage return before one is dropped); a trailing newline
    does not start an extra, empty line, so ``^$`` never reports a phantom line past the end.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        stripped = line.removesuffix("\r")
        if regex.search(stripped):
            yield number, stripped


def _serve() -> None:
    source, sink = sys.stdin.buffer, sys.stdout
    regex = re.compile(json.loads(source.readline()))
    while header := source.readline():
        size, most = json.loads(header)
        text = source.read(size).decode("utf-8")
        found: list[tuple[int, str]] = []
        for match in matching_lines(text, regex):
            if len(found) == most:
                break
            found.append(match)
        sink.write(json.dumps(found) + "\n")
        sink.flush()


if __name__ == "__main__":
    _serve()
