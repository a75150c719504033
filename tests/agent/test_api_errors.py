"""The seam's error translation: SDK and httpx exceptions become our `ErrorInfo`, key scrubbed."""

from __future__ import annotations

import asyncio
import email.utils
import time
from typing import Any

import httpx
import pytest
from google.genai import errors as genai_errors
from google.genai import types

from agent import Agent, ClientSettings, ModelError
from agent._api_errors import translate
from agent._retry import ErrorInfo
from agent.testing import FakeGemini

KEY = "AIzaTEST-secret-key-0123456789"


def api_error(
    code: int,
    status: str,
    message: str,
    details: list[dict[str, Any]] | None = None,
    **headers: str,
) -> genai_errors.APIError:
    body = {"error": {"code": code, "status": status, "message": message, "details": details or []}}
    response = httpx.Response(code, json=body, headers=headers)
    cls = genai_errors.ClientError if code < 500 else genai_errors.ServerError
    return cls(code, body, response)


@pytest.mark.parametrize("code", [429, 500, 502, 503, 504])
def test_overload_and_server_errors_are_retryable(code):
    info = translate(api_error(code, "UNAVAILABLE", "busy"))
    assert info == ErrorInfo(code, "UNAVAILABLE", "busy", retryable=True, delay=None)


@pytest.mark.parametrize("code", [400, 401, 403, 404])
def test_client_errors_are_not_retryable(code):
    info = translate(api_error(code, "INVALID_ARGUMENT", "bad"))
    assert info is not None and (info.code, info.retryable, info.delay) == (code, False, None)


def test_the_servers_retry_delay_is_carried():
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7.5s"}
    info = translate(api_error(429, "RESOURCE_EXHAUSTED", "slow down", [retry_info]))
    assert info is not None and (info.retryable, info.delay) == (True, 7.5)


def test_retry_after_seconds_and_dates_are_read():
    info = translate(api_error(503, "UNAVAILABLE", "busy", **{"Retry-After": "3"}))
    assert info is not None and info.delay == 3.0
    when = email.utils.formatdate(time.time() + 60, usegmt=True)
    info = translate(api_error(503, "UNAVAILABLE", "busy", **{"Retry-After": when}))
    assert info is not None and info.delay is not None and 50 < info.delay <= 60


def test_a_per_day_quota_is_not_retried():
    quota = {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}],
    }
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "20s"}
    info = translate(api_error(429, "RESOURCE_EXHAUSTED", "quota", [quota, retry_info]))
    assert info is not None and (info.retryable, info.delay) == (False, None)


def test_network_errors_and_timeouts_are_retryable():
    timeout = translate(httpx.ReadTimeout("slow"))
    assert timeout is not None and (timeout.status, timeout.retryable) == ("TIMEOUT", True)
    network = translate(httpx.ConnectError("refused"))
    assert network is not None and (network.status, network.retryable) == ("NETWORK_ERROR", True)


def test_what_is_not_a_model_failure_is_not_translated():
    assert translate(KeyError("bug")) is None
    assert translate(asyncio.CancelledError()) is None


def test_the_key_is_scrubbed_from_message_and_status():
    info = translate(api_error(400, f"BAD {KEY}", f"API key {KEY} not valid"), KEY)
    assert info is not None
    assert (info.message, info.status) == ("API key *** not valid", "BAD ***")


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize(
    ("model", "builtin", "field", "detail"),
    [
        ("", [], "field model (", "model is required"),
        (
            "gemini-2.5-flash",
            [types.Tool(google_search=types.GoogleSearch(exclude_domains=["a.example"]))],
            "field config.tools.google_search (",
            "exclude_domains parameter is only supported",
        ),
    ],
)
@pytest.mark.filterwarnings("ignore::agent.UnknownModelWarning")  # model "" is the point
async def test_a_request_the_sdk_refuses_before_sending_names_the_field(
    streaming: bool, model: str, builtin: list[Any], field: str, detail: str
) -> None:
    # A Vertex-only option on the Developer API, or an empty model name: nothing is sent,
    # and the error is about the request, not "the model's reply could not be read".
    fake = FakeGemini(["never sent"])
    agent = Agent(
        model,
        builtin_tools=builtin,
        client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
    )
    with pytest.raises(ModelError) as failure:
        if streaming:
            async for _ in agent.stream("hi"):
                pass
        else:
            await agent.run("hi")
    error = failure.value
    assert (error.code, error.status, error.attempts) == (None, "INVALID_REQUEST", 1)
    assert error.message.startswith("the request was not sent: the SDK refused its "), error
    assert field in error.message and detail in error.message
    assert "reply" not in error.message
    assert fake.requests == []
