"""Turn reply values into Gemini response bodies and SSE chunks (pure, no I/O)."""

from __future__ import annotations

import base64
import copy
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from agent._media import inline_data, media_tokens
from agent.testing._replies import AUTO, FunctionCallPart, Reply, TextPart

__all__ = ["content_tokens", "json_tokens", "render_reply", "split_stream", "sse_event"]


def _encode_signature(signature: bytes) -> str:
    """Encode in standard base64, as the real server sends ``bytes`` fields."""
    return base64.b64encode(signature).decode("ascii")


def json_tokens(value: Any) -> int:
    """Estimate the tokens of ``value`` as JSON text: about four characters per token."""
    return math.ceil(len(json.dumps(value, ensure_ascii=False)) / 4) if value else 0


def content_tokens(contents: Any) -> int:
    """Estimate the tokens of a request's contents; inline files as Gemini bills them."""
    blobs = [len(data) for data in inline_data(contents)] if isinstance(contents, list) else []
    if not blobs:
        return json_tokens(contents)
    chars = len(json.dumps(contents, ensure_ascii=False)) - sum(blobs)
    return math.ceil(chars / 4) + sum(media_tokens(size * 3 // 4) for size in blobs)


def _estimate_usage(
    request: Mapping[str, Any], parts: list[dict[str, Any]], cached: int = 0
) -> dict[str, int]:
    """Plausible ``usageMetadata`` for a reply: about four characters per token (files by size).

    ``cached`` is the size of the context cache the request named: part of the prompt, and
    reported as ``cachedContentTokenCount``.
    """
    prompt = content_tokens(request.get("contents")) + json_tokens(request.get("systemInstruction"))
    prompt += json_tokens(request.get("tools")) + cached
    thoughts = sum(json_tokens(p.get("text")) for p in parts if p.get("thought"))
    candidates = sum(json_tokens(p) for p in parts if not p.get("thought"))
    usage = {"promptTokenCount": prompt, "candidatesTokenCount": candidates}
    if cached:
        usage["cachedContentTokenCount"] = cached
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    usage["totalTokenCount"] = prompt + candidates + thoughts
    return usage


def _text_part(part: TextPart) -> dict[str, Any]:
    wire: dict[str, Any] = {"text": part.text}
    if part.thought:
        wire["thought"] = True
    if part.signature is not None:
        wire["thoughtSignature"] = _encode_signature(part.signature)
    return wire


def _call_part(
    part: FunctionCallPart,
    signature: Any,
    new_call_id: Callable[[], str],
    new_signature: Callable[[Mapping[str, Any]], bytes],
) -> dict[str, Any]:
    """Render a function call; ``signature`` (the reply's, for its first call) signs it."""
    call: dict[str, Any] = {"name": part.name, "args": dict(part.args)}
    call_id = new_call_id() if part.id is AUTO else part.id
    if call_id is not None:
        call = {"id": call_id, **call}
    wire: dict[str, Any] = {"functionCall": call}
    if signature is not None:
        sig = new_signature(wire) if signature is AUTO else signature
        assert isinstance(sig, bytes)
        wire["thoughtSignature"] = _encode_signature(sig)
    return wire


def render_reply(
    value: Reply,
    request: Mapping[str, Any],
    *,
    model: str,
    response_id: str,
    new_call_id: Callable[[], str],
    new_signature: Callable[[Mapping[str, Any]], bytes],
    sign_text: bool = False,
    cached_tokens: int = 0,
) -> dict[str, Any]:
    """Build the ``GenerateContentResponse`` body for one reply.

    ``sign_text`` puts a thought signature on the last part of a reply without function
    calls when it is text and has none, as Gemini 3 does. ``cached_tokens`` is the size of
    the context cache the request named (counted in an estimated usage; a scripted usage is
    sent as given).
    """
    if value.raw is not None:
        return copy.deepcopy(dict(value.raw))
    parts: list[dict[str, Any]] = []
    signed = False
    for part in value.parts:
        if isinstance(part, FunctionCallPart):
            wire = _call_part(part, None if signed else value.signature, new_call_id, new_signature)
            signed = True
        elif isinstance(part, TextPart):
            wire = _text_part(part)
        else:
            wire = copy.deepcopy(dict(part))
        parts.append(wire)
    if sign_text and not signed and parts and "text" in parts[-1]:
        parts[-1].setdefault("thoughtSignature", _encode_signature(new_signature(parts[-1])))
    body: dict[str, Any] = {}
    if parts or value.prompt_feedback is None:
        body["candidates"] = [_candidate(value, parts)]
    if value.prompt_feedback is not None:
        body["promptFeedback"] = dict(value.prompt_feedback)
    body["usageMetadata"] = (
        dict(value.usage) if value.usage else _estimate_usage(request, parts, cached_tokens)
    )
    body["modelVersion"] = model
    body["responseId"] = response_id
    return body


def _candidate(value: Reply, parts: list[dict[str, Any]]) -> dict[str, Any]:
    candidate: dict[str, Any] = {}
    if value.content:
        candidate["content"] = {"role": "model", "parts": parts} if parts else {}
    if value.finish_reason is not None:
        candidate["finishReason"] = value.finish_reason
    if value.finish_message is not None:
        candidate["finishMessage"] = value.finish_message
    if value.candidate:
        candidate.update(copy.deepcopy(dict(value.candidate)))
    candidate["index"] = 0
    return candidate


_TEXT_PIECES = 3
"""How many chunks a streamed text part is split into (fewer when it has fewer words)."""
_WORDS = re.compile(r"\S+\s*|\s+")


def _split_text(text: str, pieces: int) -> list[str]:
    words = _WORDS.findall(text)
    if len(words) < 2:
        return [text]
    size = math.ceil(len(words) / pieces)
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]


def split_stream(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Split a response body into SSE chunks the way Gemini streams.

    Text arrives in several pieces; each function call arrives whole, consecutive calls
    in one chunk; ``usageMetadata`` is on every chunk and cumulative; ``finishReason``
    only on the last chunk; ``promptFeedback`` only on the first.
    """
    candidates = body.get("candidates") or []
    candidate = candidates[0] if candidates else None
    content = candidate.get("content") if candidate else None
    parts = (content or {}).get("parts") or []
    if candidate is None or not parts:
        return [dict(body)]
    groups: list[list[dict[str, Any]]] = []
    for part in parts:
        if "functionCall" in part and groups and "functionCall" in groups[-1][-1]:
            groups[-1].append(part)
        elif set(part) <= {"text", "thought", "thoughtSignature"} and part.get("text"):
            plain = {k: v for k, v in part.items() if k != "thoughtSignature"}
            groups.extend(
                [{**plain, "text": piece}] for piece in _split_text(part["text"], _TEXT_PIECES)
            )
            if "thoughtSignature" in part:  # streamed, the signature comes on an empty part
                groups.append([{"text": "", "thoughtSignature": part["thoughtSignature"]}])
        else:
            groups.append([part])
    usage = body.get("usageMetadata")
    chunks: list[dict[str, Any]] = []
    for index, group in enumerate(groups):
        last = index == len(groups) - 1
        chunk_candidate: dict[str, Any] = {"content": {"role": "model", "parts": group}}
        if last:
            chunk_candidate.update({k: v for k, v in candidate.items() if k != "content"})
        else:
            chunk_candidate["index"] = candidate.get("index", 0)
        chunk: dict[str, Any] = {"candidates": [chunk_candidate]}
        if index == 0 and "promptFeedback" in body:
            chunk["promptFeedback"] = body["promptFeedback"]
        if isinstance(usage, Mapping):
            chunk["usageMetadata"] = (
                usage if last else _partial_usage(usage, index + 1, len(groups))
            )
        chunk.update({k: v for k, v in body.items() if k in ("modelVersion", "responseId")})
        chunks.append(chunk)
    return chunks


def _partial_usage(usage: Mapping[str, Any], done: int, total: int) -> dict[str, Any]:
    out = dict(usage)
    candidates = usage.get("candidatesTokenCount")
    if isinstance(candidates, int):
        out["candidatesTokenCount"] = candidates * done // total
        if isinstance(usage.get("totalTokenCount"), int):
            out["totalTokenCount"] = (
                usage["totalTokenCount"] - candidates + out["candidatesTokenCount"]
            )
    return out


def sse_event(body: Mapping[str, Any]) -> bytes:
    """One SSE event: ``data: <json>`` and a blank line, nothing else."""
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\r\n\r\n"
