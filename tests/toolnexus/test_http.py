"""http_tool against a real local HTTP server (uvicorn + starlette on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

import toolnexus
from tests.toolnexus.mcp_servers.local_http import serve
from toolnexus import ToolContext, http_tool, toolkit

SECRET = "s3cr3t-token-value-4711"

release = asyncio.Event()


async def _echo(request: Request) -> Response:
    raw = await request.body()
    return JSONResponse(
        {
            "method": request.method,
            "path": request.url.path,
            "raw_path": request.scope["raw_path"].decode(),
            "query": [[k, v] for k, v in request.query_params.multi_items()],
            "headers": dict(request.headers),
            "content_type": request.headers.get("content-type", ""),
            "body": raw.decode(),
        }
    )


async def _status(request: Request) -> Response:
    code = int(request.path_params["code"])
    # The server echoes the request headers, secrets included, in its error body.
    return PlainTextResponse(f"bad things; auth={request.headers.get('authorization')}", code)


async def _big_error(request: Request) -> Response:
    return PlainTextResponse("x" * 10_000, 502)


async def _slow(request: Request) -> Response:
    await release.wait()
    return PlainTextResponse("late")


app = Starlette(
    routes=[
        Route("/echo/{rest:path}", _echo, methods=["GET", "POST", "PUT", "DELETE", "PATCH"]),
        Route("/status/{code}", _status),
        Route("/big-error", _big_error),
        Route("/slow", _slow),
    ]
)


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serve(app, release) as url:
        yield url


def run(tool: toolnexus.Tool, args: dict[str, Any] | None = None) -> toolnexus.ToolResult:
    return toolnexus.execute(toolkit([tool]), tool.name, args)


def test_placeholders_are_quoted_and_removed_from_the_query(base_url: str) -> None:
    tool = http_tool(
        "get_item",
        "Get an item.",
        "GET",
        base_url + "/echo/items/{owner}/{item}",
    )
    assert tool.input_schema["required"] == ["owner", "item"]
    result = run(tool, {"owner": "a b/c", "item": "42", "verbose": True})
    assert not result.is_error, result.output
    echoed = json.loads(result.output)
    assert echoed["raw_path"] == "/echo/items/a%20b%2Fc/42"
    assert echoed["query"] == [["verbose", "true"]]
    assert result.metadata is not None
    assert result.metadata["status"] == 200
    assert result.metadata["content_type"] == "application/json"


@pytest.mark.parametrize(
    ("value", "raw_path"),
    [
        ("..", "/echo/api/items/%2E%2E/detail"),
        (".", "/echo/api/items/%2E/detail"),
        ("...", "/echo/api/items/%2E%2E%2E/detail"),
        ("../../admin", "/echo/api/items/..%2F..%2Fadmin/detail"),
        ("a.b", "/echo/api/items/a.b/detail"),
        ("%2E%2E", "/echo/api/items/%252E%252E/detail"),
    ],
)
def test_no_placeholder_value_changes_the_path(base_url: str, value: str, raw_path: str) -> None:
    tool = http_tool("item", "Get one.", "GET", base_url + "/echo/api/items/{id}/detail")
    result = run(tool, {"id": value})
    assert not result.is_error, result.output
    assert json.loads(result.output)["raw_path"] == raw_path


def test_dot_values_side_by_side_stay_inside_their_segment(base_url: str) -> None:
    tool = http_tool("pair", "Pair.", "GET", base_url + "/echo/api/{a}{b}/x?tag={c}")
    result = run(tool, {"a": ".", "b": ".", "c": ""})
    assert json.loads(result.output)["raw_path"] == "/echo/api/%2E%2E/x"


def test_an_empty_path_value_is_refused(base_url: str) -> None:
    tool = http_tool("item", "Get one.", "GET", base_url + "/echo/api/items/{id}")
    result = run(tool, {"id": ""})
    assert result.is_error
    assert result.output == "argument `id` must not be empty (it is part of the URL path)"


def test_missing_placeholder_is_an_error_naming_it(base_url: str) -> None:
    tool = http_tool(
        "get_item",
        "Get an item.",
        "GET",
        base_url + "/echo/{item}",
        input_schema={"type": "object"},
    )
    result = run(tool, {})
    assert result.is_error
    assert "`item`" in result.output


def test_query_args_go_to_the_query_string_and_the_rest_to_a_json_body(base_url: str) -> None:
    tool = http_tool(
        "create",
        "Create a thing.",
        "POST",
        base_url + "/echo/things/{kind}",
        query=["dry_run", "tags"],
        body="json",
        input_schema={
            "type": "object",
            "properties": {
                "kind": {"type": "string"},
                "dry_run": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "title": {"type": "string"},
                "size": {"type": "integer"},
            },
            "required": ["kind", "title"],
        },
    )
    result = run(
        tool, {"kind": "box", "dry_run": False, "tags": ["a", "b"], "title": "T", "size": 3}
    )
    assert not result.is_error, result.output
    echoed = json.loads(result.output)
    assert echoed["method"] == "POST"
    assert echoed["path"] == "/echo/things/box"
    assert echoed["query"] == [["dry_run", "false"], ["tags", "a"], ["tags", "b"]]
    assert echoed["content_type"] == "application/json"
    assert json.loads(echoed["body"]) == {"title": "T", "size": 3}


def test_form_body(base_url: str) -> None:
    tool = http_tool("form", "Post a form.", "POST", base_url + "/echo/form", body="form")
    result = run(tool, {"name": "Ada L", "age": 36})
    echoed = json.loads(result.output)
    assert echoed["content_type"] == "application/x-www-form-urlencoded"
    assert echoed["body"] == "name=Ada+L&age=36"


def test_raw_body_sends_the_body_argument_as_text(base_url: str) -> None:
    tool = http_tool(
        "put_note",
        "Store a note.",
        "PUT",
        base_url + "/echo/notes/{id}",
        headers={"Content-Type": "text/plain"},
        body="raw",
    )
    assert tool.input_schema["required"] == ["id", "body"]
    result = run(tool, {"id": "7", "body": "line one\nline two"})
    echoed = json.loads(result.output)
    assert echoed["method"] == "PUT"
    assert echoed["body"] == "line one\nline two"


def test_schema_violations_are_reported_before_any_request(base_url: str) -> None:
    tool = http_tool(
        "get",
        "Get.",
        "GET",
        base_url + "/echo/{id}",
        input_schema={
            "type": "object",
            "properties": {"id": {"type": "integer"}},
            "required": ["id"],
        },
    )
    result = run(tool, {"id": "seven"})
    assert result.is_error
    assert "`id` must be an integer" in result.output


def test_header_env_expansion_never_leaks(
    base_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "toolnexus"):
        caplog.set_level(logging.DEBUG, logger=name)
    monkeypatch.setenv("SVC_TOKEN", SECRET)
    headers = {"Authorization": "Bearer ${SVC_TOKEN}", "X-Plain": "visible"}
    ok = http_tool("ok", "Echo.", "GET", base_url + "/echo/me", headers=headers)
    result = run(ok, {})
    assert not result.is_error
    echoed = json.loads(result.output)
    # The server got the real value; the model sees it redacted.
    assert echoed["headers"]["authorization"] == "Bearer [redacted]"
    assert echoed["headers"]["x-plain"] == "visible"
    assert SECRET not in result.output

    failing = http_tool("bad", "Fail.", "GET", base_url + "/status/500", headers=headers)
    error = run(failing, {})
    assert error.is_error
    assert error.output == "HTTP 500: bad things; auth=Bearer [redacted]"

    records = caplog.records
    assert any(r.name.startswith("httpx") for r in records)
    assert any(r.name.startswith("httpcore") for r in records)
    for record in records:
        assert SECRET not in record.getMessage()
        assert SECRET not in repr(record.args)


def test_unset_header_variable_names_the_variable(
    base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    tool = http_tool(
        "x", "X.", "GET", base_url + "/echo/x", headers={"X-Key": "${NOT_SET_ANYWHERE}"}
    )
    result = run(tool, {})
    assert result.is_error
    assert result.output == "environment variable NOT_SET_ANYWHERE is not set"


def test_non_2xx_is_an_error_with_status_and_capped_body(base_url: str) -> None:
    not_found = run(http_tool("nf", "404.", "GET", base_url + "/status/404"))
    assert not_found.is_error
    assert not_found.output == "HTTP 404: bad things; auth=None"
    big = run(http_tool("big", "502.", "GET", base_url + "/big-error"))
    assert big.is_error
    assert big.output.startswith("HTTP 502: xxx")
    assert len(big.output) < 2100
    assert big.output.endswith("[10000 characters in all]")


async def test_timeout_is_an_error_and_async_execution_works(base_url: str) -> None:
    tool = http_tool("slow", "Slow.", "GET", base_url + "/slow", timeout=0.2)
    result = await toolnexus.execute_async(toolkit([tool]), "slow", {}, ToolContext())
    assert result.is_error
    assert result.output == f"Tool 'slow' timed out after 0.2 s (GET {base_url}/slow)."


def test_connection_error_is_an_error_result() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = run(http_tool("down", "Down.", "GET", f"http://127.0.0.1:{port}/"))
    assert result.is_error
    assert result.output.startswith("Tool 'down' failed: ConnectError: ")
    assert result.output.endswith(f" (GET http://127.0.0.1:{port}/)")


def test_source_and_bad_configuration() -> None:
    tool = http_tool("a b", "Desc.", "get", "http://127.0.0.1/{x}")
    assert tool.name == "a_b"
    assert tool.source == "http"
    assert tool.input_schema == {
        "type": "object",
        "properties": {"x": {"type": "string"}},
        "required": ["x"],
    }
    with pytest.raises(toolnexus.ConfigError, match="unsupported HTTP method"):
        http_tool("t", "d", "FETCH", "http://127.0.0.1/")
    with pytest.raises(toolnexus.ConfigError, match="body must be"):
        http_tool("t", "d", "POST", "http://127.0.0.1/", body="xml")  # type: ignore[arg-type]
    with pytest.raises(toolnexus.ConfigError, match="plain argument name"):
        http_tool("t", "d", "GET", "http://127.0.0.1/{a.b}")


def test_a_short_header_value_is_redacted_only_as_a_whole_token(
    base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TN_HTTP_FLAG", "1")
    tool = http_tool(
        "flag",
        "Flag.",
        "GET",
        base_url + "/echo/v1/items/10",
        headers={"X-Flag": "${TN_HTTP_FLAG}"},
    )
    with pytest.warns(UserWarning, match="TN_HTTP_FLAG holds a value of only 1 character"):
        result = run(tool, {})
    echoed = json.loads(result.output)
    assert echoed["raw_path"] == "/echo/v1/items/10"
    assert echoed["headers"]["x-flag"] == "[redacted]"
