"""Keep ``webfetch`` off internal services: only public addresses are connected to.

A URL a model passes can name a service on the host or its network (``127.0.0.1``, a
router, the cloud metadata service at ``169.254.169.254``) in many spellings: ``localhost``,
``[::1]``, ``2130706433``, ``0x7f.1``, ``127.1``, a name whose DNS record points inside, or
a public page that redirects inward. So the check is on addresses, not on spellings: every
request the client sends (the first and each redirect) goes through `GuardedTransport`,
which resolves the host itself, refuses it when any of its addresses is not public, and
then connects to the address it checked, so a second DNS answer cannot swap in another.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import urllib.request

import httpx

from toolnexus.tool import ToolError

__all__ = ["GuardedTransport", "non_public"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def non_public(address: Address) -> str | None:
    """Return why ``address`` is not a public one (``"loopback"``, ...), or ``None``.

    Example::

        non_public(ipaddress.ip_address("169.254.169.254"))   # "link-local"
    """
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    for kind in ("unspecified", "loopback", "link_local", "private", "multicast", "reserved"):
        if getattr(address, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if address.is_global else "non-public"


def _refusal(url: httpx.URL, address: Address, kind: str) -> ToolError:
    shown = url.host if url.host == str(address) else f"{url.host} ({address})"
    return ToolError(
        f"Refused to fetch {url}: {shown} is a {kind} address. webfetch only reaches public "
        "addresses (the host can allow private ones with allow_private_network=True)."
    )


async def _resolve(url: httpx.URL, *, required: bool) -> list[Address]:
    """Return the addresses of ``url``'s host (none if unresolvable and not ``required``)."""
    port = url.port or (443 if url.scheme == "https" else 80)
    loop = asyncio.get_running_loop()
    try:
        found = await loop.getaddrinfo(url.host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        if not required:
            return []
        raise ToolError(f"Could not fetch {url}: cannot resolve {url.host!r} ({exc}).") from None
    # Drop an IPv6 zone (``fe80::1%eth0``): the address is what gets checked.
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found]


def _proxy_for(url: httpx.URL) -> str | None:
    """Return the proxy the environment sets for ``url`` (``HTTPS_PROXY``, ``NO_PROXY``)."""
    if urllib.request.proxy_bypass(url.host):
        return None
    return urllib.request.getproxies().get(url.scheme)


class GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that sends a request only to a public address of its host.

    It honours the proxy environment variables (as httpx would). Through a proxy, the
    proxy resolves the name: what this host resolves is checked, and a name only the
    proxy can resolve is passed on unchecked.

    Args:
        allow_private: Also connect to loopback, private and link-local addresses.
    """

    def __init__(self, *, allow_private: bool = False) -> None:
        self._allow_private = allow_private
        self._direct = httpx.AsyncHTTPTransport()
        self._proxied: dict[str, httpx.AsyncHTTPTransport] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Check the request's host, then send it (pinned to the checked address)."""
        proxy = _proxy_for(request.url)
        if self._allow_private:
            return await self._send(request, proxy)
        try:
            addresses = [ipaddress.ip_address(request.url.host)]
        except ValueError:
            addresses = await _resolve(request.url, required=proxy is None)
        for address in addresses:
            kind = non_public(address)
            if kind is not None:
                raise _refusal(request.url, address, kind)
        if proxy is not None or not addresses:
            return await self._send(request, proxy)
        pinned = httpx.Request(
            request.method,
            request.url.copy_with(host=str(addresses[0])),
            headers=request.headers,  # keeps Host: the name, not the address
            stream=request.stream,
            extensions={**request.extensions, "sni_hostname": request.url.host},
        )
        return await self._direct.handle_async_request(pinned)

    async def _send(self, request: httpx.Request, proxy: str | None) -> httpx.Response:
        if proxy is None:
            return await self._direct.handle_async_request(request)
        if proxy not in self._proxied:
            self._proxied[proxy] = httpx.AsyncHTTPTransport(proxy=proxy)
        return await self._proxied[proxy].handle_async_request(request)

    async def aclose(self) -> None:
        """Close the connection pools."""
        await self._direct.aclose()
        for transport in self._proxied.values():
            await transport.aclose()
