"""Helpers for the agent-loop tests: scripted Gemini replies over respx, and small builders.

The real ``google-genai`` client talks to respx routes; every request body is recorded
parsed, so tests assert the exact JSON sent on each turn.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Iterable, Sequence
from typing import Any

import httpx
import respx

from agent import Agent, ClientSettings, RetryPolicy, RunLimits
from toolnexus import Tool, Toolkit, ToolResult, toolkit

KEY = "AIzaTEST-secret-key-0123456789"
"""A fake API key that must never show up in logs, errors or transcripts."""

GENERATE = r".*/models/[^/]+:generateContent$"
STREAM = r".*/models/[^/]+:streamGenerateContent\?alt=sse$"

ScriptItem = dict[str, Any] | list[dict[str, Any]] | httpx.Response | Exception
"""A response body; for streaming, a list of chunk bodies; an HTTP response; or an error."""


def sse(*chunks: dict[str, Any]) -> httpx.Response:
    """A streamGenerateContent answer: one ``data:`` event per chunk."""
    body = b"".join(b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n" for chunk in chunks)
    return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})


class Script:
    """Serve ``items`` one per request (unary or streamed); record each body.

    A dict answers a unary request as JSON and a streamed one as a single SSE chunk; a list
    of dicts is sent as that many SSE chunks.
    """

    def __init__(self, mock: respx.MockRouter, items: Iterable[ScriptItem]) -> None:
        self.items = list(items)
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[httpx.Headers] = []
        self.kinds: list[str] = []
        self.route = mock.post(url__regex=GENERATE).mock(side_effect=self._serve)
        self.stream_route = mock.post(url__regex=STREAM).mock(side_effect=self._serve)

    def _serve(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content))
        self.headers.append(request.headers)
        streamed = request.url.path.endswith(":streamGenerateContent")
        self.kinds.append("stream" if streamed else "unary")
        if not self.items:
            raise AssertionError("the model was called more often than scripted")
        item = self.items.pop(0)
        if isinstance(item, Exception):
            raise item
        if isinstance(item, httpx.Response):
            return item
        if isinstance(item, list):
            assert streamed, "a list of chunks answers a streamed request only"
            return sse(*item)
        return sse(item) if streamed else httpx.Response(200, json=item)

    def contents(self, turn: int) -> list[dict[str, Any]]:
        """The ``contents`` sent on request ``turn`` (0-based)."""
        contents: list[dict[str, Any]] = self.bodies[turn]["contents"]
        return contents


class Sleeps:
    """An injectable sleep that records the waits and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def make_agent(
    http: httpx.AsyncClient,
    tk: Toolkit | None = None,
    *,
    sleeps: Sleeps | None = None,
    **kwargs: Any,
) -> Agent:
    """An Agent on the real SDK client over ``http`` with a recorded, instant retry sleep."""
    retry = RetryPolicy(sleep=sleeps or Sleeps(), jitter=0.0)
    limits = with_retry(kwargs.pop("limits", None), retry)
    client = ClientSettings(api_key=KEY, http_client=http)
    return Agent(toolkit=tk, client=client, limits=limits, **kwargs)


def with_retry(limits: RunLimits | None, retry: RetryPolicy) -> RunLimits:
    """Return ``limits`` with ``retry`` as its retry policy, unless it sets one of its own."""
    if limits is None:
        return RunLimits(retry=retry)
    if limits.retry == RetryPolicy():
        return dataclasses.replace(limits, retry=retry)
    return limits


def usage(prompt: int, candidates: int, total: int, **more: int) -> dict[str, int]:
    """A ``usageMetadata`` object."""
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": total,
        **more,
    }


def chunk(*parts: dict[str, Any], finish: str | None = None, meta: Any = None) -> dict[str, Any]:
    """A response body (or one streamed chunk) with one candidate holding ``parts``."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    body: dict[str, Any] = {"candidates": [candidate]}
    if meta is not None:
        body["usageMetadata"] = meta
    return body


def reply(
    *parts: dict[str, Any],
    finish: str | None = "STOP",
    meta: dict[str, int] | None = None,
    model_version: str | None = None,
) -> dict[str, Any]:
    """A generateContent response body with one candidate holding ``parts``."""
    body = chunk(*parts, finish=finish, meta=meta)
    if model_version is not None:
        body["modelVersion"] = model_version
    return body


def text(value: str, **extra: Any) -> dict[str, Any]:
    """A text part."""
    return {"text": value, **extra}


def call(
    name: str, args: dict[str, Any] | None = None, id: str | None = None, sig: str | None = None
) -> dict[str, Any]:
    """A functionCall part (with an id and a thought signature when given)."""
    fc: dict[str, Any] = {"name": name}
    if args is not None:
        fc["args"] = args
    if id is not None:
        fc["id"] = id
    part: dict[str, Any] = {"functionCall": fc}
    if sig is not None:
        part["thoughtSignature"] = sig
    return part


def decode_signature(value: str) -> bytes:
    """Decode a base64 signature in either alphabet, padded or not."""
    padded = value + "=" * (-len(value) % 4)
    return base64.b64decode(padded.replace("-", "+").replace("_", "/"))


def api_error(
    code: int, status: str, message: str, details: Sequence[dict[str, Any]] = (), **headers: str
) -> httpx.Response:
    """A Gemini error response."""
    body = {"error": {"code": code, "status": status, "message": message, "details": list(details)}}
    return httpx.Response(code, json=body, headers=headers)


def echo_toolkit(*extra: Tool) -> Toolkit:
    """A toolkit with an ``echo`` tool plus ``extra``."""

    def echo(args: dict[str, Any], ctx: Any) -> str:
        return "echo:" + str(args.get("text", ""))

    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    return toolkit([Tool("echo", echo, "Echo the text.", schema), *extra])


def declarations(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The function declarations of a request body."""
    tools = body.get("tools") or []
    found: list[dict[str, Any]] = []
    for tool in tools:
        found.extend(tool.get("functionDeclarations") or tool.get("function_declarations") or [])
    return found


def json_schema_of(decl: dict[str, Any]) -> Any:
    """The JSON Schema of a declaration (the SDK may spell the key in snake_case)."""
    assert "parameters" not in decl, "the schema must not go out as OpenAPI `parameters`"
    keys = [k for k in ("parametersJsonSchema", "parameters_json_schema") if k in decl]
    assert len(keys) == 1, decl
    return decl[keys[0]]


def error_result(message: str) -> ToolResult:
    """A ToolResult error."""
    return ToolResult(message, is_error=True)
