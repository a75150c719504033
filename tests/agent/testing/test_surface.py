"""The public surface of agent.testing and its pure helpers."""

from __future__ import annotations

import asyncio
import base64
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import types

import agent.testing
from agent.testing import FakeGemini, delay, function_call, reply
from agent.testing._render import split_stream
from agent.testing._signatures import decode_signature
from agent.testing._strict import normalize
from tests.agent.testing.sdk import parts


def test_public_names_are_pinned() -> None:
    assert agent.testing.__all__ == [
        "AUTO",
        "Checked",
        "Delayed",
        "ErrorReply",
        "FakeGemini",
        "FakeGeminiError",
        "FunctionCallPart",
        "ModelFunction",
        "RecordedRequest",
        "Reply",
        "ReplyLike",
        "Scenario",
        "ScenarioError",
        "TextPart",
        "blocked",
        "code_execution",
        "delay",
        "error",
        "expect",
        "function_call",
        "grounding",
        "json_output",
        "load_scenario",
        "malformed_function_call",
        "read_scenario",
        "reply",
        "server_tool_call",
        "text",
        "thought",
    ]
    assert agent.testing.__all__ == sorted(agent.testing.__all__, key=lambda n: (n[0].islower(), n))


def test_normalize_renames_protocol_keys_only() -> None:
    body = {
        "system_instruction": {"parts": [{"text": "x"}]},
        "contents": [
            {
                "role": "model",
                "parts": [{"function_call": {"name": "f", "args": {"max_items": 1}}}],
            },
            {
                "role": "user",
                "parts": [{"function_response": {"name": "f", "response": {"is_error": False}}}],
            },
        ],
        "tools": [
            {
                "function_declarations": [
                    {
                        "name": "f",
                        "parameters": {
                            "type": "OBJECT",
                            "properties": {"snake_name": {"max_length": 3}},
                        },
                    },
                    {
                        "name": "g",
                        "parameters_json_schema": {"properties": {"a_b": {"min_items": 1}}},
                    },
                ]
            }
        ],
    }
    out = normalize(body)
    assert out["systemInstruction"] == {"parts": [{"text": "x"}]}
    assert out["contents"][0]["parts"][0]["functionCall"]["args"] == {"max_items": 1}
    assert out["contents"][1]["parts"][0]["functionResponse"]["response"] == {"is_error": False}
    declarations = out["tools"][0]["functionDeclarations"]
    assert declarations[0]["parameters"]["properties"] == {"snake_name": {"maxLength": 3}}
    assert declarations[1]["parametersJsonSchema"] == {"properties": {"a_b": {"min_items": 1}}}


@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode])
def test_decode_signature_accepts_both_alphabets_with_or_without_padding(
    encode: Callable[[bytes], bytes],
) -> None:
    raw = bytes(range(250, 256)) + b"\xfb\xff"
    text = encode(raw).decode()
    assert decode_signature(text) == raw
    assert decode_signature(text.rstrip("=")) == raw
    assert decode_signature("***") is None and decode_signature(3) is None


def test_split_stream_keeps_calls_whole_and_usage_cumulative() -> None:
    body = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "one two three four five six", "thoughtSignature": "AAAA"},
                        {"functionCall": {"name": "a", "args": {"x": 1}}},
                        {"functionCall": {"name": "b", "args": {}}},
                    ],
                },
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "promptFeedback": {"safetyRatings": []},
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 9, "totalTokenCount": 14},
    }
    chunks = split_stream(body)
    parts = [c["candidates"][0]["content"]["parts"] for c in chunks]
    assert "".join(p[0]["text"] for p in parts[:3]) == "one two three four five six"
    assert parts[3] == [{"text": "", "thoughtSignature": "AAAA"}]
    assert [p["functionCall"]["name"] for p in parts[4]] == ["a", "b"]
    counts = [c["usageMetadata"]["candidatesTokenCount"] for c in chunks]
    assert counts == sorted(counts) and counts[-1] == 9
    assert chunks[-1]["usageMetadata"]["totalTokenCount"] == 14
    assert "promptFeedback" in chunks[0] and all("promptFeedback" not in c for c in chunks[1:])


async def test_sign_text_signs_the_last_text_part() -> None:
    fake = FakeGemini(
        ["A short answer in several words.", "Streamed answer in several words."],
        sign_text=True,
        extra_models=["m"],
    )
    client = fake.client()
    unary = await client.aio.models.generate_content(model="m", contents="x")
    assert parts(unary)[-1].thought_signature
    chunks = [
        c async for c in await client.aio.models.generate_content_stream(model="m", contents="x")
    ]
    last = parts(chunks[-1])
    assert last is not None and last[0].text == "" and last[0].thought_signature
    assert "".join(c.text or "" for c in chunks) == "Streamed answer in several words."


async def test_server_answers_concurrent_clients_in_order_of_arrival() -> None:
    def model(body: dict[str, Any]) -> str:
        return "echo " + str(body["contents"][0]["parts"][0]["text"])

    fake = FakeGemini(model, extra_models=["m"])
    with fake.serve() as server:
        client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=server.base_url))
        answers = await asyncio.gather(
            *(client.aio.models.generate_content(model="m", contents=f"n{i}") for i in range(8))
        )
        await client.aio.aclose()
        client.close()
    assert sorted(a.text or "" for a in answers) == sorted(f"echo n{i}" for i in range(8))
    assert len(fake.requests) == 8 and [r.index for r in fake.requests] == list(range(8))


def test_server_stops_cleanly_with_a_keep_alive_connection_open() -> None:
    fake = FakeGemini([reply(function_call("f"))], extra_models=["m"])
    with fake.serve() as server, httpx.Client(base_url=server.base_url) as http:
        response = http.post(
            "/v1beta/models/m:streamGenerateContent?alt=sse",
            json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
            headers={"x-goog-api-key": "k"},
        )
        assert response.status_code == 200 and response.text.startswith("data: ")
    # leaving both blocks closed the listening socket and the idle connection
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.base_url, timeout=1)


def test_server_is_quiet_when_a_client_goes_away_before_its_reply(
    capfd: pytest.CaptureFixture[str],
) -> None:
    fake = FakeGemini([delay(0.3, "late")], extra_models=["m"])
    body = b'{"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}'
    with fake.serve() as server:
        with socket.create_connection(("127.0.0.1", server.port)) as conn:
            conn.sendall(
                b"POST /v1beta/models/m:streamGenerateContent?alt=sse HTTP/1.1\r\n"
                b"Host: 127.0.0.1\r\nx-goog-api-key: k\r\ncontent-type: application/json\r\n"
                b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
            )
            # Close with a reset, so the server's reply surely meets a dead connection.
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        deadline = time.monotonic() + 10
        while not fake.requests:
            assert time.monotonic() < deadline, "the server never read the request"
            time.sleep(0.01)
        for thread in threading.enumerate():
            if thread.name.endswith("(process_request_thread)") and thread.ident is not None:
                thread.join(10)
    assert len(fake.requests) == 1
    assert "Traceback" not in capfd.readouterr().err
