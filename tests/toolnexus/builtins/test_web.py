"""The webfetch tool against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import toolnexus
from toolnexus import Limits, Toolkit, ToolResult
from toolnexus.builtins._web import html_to_markdown, html_to_text

PAGE = """<!doctype html>
<html><head><title>Fish &amp; Chips</title><style>body { color: red }</style></head>
<body>
<h1>Fish &amp; Chips</h1>
<script>alert("hidden")</script>
<p>Crispy &lt;and&gt; <b>hot</b> &#8364;5 &mdash; <a href="/menu">menu</a></p>
<ul><li>cod</li><li>haddock</li></ul>
</body></html>"""

ROUTES: dict[str, tuple[int, str, bytes]] = {
    "/page": (200, "text/html; charset=utf-8", PAGE.encode()),
    "/plain": (200, "text/plain; charset=utf-8", b"just text <b>not html</b>\n"),
    "/data.json": (200, "application/json", b'{"a": 1}'),
    "/image.png": (200, "image/png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 100),
    "/missing": (404, "text/html", b"<html><body><h1>Not here</h1><p>Try /page</p></body></html>"),
    "/broken": (500, "text/plain", b"boom " * 1000),
    "/long": (200, "text/plain", b"".join(b"line %d\n" % i for i in range(5000))),
    "/latin1": (200, "text/plain; charset=iso-8859-1", "café".encode("latin-1")),
}


class _Handler(BaseHTTPRequestHandler):
    release: threading.Event

    def do_GET(self) -> None:
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/plain")
            self.end_headers()
            return
        if self.path == "/slow":
            self.release.wait(5)
            return
        status, content_type, body = ROUTES.get(self.path, ROUTES["/missing"])
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    release = threading.Event()
    handler = type("Handler", (_Handler,), {"release": release})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture
def tk(tmp_path: Path) -> Toolkit:
    return toolnexus.build(root=tmp_path, allow_private_network=True)


def fetch(tk: Toolkit, url: str, **args: object) -> ToolResult:
    return toolnexus.execute(tk, "webfetch", {"url": url, **args})


def test_markdown_is_the_default_and_really_converts(tk: Toolkit, server: str) -> None:
    result = fetch(tk, f"{server}/page")
    assert result.is_error is False
    out = result.output
    assert "# Fish & Chips" in out
    assert "Crispy <and> **hot** €5 — [menu](/menu)" in out
    assert "* cod" in out or "- cod" in out
    for gone in ("<p>", "&amp;", "alert", "color: red", "<b>"):
        assert gone not in out
    assert result.metadata is not None and result.metadata["status"] == 200


def test_text_format_strips_html(tk: Toolkit, server: str) -> None:
    out = fetch(tk, f"{server}/page", format="text").output
    assert out.splitlines() == ["Fish & Chips", "Crispy <and> hot €5 — menu", "cod", "haddock"]


def test_html_format_returns_the_body(tk: Toolkit, server: str) -> None:
    assert fetch(tk, f"{server}/page", format="html").output == PAGE


def test_plain_text_and_json_pass_through(tk: Toolkit, server: str) -> None:
    assert fetch(tk, f"{server}/plain").output == "just text <b>not html</b>\n"
    assert fetch(tk, f"{server}/data.json").output == '{"a": 1}'
    assert fetch(tk, f"{server}/latin1").output == "café"
    assert fetch(tk, f"{server}/redirect").output == "just text <b>not html</b>\n"


def test_non_2xx_is_an_error_with_status_and_body(tk: Toolkit, server: str) -> None:
    result = fetch(tk, f"{server}/missing")
    assert result.is_error is True
    assert result.output == f"HTTP 404 Not Found for {server}/missing\nNot here\nTry /page"
    broken = fetch(tk, f"{server}/broken")
    assert broken.is_error and broken.output.startswith("HTTP 500 Internal Server Error")
    assert len(broken.output) < 1200 and broken.output.endswith("...")


def test_non_text_content_is_refused(tk: Toolkit, server: str) -> None:
    result = fetch(tk, f"{server}/image.png")
    assert result.is_error is True
    assert "non-text content (image/png, 108 bytes)" in result.output


def test_output_is_capped(tmp_path: Path, server: str) -> None:
    tk = toolnexus.build(root=tmp_path, limits=Limits(max_lines=100), allow_private_network=True)
    result = fetch(tk, f"{server}/long")
    lines = result.output.splitlines()
    assert lines[99] == "line 99"
    assert lines[100].startswith("[output truncated: showed 100 of 5000 lines")


def test_timeout(tk: Toolkit, server: str) -> None:
    result = fetch(tk, f"{server}/slow", timeout=0.2)
    assert result.is_error is True
    assert result.output == f"Fetching {server}/slow timed out after 0.2 s."


@pytest.mark.parametrize(
    ("url", "args", "message"),
    [
        ("file:///etc/passwd", {}, "`url` must start with http:// or https://"),
        ("ftp://example.org/x", {}, "`url` must start with http:// or https://"),
        ("example.org", {}, "`url` must start with http:// or https://"),
        ("http://127.0.0.1:1/", {"format": "pdf"}, "`format` must be one of"),
        ("http://127.0.0.1:1/", {"timeout": 0}, "`timeout` must be a positive number"),
        ("http://127.0.0.1:1/", {"timeout": "10"}, "`timeout` must be a number"),
        (
            "http://127.0.0.1:1/",
            {"timeout": 10**400},
            "`timeout` must be at most 3600 seconds, got about 1e400",
        ),
        ("http://127.0.0.1:1/", {}, "Could not fetch http://127.0.0.1:1/"),
        ("http://127.0.0.1:99999/", {}, "`url` is not a valid URL"),
        ("http:///path", {}, "`url` has no host name"),
    ],
)
def test_errors(tk: Toolkit, url: str, args: dict[str, object], message: str) -> None:
    result = fetch(tk, url, **args)
    assert result.is_error is True
    assert message in result.output
    assert "Traceback" not in result.output
    assert "failed:" not in result.output


def test_converters_directly() -> None:
    assert html_to_text("<p>a &amp; b</p><script>x()</script>") == "a & b"
    assert html_to_markdown("<h1>T</h1><p>a &amp; <b>b</b></p>") == "# T\n\na & **b**"
