"""HTTP endpoints as tools: `http_tool`.

A call fills ``{placeholder}`` parts of the URL from the arguments, sends the arguments
named in ``query`` as the query string and the rest as a JSON, form or raw text body, and
returns the response text. Header values may hold ``${ENV}`` references that are expanded
at call time; the expanded values are secrets: they are never logged and are replaced by
``[redacted]`` wherever a response body would echo them back.
"""

from __future__ import annotations

import json
import logging
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any, Literal
from urllib.parse import quote

from toolnexus._schema import schema_validator
from toolnexus._secrets import expand_env, redact
from toolnexus.errors import ConfigError, ToolError, describe_failure
from toolnexus.tool import Tool, ToolContext, ToolResult, sanitize

__all__ = ["http_tool"]

logger = logging.getLogger("toolnexus.http")

BodyKind = Literal["json", "form", "raw"]

_ERROR_BODY_CHARS = 2000
_OUTPUT_CHARS = 200_000
_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})


def _placeholders(url: str) -> list[str]:
    names = [field for _, field, _, _ in string.Formatter().parse(url) if field is not None]
    for name in names:
        if not name.isidentifier():
            raise ConfigError(f"URL placeholder {{{name}}} must be a plain argument name")
    return names


def _default_schema(
    placeholders: Sequence[str], query: Sequence[str], body: BodyKind | None
) -> dict[str, Any]:
    properties: dict[str, Any] = {name: {"type": "string"} for name in placeholders}
    for name in query:
        properties.setdefault(name, {"type": "string"})
    if body == "raw":
        properties["body"] = {"type": "string", "description": "Text sent as the request body."}
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = list(dict.fromkeys([*placeholders, *(["body"] if body == "raw" else [])]))
    if required:
        schema["required"] = required
    return schema


def _placeholder_value(name: str, value: Any, in_path: bool) -> str:
    """Quote ``value`` so that it fills one path segment and can never change the path.

    ``/`` and every other reserved character are percent-encoded; a value made only of
    dots (``.`` or ``..``, which a URL resolves against the path) has its dots encoded
    too; and an empty value in the path, which would address another resource, is refused.
    """
    text = str(value)
    if in_path and not text:
        raise ToolError(f"argument `{name}` must not be empty (it is part of the URL path)")
    if text and text.strip(".") == "":
        return text.replace(".", "%2E")
    return quote(text, safe="")


def _query_value(value: Any) -> str | list[str]:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return [str(_query_value(v)) for v in value]
    if isinstance(value, Mapping):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


class _HttpCall:
    """The handler of one HTTP tool (async; one short-lived client per call)."""

    def __init__(
        self,
        name: str,
        method: str,
        url: str,
        headers: Mapping[str, str],
        query: Sequence[str],
        body: BodyKind | None,
        timeout: float,
    ) -> None:
        self.name = name
        self.method = method
        self.url = url
        self.headers = dict(headers)
        self.query = tuple(query)
        self.body = body
        self.timeout = timeout
        self.placeholders = _placeholders(url)
        self.in_path = frozenset(_placeholders(re.split(r"[?#]", url, maxsplit=1)[0]))

    def _url(self, args: dict[str, Any]) -> str:
        values: dict[str, str] = {}
        for name in self.placeholders:
            if name not in args or args[name] is None:
                raise ToolError(f"missing required argument `{name}` (it is part of the URL)")
            values[name] = _placeholder_value(name, args.pop(name), name in self.in_path)
        return self.url.format(**values)

    def _request_parts(self, args: dict[str, Any]) -> dict[str, Any]:
        params: dict[str, str | list[str]] = {}
        for name in self.query:
            if name in args:
                params[name] = _query_value(args.pop(name))
        parts: dict[str, Any] = {}
        if self.body is None:
            params.update({k: _query_value(v) for k, v in args.items()})
        elif self.body == "json":
            parts["json"] = args
        elif self.body == "form":
            parts["data"] = {k: _query_value(v) for k, v in args.items()}
        else:
            raw = args.get("body", "")
            parts["content"] = raw if isinstance(raw, str) else json.dumps(raw)
        if params:
            parts["params"] = params
        return parts

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Send the request for ``args`` and turn the response into a result."""
        import httpx

        args = dict(args)
        url = self._url(args)
        secrets: list[str] = []
        headers: dict[str, str] = {}
        for key, template in self.headers.items():
            headers[key], found = expand_env(template)
            secrets += found
        parts = self._request_parts(args)
        logger.debug("HTTP %s %s", self.method, url)
        try:
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                response = await client.request(self.method, url, headers=headers, **parts)
        except httpx.TimeoutException:
            message = (
                f"Tool {self.name!r} timed out after {self.timeout:g} s ({self.method} {url})."
            )
            raise ToolError(redact(message, secrets)) from None
        except httpx.HTTPError as exc:
            # The shape of any failing tool, with the request named; headers may hold
            # expanded secrets and an error can quote them, so it is redacted.
            message = describe_failure(self.name, exc) + f" ({self.method} {url})"
            raise ToolError(redact(message, secrets)) from None
        text = redact(response.text, secrets)
        logger.debug("HTTP %s %s -> %d", self.method, url, response.status_code)
        if not response.is_success:
            if len(text) > _ERROR_BODY_CHARS:
                text = text[:_ERROR_BODY_CHARS] + f"... [{len(text)} characters in all]"
            raise ToolError(f"HTTP {response.status_code}: {text}")
        if len(text) > _OUTPUT_CHARS:
            text = text[:_OUTPUT_CHARS] + f"\n[output truncated: {len(text)} characters in all]"
        metadata = {
            "status": response.status_code,
            "content_type": response.headers.get("content-type", ""),
        }
        return ToolResult(text, metadata=metadata)


def http_tool(
    name: str,
    description: str,
    method: str,
    url: str,
    headers: Mapping[str, str] | None = None,
    query: Sequence[str] | None = None,
    body: BodyKind | None = None,
    input_schema: Mapping[str, Any] | None = None,
    timeout: float = 30.0,
) -> Tool:
    """Return a `Tool` that calls an HTTP endpoint.

    Args:
        name: Tool name (sanitised to ``[a-zA-Z0-9_-]``).
        description: What the endpoint does, for the model.
        method: HTTP method, e.g. ``"GET"``.
        url: The URL; ``{name}`` parts are filled from the argument ``name`` (URL-quoted,
            so a value fills one path segment: ``/``, ``.`` and ``..`` cannot change the
            path, and an empty value in the path is an error result) and that argument
            is not sent anywhere else.
        headers: Request headers; ``${ENV}`` in a value is replaced by that environment
            variable at call time. Expanded values never appear in logs or results.
        query: Argument names sent in the query string. Without ``body``, every argument
            that is not a URL placeholder goes to the query string.
        body: ``"json"`` sends the remaining arguments as a JSON object, ``"form"`` as
            form fields, ``"raw"`` sends the string argument ``body`` as the request body.
        input_schema: JSON Schema of the arguments; the default declares the URL
            placeholders (and ``body`` for raw) as required strings.
        timeout: Seconds for the whole request.

    Returns:
        The `Tool` (source ``"http"``). A call's 2xx response is the body text, with
        ``metadata["status"]``; any other status is an error result
        ``HTTP <status>: <body>`` (body capped at 2000 characters). A request that
        cannot be sent fails with ``Tool '<name>' failed: <ExceptionType>: <message>
        (<METHOD> <url>)``, and one past ``timeout`` with ``Tool '<name>' timed out
        after <n> s (<METHOD> <url>).``

    Raises:
        ConfigError: An unknown ``method`` or ``body`` kind, a ``timeout`` that is not
            positive, or a URL placeholder that is not a plain argument name.

    Example::

        weather = http_tool(
            "weather", "Current weather for a city.", "GET",
            "https://api.example.com/weather/{city}",
            headers={"Authorization": "Bearer ${WEATHER_TOKEN}"},
            input_schema={"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]},
        )
    """
    verb = method.upper()
    if verb not in _METHODS:
        raise ConfigError(f"unsupported HTTP method {method!r}; use one of {sorted(_METHODS)}")
    if body not in (None, "json", "form", "raw"):
        raise ConfigError(f"body must be 'json', 'form', 'raw' or None, not {body!r}")
    if timeout <= 0:
        raise ConfigError("timeout must be positive")
    call = _HttpCall(sanitize(name), verb, url, headers or {}, query or (), body, timeout)
    schema = (
        dict(input_schema)
        if input_schema is not None
        else _default_schema(call.placeholders, call.query, body)
    )
    return Tool(
        name,
        call.run,
        description,
        schema,
        source="http",
        validate=schema_validator(schema),
    )
