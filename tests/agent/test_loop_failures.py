"""Model-call failures: what is retried, how long it waits, and what survives as an exception."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import traceback

import httpx
import pytest

from agent import (
    Agent,
    ClientSettings,
    DeadlineExceededError,
    ModelError,
    RetryPolicy,
    RunError,
    RunLimits,
)
from agent._client import scrub
from tests.agent._loop_support import (
    KEY,
    Script,
    Sleeps,
    api_error,
    call,
    echo_toolkit,
    make_agent,
    reply,
    text,
)
from toolnexus import Tool, toolkit

RETRY_INFO = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}
PER_MINUTE = {
    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
    "violations": [{"quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}],
}
PER_DAY = {
    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
    "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}],
}


async def test_429_waits_the_servers_retry_delay(http, mock):
    sleeps = Sleeps()
    rate_limited = api_error(429, "RESOURCE_EXHAUSTED", "slow down", [PER_MINUTE, RETRY_INFO])
    script = Script(mock, [rate_limited, reply(text("ok"))])
    result = await make_agent(http, sleeps=sleeps).run("go")
    assert result.status == "completed"
    assert sleeps.waits == [1.5]
    assert [(r.attempt, r.delay, r.code, r.status) for r in result.retries] == [
        (1, 1.5, 429, "RESOURCE_EXHAUSTED")
    ]
    assert script.bodies[0] == script.bodies[1]


async def test_retry_after_header_is_honoured(http, mock):
    sleeps = Sleeps()
    busy = api_error(503, "UNAVAILABLE", "busy", **{"Retry-After": "7"})
    Script(mock, [busy, reply(text("ok"))])
    await make_agent(http, sleeps=sleeps).run("go")
    assert sleeps.waits == [7.0]


async def test_503_twice_then_200_completes_with_two_retries(http, mock, caplog):
    caplog.set_level(logging.INFO, logger="agent")
    sleeps = Sleeps()
    busy = api_error(503, "UNAVAILABLE", "The model is overloaded.")
    script = Script(mock, [busy, busy, reply(text("ok"))])
    result = await make_agent(http, sleeps=sleeps).run("go")
    assert result.status == "completed"
    assert len(script.bodies) == 3
    assert [(r.attempt, r.code) for r in result.retries] == [(1, 503), (2, 503)]
    assert sleeps.waits == [1.0, 2.0]  # exponential backoff, jitter 0 here
    records = [r for r in caplog.records if r.name == "agent"]
    # INFO: below the last-resort handler, so an app without logging set up sees nothing.
    assert {r.levelno for r in records} == {logging.INFO}
    assert [r.getMessage() for r in records] == [
        "Gemini call failed (503 UNAVAILABLE); retrying in 1.0 s (attempt 2 of 5)",
        "Gemini call failed (503 UNAVAILABLE); retrying in 2.0 s (attempt 3 of 5)",
    ]


async def test_backoff_has_jitter_and_a_ceiling():
    policy = RetryPolicy(initial_backoff=1.0, max_backoff=5.0, jitter=0.5, random=lambda: 0.5)
    assert [policy.backoff(n) for n in (1, 2, 3, 4, 5)] == [1.25, 2.25, 4.25, 5.25, 5.25]


async def test_per_day_quota_is_raised_at_once(http, mock):
    sleeps = Sleeps()
    day = api_error(429, "RESOURCE_EXHAUSTED", "daily quota", [PER_DAY, RETRY_INFO])
    script = Script(mock, [day])
    with pytest.raises(ModelError) as info:
        await make_agent(http, sleeps=sleeps).run("go")
    assert len(script.bodies) == 1
    assert sleeps.waits == []
    assert (info.value.code, info.value.status, info.value.attempts) == (
        429,
        "RESOURCE_EXHAUSTED",
        1,
    )


async def test_400_is_raised_at_once_with_the_partial_result(http, mock):
    bad = api_error(400, "INVALID_ARGUMENT", "Function call is missing a thought_signature.")
    script = Script(mock, [reply(call("echo", {"text": "a"}, id="c1")), bad])
    with pytest.raises(ModelError) as info:
        await make_agent(http, echo_toolkit()).run("go")
    exc = info.value
    assert isinstance(exc, RunError)
    assert len(script.bodies) == 2
    assert exc.code == 400
    assert exc.status == "INVALID_ARGUMENT"
    assert exc.message == "Function call is missing a thought_signature."
    assert "400 INVALID_ARGUMENT" in str(exc)
    partial = exc.result
    assert partial.status == "incomplete"
    assert partial.turns == 1
    assert [c.name for c in partial.tool_calls] == ["echo"]
    assert [c["role"] for c in partial.contents] == ["user", "model", "user"]


@pytest.mark.parametrize(
    "code,status", [(401, "UNAUTHENTICATED"), (403, "PERMISSION_DENIED"), (404, "NOT_FOUND")]
)
async def test_other_4xx_are_not_retried(http, mock, code, status):
    script = Script(mock, [api_error(code, status, "no")])
    with pytest.raises(ModelError):
        await make_agent(http).run("go")
    assert len(script.bodies) == 1


async def test_connection_errors_are_retried(http, mock):
    sleeps = Sleeps()
    script = Script(mock, [httpx.ConnectError("refused"), reply(text("ok"))])
    result = await make_agent(http, sleeps=sleeps).run("go")
    assert result.status == "completed"
    assert len(script.bodies) == 2
    assert [(r.code, r.status) for r in result.retries] == [(None, "NETWORK_ERROR")]


async def test_timeouts_are_retried_then_raised(http, mock):
    timeouts = [httpx.ReadTimeout("slow") for _ in range(3)]
    script = Script(mock, timeouts)
    policy = RetryPolicy(attempts=3, sleep=Sleeps(), jitter=0.0)
    with pytest.raises(ModelError) as info:
        await make_agent(http, limits=RunLimits(retry=policy)).run("go")
    assert len(script.bodies) == 3
    assert (info.value.code, info.value.status, info.value.attempts) == (None, "TIMEOUT", 3)
    assert len(info.value.result.retries) == 2


async def test_total_wait_is_bounded(http, mock):
    sleeps = Sleeps()
    long_wait = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}
    script = Script(mock, [api_error(429, "RESOURCE_EXHAUSTED", "wait", [long_wait])])
    policy = RetryPolicy(max_wait=30.0, sleep=sleeps)
    with pytest.raises(ModelError):
        await make_agent(http, limits=RunLimits(retry=policy)).run("go")
    assert sleeps.waits == []
    assert len(script.bodies) == 1


async def test_cancellation_propagates_and_is_not_retried(http, mock):
    entered = asyncio.Event()
    calls = []

    async def hang(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        entered.set()
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    mock.post(url__regex=r".*:generateContent$").mock(side_effect=hang)
    task = asyncio.ensure_future(make_agent(http).run("go"))
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0)
    assert len(calls) == 1


async def test_cancellation_during_a_retry_wait_is_not_swallowed(http, mock):
    waiting = asyncio.Event()

    async def slow_sleep(seconds: float) -> None:
        waiting.set()
        await asyncio.sleep(3600)

    Script(mock, [api_error(503, "UNAVAILABLE", "busy")])
    agent = make_agent(http, limits=RunLimits(retry=RetryPolicy(sleep=slow_sleep)))
    task = asyncio.ensure_future(agent.run("go"))
    await waiting.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_deadline_raises_with_the_partial_result(http, mock):
    release = asyncio.Event()

    async def blocked(args, ctx):
        await release.wait()
        return "never"

    tk = toolkit([Tool("block", blocked, "Blocks.", {"type": "object"})])
    Script(mock, [reply(call("block", {}))])
    with pytest.raises(DeadlineExceededError) as info:
        await make_agent(http, tk, limits=RunLimits(deadline=0.2)).run("go")
    assert info.value.result.turns == 1
    assert info.value.result.reason == "deadline"


async def test_the_api_key_is_not_in_errors_or_logs(http, mock, caplog):
    caplog.set_level(logging.DEBUG)
    script = Script(mock, [api_error(403, "PERMISSION_DENIED", "API key not valid.")])
    with pytest.raises(ModelError) as info:
        await make_agent(http).run("go")
    assert script.headers[0]["x-goog-api-key"] == KEY  # it was sent, as a header
    rendered = "".join(traceback.format_exception(info.value))
    assert KEY not in rendered
    assert KEY not in str(info.value.result.to_dict())
    for record in caplog.records:
        assert KEY not in record.getMessage()


@pytest.mark.parametrize("source", ["argument", "environment"])
async def test_a_key_echoed_by_the_server_is_scrubbed_everywhere(
    http, mock, caplog, monkeypatch, source
):
    caplog.set_level(logging.DEBUG)
    for name in ("google_genai", "httpx", "httpcore", "agent"):
        caplog.set_level(logging.DEBUG, logger=name)
    secret = "AIzaECHOED-key-9876543210"
    echoed = f"API key {secret} not valid. x-goog-api-key={secret}"
    busy = api_error(503, f"UNAVAILABLE {secret}", echoed)
    script = Script(mock, [busy, api_error(401, "UNAUTHENTICATED", echoed)])
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    if source == "environment":
        monkeypatch.setenv("GEMINI_API_KEY", secret)
        agent = Agent(
            limits=RunLimits(retry=RetryPolicy(sleep=Sleeps(), jitter=0.0)),
            client=ClientSettings(http_client=http),
        )
    else:
        monkeypatch.delenv("GEMINI_API_KEY", raising=False)
        agent = Agent(
            limits=RunLimits(retry=RetryPolicy(sleep=Sleeps())),
            client=ClientSettings(api_key=secret, http_client=http),
        )
    with pytest.raises(ModelError) as info:
        await agent.run("go")
    assert script.headers[0]["x-goog-api-key"] == secret  # the key really was in use
    error = info.value
    assert error.code == 401
    assert error.message == "API key *** not valid. x-goog-api-key=***"
    assert error.__cause__ is None and error.__context__ is None
    for shown in (str(error), repr(error), error.message, str(error.status)):
        assert secret not in shown
    assert secret not in "".join(traceback.format_exception(error))
    assert secret not in json.dumps(error.result.to_dict())
    assert error.result.retries[0].status == "UNAVAILABLE ***"
    assert caplog.records  # the loggers were listening
    for record in caplog.records:
        assert secret not in record.getMessage()


def test_a_retry_prints_nothing_when_the_app_set_up_no_logging():
    script = """
import asyncio
from agent import Agent, ClientSettings, RetryPolicy, RunLimits
from agent.testing import FakeGemini, error

async def instant(seconds):
    pass

fake = FakeGemini([error(503), "ok"])
agent = Agent(
    limits=RunLimits(retry=RetryPolicy(sleep=instant)),
    client=ClientSettings(api_key="k", http_client=fake.http_client()),
)
result = agent.run_sync("go")
print(result.status, len(result.retries))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "completed 1\n"
    assert done.stderr == ""


@pytest.mark.parametrize(
    ("secret", "text", "expected"),
    [
        ("AIzaLONG-key_123", "bad keyAIzaLONG-key_123!", "bad key***!"),
        ("AIzaLONG-key_123", "AIzaLONG-key_123", "***"),
        ("k", "FakeGemini: key=k, k.", "FakeGemini: key=***, ***."),
        ("", "unchanged", "unchanged"),
    ],
)
def test_scrub_hides_keys_without_mangling_words(secret, text, expected):
    assert scrub(text, secret) == expected


UPLOAD = r".*/upload/v1\w*/files$"


def _echo(secret: str) -> httpx.Response:
    body = {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": f"key {secret} bad"}}
    return httpx.Response(400, json=body)


def _failed_upload(mock, secret: str) -> None:
    """A resumable upload that is accepted, and whose File then ends FAILED, quoting ``secret``."""
    session = "https://generativelanguage.googleapis.com/upload/v1beta/files?upload_id=u1"
    failed = {
        "name": "files/f1",
        "mimeType": "image/png",
        "state": "FAILED",
        "error": {"code": 400, "message": f"could not process with key {secret}"},
    }
    final = {"x-goog-upload-status": "final"}
    mock.post(url__regex=r".*upload_id=u1.*").mock(
        return_value=httpx.Response(200, json={"file": failed}, headers=final)
    )
    mock.post(url__regex=UPLOAD).mock(
        return_value=httpx.Response(
            200, headers={"x-goog-upload-url": session, "x-goog-upload-status": "active"}
        )
    )


@pytest.mark.parametrize("failure", ["http_error", "failed_file"])
async def test_a_key_echoed_by_the_files_api_is_scrubbed_from_the_upload_error(
    http, mock, monkeypatch, caplog, failure
):
    import agent._media as media
    from agent import AgentError
    from toolnexus import Attachment

    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(media, "INLINE_LIMIT", 10)
    if failure == "http_error":
        mock.post(url__regex=UPLOAD).mock(return_value=_echo(KEY))
    else:
        _failed_upload(mock, KEY)
    agent = Agent(
        limits=RunLimits(retry=RetryPolicy(attempts=1)),
        client=ClientSettings(api_key=KEY, http_client=http),
    )
    with pytest.raises(AgentError, match="upload") as info:
        await agent.run(["Describe", Attachment("image/png", data=b"x" * 64)])
    assert mock.calls[0].request.headers["x-goog-api-key"] == KEY  # the key was in use
    assert "***" in str(info.value)
    assert KEY not in "".join(traceback.format_exception(info.value))
    for record in caplog.records:
        assert KEY not in record.getMessage()
