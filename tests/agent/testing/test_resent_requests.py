"""A request that resends earlier tools and history is checked and copied like the first one."""

from __future__ import annotations

import copy
from typing import Any

import httpx

from agent.testing import FakeGemini, function_call, reply

URL = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
KEY = {"x-goog-api-key": "k"}
USER = {"role": "user", "parts": [{"text": "go"}]}


def tools(*names: str) -> list[dict[str, Any]]:
    return [
        {"function_declarations": [{"name": n, "parameters": {"type": "OBJECT"}} for n in names]}
    ]


def post(fake: FakeGemini, body: dict[str, Any]) -> httpx.Response:
    with httpx.Client(transport=fake.transport()) as http:
        return http.post(URL, json=body, headers=KEY)


def test_tools_that_change_after_a_valid_request_are_checked_again() -> None:
    fake = FakeGemini(["one", "two", "three"])
    assert post(fake, {"contents": [USER], "tools": tools("a", "b")}).status_code == 200
    broken = post(fake, {"contents": [USER], "tools": tools("a", "a")})
    assert broken.status_code == 400
    assert "Duplicate function declaration found: a" in broken.json()["error"]["message"]
    assert post(fake, {"contents": [USER], "tools": tools("a", "b")}).status_code == 200
    assert fake.requests[2].declared_functions == ["a", "b"]


def test_history_changed_after_a_valid_request_is_checked_again() -> None:
    fake = FakeGemini([reply(function_call("a", {"n": 1}), signature=None), "done", "spare"])
    first = post(fake, {"contents": [USER], "tools": tools("a")}).json()
    model = first["candidates"][0]["content"]
    call = model["parts"][0]["functionCall"]
    answer = {"functionResponse": {"id": call["id"], "name": "a", "response": {"r": 1}}}
    contents = [USER, model, {"role": "user", "parts": [answer]}]
    assert post(fake, {"contents": contents, "tools": tools("a")}).status_code == 200
    bad = copy.deepcopy(contents)
    bad[2]["parts"][0]["functionResponse"]["response"] = "not an object"
    refused = post(fake, {"contents": bad, "tools": tools("a")})
    assert refused.status_code == 400
    assert "must be a JSON object" in refused.json()["error"]["message"]


def test_model_functions_get_copies_they_may_change() -> None:
    seen: list[dict[str, Any]] = []

    def model(body: dict[str, Any]) -> str:
        seen.append(body)
        body["tools"][0]["functionDeclarations"].clear()
        body["contents"][0]["parts"][0]["text"] = "changed"
        return "ok"

    fake = FakeGemini(model)
    for _ in range(2):
        assert post(fake, {"contents": [USER], "tools": tools("a")}).status_code == 200
    assert [r.declared_functions for r in fake.requests] == [["a"], ["a"]]
    assert [r.contents[0]["parts"][0]["text"] for r in fake.requests] == ["go", "go"]
    assert seen[0] is not seen[1]
    assert seen[1]["tools"] is not seen[0]["tools"]
