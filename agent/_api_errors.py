"""How a failed model call is described: SDK and httpx exceptions become an `ErrorInfo`.

Retryable: HTTP 429, 500, 502, 503 and 504, network errors and timeouts. A 429 whose quota
is per day is not (it will not come back within any sensible wait). The server's own wait,
``RetryInfo.retryDelay`` in the error body or the ``Retry-After`` header, is carried along.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping
from typing import Any

import httpx
from google.genai import errors as genai_errors

from agent._client import scrub
from agent._retry import ErrorInfo

__all__ = ["RETRYABLE_CODES", "request_field", "translate", "unreadable"]

RETRYABLE_CODES = frozenset({429, 500, 502, 503, 504})
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)s\s*$")


def translate(exc: BaseException, secret: str | None = None) -> ErrorInfo | None:
    """Describe a model-call exception, with ``secret`` (the API key) scrubbed out.

    Args:
        exc: What the SDK or httpx raised.
        secret: The API key, removed from the message and status wherever it appears.

    Returns:
        The failure, or ``None`` when ``exc`` is not a model or network failure (a bug,
        a cancellation): such exceptions are not ours to translate.
    """
    info = _describe(exc)
    if info is None or not secret:
        return info
    status = scrub(info.status, secret) if info.status is not None else None
    return info._replace(message=scrub(info.message, secret), status=status)


def _describe(exc: BaseException) -> ErrorInfo | None:
    if isinstance(exc, genai_errors.APIError):
        return _api_error(exc)
    if isinstance(exc, httpx.TimeoutException):
        return ErrorInfo(None, "TIMEOUT", f"{type(exc).__name__}: {exc}", retryable=True)
    if isinstance(exc, httpx.TransportError):
        return ErrorInfo(None, "NETWORK_ERROR", _network_message(exc), retryable=True)
    if isinstance(exc, genai_errors.UnknownApiResponseError):
        return ErrorInfo(None, "UNKNOWN_RESPONSE", str(exc), retryable=False)
    if isinstance(exc, ValueError) and not isinstance(exc, RecursionError):
        where = request_field(exc)
        if where is not None:
            return _refused_request(exc, where)
    if isinstance(exc, RecursionError | ValueError):
        # The SDK could not decode, validate or re-encode what the model sent (a reply that
        # is not JSON, or nested too deeply for Python to walk): the reply is unusable.
        return unreadable(exc)
    return None


# The SDK turns the request into wire JSON with one converter per type
# (``_GoogleSearch_to_mldev``) and ``t_*`` transformers (``t_model``); a ValueError raised
# inside them is about the request, before anything was sent.
_CONVERTER = re.compile(r"^_(\w+?)_to_(?:mldev|vertex)$")
_FIELDS = {
    "GenerateContentConfig": "config",
    "Tool": "tools",
    "Content": "contents",
    "Part": "parts",
}
_ROOTS = frozenset({"GenerateContentParameters", "CountTokensParameters"})


def request_field(exc: BaseException) -> str | None:
    """Name the request field the SDK refused while building the request, or ``None``.

    Args:
        exc: What the SDK raised.

    Returns:
        A dotted path such as ``"model"`` or ``"config.tools.google_search"``, or ``None``
        when ``exc`` was not raised while the request was being built.
    """
    path: list[str] = []
    found = False
    trace = exc.__traceback__
    while trace is not None:
        code = trace.tb_frame.f_code
        trace = trace.tb_next
        if "google/genai" not in code.co_filename.replace("\\", "/"):
            continue
        converter = _CONVERTER.match(code.co_name)
        if converter is not None:
            found = True
            name = converter.group(1)
            if name not in _ROOTS:
                path.append(_FIELDS.get(name) or _snake(name))
        elif code.co_name.startswith("t_") and code.co_filename.endswith("_transformers.py"):
            found = True
            path.append(code.co_name[2:])
    if not found:
        return None
    return ".".join(dict.fromkeys(path)) or "the request"


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _refused_request(exc: BaseException, where: str) -> ErrorInfo:
    detail = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    return ErrorInfo(
        None,
        "INVALID_REQUEST",
        f"the request was not sent: the SDK refused its field {where} ({detail})",
        retryable=False,
    )


def _network_message(exc: httpx.TransportError) -> str:
    """Say what failed, against which host, and what to check: one line."""
    try:
        host = exc.request.url.host
    except RuntimeError:  # an error raised without its request
        host = ""
    detail = str(exc).splitlines()[0] if str(exc) else "no detail"
    target = f"could not reach {host}" if host else "the connection failed"
    return (
        f"{target} ({type(exc).__name__}: {detail}); check the network connection, "
        "a proxy (HTTPS_PROXY) and the endpoint (base_url= or GOOGLE_GEMINI_BASE_URL)"
    )


def unreadable(exc: BaseException) -> ErrorInfo:
    """Describe a model reply that could not be read (not retried: it is the model's output).

    Args:
        exc: What decoding or checking the reply raised.

    Returns:
        The failure, with status ``"UNKNOWN_RESPONSE"``.
    """
    detail = str(exc).splitlines()[0][:200] if str(exc) else ""
    return ErrorInfo(
        None,
        "UNKNOWN_RESPONSE",
        f"the model's reply could not be read ({type(exc).__name__}: {detail})",
        retryable=False,
    )


def _api_error(exc: genai_errors.APIError) -> ErrorInfo:
    code = exc.code if isinstance(exc.code, int) else None
    details = _error_details(exc.details if isinstance(exc.details, Mapping) else {})
    retryable = code in RETRYABLE_CODES and not (code == 429 and _per_day_quota(details))
    delay = None
    if retryable:
        delay = _retry_delay(details)
        if delay is None:
            delay = _retry_after(getattr(exc, "response", None))
    return ErrorInfo(
        code=code,
        status=exc.status,
        message=str(exc.message or exc.status or "no message"),
        retryable=retryable,
        delay=delay,
    )


def _error_details(body: Mapping[str, Any]) -> list[Any]:
    error = body.get("error")
    details = error.get("details") if isinstance(error, Mapping) else None
    return details if isinstance(details, list) else []


def _per_day_quota(details: list[Any]) -> bool:
    for detail in details:
        if not isinstance(detail, Mapping) or not str(detail.get("@type", "")).endswith(
            "QuotaFailure"
        ):
            continue
        for violation in detail.get("violations") or ():
            if isinstance(violation, Mapping) and "PerDay" in str(violation.get("quotaId", "")):
                return True
    return False


def _retry_delay(details: list[Any]) -> float | None:
    for detail in details:
        if isinstance(detail, Mapping) and "retryDelay" in detail:
            match = _DURATION.match(str(detail["retryDelay"]))
            if match:
                return float(match.group(1))
    return None


def _retry_after(response: Any) -> float | None:
    """Read ``Retry-After``: seconds, or an HTTP date."""
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
