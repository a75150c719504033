"""The only module that talks to ``google.genai``: client, config, the call, error translation.

Everything the loop needs from the SDK goes through the small functions here, so the rest of
the package is plain Python over neutral values (`Reply`, `Call`, `ErrorInfo`).

Wire choices made here:

- The default client runs on an ``httpx.AsyncClient`` (not the SDK's default backend), so
  ``respx`` and the in-process fake Gemini transport can serve it.
- Every request has a timeout (the SDK has none by default); the SDK's own retries stay off
  (the agent retries with its own policy) and its automatic function calling is disabled.
- SDK ``Content`` objects are kept as received and re-sent unchanged, so thought signatures
  survive byte for byte; they are converted to JSON dicts only for the result.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

import httpx
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from agent._result import Usage
from agent.errors import ConfigurationError
from toolnexus import Request

__all__ = [
    "Assembler",
    "Call",
    "Clients",
    "Config",
    "Content",
    "ErrorInfo",
    "Reply",
    "api_key_of",
    "build_client",
    "calls_of",
    "error_info",
    "function_responses",
    "generate",
    "make_config",
    "parse",
    "pending_requests",
    "replace_response",
    "scrub",
    "scrubbed",
    "stream",
    "to_contents",
    "to_dict",
    "user_content",
]

Content = types.Content
"""The SDK's Content type (kept opaque outside this module)."""
Config = types.GenerateContentConfig
"""The SDK's request config type."""

RETRYABLE_CODES = frozenset({429, 500, 502, 503, 504})
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)s\s*$")

MISSING_KEY = (
    "No Gemini API key found. Set the GEMINI_API_KEY (or GOOGLE_API_KEY) environment "
    "variable, or pass api_key=... to Agent (or a ready google.genai Client as client=...). "
    "Keys are created at https://aistudio.google.com/apikey. To try the agent without a key, "
    "run it against the fake Gemini in agent.testing (the `toolnexus-agent demo` command does)."
)


@dataclass(slots=True)
class Clients:
    """The SDK client and, when the agent built it, the HTTP pieces it owns."""

    genai: genai.Client
    http: httpx.AsyncClient | None = None
    """The HTTP client the agent created (``None`` when the caller supplied one)."""
    transport: httpx.AsyncHTTPTransport | None = None
    """Its connection pool, released after each `run_sync` so a new event loop can reuse it."""


def build_client(
    *,
    api_key: str | None,
    http_client: httpx.AsyncClient | None,
    base_url: str | None,
    api_version: str | None,
    vertexai: bool | None,
    project: str | None,
    location: str | None,
    timeout: float | None,
    sync_http_client: httpx.Client | None = None,
) -> Clients:
    """Build the SDK client on an httpx.AsyncClient; raise ConfigurationError when misused.

    ``sync_http_client`` serves the SDK's synchronous calls (``client.models...``); the
    agent itself only makes async calls, so without it the SDK builds its own.
    """
    transport: httpx.AsyncHTTPTransport | None = None
    owned: httpx.AsyncClient | None = None
    if http_client is None:
        transport = httpx.AsyncHTTPTransport()
        owned = http_client = httpx.AsyncClient(transport=transport)
    options = types.HttpOptions(
        httpx_async_client=http_client,
        httpx_client=sync_http_client,
        timeout=None if timeout is None else max(1, round(timeout * 1000)),
        base_url=base_url,
        api_version=api_version,
    )
    try:
        client = genai.Client(
            api_key=api_key,
            vertexai=vertexai,
            project=project,
            location=location,
            http_options=options,
        )
    except ValueError as exc:
        no_key = not (
            api_key or os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY")
        )
        if no_key and "key" in str(exc).lower():
            raise ConfigurationError(MISSING_KEY) from None
        raise ConfigurationError(
            f"Invalid Gemini client settings: {scrub(str(exc), api_key)}"
        ) from None
    return Clients(client, owned, transport)


def api_key_of(client: genai.Client) -> str | None:
    """Return the API key ``client`` sends (given or read from the environment), if any."""
    key = getattr(getattr(client, "_api_client", None), "api_key", None)
    return key if isinstance(key, str) and key.strip() else None


def scrubbed(info: ErrorInfo, secret: str | None) -> ErrorInfo:
    """Return ``info`` with ``secret`` removed from its message and status."""
    if not secret:
        return info
    status = scrub(info.status, secret) if info.status is not None else None
    return info._replace(message=scrub(info.message, secret), status=status)


def scrub(text: str, secret: str | None) -> str:
    """Return ``text`` with ``secret`` (an API key) replaced by ``***``.

    A real key (8 characters or more) is replaced wherever it appears. A shorter one (a
    test key such as ``"k"``) only where it stands alone, so it does not mangle every word
    that holds the letter.
    """
    secret = (secret or "").strip()
    if len(secret) >= 8:
        return text.replace(secret, "***")
    if not secret:
        return text
    return re.sub(rf"(?<![\w-]){re.escape(secret)}(?![\w-])", "***", text)


def make_config(
    system: str | None,
    declarations: Sequence[Mapping[str, Any]],
    extra: Mapping[str, Any] | None,
) -> types.GenerateContentConfig:
    """Build the request config once per agent: instruction, tools, options, AFC off."""
    options = dict(extra or {})
    for reserved in ("system_instruction", "tools", "automatic_function_calling"):
        if reserved in options:
            raise ConfigurationError(
                f"config={{...}} may not set {reserved!r}: the agent sets it "
                "(use system_prompt= and toolkit= instead)"
            )
    tools = None
    if declarations:
        tools = [
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(
                        name=decl["name"],
                        description=decl["description"],
                        parameters_json_schema=decl["parametersJsonSchema"],
                    )
                    for decl in declarations
                ]
            )
        ]
    try:
        return types.GenerateContentConfig(
            **options,
            system_instruction=system,
            tools=tools,  # type: ignore[arg-type]
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
    except (ValueError, TypeError, AttributeError) as exc:
        raise ConfigurationError(f"Invalid generation config: {exc}") from None


def user_content(text: str) -> types.Content:
    """Return a ``user`` Content holding one text part."""
    # Built without validation: the values are known-good and this runs on every call.
    return types.Content.model_construct(role="user", parts=[types.Part.model_construct(text=text)])


def to_contents(history: Sequence[Mapping[str, Any] | types.Content]) -> list[types.Content]:
    """Turn history (Content dicts with wire keys, or SDK Contents) into SDK Contents."""
    contents: list[types.Content] = []
    for i, item in enumerate(history):
        if isinstance(item, types.Content):
            contents.append(item)
            continue
        try:
            contents.append(types.Content.model_validate(item))
        except (ValueError, TypeError) as exc:
            raise ConfigurationError(f"history[{i}] is not a Gemini Content: {exc}") from None
    return contents


def to_dict(content: types.Content) -> dict[str, Any]:
    """Return ``content`` as a JSON-ready dict with the wire's camelCase keys."""
    return content.model_dump(mode="json", by_alias=True, exclude_none=True)


def function_responses(
    responses: Sequence[tuple[str | None, str, dict[str, Any]]],
) -> types.Content:
    """Return one ``user`` Content of ``functionResponse`` parts, in the order given.

    Each item is ``(call id or None, tool name, response object)``; an id is sent only when
    the call had one.
    """
    # Built without validation: every field is known-good and this runs on every tool turn.
    return types.Content.model_construct(
        role="user",
        parts=[
            types.Part.model_construct(
                function_response=types.FunctionResponse.model_construct(
                    id=cid, name=name, response=resp
                )
            )
            for cid, name, resp in responses
        ],
    )


def calls_of(content: types.Content) -> list[Call]:
    """Return the function calls of a model Content, in order."""
    return [
        Call(
            part.function_call.name or "",
            dict(part.function_call.args or {}),
            part.function_call.id,
        )
        for part in content.parts or ()
        if part.function_call is not None
    ]


def pending_requests(content: types.Content) -> list[tuple[int, Request]]:
    """Return ``(call index, Request)`` for each function response still waiting on an answer."""
    if content.role != "user":
        return []
    found = []
    index = 0
    for part in content.parts or ():
        response = part.function_response
        if response is None:
            continue
        pending = (response.response or {}).get("pending")
        if isinstance(pending, Mapping) and "id" in pending:
            found.append((index, Request(**pending)))  # type: ignore[typeddict-item]
        index += 1
    return found


def replace_response(content: types.Content, index: int, response: dict[str, Any]) -> types.Content:
    """Return a copy of ``content`` whose ``index``-th function response carries ``response``."""
    parts = list(content.parts or ())
    seen = -1
    for i, part in enumerate(parts):
        if part.function_response is None:
            continue
        seen += 1
        if seen == index:
            old = part.function_response
            parts[i] = types.Part(
                function_response=types.FunctionResponse(
                    id=old.id, name=old.name, response=response
                )
            )
            break
    return types.Content(role=content.role, parts=parts)


class Call(NamedTuple):
    """One function call of a model turn."""

    name: str
    args: dict[str, Any]
    id: str | None


@dataclass(slots=True)
class Reply:
    """The parts of a response the loop decides on; ``content`` is the SDK Content verbatim."""

    content: types.Content | None
    calls: list[Call] = field(default_factory=list)
    text: str = ""
    thoughts: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    finish_reason: str | None = None
    block_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    model_version: str | None = None


def _name(value: Any) -> str | None:
    if value is None:
        return None
    return str(value.value) if isinstance(value, Enum) else str(value)


def _usage(meta: types.GenerateContentResponseUsageMetadata | None) -> Usage:
    if meta is None:
        return Usage()
    return Usage(
        prompt=meta.prompt_token_count or 0,
        candidates=meta.candidates_token_count or 0,
        thoughts=meta.thoughts_token_count or 0,
        cached=meta.cached_content_token_count or 0,
        tool_use_prompt=meta.tool_use_prompt_token_count or 0,
        total=meta.total_token_count or 0,
    )


def parse(response: types.GenerateContentResponse) -> Reply:
    """Extract what the loop needs from a (unary or assembled streamed) response."""
    feedback = response.prompt_feedback
    block = _name(feedback.block_reason) if feedback is not None else None
    candidate = response.candidates[0] if response.candidates else None
    content = candidate.content if candidate is not None else None
    calls: list[Call] = []
    texts: list[str] = []
    thoughts: list[str] = []
    for part in (content.parts if content is not None else None) or ():
        call = part.function_call
        if call is not None:
            calls.append(Call(call.name or "", dict(call.args or {}), call.id))
        elif part.text:
            (thoughts if part.thought else texts).append(part.text)
    return Reply(
        content=content,
        calls=calls,
        text="".join(texts),
        thoughts=thoughts,
        texts=texts,
        finish_reason=_name(candidate.finish_reason) if candidate is not None else None,
        block_reason=block,
        usage=_usage(response.usage_metadata),
        model_version=response.model_version,
    )


async def generate(
    client: genai.Client,
    model: str,
    contents: list[types.Content],
    config: types.GenerateContentConfig,
) -> types.GenerateContentResponse:
    """Make one unary ``generateContent`` call."""
    return await client.aio.models.generate_content(model=model, contents=contents, config=config)


async def stream(
    client: genai.Client,
    model: str,
    contents: list[types.Content],
    config: types.GenerateContentConfig,
) -> AsyncGenerator[types.GenerateContentResponse, None]:
    """Make one ``streamGenerateContent`` call and yield its chunks.

    The HTTP response is closed when the caller stops early (an error or a cancellation).
    """
    chunks = await client.aio.models.generate_content_stream(
        model=model, contents=contents, config=config
    )
    async with contextlib.aclosing(chunks):  # type: ignore[type-var]
        async for chunk in chunks:
            yield chunk


class Assembler:
    """Builds one response from the chunks of a streamed turn.

    Every part of every chunk is kept, in order: function calls arrive whole and several may
    share a chunk; an empty text part that carries a thought signature is kept. Adjacent
    text pieces are joined into one part when neither carries a signature and both have the
    same ``thought`` flag, so a streamed turn is echoed back as compactly as a unary one.
    ``finishReason`` and ``usageMetadata`` come from the last chunk that has them (usage is
    cumulative), ``promptFeedback`` from the first.
    """

    def __init__(self) -> None:
        self.parts: list[types.Part] = []
        self.finish_reason: Any = None
        self.usage: types.GenerateContentResponseUsageMetadata | None = None
        self.feedback: types.GenerateContentResponsePromptFeedback | None = None
        self.model_version: str | None = None
        self.response_id: str | None = None
        self.has_content = False

    def add(self, chunk: types.GenerateContentResponse) -> list[tuple[str, bool]]:
        """Take one chunk; return its new ``(text, is_thought)`` pieces to report."""
        if chunk.prompt_feedback is not None and self.feedback is None:
            self.feedback = chunk.prompt_feedback
        if chunk.usage_metadata is not None:
            self.usage = chunk.usage_metadata
        self.model_version = chunk.model_version or self.model_version
        self.response_id = chunk.response_id or self.response_id
        candidate = chunk.candidates[0] if chunk.candidates else None
        if candidate is None:
            return []
        if candidate.finish_reason is not None:
            self.finish_reason = candidate.finish_reason
        if candidate.content is None:
            return []
        self.has_content = True
        pieces: list[tuple[str, bool]] = []
        for part in candidate.content.parts or ():
            if part.text:
                pieces.append((part.text, bool(part.thought)))
            self._keep(part)
        return pieces

    def _keep(self, part: types.Part) -> None:
        last = self.parts[-1] if self.parts else None
        if (
            last is not None
            and _plain_text(last)
            and _plain_text(part)
            and bool(last.thought) == bool(part.thought)
        ):
            self.parts[-1] = types.Part.model_construct(
                text=(last.text or "") + (part.text or ""), thought=last.thought
            )
        else:
            self.parts.append(part)

    def response(self) -> types.GenerateContentResponse:
        """Return the assembled response, shaped like a unary one."""
        candidates = None
        if self.has_content or self.finish_reason is not None:
            content = types.Content(role="model", parts=self.parts) if self.has_content else None
            candidates = [types.Candidate(content=content, finish_reason=self.finish_reason)]
        return types.GenerateContentResponse(
            candidates=candidates,
            prompt_feedback=self.feedback,
            usage_metadata=self.usage,
            model_version=self.model_version,
            response_id=self.response_id,
        )


def _plain_text(part: types.Part) -> bool:
    """Tell whether ``part`` is text with nothing else on it (no signature, no other data)."""
    if part.text is None or part.thought_signature is not None:
        return False
    return not (set(part.model_fields_set) - {"text", "thought"}) and all(
        getattr(part, name) is None
        for name in ("function_call", "function_response", "inline_data", "file_data")
    )


class ErrorInfo(NamedTuple):
    """A model-call failure, translated from the SDK or httpx exception."""

    code: int | None
    status: str | None
    message: str
    retryable: bool
    delay: float | None = None
    """Seconds the server asked us to wait (``RetryInfo.retryDelay`` or ``Retry-After``)."""


def error_info(exc: BaseException) -> ErrorInfo | None:
    """Translate a model-call exception; ``None`` when it is not a model/network failure."""
    if isinstance(exc, genai_errors.APIError):
        return _api_error(exc)
    if isinstance(exc, httpx.TimeoutException):
        return ErrorInfo(None, "TIMEOUT", f"{type(exc).__name__}: {exc}", retryable=True)
    if isinstance(exc, httpx.TransportError):
        return ErrorInfo(None, "NETWORK_ERROR", f"{type(exc).__name__}: {exc}", retryable=True)
    if isinstance(exc, genai_errors.UnknownApiResponseError):
        return ErrorInfo(None, "UNKNOWN_RESPONSE", str(exc), retryable=False)
    return None


def _api_error(exc: genai_errors.APIError) -> ErrorInfo:
    code = exc.code if isinstance(exc.code, int) else None
    details = _error_details(exc.details if isinstance(exc.details, Mapping) else {})
    # A per-day quota will not come back within any sensible wait.
    per_day = code == 429 and _per_day_quota(details)
    delay = None
    if code in RETRYABLE_CODES and not per_day:
        delay = _retry_delay(details)
        if delay is None:
            delay = _retry_after(getattr(exc, "response", None))
    return ErrorInfo(
        code=code,
        status=exc.status,
        message=str(exc.message or exc.status or "no message"),
        retryable=code in RETRYABLE_CODES and not per_day,
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
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import email.utils  # only needed for the rare HTTP-date form

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
