import socket

import httpx
import pytest

from tests.conftest import RealNetworkBlocked


def test_real_host_lookup_is_refused():
    with pytest.raises(RealNetworkBlocked):
        socket.getaddrinfo("generativelanguage.googleapis.com", 443)


def test_real_address_connect_is_refused():
    with socket.socket() as s, pytest.raises(RealNetworkBlocked):
        s.connect(("8.8.8.8", 443))


async def test_httpx_to_real_endpoint_fails():
    async with httpx.AsyncClient() as client:
        with pytest.raises(RealNetworkBlocked):
            await client.get("https://generativelanguage.googleapis.com/v1/models")


def test_loopback_is_allowed():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname(), timeout=2):
            pass
