"""Test configuration shared by every test.

No test may reach a real network: every socket connection that does not go to the
loopback interface (or a Unix socket) fails with `RealNetworkBlocked`, and name lookups
of anything but localhost fail the same way. Real API keys are removed from the
environment so nothing can authenticate against a real endpoint by accident.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import pytest

_LOCAL_NAMES = {"localhost", "127.0.0.1", "::1", "", None}


class RealNetworkBlocked(RuntimeError):
    """A test tried to reach a host that is not on the loopback interface."""


def _is_loopback(host: Any) -> bool:
    if host in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        pass
    try:  # numeric IPv4 spellings the resolver reads without DNS: 127.1, 0x7f.1, 2130706433
        return ipaddress.IPv4Address(socket.inet_aton(str(host))).is_loopback
    except OSError:
        return False


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address[0]):
        raise RealNetworkBlocked(f"tests may not connect to {address[0]!r} (real network)")
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> Any:
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address[0]):
        raise RealNetworkBlocked(f"tests may not connect to {address[0]!r} (real network)")
    return _real_connect_ex(self, address)


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    name = host.decode() if isinstance(host, bytes) else host
    if not _is_loopback(name):
        raise RealNetworkBlocked(f"tests may not resolve {name!r} (real network)")
    return _real_getaddrinfo(host, *args, **kwargs)


def pytest_configure(config: pytest.Config) -> None:
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = _guarded_getaddrinfo


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in (
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_GENAI_USE_ENTERPRISE",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_CLOUD_LOCATION",
        "GOOGLE_GEMINI_BASE_URL",
        "GOOGLE_GENAI_API_VERSION",
    ):
        monkeypatch.delenv(name, raising=False)
    yield
