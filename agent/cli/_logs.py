"""The library's log records and warnings, shown on stderr the way a command-line user wants."""

from __future__ import annotations

import contextlib
import logging
import sys
import warnings
from collections.abc import Iterator
from typing import TextIO

__all__ = ["agent_log", "plain_warnings"]


@contextlib.contextmanager
def agent_log(verbose: bool) -> Iterator[None]:
    """Show the ``agent`` logger on stderr at INFO with ``verbose``, else only its errors.

    The commands print their own line for each retry, so the library's warnings would
    say it twice. Warnings are shown as by `plain_warnings`. The logger's level and
    handlers are restored afterwards.
    """
    log = logging.getLogger("agent")
    level = log.level
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    log.setLevel(logging.INFO if verbose else logging.ERROR)
    log.addHandler(handler)
    try:
        with plain_warnings():
            yield
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


@contextlib.contextmanager
def plain_warnings() -> Iterator[None]:
    """Show warnings (a tool left out, a tool name clash) as ``warning: ...`` lines.

    A command-line user needs the message, not the file and line of the library code
    that issued it.
    """
    original = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        (file or sys.stderr).write(f"warning: {message}\n")

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = original
