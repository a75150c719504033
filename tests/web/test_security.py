"""The page's guard: this machine's names only, its own origin only, the API behind the token."""

from __future__ import annotations

import pytest

from agent.web import host_name
from tests.web._support import TOKEN, Page
from toolnexus import Toolkit


def page() -> Page:
    return Page(["Hello."], Toolkit())


async def test_the_page_itself_needs_no_token_and_forbids_framing_and_inline_scripts() -> None:
    async with page().client() as client:
        response = await client.get("/", headers={"Authorization": ""})
        script = await client.get("/static/app.js", headers={"Authorization": ""})
    assert response.status_code == 200 and "<title>" in response.text
    assert script.status_code == 200 and "Authorization" in script.text
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy
    assert response.headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize("authorization", [None, "", "Bearer", "Bearer wrong", f"Basic {TOKEN}"])
async def test_the_api_refuses_a_request_without_the_launch_token(
    authorization: str | None,
) -> None:
    tested = page()
    headers = {} if authorization is None else {"Authorization": authorization}
    async with tested.client() as client:
        client.headers.pop("Authorization")
        info = await client.get("/api/info", headers=headers)
        started = await client.post("/api/runs", json={"text": "hi"}, headers=headers)
        runs = await client.get("/api/runs", headers=headers)
    assert (info.status_code, started.status_code, runs.status_code) == (401, 401, 401)
    assert "token" in info.json()["error"]
    assert tested.fakes == [], "no run started"


@pytest.mark.parametrize(
    "host",
    [
        "attacker.example",
        "attacker.example:8765",
        "127.0.0.1.attacker.example",
        "10.0.0.5:8765",
        "",
    ],
)
async def test_a_host_that_is_not_this_machine_is_refused_even_with_the_token(host: str) -> None:
    tested = page()
    async with tested.client() as client:
        response = await client.post("/api/runs", json={"text": "hi"}, headers={"Host": host})
        index = await client.get("/", headers={"Host": host})
    assert response.status_code == 403 and index.status_code == 403
    assert "Host" in response.json()["error"]
    assert tested.fakes == []


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost:9000", "[::1]:8765", "LOCALHOST"])
async def test_this_machine_s_names_are_answered(host: str) -> None:
    async with page().client() as client:
        response = await client.get("/api/info", headers={"Host": host})
    assert response.status_code == 200


@pytest.mark.parametrize(
    "origin",
    ["http://attacker.example", "http://127.0.0.1:9999", "https://127.0.0.1:8765", "null"],
)
async def test_a_foreign_origin_is_refused(origin: str) -> None:
    tested = page()
    async with tested.client() as client:
        started = await client.post("/api/runs", json={"text": "hi"}, headers={"Origin": origin})
    assert started.status_code == 403 and "Origin" in started.json()["error"]
    assert tested.fakes == []


async def test_the_page_s_own_origin_is_answered_through_a_tunnel_too() -> None:
    tested = page()
    async with tested.client() as client:
        same = await client.post(
            "/api/runs", json={"text": "hi"}, headers={"Origin": "http://127.0.0.1:8765"}
        )
        # ssh -L 9000:127.0.0.1:8765: the browser names the tunnel's end in Host and Origin.
        tunnel = await client.get(
            "/api/runs", headers={"Host": "localhost:9000", "Origin": "http://localhost:9000"}
        )
    assert same.status_code == 201 and tunnel.status_code == 200


async def test_a_page_bound_to_another_address_answers_to_it() -> None:
    tested = page()
    async with tested.client(hosts=("127.0.0.1", "192.168.1.7")) as client:
        response = await client.get("/api/info", headers={"Host": "192.168.1.7:8765"})
    assert response.status_code == 200


def test_host_names_are_read_without_port_and_brackets() -> None:
    assert host_name("LocalHost:8765") == "localhost"
    assert host_name("[::1]:8765") == "::1"
    assert host_name("127.0.0.1") == "127.0.0.1"
    assert host_name("") == ""


async def test_an_oversized_body_is_refused() -> None:
    async with page().client() as client:
        response = await client.post(
            "/api/runs",
            content=b"{}",
            headers={"Content-Length": str(64 * 2**20), "Content-Type": "application/json"},
        )
    assert response.status_code == 413
