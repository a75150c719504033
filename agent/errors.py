"""Exceptions raised by the agent package.

Misuse (a missing API key, bad options, a transcript that cannot be resumed) is a different
branch from a run that failed; a failed run carries the partial `RunResult` so no completed
turn is lost. Problems with a stored conversation have a branch of their own::

    AgentError                     base of everything raised here
    ├── ConfigurationError         misuse: no API key, bad options, unusable history/answer
    ├── RunError                   a run failed part-way; ``.result`` is the partial RunResult
    │   ├── ModelError             the model call failed and retries did not help
    │   ├── HookError              a hook or ``wait_for`` raised; the original is ``__cause__``
    │   └── DeadlineExceededError  the whole-run deadline passed
    └── SessionError               a ``session=`` conversation cannot be used
        ├── SessionBusyError       another run holds the session
        └── TranscriptError        a stored transcript cannot be read: not JSON, nested too
            │                      deeply, a field of the wrong shape (also a ``ValueError``)
            └── TranscriptVersionError  it has a schema version this library cannot read

``ToolDeclarationWarning`` (a ``UserWarning``, issued when a tool is left out of a request)
is also an `AgentError`, so ``-W error`` cannot raise anything from outside the tree.

``agent.testing`` adds two of its own under `AgentError`: ``FakeGeminiError`` (the fake's
script and the traffic disagree; also an ``AssertionError``) and ``ScenarioError`` (a
scenario file is invalid).

Results the model can cause (a tool error, a blocked prompt, a hit limit) are never raised:
they are statuses of the `RunResult`. Cancellation (`asyncio.CancelledError`) propagates
untouched and is never retried.

Example::

    from agent import Agent, ModelError

    try:
        result = await agent.run("Summarise README.md")
    except ModelError as exc:
        print(exc.code, exc.status, exc.message, len(exc.result.contents))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent._result import RunResult

__all__ = [
    "AgentError",
    "ConfigurationError",
    "DeadlineExceededError",
    "HookError",
    "ModelError",
    "RunError",
    "SessionBusyError",
    "SessionError",
    "TranscriptError",
    "TranscriptVersionError",
]


class AgentError(Exception):
    """Base class of every exception the agent package raises."""


class ConfigurationError(AgentError):
    """The agent was set up or called wrongly (no API key, bad options, bad history).

    Fix the call; retrying the same call cannot succeed.
    """


class RunError(AgentError):
    """A run failed part-way; `result` holds everything completed before the failure."""

    def __init__(self, message: str, *, result: RunResult) -> None:
        super().__init__(message)
        self.result = result
        """The partial result: completed turns, tool calls, usage and the transcript."""


class ModelError(RunError):
    """The model call failed and survived the retry policy (or was not retryable).

    ``code`` is the HTTP status (``None`` for a network error or timeout), ``status`` the
    server's status string (``"RESOURCE_EXHAUSTED"``, ``"INVALID_ARGUMENT"``, or
    ``"NETWORK_ERROR"`` / ``"TIMEOUT"`` for transport failures) and ``message`` the server's
    message. ``attempts`` counts the calls made, retries included.
    """

    def __init__(
        self,
        *,
        code: int | None,
        status: str | None,
        message: str,
        attempts: int,
        result: RunResult,
    ) -> None:
        label = " ".join(str(part) for part in (code, status) if part is not None) or "error"
        tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
        super().__init__(f"Gemini call failed after {tries}: {label}: {message}", result=result)
        self.code = code
        """The HTTP status, or None for a network error or timeout."""
        self.status = status
        """The server's status string, or ``"NETWORK_ERROR"`` / ``"TIMEOUT"``."""
        self.message = message
        """The server's message (or the transport error's)."""
        self.attempts = attempts
        """How many calls were made, retries included."""


class HookError(RunError):
    """A hook or the ``wait_for`` callback raised; the run stopped there.

    ``hook`` names it (``"before_model"``, ``"after_model"``, ``"before_tool"``,
    ``"after_tool"`` or ``"wait_for"``); the exception it raised is ``__cause__``, with its
    traceback, since the bug is in that code. Cancellation is not wrapped.
    """

    def __init__(self, message: str, *, hook: str, result: RunResult) -> None:
        super().__init__(message, result=result)
        self.hook = hook
        """Which hook raised: ``"before_model"``, ..., or ``"wait_for"``."""


class DeadlineExceededError(RunError):
    """The run's overall ``deadline`` (seconds) passed before the run finished."""


class SessionError(AgentError):
    """A ``session=`` conversation cannot be used: it is busy, or its saved form is unreadable."""


class SessionBusyError(SessionError):
    """Another run holds the session: two runs on one conversation are refused, not interleaved.

    Wait for the other run to finish, or use a different session id.
    """

    def __init__(self, session_id: str, holder: str) -> None:
        super().__init__(
            f"session {session_id!r} is in use by another run ({holder}); "
            "wait for that run to finish or use a different session id"
        )
        self.session_id = session_id
        """The session that is busy."""
        self.holder = holder
        """Who holds it: ``"this process"`` or ``"process <pid> on host '<name>'"``."""


class TranscriptError(SessionError, ValueError):
    """A stored transcript cannot be read (not JSON, nested too deeply, a malformed field).

    Nothing is changed: the stored copy is left as it was. It is also a `ValueError`, like
    every way a stored transcript can be malformed.
    """


class TranscriptVersionError(TranscriptError):
    """A stored transcript has a schema version this library cannot read.

    A newer version means the transcript was written by a newer toolnexus-gemini: upgrade to
    load it. It is also a `ValueError`, like the other ways a stored transcript can be malformed.
    """

    def __init__(self, version: object, supported: int) -> None:
        if isinstance(version, int) and not isinstance(version, bool) and version >= 1:
            detail = (
                f"transcript schema version {version} is not supported: this library reads "
                f"versions 1 to {supported}; upgrade toolnexus-gemini to load it"
            )
        else:
            detail = f"transcript has no valid schema version (got {version!r}); expected an int"
        super().__init__(detail)
        self.version = version
        """The ``version`` value found in the stored transcript (any JSON value)."""
        self.supported = supported
        """The newest schema version this library reads."""
