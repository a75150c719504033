"""webfetch against hostile URLs, servers and pages (servers on 127.0.0.1 only).

An "internal" server on 127.0.0.1 holds a secret. A default toolkit must never return it,
however the address is spelled or redirected to. A second server on 127.0.0.2 plays a
public site (the address check is told to treat exactly that address as public): it
redirects inward, trickles its body, or serves pages built to make conversion slow.
"""

from __future__ import annotations

import contextlib
import ipaddress
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import toolnexus
from toolnexus import Toolkit, ToolResult
from toolnexus.builtins import _netguard
from toolnexus.builtins._web import html_to_markdown, html_to_text

SECRET = "internal-secret-7f3a"
UNCLOSED = "<p>x</p><script>var a=1;<style>b{}"
PAGES = {
    "/hostile-210k": "<html><body>" + UNCLOSED * (210_000 // len(UNCLOSED)),
    "/hostile-4m8": "<html><body>" + UNCLOSED * (4_800_000 // len(UNCLOSED)),
    "/dense": "<html><body>" + "<p>x <b>y</b></p>" * 100_000,
}


class _Quiet(BaseHTTPRequestHandler):
    def send_body(self, content_type: str, text: str) -> None:
        body = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Internal(_Quiet):
    def do_GET(self) -> None:
        self.send_body("text/plain", SECRET)


class _Public(_Quiet):
    internal_port: int

    def do_GET(self) -> None:
        # A client that gave up at its deadline is what these tests expect, not a fault.
        with contextlib.suppress(ConnectionError):
            self._reply()

    def _reply(self) -> None:
        if self.path.startswith("/to/"):
            self.send_response(302)
            host = self.path.removeprefix("/to/")
            self.send_header("Location", f"http://{host}:{self.internal_port}/")
            self.end_headers()
        elif self.path == "/trickle":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            for _ in range(40):  # ends by itself after about 8 s
                self.wfile.write(b".")
                self.wfile.flush()
                time.sleep(0.2)
        else:
            self.send_body("text/html", PAGES[self.path])


def _serve(address: str, handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    httpd = ThreadingHTTPServer((address, 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    return httpd


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[int, str]]:
    internal = _serve("127.0.0.1", _Internal)
    handler = type("Public", (_Public,), {"internal_port": internal.server_address[1]})
    public = _serve("127.0.0.2", handler)
    try:
        yield internal.server_address[1], f"http://127.0.0.2:{public.server_address[1]}"
    finally:
        for httpd in (internal, public):
            httpd.shutdown()
            httpd.server_close()


@pytest.fixture
def public_is_public(monkeypatch: pytest.MonkeyPatch) -> None:
    checked = _netguard.non_public
    stand_in = ipaddress.ip_address("127.0.0.2")
    monkeypatch.setattr(
        _netguard, "non_public", lambda address: None if address == stand_in else checked(address)
    )


@pytest.fixture
def tk(tmp_path: Path) -> Toolkit:
    return toolnexus.build(root=tmp_path)


def fetch(tk: Toolkit, url: str, **args: object) -> ToolResult:
    return toolnexus.execute(tk, "webfetch", {"url": url, "format": "text", **args})


INTERNAL_HOSTS = [
    "127.0.0.1",
    "[::1]",
    "localhost",
    "2130706433",
    "0x7f.1",
    "127.1",
    "0.0.0.0",
    "[::]",
    "[::ffff:127.0.0.1]",
    "169.254.169.254",
    "[fe80::1]",
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "100.64.0.1",
    "[fd00::1]",
    "224.0.0.1",
]


@pytest.mark.parametrize("host", INTERNAL_HOSTS)
def test_internal_addresses_are_refused(tk: Toolkit, servers: tuple[int, str], host: str) -> None:
    port, _ = servers
    result = fetch(tk, f"http://{host}:{port}/")
    assert result.is_error is True
    assert result.output.startswith(f"Refused to fetch http://{host}:{port}/: ")
    assert "allow_private_network=True" in result.output
    assert SECRET not in result.output


def test_a_spelling_httpx_does_not_parse_is_refused_too(
    tk: Toolkit, servers: tuple[int, str]
) -> None:
    result = fetch(tk, f"http://0177.0.0.1:{servers[0]}/")
    assert result.is_error is True
    assert "`url` is not a valid URL" in result.output


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "2130706433", "0x7f.1", "127.1"])
def test_redirects_to_internal_addresses_are_refused(
    tk: Toolkit, servers: tuple[int, str], public_is_public: None, host: str
) -> None:
    port, public = servers
    result = fetch(tk, f"{public}/to/{host}")
    assert result.is_error is True
    assert result.output.startswith(f"Refused to fetch http://{host}:{port}/: ")
    assert SECRET not in result.output


def test_the_option_allows_internal_addresses(tmp_path: Path, servers: tuple[int, str]) -> None:
    port, _ = servers
    tk = toolnexus.build(root=tmp_path, allow_private_network=True)
    assert fetch(tk, f"http://127.1:{port}/").output == SECRET


def test_the_connection_goes_to_the_address_that_was_checked(
    tk: Toolkit,
    servers: tuple[int, str],
    public_is_public: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The name resolves once, to the stand-in public address. Were it resolved again at
    # connect time (where a rebinding DNS server could answer 127.0.0.1), the test's
    # network guard would refuse the lookup and the fetch would fail.
    _, public = servers
    port = public.rsplit(":", 1)[1]
    looked_up: list[str] = []

    async def resolve(url: object, *, required: bool) -> list[ipaddress.IPv4Address]:
        looked_up.append(str(url))
        return [ipaddress.IPv4Address("127.0.0.2")]

    monkeypatch.setattr(_netguard, "_resolve", resolve)
    result = fetch(tk, f"http://rebind.example:{port}/to/127.0.0.1")
    assert result.output.startswith(f"Refused to fetch http://127.0.0.1:{servers[0]}/: ")
    assert looked_up == [f"http://rebind.example:{port}/to/127.0.0.1"]


def test_public_addresses_pass_the_check() -> None:
    for text in ("8.8.8.8", "2001:4860:4860::8888", "1.1.1.1"):
        assert _netguard.non_public(ipaddress.ip_address(text)) is None
    assert _netguard.non_public(ipaddress.ip_address("169.254.169.254")) == "link-local"


def test_a_trickling_body_ends_at_the_deadline(
    tk: Toolkit, servers: tuple[int, str], public_is_public: None
) -> None:
    _, public = servers
    result = fetch(tk, f"{public}/trickle", timeout=1)
    assert result.is_error is True
    assert result.output == f"Fetching {public}/trickle timed out after 1 s."


def test_conversion_is_inside_the_deadline(
    tk: Toolkit, servers: tuple[int, str], public_is_public: None
) -> None:
    # 1.7 MB of dense markup takes seconds to convert, well past a 0.3 s deadline.
    _, public = servers
    result = fetch(tk, f"{public}/dense", format="markdown", timeout=0.3)
    assert result.is_error is True
    assert result.output == f"Fetching {public}/dense timed out after 0.3 s."


@pytest.mark.timeout(60)
@pytest.mark.parametrize("path", ["/hostile-210k", "/hostile-4m8"])
@pytest.mark.parametrize("fmt", ["markdown", "text"])
def test_unclosed_scripts_convert_at_once(
    tk: Toolkit, servers: tuple[int, str], public_is_public: None, path: str, fmt: str
) -> None:
    # Quadratic before: 11 s for the small page, minutes for the large one.
    _, public = servers
    result = fetch(tk, f"{public}{path}", format=fmt, timeout=30)
    assert result.is_error is False
    assert result.output == "x"


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ("<p>a</p><script>x()</script><p>b</p>", "a\n\nb"),
        ("<p>a</p><SCRIPT type=x>x()</script ><p>b</p>", "a\n\nb"),
        ("<p>a</p><style>p{}</style><noscript>n</noscript><template>t</template>b", "a\n\nb"),
        ("<p>a</p><script>never closed <p>b</p>", "a"),
        ("<p>a</p><script></style><p>b</p>", "a"),
        ("<p>a</p><scripts>b</scripts>", "a\n\nb"),
    ],
)
def test_scripts_and_styles_are_dropped(html: str, expected: str) -> None:
    assert html_to_markdown(html) == expected
    assert html_to_text(html) == expected.replace("\n\n", "\n")
