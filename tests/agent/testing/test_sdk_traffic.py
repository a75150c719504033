"""FakeGemini driven by the real google-genai client: valid traffic passes and replies parse."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import errors, types

from agent.testing import (
    FakeGemini,
    FakeGeminiError,
    blocked,
    delay,
    error,
    expect,
    function_call,
    malformed_function_call,
    reply,
    text,
    thought,
)
from tests.agent.testing.sdk import candidate, content, parts, usage

MODEL = "gemini-3.1-pro-preview"
NO_AFC = types.AutomaticFunctionCallingConfig(disable=True)


def _config(**extra: Any) -> types.GenerateContentConfig:
    """Tools declared the way an agent loop declares them, in both schema spellings."""
    declarations = [
        types.FunctionDeclaration(
            name="get_weather",
            description="Weather for a city",
            parameters_json_schema={
                "type": "object",
                "properties": {
                    "city": {"type": ["string", "null"]},
                    "max_items": {"type": "integer"},
                },
                "required": ["city"],
                "additionalProperties": False,
            },
        ),
        types.FunctionDeclaration(
            name="get-time",
            parameters=types.Schema(
                type=types.Type.OBJECT,
                properties={"tz": types.Schema(type=types.Type.STRING, any_of=None, max_length=10)},
                property_ordering=["tz"],
            ),
        ),
    ]
    return types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=declarations)],
        automatic_function_calling=NO_AFC,
        thinking_config=types.ThinkingConfig(
            include_thoughts=True, thinking_level=types.ThinkingLevel.HIGH
        ),
        **extra,
    )


def _results(content: types.Content) -> types.Content:
    calls = [p.function_call for p in content.parts or [] if p.function_call]
    return types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    id=call.id, name=call.name, response={"output": f"ran {call.name}"}
                )
            )
            for call in calls
            if call is not None
        ],
    )


def _parallel_script() -> list[Any]:
    return [
        reply(
            thought("Two lookups."),
            function_call("get_weather", {"city": "Paris"}),
            function_call("get-time", {"tz": "CET"}),
        ),
        reply(function_call("get_weather", {"city": "Rome"})),
        "Sunny in Paris and Rome; it is noon in CET.",
    ]


@pytest.mark.parametrize("api_version", [None, "v1beta"])
async def test_async_unary_conversation_with_parallel_and_sequential_calls(
    api_version: str | None,
) -> None:
    fake = FakeGemini(_parallel_script())
    client = genai.Client(
        api_key="secret-key",
        http_options=types.HttpOptions(
            httpx_async_client=fake.http_client(), api_version=api_version
        ),
    )
    contents: list[types.Content] = [
        types.Content(role="user", parts=[types.Part(text="Weather?")])
    ]
    config = _config(system_instruction="Be brief.")
    while True:
        response = await client.aio.models.generate_content(
            model=MODEL, contents=contents, config=config
        )
        turn = content(response)
        contents.append(turn)
        if not response.function_calls:
            break
        contents.append(_results(turn))

    assert response.text == "Sunny in Paris and Rome; it is noon in CET."
    fake.assert_consumed()
    assert [r.status for r in fake.requests] == [200, 200, 200]
    version = api_version or "v1"
    assert fake.requests[0].path == f"/{version}/models/{MODEL}:generateContent"
    assert fake.requests[0].api_version == version
    assert fake.requests[0].model == MODEL and fake.requests[0].kind == "unary"
    assert fake.requests[0].system_text == "Be brief."
    assert fake.requests[0].declared_functions == ["get_weather", "get-time"]
    assert "x-goog-api-key" not in fake.requests[0].headers
    assert "secret-key" not in repr(fake.requests)
    last = fake.requests[-1]
    # snake_case keys from the SDK are recorded in camelCase; user property names are untouched
    declaration = last.body["tools"][0]["functionDeclarations"][0]
    assert declaration["parametersJsonSchema"]["properties"]["max_items"] == {"type": "integer"}
    assert last.body["generationConfig"]["thinkingConfig"] == {
        "includeThoughts": True,
        "thinkingLevel": "HIGH",
    }
    assert [r["name"] for r in fake.requests[1].function_responses] == ["get_weather", "get-time"]
    ids = [r["id"] for r in fake.requests[1].function_responses]
    assert ids == ["call_1", "call_2"]


async def test_first_call_is_signed_and_ids_are_unique() -> None:
    fake = FakeGemini(_parallel_script())
    client = fake.client()
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text="Go")])]
    first = await client.aio.models.generate_content(
        model=MODEL, contents=contents, config=_config()
    )
    got = parts(first)
    assert got[0].thought is True and got[0].thought_signature is None
    assert isinstance(got[1].thought_signature, bytes) and len(got[1].thought_signature) >= 16
    assert got[2].thought_signature is None
    contents += [content(first), _results(content(first))]
    second = await client.aio.models.generate_content(
        model=MODEL, contents=contents, config=_config()
    )
    assert second.function_calls and second.function_calls[0].id == "call_3"
    assert parts(second)[0].thought_signature != got[1].thought_signature


@pytest.mark.parametrize("api_version", ["v1", "v1beta"])
async def test_async_stream_conversation(api_version: str) -> None:
    fake = FakeGemini(_parallel_script())
    client = genai.Client(
        api_key="k",
        http_options=types.HttpOptions(
            httpx_async_client=fake.http_client(), api_version=api_version
        ),
    )
    contents: list[types.Content] = [
        types.Content(role="user", parts=[types.Part(text="Weather?")])
    ]
    chunks: list[types.GenerateContentResponse] = []
    while True:
        chunks = [
            chunk
            async for chunk in await client.aio.models.generate_content_stream(
                model=MODEL, contents=contents, config=_config()
            )
        ]
        streamed = [p for c in chunks for p in parts(c)]
        turn = types.Content(role="model", parts=streamed)
        contents.append(turn)
        if not any(p.function_call for p in streamed):
            break
        contents.append(_results(turn))

    fake.assert_consumed()
    assert all(r.kind == "stream" and r.status == 200 for r in fake.requests)
    assert fake.requests[0].path.endswith(":streamGenerateContent")
    # the final text came in several chunks, finishReason only on the last, usage on all
    assert len(chunks) >= 2
    assert "".join(c.text or "" for c in chunks) == "Sunny in Paris and Rome; it is noon in CET."
    assert [candidate(c).finish_reason for c in chunks][-1] == types.FinishReason.STOP
    assert all(candidate(c).finish_reason is None for c in chunks[:-1])
    totals = [usage(c).candidates_token_count or 0 for c in chunks]
    assert totals == sorted(totals) and totals[-1] > 0


def test_sync_client_unary_and_stream() -> None:
    fake = FakeGemini(
        [function_call("get_weather", {"city": "Oslo"}), "Cold in Oslo, snow all day long."]
    )
    client = genai.Client(
        api_key="k", http_options=types.HttpOptions(httpx_client=fake.sync_http_client())
    )
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text="Oslo?")])]
    first = client.models.generate_content(model=MODEL, contents=contents, config=_config())
    contents += [content(first), _results(content(first))]
    pieces = [
        c.text
        for c in client.models.generate_content_stream(
            model=MODEL, contents=contents, config=_config()
        )
    ]
    assert "".join(p or "" for p in pieces) == "Cold in Oslo, snow all day long."
    fake.assert_consumed()


async def test_model_as_a_function_sees_each_request() -> None:
    seen: list[int] = []

    def model(request: dict[str, Any]) -> Any:
        seen.append(len(request["contents"]))
        last = request["contents"][-1]["parts"][0]
        if "functionResponse" in last:
            return f"The tool said: {last['functionResponse']['response']['output']}"
        return function_call("get_weather", {"city": last["text"]})

    fake = FakeGemini(model)
    client = fake.client(api_version="v1beta")
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text="Lima")])]
    first = await client.aio.models.generate_content(
        model=MODEL, contents=contents, config=_config()
    )
    assert first.function_calls and first.function_calls[0].args == {"city": "Lima"}
    contents += [content(first), _results(content(first))]
    second = await client.aio.models.generate_content(
        model=MODEL, contents=contents, config=_config()
    )
    assert second.text == "The tool said: ran get_weather"
    assert seen == [1, 3]
    fake.assert_consumed()


async def test_model_function_that_raises_is_a_final_400_and_a_failure() -> None:
    def model(request: dict[str, Any]) -> Any:
        raise KeyError("nope")

    fake = FakeGemini(model)
    with pytest.raises(errors.ClientError, match="model function raised KeyError") as err:
        await fake.client().aio.models.generate_content(model=MODEL, contents="hi")
    assert (err.value.code, err.value.status) == (400, "FAILED_PRECONDITION")
    with pytest.raises(FakeGeminiError, match="KeyError"):
        fake.assert_consumed()


async def test_http_errors_have_googles_body_shape() -> None:
    fake = FakeGemini(
        [
            error(429, retry_delay=37.5, quota_id="GenerateRequestsPerDayPerProjectPerModel"),
            error(503),
            error(402, "RESOURCE_EXHAUSTED", "Your prepaid credits are used up."),
        ]
    )
    client = fake.client()
    with pytest.raises(errors.ClientError) as caught:
        await client.aio.models.generate_content(model=MODEL, contents="hi")
    assert caught.value.code == 429 and caught.value.status == "RESOURCE_EXHAUSTED"
    assert caught.value.message and caught.value.message.endswith("Please retry in 37.5s.")
    details = caught.value.details["error"]["details"]
    assert details[0]["@type"] == "type.googleapis.com/google.rpc.QuotaFailure"
    assert details[0]["violations"][0]["quotaId"] == "GenerateRequestsPerDayPerProjectPerModel"
    assert details[1] == {
        "@type": "type.googleapis.com/google.rpc.RetryInfo",
        "retryDelay": "37.5s",
    }
    assert "retry-after" not in caught.value.response.headers
    with pytest.raises(errors.ServerError) as server_error:
        await client.aio.models.generate_content(model=MODEL, contents="hi")
    assert (server_error.value.code, server_error.value.status) == (503, "UNAVAILABLE")
    with pytest.raises(errors.ClientError, match="prepaid credits") as credits:
        await client.aio.models.generate_content(model=MODEL, contents="hi")
    assert credits.value.code == 402
    fake.assert_consumed()
    assert [r.status for r in fake.requests] == [429, 503, 402]


async def test_errors_in_a_stream_before_and_after_the_200() -> None:
    fake = FakeGemini([error(500), error(500, mid_stream=True)])
    client = fake.client()
    for _ in range(2):
        with pytest.raises(errors.ServerError) as caught:
            async for _chunk in await client.aio.models.generate_content_stream(
                model=MODEL, contents="hi"
            ):
                pass
        assert caught.value.code == 500 and caught.value.status == "INTERNAL"
    assert [r.status for r in fake.requests] == [500, 200]


async def test_finish_reasons_blocks_and_usage() -> None:
    counts = {"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10}
    fake = FakeGemini(
        [
            malformed_function_call("Malformed function call: print(x"),
            blocked("PROHIBITED_CONTENT"),
            blocked("SAFETY", prompt=False),
            reply("Truncated answ", finish_reason="MAX_TOKENS", usage=counts),
        ]
    )
    client = fake.client()
    malformed = await client.aio.models.generate_content(model=MODEL, contents="hi")
    assert candidate(malformed).finish_reason == types.FinishReason.MALFORMED_FUNCTION_CALL
    assert not parts(malformed)
    prompt_blocked = await client.aio.models.generate_content(model=MODEL, contents="hi")
    feedback = prompt_blocked.prompt_feedback
    assert feedback is not None and feedback.block_reason == types.BlockedReason.PROHIBITED_CONTENT
    assert not prompt_blocked.candidates and prompt_blocked.text is None
    output_blocked = await client.aio.models.generate_content(model=MODEL, contents="hi")
    assert candidate(output_blocked).finish_reason == types.FinishReason.SAFETY
    assert candidate(output_blocked).content is None
    truncated = await client.aio.models.generate_content(model=MODEL, contents="hi")
    assert candidate(truncated).finish_reason == types.FinishReason.MAX_TOKENS
    assert usage(truncated).total_token_count == 10
    assert truncated.model_version == MODEL and truncated.response_id == "fake-3"
    fake.assert_consumed()


async def test_raw_dict_replies_and_final_signature_part_in_stream() -> None:
    raw = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"text": "Done."}, {"text": "", "thoughtSignature": "c2lnbmF0dXJl"}],
                },
                "finishReason": "STOP",
            }
        ]
    }
    fake = FakeGemini([raw, reply(text("Hi"), text("", signature=b"sig"))])
    client = fake.client()
    response = await client.aio.models.generate_content(model=MODEL, contents="hi")
    assert response.text == "Done." and parts(response)[1].thought_signature == b"signature"
    chunks = [
        c async for c in await client.aio.models.generate_content_stream(model=MODEL, contents="x")
    ]
    assert parts(chunks[-1])[0].thought_signature == b"sig"


async def test_delay_trips_the_client_read_timeout() -> None:
    fake = FakeGemini([delay(5.0, "late"), delay(0.01, "in time")])
    client = genai.Client(
        api_key="k",
        http_options=types.HttpOptions(httpx_async_client=fake.http_client(), timeout=50),
    )
    with pytest.raises(httpx.ReadTimeout):
        await client.aio.models.generate_content(model=MODEL, contents="hi")
    response = await client.aio.models.generate_content(model=MODEL, contents="hi")
    assert response.text == "in time"


def test_delay_trips_the_sync_read_timeout() -> None:
    fake = FakeGemini([delay(5.0, "late")])
    client = genai.Client(
        api_key="k",
        http_options=types.HttpOptions(httpx_client=fake.sync_http_client(), timeout=50),
    )
    with pytest.raises(httpx.ReadTimeout):
        client.models.generate_content(model=MODEL, contents="hi")


async def test_delayed_reply_can_be_cancelled() -> None:
    fake = FakeGemini([delay(5.0, "late")])
    task = asyncio.create_task(
        fake.client().aio.models.generate_content(model=MODEL, contents="hi")
    )
    while not fake.requests:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_expect_checks_the_request_before_answering() -> None:
    def has_system(body: dict[str, Any]) -> str | None:
        return None if "systemInstruction" in body else "no system instruction"

    fake = FakeGemini([expect(has_system, "ok"), expect(has_system, "never")])
    client = fake.client()
    config = types.GenerateContentConfig(system_instruction="Be kind.")
    ok = await client.aio.models.generate_content(model=MODEL, contents="hi", config=config)
    assert ok.text == "ok"
    with pytest.raises(errors.ClientError, match="no system instruction"):
        await client.aio.models.generate_content(model=MODEL, contents="hi")
    with pytest.raises(FakeGeminiError, match="request #1 failed its expectation"):
        fake.assert_consumed()


async def test_script_exhaustion_and_unused_replies_are_reported() -> None:
    fake = FakeGemini(["one"])
    client = fake.client()
    await client.aio.models.generate_content(model=MODEL, contents="hi")
    with pytest.raises(errors.ClientError, match=r"FakeGemini: script exhausted: request #1"):
        await client.aio.models.generate_content(model=MODEL, contents="hi")
    assert [r.status for r in fake.requests] == [200, 400]
    with pytest.raises(FakeGeminiError, match="script exhausted"):
        fake.assert_consumed()
    unused = FakeGemini(["a", "b"])
    with pytest.raises(FakeGeminiError, match=r"2 of 2 scripted replies were never requested"):
        unused.assert_consumed()


def test_real_server_on_loopback_serves_the_sdk() -> None:
    fake = FakeGemini([function_call("get_weather", {"city": "Nice"}), "Warm, sunny and calm."])
    with fake.serve() as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        client = genai.Client(
            api_key="k",
            http_options=types.HttpOptions(base_url=server.base_url, api_version="v1beta"),
        )
        contents: list[types.Content] = [
            types.Content(role="user", parts=[types.Part(text="Nice?")])
        ]
        first = client.models.generate_content(model=MODEL, contents=contents, config=_config())
        contents += [content(first), _results(content(first))]
        chunks = list(
            client.models.generate_content_stream(model=MODEL, contents=contents, config=_config())
        )
        assert "".join(c.text or "" for c in chunks) == "Warm, sunny and calm."
        client.close()
    fake.assert_consumed()
    assert fake.requests[1].path == f"/v1beta/models/{MODEL}:streamGenerateContent"
    with pytest.raises(httpx.ConnectError):
        httpx.post(server.base_url + "/v1/models/m:generateContent", timeout=1)


async def test_real_server_with_async_client_and_404() -> None:
    fake = FakeGemini(["pong"])
    with fake.serve() as server:
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            missing = await http.get("/v1/models")
            assert missing.status_code == 404
            assert missing.json()["error"]["status"] == "NOT_FOUND"
        client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=server.base_url))
        response = await client.aio.models.generate_content(model=MODEL, contents="ping")
        assert response.text == "pong"
        await client.aio.aclose()
        client.close()
    fake.assert_consumed()


def test_a_subprocess_reaches_the_server_through_the_base_url_variable() -> None:
    fake = FakeGemini(["hello from the fake"])
    program = (
        "from google import genai\n"
        "client = genai.Client()\n"
        "print(client.models.generate_content(model='gemini-2.5-flash', contents='hi').text)\n"
    )
    with fake.serve() as server:
        env = {**os.environ, "GOOGLE_GEMINI_BASE_URL": server.base_url, "GEMINI_API_KEY": "k"}
        done = subprocess.run(
            [sys.executable, "-c", program],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hello from the fake"
    fake.assert_consumed()
    assert fake.requests[0].path == "/v1/models/gemini-2.5-flash:generateContent"
