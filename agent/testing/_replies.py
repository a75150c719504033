"""Reply builders: the vocabulary a script uses to say what the fake model answers.

Every builder returns a small frozen value; the fake turns it into a real
``GenerateContentResponse`` body (or an error body) when a request arrives. Ids and
thought signatures left on ``AUTO`` are filled in by the fake at that moment, so the
same script can be replayed against several fakes.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

__all__ = [
    "AUTO",
    "Checked",
    "Delayed",
    "ErrorReply",
    "FunctionCallPart",
    "ModelFunction",
    "Reply",
    "ReplyLike",
    "TextPart",
    "blocked",
    "code_execution",
    "delay",
    "error",
    "expect",
    "function_call",
    "grounding",
    "json_output",
    "malformed_function_call",
    "reply",
    "server_tool_call",
    "text",
    "thought",
]


class _Auto:
    """Sentinel type: let the fake choose the value when it serves the reply."""

    _instance: _Auto | None = None

    def __new__(cls) -> _Auto:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "AUTO"


AUTO: Final = _Auto()
"""Placeholder for an id or thought signature the fake generates when serving."""


@dataclass(frozen=True)
class TextPart:
    """A text part of a model turn (a thought summary when ``thought`` is true)."""

    text: str
    """The text the model says."""
    thought: bool = False
    """Mark the part as a thought summary (``"thought": true`` on the wire)."""
    signature: bytes | None = None
    """A thought signature carried on this part, if any."""


@dataclass(frozen=True)
class FunctionCallPart:
    """One ``functionCall`` part of a model turn."""

    name: str
    """The function the model calls."""
    args: Mapping[str, Any] = field(default_factory=dict)
    """The call's arguments (a JSON object)."""
    id: str | _Auto | None = AUTO
    """The call id: ``AUTO`` (generated, Gemini 3 style), a string, or ``None`` (2.5 style)."""


PartLike: TypeAlias = TextPart | FunctionCallPart | str | Mapping[str, Any]


@dataclass(frozen=True)
class Reply:
    """One successful model answer (HTTP 200)."""

    parts: tuple[TextPart | FunctionCallPart | Mapping[str, Any], ...] = ()
    """The model's parts, in order. Raw dicts are sent as given."""
    finish_reason: str | None = "STOP"
    """``candidates[0].finishReason``; ``None`` leaves it out."""
    usage: Mapping[str, int] | None = None
    """``usageMetadata``; ``None`` lets the fake estimate plausible counts."""
    signature: bytes | _Auto | None = AUTO
    """Thought signature for the first ``functionCall`` part (``None``: unsigned, 2.5 style)."""
    prompt_feedback: Mapping[str, Any] | None = None
    """``promptFeedback``; set with no parts, the reply has no ``candidates`` (blocked prompt)."""
    finish_message: str | None = None
    """``candidates[0].finishMessage`` (the SDK drops it, the raw body keeps it)."""
    content: bool = True
    """False sends the candidate without a ``content`` key (output blocked)."""
    raw: Mapping[str, Any] | None = None
    """A complete ``GenerateContentResponse`` body sent as is (the other fields are ignored)."""
    candidate: Mapping[str, Any] | None = None
    """More ``candidates[0]`` fields, e.g. ``groundingMetadata`` (see `grounding`)."""


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error with Google's body shape ``{"error": {code, message, status, details}}``."""

    status_code: int
    """The HTTP status code."""
    body: Mapping[str, Any]
    """The JSON body, ``{"error": {...}}``."""
    mid_stream: bool = False
    """For streaming requests: answer 200, then send the error as an SSE ``data:`` event."""


@dataclass(frozen=True)
class Checked:
    """Check the request before answering ``reply``; a failed check fails the test."""

    check: Callable[[dict[str, Any]], str | None]
    """Receives the request body (camelCase); returns ``None`` or what is wrong."""
    reply: Reply | ErrorReply | Delayed
    """What the fake answers when the check passes."""


@dataclass(frozen=True)
class Delayed:
    """Wait ``seconds`` before sending ``reply`` (to test timeouts and cancellation)."""

    seconds: float
    """How long the fake waits before answering."""
    reply: Reply | ErrorReply
    """What it then answers."""


ReplyLike: TypeAlias = (
    Reply
    | ErrorReply
    | Delayed
    | Checked
    | TextPart
    | FunctionCallPart
    | str
    | Mapping[str, Any]
    | Sequence[PartLike]
)
"""Anything a script entry or a model function may produce: a built reply, a part or a list
of parts (one model turn), a plain string (a text answer) or a raw response dict."""

ModelFunction: TypeAlias = Callable[[dict[str, Any]], ReplyLike]
"""The model as a function: gets the parsed request body (camelCase keys), returns a reply.

The body is the function's own copy: it may keep or change it freely."""


def text(value: str, *, signature: bytes | None = None) -> TextPart:
    """Build a visible text part.

    Example::

        fake = FakeGemini([reply(text("Hello"), text(" world"))])

    Args:
        value: The text the model says.
        signature: A thought signature to put on the part, as raw bytes.

    Returns:
        The part, for `reply` or as a script entry on its own.
    """
    return TextPart(value, signature=signature)


def thought(value: str, *, signature: bytes | None = None) -> TextPart:
    """Build a thought-summary part (``"thought": true``), sent when thoughts are included.

    Args:
        value: The thought summary.
        signature: A thought signature to put on the part, as raw bytes.

    Returns:
        The part, for `reply` or as a script entry on its own.
    """
    return TextPart(value, thought=True, signature=signature)


def json_output(value: Any) -> TextPart:
    """Build a text part holding ``value`` as JSON: a structured-output answer.

    Example::

        FakeGemini([json_output({"city": "Paris", "temp_c": 21})])

    Args:
        value: Any JSON-ready value (a dict, a list, a number...).

    Returns:
        The part, for `reply` or as a script entry on its own.
    """
    return TextPart(json.dumps(value))


def function_call(
    name: str, args: Mapping[str, Any] | None = None, *, id: str | _Auto | None = AUTO
) -> FunctionCallPart:
    """Build a ``functionCall`` part.

    Example::

        fake = FakeGemini([function_call("read", {"path": "README.md"}), "Done."])

    Args:
        name: The function the model calls.
        args: The call's arguments (a JSON object); none by default.
        id: The call id. `AUTO` (the default) lets the fake choose a fresh one, Gemini 3
            style; ``None`` sends a Gemini 2.5 style call without id, whose answer then
            matches by name and position.

    Returns:
        The part, for `reply` or as a script entry on its own (a turn with this one call).
    """
    return FunctionCallPart(name, dict(args or {}), id)


def reply(
    *parts: PartLike,
    finish_reason: str | None = "STOP",
    usage: Mapping[str, int] | None = None,
    signature: bytes | _Auto | None = AUTO,
    finish_message: str | None = None,
    grounding: Mapping[str, Any] | None = None,
) -> Reply:
    """Build a model turn made of ``parts``.

    Example::

        reply(thought("Both are needed."), function_call("a", {}), function_call("b", {}),
              usage={"promptTokenCount": 10, "candidatesTokenCount": 5})

    Args:
        *parts: The turn's parts in order: `text`, `thought` and `function_call` values,
            strings (text parts) or raw wire part dicts.
        finish_reason: ``candidates[0].finishReason``; None leaves it out.
        usage: ``usageMetadata`` with wire keys; None lets the fake estimate plausible counts.
        signature: The thought signature on the first ``functionCall`` part. `AUTO` (the
            default) is an HMAC of that call under the fake's signing key, so any fake with
            the key checks the echo; explicit bytes are remembered by the fake that sent
            them; None sends the call unsigned (Gemini 2.5 style).
        finish_message: ``candidates[0].finishMessage``.
        grounding: Candidate fields from `grounding` (``groundingMetadata``,
            ``urlContextMetadata``).

    Returns:
        The reply, a script entry.
    """
    return Reply(
        tuple(TextPart(p) if isinstance(p, str) else p for p in parts),
        finish_reason=finish_reason,
        usage=usage,
        signature=signature,
        finish_message=finish_message,
        candidate=grounding,
    )


def server_tool_call(
    tool_type: str,
    args: Mapping[str, Any],
    response: Mapping[str, Any],
    *,
    id: str = "tool_1",
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Build the two parts of a server-side tool invocation: ``toolCall`` and ``toolResponse``.

    The ``toolCall`` part carries a thought signature. The fake remembers both parts and
    refuses a later request that does not send them back exactly as received.

    Example::

        reply(*server_tool_call("GOOGLE_SEARCH_WEB", {"queries": ["paris weather"]},
                                {"results": 3}), function_call("forecast", {"city": "Paris"}))

    Args:
        tool_type: ``GOOGLE_SEARCH_WEB``, ``URL_CONTEXT``, ``GOOGLE_MAPS``, ...
        args: The call's arguments.
        response: The tool's response.
        id: The invocation id shared by both parts.

    Returns:
        The ``toolCall`` and ``toolResponse`` part dicts, for `reply`.
    """
    signature = base64.b64encode(f"server-tool:{id}".encode()).decode()
    call = {"toolCall": {"id": id, "toolType": tool_type, "args": dict(args)}}
    return (
        {**call, "thoughtSignature": signature},
        {"toolResponse": {"id": id, "toolType": tool_type, "response": dict(response)}},
    )


def code_execution(
    code: str, output: str, *, outcome: str = "OUTCOME_OK", id: str = "code_1"
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Build the parts of a code-execution step: ``executableCode`` and its result.

    Args:
        code: The Python code the model ran.
        output: What it printed.
        outcome: ``OUTCOME_OK``, ``OUTCOME_FAILED`` or ``OUTCOME_DEADLINE_EXCEEDED``.
        id: The id shared by both parts.

    Returns:
        The two part dicts, for `reply`.
    """
    return (
        {"executableCode": {"id": id, "language": "PYTHON", "code": code}},
        {"codeExecutionResult": {"id": id, "outcome": outcome, "output": output}},
    )


def grounding(
    queries: Sequence[str] = (),
    sources: Sequence[tuple[str, str]] = (),
    *,
    urls: Sequence[tuple[str, str]] = (),
) -> dict[str, Any]:
    """Build grounding metadata for `reply(..., grounding=...)`.

    Args:
        queries: The web search queries the model ran.
        sources: ``(uri, title)`` of each grounding source.
        urls: ``(url, status)`` of each URL-context retrieval, e.g.
            ``("https://example.com", "URL_RETRIEVAL_STATUS_SUCCESS")``.

    Returns:
        The candidate fields ``groundingMetadata`` (and ``urlContextMetadata``).
    """
    fields: dict[str, Any] = {}
    if queries or sources:
        fields["groundingMetadata"] = {
            "webSearchQueries": list(queries),
            "groundingChunks": [{"web": {"uri": uri, "title": title}} for uri, title in sources],
        }
    if urls:
        fields["urlContextMetadata"] = {
            "urlMetadata": [
                {"retrievedUrl": url, "urlRetrievalStatus": status} for url, status in urls
            ]
        }
    return fields


def malformed_function_call(message: str = "Malformed function call.") -> Reply:
    """Build a ``MALFORMED_FUNCTION_CALL`` finish: empty content, as Gemini sends it.

    Args:
        message: The ``finishMessage`` explaining what was malformed.

    Returns:
        The reply, a script entry.
    """
    return Reply((), finish_reason="MALFORMED_FUNCTION_CALL", finish_message=message)


def blocked(reason: str = "SAFETY", *, prompt: bool = True) -> Reply:
    """Build a blocked answer.

    Args:
        reason: The block reason, e.g. ``"SAFETY"`` or ``"PROHIBITED_CONTENT"``.
        prompt: True (the default) blocks the prompt: ``promptFeedback.blockReason`` and no
            candidates. False blocks the output: a candidate with ``finishReason=reason``
            and no content.

    Returns:
        The reply, a script entry.
    """
    if prompt:
        return Reply((), finish_reason=None, prompt_feedback={"blockReason": reason})
    return Reply((), finish_reason=reason, content=False)


_QUOTA_METRIC: Final = "generativelanguage.googleapis.com/generate_content_requests"
_STATUS_CODES: Final = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    402: "RESOURCE_EXHAUSTED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def error(
    status_code: int,
    status: str | None = None,
    message: str | None = None,
    *,
    retry_delay: float | str | None = None,
    quota_id: str | None = None,
    details: Sequence[Mapping[str, Any]] = (),
    mid_stream: bool = False,
) -> ErrorReply:
    """Build an HTTP error with the body shape Gemini uses.

    Example::

        error(429, retry_delay=2.5, quota_id="GenerateRequestsPerMinutePerProjectPerModel")
        error(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")

    Args:
        status_code: The HTTP status, e.g. 429 or 503.
        status: The status string; by default the one Gemini pairs with ``status_code``
            (``RESOURCE_EXHAUSTED`` for 429, ...).
        message: The error message; by default the one Gemini sends for that status.
        retry_delay: Seconds, or a Duration string such as ``"37s"``: adds a
            ``google.rpc.RetryInfo`` detail.
        quota_id: Adds a ``google.rpc.QuotaFailure`` violation with this id (a
            ``...PerDay...`` id marks a daily quota).
        details: More ``details`` entries, sent as given.
        mid_stream: A streaming request gets HTTP 200 and then the error as an SSE event.

    Returns:
        The error reply, a script entry.
    """
    status = status or _STATUS_CODES.get(status_code, "UNKNOWN")
    body_details: list[Mapping[str, Any]] = []
    if quota_id is not None:
        body_details.append(
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": _QUOTA_METRIC,
                        "quotaId": quota_id,
                        "quotaValue": "10",
                    }
                ],
            }
        )
    if retry_delay is not None:
        delay_text = retry_delay if isinstance(retry_delay, str) else f"{retry_delay:g}s"
        body_details.append(
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay_text}
        )
    body_details.extend(details)
    if message is None:
        message = _default_message(status_code, status, retry_delay)
    err: dict[str, Any] = {"code": status_code, "message": message, "status": status}
    if body_details:
        err["details"] = body_details
    return ErrorReply(status_code, {"error": err}, mid_stream=mid_stream)


def _default_message(status_code: int, status: str, retry_delay: float | str | None) -> str:
    if status_code == 429:
        if isinstance(retry_delay, int | float):
            retry_delay = f"{retry_delay:g}s"
        hint = f" Please retry in {retry_delay}." if retry_delay is not None else ""
        return "You exceeded your current quota, please check your plan and billing details." + hint
    if status_code == 503:
        return "The model is overloaded. Please try again later."
    if status_code == 500:
        return (
            "An internal error has occurred. Please retry or report in the troubleshooting guide."
        )
    return f"Request failed with {status_code} {status}."


def delay(seconds: float, then: ReplyLike | FunctionCallPart) -> Delayed:
    """Answer ``then`` after waiting ``seconds``.

    Example::

        FakeGemini([delay(5.0, "too late")])   # trips a 1 s client timeout

    Args:
        seconds: How long the fake waits before answering.
        then: The answer, anything a script entry may be except `expect`.

    Returns:
        The delayed reply, a script entry.

    Raises:
        TypeError: ``then`` is an `expect` value or something the fake cannot send.
    """
    inner = _plain(coerce(then))
    if isinstance(inner, Delayed):
        return Delayed(seconds + inner.seconds, inner.reply)
    return Delayed(seconds, inner)


def expect(check: Callable[[dict[str, Any]], str | None], then: ReplyLike) -> Checked:
    """Answer ``then`` only if the request passes ``check``.

    Example::

        def saw_result(body):
            return None if "functionResponse" in str(body["contents"][-1]) else "no result sent"

        FakeGemini([function_call("read", {"path": "a"}), expect(saw_result, "Done.")])

    Args:
        check: Gets a copy of the request body (camelCase keys) and returns None, or what
            is wrong. When it returns a problem (or raises), the fake answers HTTP 400
            ``FAILED_PRECONDITION`` (not retried) naming it, and records it so
            `FakeGemini.assert_consumed` fails too.
        then: The answer when the check passes, anything a script entry may be except
            another `expect`.

    Returns:
        The checked reply, a script entry.

    Raises:
        TypeError: ``then`` is an `expect` value or something the fake cannot send.
    """
    return Checked(check, _plain(coerce(then)))


def _plain(value: Reply | ErrorReply | Delayed | Checked) -> Reply | ErrorReply | Delayed:
    if isinstance(value, Checked):
        raise TypeError("expect() cannot wrap another expect(); combine the checks instead")
    return value


def coerce(value: object) -> Reply | ErrorReply | Delayed | Checked:
    """Turn anything a script may hold into a reply value, or raise ``TypeError``."""
    if isinstance(value, Reply | ErrorReply | Delayed | Checked):
        return value
    if isinstance(value, str):
        return Reply((TextPart(value),))
    if isinstance(value, TextPart | FunctionCallPart):
        return Reply((value,))
    if isinstance(value, list | tuple):
        return reply(*value)
    if isinstance(value, Mapping):
        json.dumps(value)  # fail early on a body that cannot be sent
        return Reply(raw=value)
    raise TypeError(
        f"FakeGemini cannot send {type(value).__name__!r}: use a string, a reply builder "
        "(text, function_call, reply, error, delay, blocked) or a response dict"
    )
