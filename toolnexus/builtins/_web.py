"""The ``webfetch`` built-in tool: HTTP GET a URL and return it as Markdown, text or HTML.

Only ``http`` and ``https`` URLs are fetched (never ``file://`` or other schemes). The
body is read up to `MAX_DOWNLOAD_BYTES`; HTML is converted with ``markdownify`` or
stripped to plain text; non-text content types are refused with a clear message; a
non-2xx status is an error that shows the status and the start of the body.

Only public addresses are fetched unless ``BuiltinSettings.allow_private_network`` (see
`GuardedTransport`). ``timeout`` is one deadline for the whole call: connecting, every
redirect, reading the body and converting it. Conversion runs on a worker thread, after a
linear pass that drops scripts and styles (an unclosed ``<script>`` drops the rest of the
page, as a browser would not show it either).
"""

from __future__ import annotations

import asyncio
import re
from typing import Any
from urllib.parse import urlsplit

import httpx
from markdownify import markdownify

from toolnexus._execute import in_worker
from toolnexus._registry import BuiltinSettings
from toolnexus.builtins._arguments import positive_number
from toolnexus.builtins._html import TextExtractor
from toolnexus.builtins._netguard import GuardedTransport
from toolnexus.builtins._output import cap
from toolnexus.tool import Handler, ToolContext, ToolError, ToolResult

__all__ = ["MAX_DOWNLOAD_BYTES", "html_to_markdown", "html_to_text", "webfetch_handler"]

DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 3600.0
"""Longest ``timeout`` a call may ask for (one hour)."""
MAX_DOWNLOAD_BYTES = 5_000_000
"""Bytes of a response body read at most; the rest is not downloaded."""
_ERROR_BODY_CHARS = 1000

_TEXT_TYPES = (
    "application/json",
    "application/xml",
    "application/xhtml+xml",
    "application/javascript",
    "application/ecmascript",
    "application/x-javascript",
    "application/rss+xml",
    "application/atom+xml",
    "application/yaml",
    "application/x-yaml",
    "application/toml",
    "application/x-sh",
    "application/sql",
    "application/graphql",
    "application/ld+json",
    "image/svg+xml",
)


def _is_text(content_type: str) -> bool:
    if not content_type:
        return True  # no type given: try to read it as text
    return (
        content_type.startswith("text/")
        or content_type in _TEXT_TYPES
        or content_type.endswith(("+json", "+xml"))
    )


def _is_html(content_type: str, body: str) -> bool:
    if content_type in ("text/html", "application/xhtml+xml"):
        return True
    if content_type:
        return False
    head = body[:1000].lstrip().lower()
    return head.startswith(("<!doctype html", "<html"))


def html_to_text(html: str) -> str:
    """Return the visible text of ``html``: tags, scripts and styles gone, entities decoded.

    Example::

        html_to_text("<p>a &amp; b</p><script>x()</script>")   # "a & b"
    """
    parser = TextExtractor()
    parser.feed(html)
    parser.close()
    lines = (
        re.sub(r"[ \t\r\f\v\xa0]+", " ", line).strip() for line in "".join(parser.parts).split("\n")
    )
    return "\n".join(line for line in lines if line)


_HIDDEN_OPEN = re.compile(r"<(script|style|noscript|template)\b[^>]*>", re.I)


def _without_scripts(html: str) -> str:
    """Return ``html`` without its script, style, noscript and template elements.

    One pass from left to right: an element that is never closed runs to the end of the
    page and goes with it, so no character is scanned twice.
    """
    kept: list[str] = []
    position = 0
    while opening := _HIDDEN_OPEN.search(html, position):
        kept.append(html[position : opening.start()])
        closing = re.compile(rf"</{opening.group(1)}\s*>", re.I).search(html, opening.end())
        position = closing.end() if closing else len(html)
    kept.append(html[position:])
    return "".join(kept)


def html_to_markdown(html: str) -> str:
    """Return ``html`` converted to Markdown (scripts and styles dropped).

    Example::

        html_to_markdown("<h1>Title</h1><p>a &amp; <b>b</b></p>")
        # "# Title", a blank line, then "a & **b**"
    """
    markdown: str = markdownify(_without_scripts(html), heading_style="ATX", strip=["img"])
    return re.sub(r"\n{3,}", "\n\n", markdown).strip()


def _check_args(args: dict[str, Any]) -> tuple[str, str, float]:
    url = args["url"].strip()
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme not in ("http", "https"):
        raise ToolError(
            f"Invalid arguments: `url` must start with http:// or https://, got {url[:200]!r}"
        )
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises for a port out of range)
    except ValueError as exc:
        raise ToolError(f"Invalid arguments: `url` is not a valid URL: {exc}") from None
    if not parts.hostname:
        raise ToolError(f"Invalid arguments: `url` has no host name: {url[:200]!r}")
    fmt = args.get("format", "markdown")
    timeout = positive_number(args, "timeout", DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S, "seconds")
    return url, fmt, timeout


async def _download(
    url: str, seconds: float, settings: BuiltinSettings
) -> tuple[httpx.Response, bytes, bool]:
    headers = {
        "User-Agent": "toolnexus-webfetch/0.1",
        "Accept": "text/html, text/*;q=0.9, */*;q=0.5",
    }
    transport = GuardedTransport(allow_private=settings.allow_private_network)
    try:
        async with (
            httpx.AsyncClient(
                transport=transport, timeout=seconds, follow_redirects=True, headers=headers
            ) as client,
            client.stream("GET", url) as response,
        ):
            body = bytearray()
            cut = False
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_DOWNLOAD_BYTES:
                    del body[MAX_DOWNLOAD_BYTES:]
                    cut = True
                    break
            return response, bytes(body), cut
    except httpx.TimeoutException:
        raise _timed_out(url, seconds) from None
    except httpx.InvalidURL as exc:
        raise ToolError(f"Invalid arguments: `url` is not a valid URL: {exc}") from None
    except (httpx.HTTPError, OSError) as exc:
        raise ToolError(f"Could not fetch {url}: {type(exc).__name__}: {exc}") from None


def _decode(response: httpx.Response, body: bytes) -> str:
    encoding = response.charset_encoding or "utf-8"
    try:
        return body.decode(encoding, errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


def _timed_out(url: str, seconds: float) -> ToolError:
    return ToolError(f"Fetching {url} timed out after {seconds:g} s.")


async def _fetch(settings: BuiltinSettings, args: dict[str, Any]) -> ToolResult:
    url, fmt, timeout = _check_args(args)
    deadline = asyncio.timeout(timeout)
    try:
        async with deadline:
            return await _fetch_within(settings, url, fmt, seconds=timeout)
    except TimeoutError:
        if deadline.expired():
            raise _timed_out(url, timeout) from None
        raise


async def _fetch_within(
    settings: BuiltinSettings, url: str, fmt: str, *, seconds: float
) -> ToolResult:
    response, body, cut = await _download(url, seconds, settings)
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    status = f"HTTP {response.status_code} {response.reason_phrase}".strip()
    meta = {"status": response.status_code, "content_type": content_type, "url": str(response.url)}
    if not 200 <= response.status_code < 300:
        text = _decode(response, body) if _is_text(content_type) else ""
        if _is_html(content_type, text):
            text = await in_worker(lambda: html_to_text(text))
        piece = text[:_ERROR_BODY_CHARS] + ("..." if len(text) > _ERROR_BODY_CHARS else "")
        detail = f"\n{piece}" if piece.strip() else ""
        return ToolResult(f"{status} for {url}{detail}", is_error=True, metadata=meta)
    if not _is_text(content_type):
        return ToolResult(
            f"{url} returned non-text content ({content_type}, {len(body)} bytes"
            f"{' or more' if cut else ''}); webfetch only returns text. "
            "Download it with bash (e.g. curl -o) if you need the file.",
            is_error=True,
            metadata=meta,
        )
    text = _decode(response, body)
    if fmt != "html" and _is_html(content_type, text):
        convert = html_to_markdown if fmt == "markdown" else html_to_text
        text = await in_worker(lambda: convert(text))
    if cut:
        text += f"\n[download stopped after {MAX_DOWNLOAD_BYTES} bytes]"
    output = cap(
        text,
        max_lines=settings.limits.max_lines,
        max_bytes=settings.limits.max_bytes,
        hint='Fetch a more specific URL, or use format="text" for less markup.',
    )
    return ToolResult(output or "(empty response body)", metadata=meta)


def webfetch_handler(settings: BuiltinSettings) -> Handler:
    """Return the handler of the ``webfetch`` tool (HTTP GET of ``http``/``https`` URLs only)."""

    async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await _fetch(settings, args)

    return handler
