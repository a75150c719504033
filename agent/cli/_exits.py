"""How a ``toolnexus-agent`` command ends: its exit codes and the usage error."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.errors import ConfigurationError

if TYPE_CHECKING:
    from agent import RunResult

__all__ = [
    "EXIT_BLOCKED",
    "EXIT_CODES_HELP",
    "EXIT_FAILED",
    "EXIT_INCOMPLETE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PENDING",
    "EXIT_USAGE",
    "CliError",
    "exit_code",
    "status_of",
]

EXIT_OK = 0
"""The run completed (every task of a batch completed)."""
EXIT_FAILED = 1
"""The model call failed for good, or a batch task did not complete."""
EXIT_USAGE = 2
"""A usage or configuration error: bad flags, no API key, unreadable skills or mcp.json."""
EXIT_PENDING = 3
"""The run is waiting on a human (the ``question`` tool) and no answer was available."""
EXIT_INCOMPLETE = 4
"""A limit ended the run (max turns, repeated calls, max tokens, ...)."""
EXIT_BLOCKED = 5
"""The prompt or the answer was blocked (safety) or a hook vetoed the run."""
EXIT_INTERRUPTED = 130
"""Stopped with Ctrl-C."""

EXIT_CODES_HELP = """\
exit codes:
  0  completed            3  pending (a question is waiting for an answer)
  1  failed (model error) 4  incomplete (a limit such as --max-turns ended the run)
  2  usage/config error   5  blocked (safety block or a hook veto)
  130 interrupted (Ctrl-C)"""

_STATUS_CODES = {"completed": EXIT_OK, "pending": EXIT_PENDING, "incomplete": EXIT_INCOMPLETE}


class CliError(ConfigurationError):
    """A problem the user fixes on the command line, shown as one message without a traceback.

    Args:
        message: The whole message, naming the flag or file and the reason.
        code: The exit code (`EXIT_USAGE` unless said otherwise).
    """

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code
        """The exit code the command ends with."""


def exit_code(result: RunResult) -> int:
    """Return the documented exit code of a finished run's status."""
    return _STATUS_CODES.get(result.status, EXIT_BLOCKED)


def status_of(result: RunResult, error: str | None) -> str:
    """Return the status a command reports for a run: ``"failed"`` when it raised.

    A run that ended in a `RunError` (a model call that failed for good) carries a partial
    result whose own status says where it stopped (often ``"incomplete"``); every command
    reports it as ``"failed"``, with the error beside it.
    """
    return "failed" if error else result.status
