"""How a Gemini response is read: the parts the loop decides on, unary or assembled from a stream.

`parse` turns a ``GenerateContentResponse`` into a `ModelResponse`; `StreamAssembler` builds
that response from the chunks of ``streamGenerateContent``, so both transports feed the loop
the same value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

from google.genai import types

from agent._result import Usage

__all__ = [
    "MAX_ARGS_DEPTH",
    "TIER_HEADER",
    "Call",
    "ModelResponse",
    "StreamAssembler",
    "calls_of",
    "parse",
    "requested_tier",
    "served_tier",
]

MAX_ARGS_DEPTH = 64
"""How deeply a function call's arguments may nest (objects and arrays). Deeper arguments
make the reply unreadable: no tool takes them, and walking them would overflow Python's
stack in the SDK and in the transcript's JSON."""


class Call(NamedTuple):
    """One function call of a model turn."""

    name: str
    args: dict[str, Any]
    id: str | None


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """The parts of one model response that the loop decides on."""

    content: types.Content | None
    """The model's Content exactly as received (thought signatures included); ``None`` when
    the response has no parts (nothing to keep in the transcript)."""
    calls: list[Call] = field(default_factory=list)
    """The function calls, in order."""
    text: str = ""
    """The visible (non-thought) text, joined."""
    thoughts: list[str] = field(default_factory=list)
    """The thought-summary text parts, in order."""
    texts: list[str] = field(default_factory=list)
    """The visible text parts, in order."""
    media: list[types.Part] = field(default_factory=list)
    """The parts that hold data rather than text (``inlineData``, ``fileData``): an image
    model's picture, a generated file. They are part of the answer like text is."""
    finish_reason: str | None = None
    """The candidate's ``finishReason``."""
    block_reason: str | None = None
    """``promptFeedback.blockReason``: the prompt itself was blocked."""
    usage: Usage = field(default_factory=Usage)
    """The tokens this response was billed for."""
    model_version: str | None = None
    """The model version that answered."""
    model: str | None = None
    """The model the request was sent to (set by the model seam; ``None`` when unknown)."""
    service_tier: str | None = None
    """The tier that served the response (``standard``, ``flex``, ``priority``), from the
    ``x-gemini-service-tier`` header or ``usageMetadata.serviceTier``; when the server says
    neither, the tier the request asked for (``None`` if it asked for none)."""
    raw: Any = None
    """The SDK's ``GenerateContentResponse`` (what an after-model hook receives)."""


def parse(
    response: types.GenerateContentResponse,
    *,
    model: str | None = None,
    asked_tier: str | None = None,
) -> ModelResponse:
    """Extract what the loop needs from a (unary or assembled streamed) response.

    Args:
        response: The SDK's response.
        model: The model the request was sent to, recorded on the result.
        asked_tier: The tier the request asked for: the response's tier when the server
            names none.

    Raises:
        ValueError: A function call's arguments nest deeper than `MAX_ARGS_DEPTH`.
    """
    feedback = response.prompt_feedback
    candidate = response.candidates[0] if response.candidates else None
    content = candidate.content if candidate is not None else None
    texts: list[str] = []
    thoughts: list[str] = []
    media: list[types.Part] = []
    for part in (content.parts if content is not None else None) or ():
        if part.function_call is None and part.text:
            (thoughts if part.thought else texts).append(part.text)
        elif part.inline_data is not None or part.file_data is not None:
            media.append(part)
    calls = calls_of(content) if content is not None else []
    for call in calls:
        if _too_deep(call.args, MAX_ARGS_DEPTH):
            raise ValueError(
                f"the arguments of function call {call.name!r} nest deeper than "
                f"{MAX_ARGS_DEPTH} levels"
            )
    return ModelResponse(
        content=content if content is not None and content.parts else None,
        calls=calls,
        text="".join(texts),
        thoughts=thoughts,
        texts=texts,
        media=media,
        finish_reason=_name(candidate.finish_reason) if candidate is not None else None,
        block_reason=_name(feedback.block_reason) if feedback is not None else None,
        usage=_usage(response.usage_metadata),
        model_version=response.model_version,
        model=model,
        service_tier=served_tier(response) or asked_tier,
        raw=response,
    )


TIER_HEADER = "x-gemini-service-tier"
"""The response header naming the tier that served a request."""


def requested_tier(config: types.GenerateContentConfig | None) -> str | None:
    """Return the tier a request config asks for (``None``: it names none)."""
    tier = config.service_tier if config is not None else None
    return None if tier is None else _name(tier)


def served_tier(response: types.GenerateContentResponse) -> str | None:
    """Return the tier that served ``response``: its header, else its usage metadata."""
    http = response.sdk_http_response
    headers = http.headers if http is not None else None
    if headers:
        for name, value in headers.items():
            if name.lower() == TIER_HEADER and value:
                return value.strip().lower()
    meta = response.usage_metadata
    tier = _name(getattr(meta, "service_tier", None))
    return tier.lower() if tier and tier.lower() != "unspecified" else None


def calls_of(content: types.Content) -> list[Call]:
    """Return the function calls of a model Content, in order."""
    return [
        Call(call.name or "", dict(call.args or {}), call.id)
        for call in (part.function_call for part in content.parts or ())
        if call is not None
    ]


def _too_deep(value: Any, limit: int) -> bool:
    """Tell whether JSON ``value`` nests objects or arrays deeper than ``limit`` (iteratively)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


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


class StreamAssembler:
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
        self.http: types.HttpResponse | None = None
        """The HTTP response of the stream (its headers name the tier that served it)."""
        self.has_content = False
        self.grounding: dict[str, Any] = {}
        """``grounding_metadata`` / ``url_context_metadata`` of the chunks (the last wins)."""

    def add(self, chunk: types.GenerateContentResponse) -> list[tuple[str, bool]]:
        """Take one chunk; return its new ``(text, is_thought)`` pieces to report."""
        if chunk.prompt_feedback is not None and self.feedback is None:
            self.feedback = chunk.prompt_feedback
        if chunk.usage_metadata is not None:
            self.usage = chunk.usage_metadata
        self.model_version = chunk.model_version or self.model_version
        self.response_id = chunk.response_id or self.response_id
        self.http = self.http or chunk.sdk_http_response
        candidate = chunk.candidates[0] if chunk.candidates else None
        if candidate is None:
            return []
        if candidate.finish_reason is not None:
            self.finish_reason = candidate.finish_reason
        for name in ("grounding_metadata", "url_context_metadata"):
            if getattr(candidate, name) is not None:
                self.grounding[name] = getattr(candidate, name)
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
            self.parts[-1] = types.Part(
                text=(last.text or "") + (part.text or ""), thought=last.thought
            )
        else:
            self.parts.append(part)

    def response(self) -> types.GenerateContentResponse:
        """Return the assembled response, shaped like a unary one."""
        candidates = None
        if self.has_content or self.finish_reason is not None:
            content = types.Content(role="model", parts=self.parts) if self.has_content else None
            candidates = [
                types.Candidate(content=content, finish_reason=self.finish_reason, **self.grounding)
            ]
        return types.GenerateContentResponse(
            candidates=candidates,
            prompt_feedback=self.feedback,
            usage_metadata=self.usage,
            model_version=self.model_version,
            response_id=self.response_id,
            sdk_http_response=self.http,
        )


def _plain_text(part: types.Part) -> bool:
    """Tell whether ``part`` is text with nothing else on it (no signature, no other data)."""
    if part.text is None or part.thought_signature is not None:
        return False
    return not (set(part.model_fields_set) - {"text", "thought"}) and all(
        getattr(part, name) is None
        for name in ("function_call", "function_response", "inline_data", "file_data")
    )
