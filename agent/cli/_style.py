r"""Colour for the commands' output: ANSI codes on a terminal, plain text anywhere else.

Colour is on only when the stream is a terminal, ``NO_COLOR`` is unset or empty (the
https://no-color.org convention) and ``TERM`` is not ``dumb``; so output piped to a file,
``less`` or a test is plain text. The codes are the standard SGR ones every terminal
understands, so colour needs no dependency.

Lines are painted by what they are, not by a colour name, so every command shows the same
kind of line in the same colour::

    style = Style.for_stream(sys.stderr)
    sys.stderr.write(style.paint("-> read {...}", "call") + "\\n")
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, TextIO, TypeAlias

__all__ = ["Role", "Style", "wants_colour"]

Role: TypeAlias = Literal[
    "title", "note", "turn", "thinking", "call", "result", "error", "retry", "agent", "ask"
]
"""What a piece of output is; each role has one look."""

_LOOKS: dict[str, str] = {
    "title": "1",  # bold
    "note": "2",  # dim
    "turn": "2",
    "thinking": "2;3",  # dim italic
    "call": "36",  # cyan
    "result": "32",  # green
    "error": "31",  # red
    "retry": "33",  # yellow
    "agent": "35",  # magenta: a sub-agent's name
    "ask": "1;33",  # bold yellow: a question to the human
}
_RESET = "\033[0m"


def wants_colour(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Whether output to ``stream`` should be coloured.

    Args:
        stream: Where the output goes; colour only for a terminal.
        environ: The environment to read ``NO_COLOR`` and ``TERM`` from (default:
            ``os.environ``).

    Returns:
        ``True`` for a terminal, unless ``NO_COLOR`` is set to a non-empty value or ``TERM``
        is ``dumb``.
    """
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


@dataclass(frozen=True, slots=True)
class Style:
    """Paints text by its `Role`, or leaves it alone when colour is off."""

    colour: bool = False
    """Whether to emit ANSI codes at all."""

    @classmethod
    def for_stream(cls, stream: TextIO) -> Style:
        """Return the style for output to ``stream`` (see `wants_colour`)."""
        return cls(wants_colour(stream))

    def paint(self, text: str, role: Role) -> str:
        """Return ``text`` in the look of ``role``; unchanged when colour is off.

        Each line is painted on its own, so a multi-line text never leaves a colour running
        into the next line (or into a pager's status line).
        """
        if not self.colour or not text:
            return text
        start = f"\033[{_LOOKS[role]}m"
        return "\n".join(f"{start}{line}{_RESET}" if line else line for line in text.split("\n"))
