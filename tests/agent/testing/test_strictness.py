"""Each strictness rule of FakeGemini fires on a request built to break it, and only then."""

from __future__ import annotations

import base64
import copy
from typing import Any

import httpx
import pytest

from agent.testing import FakeGemini, function_call, reply

URL = (
    "https://generativelanguage.googleapis.com/v1beta/models/gemini-3-flash-preview:generateContent"
)
KEY = {"x-goog-api-key": "k"}
USER = {"role": "user", "parts": [{"text": "Weather in Paris and the time?"}]}
TOOLS = [
    {
        "functionDeclarations": [
            {"name": "get_weather", "parametersJsonSchema": {"type": "object"}},
            {"name": "get_time", "parameters": {"type": "OBJECT", "properties": {}}},
        ]
    }
]


class Session:
    """Raw JSON traffic against a fake: the first reply is a signed parallel call."""

    def __init__(self, *script: Any) -> None:
        self.fake = FakeGemini(
            list(script)
            or [
                reply(function_call("get_weather", {"city": "Paris"}), function_call("get_time")),
                "Sunny, noon.",
                "Spare reply.",
            ]
        )
        self.http = httpx.Client(transport=self.fake.transport())

    def post(
        self, body: dict[str, Any], url: str = URL, headers: dict[str, str] = KEY
    ) -> httpx.Response:
        return self.http.post(url, json=body, headers=headers)

    def model_turn(self) -> dict[str, Any]:
        response = self.post({"contents": [USER], "tools": TOOLS})
        assert response.status_code == 200, response.text
        content: dict[str, Any] = response.json()["candidates"][0]["content"]
        return content


def results(model: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "user",
        "parts": [
            {"functionResponse": {"id": c["id"], "name": c["name"], "response": {"output": "ok"}}}
            for c in (p["functionCall"] for p in model["parts"] if "functionCall" in p)
        ],
    }


def expect_400(response: httpx.Response, fragment: str) -> None:
    assert response.status_code == 400, response.text
    err = response.json()["error"]
    assert err["code"] == 400 and err["status"] == "INVALID_ARGUMENT"
    assert fragment in err["message"], err["message"]


def expect_ok(response: httpx.Response) -> None:
    assert response.status_code == 200, response.text


def recode(signature: str, *, urlsafe: bool, padded: bool) -> str:
    raw = base64.b64decode(signature)
    text = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(raw).decode()
    return text if padded else text.rstrip("=")


# ------------------------------------------------------------------ thought signatures


def test_echo_with_the_signature_passes() -> None:
    s = Session()
    model = s.model_turn()
    assert "thoughtSignature" in model["parts"][0] and "thoughtSignature" not in model["parts"][1]
    expect_ok(s.post({"contents": [USER, model, results(model)], "tools": TOOLS}))


@pytest.mark.parametrize(("urlsafe", "padded"), [(True, True), (True, False), (False, False)])
def test_signature_is_compared_as_decoded_bytes(urlsafe: bool, padded: bool) -> None:
    s = Session()
    model = s.model_turn()
    signature = model["parts"][0]["thoughtSignature"]
    model["parts"][0]["thoughtSignature"] = recode(signature, urlsafe=urlsafe, padded=padded)
    expect_ok(s.post({"contents": [USER, model, results(model)]}))


def test_lost_signature_is_refused() -> None:
    s = Session()
    model = s.model_turn()
    del model["parts"][0]["thoughtSignature"]
    response = s.post({"contents": [USER, model, results(model)]})
    expect_400(response, "Function call is missing a thought_signature in functionCall parts")
    expect_400(response, "function call `default_api:get_weather`, position 2")


def test_signature_moved_to_another_part_is_refused() -> None:
    s = Session()
    model = s.model_turn()
    model["parts"][1]["thoughtSignature"] = model["parts"][0].pop("thoughtSignature")
    expect_400(s.post({"contents": [USER, model, results(model)]}), "missing a thought_signature")


def test_split_parallel_calls_lose_the_signature() -> None:
    s = Session()
    model = s.model_turn()
    first = {"role": "model", "parts": [model["parts"][0]]}
    second = {"role": "model", "parts": [model["parts"][1]]}
    answer = results(model)
    contents = [USER, first, {"role": "user", "parts": answer["parts"][:1]}, second]
    contents.append({"role": "user", "parts": answer["parts"][1:]})
    expect_400(s.post({"contents": contents}), "missing a thought_signature")


def test_unknown_signature_is_refused() -> None:
    s = Session()
    model = s.model_turn()
    model["parts"][0]["thoughtSignature"] = base64.b64encode(b"made up by the client").decode()
    expect_400(
        s.post({"contents": [USER, model, results(model)]}), "Invalid/Corrupted thought signature"
    )


def test_signature_from_another_step_is_refused() -> None:
    s = Session(
        reply(function_call("get_weather", {"city": "A"})),
        reply(function_call("get_weather", {"city": "B"})),
        "done",
    )
    first = s.model_turn()
    contents = [USER, first, results(first)]
    second = s.post({"contents": contents}).json()["candidates"][0]["content"]
    second["parts"][0]["thoughtSignature"] = first["parts"][0]["thoughtSignature"]
    expect_400(
        s.post({"contents": [*contents, second, results(second)]}),
        "Invalid/Corrupted thought signature",
    )


def test_signature_that_is_not_base64_is_refused() -> None:
    s = Session()
    model = s.model_turn()
    model["parts"][0]["thoughtSignature"] = "not base64 at all!"
    expect_400(s.post({"contents": [USER, model, results(model)]}), "Base64 decoding failed")


@pytest.mark.parametrize(
    "dummy",
    [
        "skip_thought_signature_validator",
        "context_engineering_is_the_way_to_go",
        base64.b64encode(b"skip_thought_signature_validator").decode(),
    ],
)
def test_documented_dummy_signatures_pass(dummy: str) -> None:
    s = Session()
    model = s.model_turn()
    model["parts"][0]["thoughtSignature"] = dummy
    expect_ok(s.post({"contents": [USER, model, results(model)]}))


def test_hand_built_unsigned_call_in_the_current_turn_is_refused() -> None:
    s = Session("ok")
    call = {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {}}}]}
    answer = {
        "role": "user",
        "parts": [{"functionResponse": {"name": "get_weather", "response": {}}}],
    }
    expect_400(s.post({"contents": [USER, call, answer]}), "missing a thought_signature")


def test_only_the_current_turn_is_checked() -> None:
    s = Session("ok")
    call = {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {}}}]}
    answer = {
        "role": "user",
        "parts": [{"functionResponse": {"name": "get_weather", "response": {}}}],
    }
    follow_up = {"role": "user", "parts": [{"text": "And tomorrow?"}]}
    expect_ok(
        s.post(
            {
                "contents": [
                    USER,
                    call,
                    answer,
                    {"role": "model", "parts": [{"text": "Sun."}]},
                    follow_up,
                ]
            }
        )
    )


def test_unsigned_gemini_25_style_calls_pass_and_match_by_name() -> None:
    s = Session(
        reply(
            function_call("get_weather", {}, id=None),
            function_call("get_time", id=None),
            signature=None,
        ),
        "ok",
    )
    model = s.model_turn()
    assert all(
        "id" not in p["functionCall"] and "thoughtSignature" not in p for p in model["parts"]
    )
    answer = {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"output": 1}}},
            {"functionResponse": {"name": "get_time", "response": {"output": 2}}},
        ],
    }
    expect_ok(s.post({"contents": [USER, model, answer]}))


# ---------------------------------------------------------- calls and responses pairing


def test_response_count_must_match() -> None:
    s = Session()
    model = s.model_turn()
    answer = results(model)
    answer["parts"].pop()
    expect_400(
        s.post({"contents": [USER, model, answer]}),
        "number of function response parts is equal to the number of function call parts",
    )


def test_response_order_must_match() -> None:
    s = Session()
    model = s.model_turn()
    answer = results(model)
    answer["parts"].reverse()
    expect_400(s.post({"contents": [USER, model, answer]}), "not in the order of the calls")


def test_response_ids_must_echo_the_calls() -> None:
    s = Session()
    model = s.model_turn()
    answer = results(model)
    answer["parts"][0]["functionResponse"]["id"] = "call_999"
    expect_400(
        s.post({"contents": [USER, model, answer]}), "does not match function call 'get_weather'"
    )
    del answer["parts"][0]["functionResponse"]["id"]
    expect_400(s.post({"contents": [USER, model, answer]}), "the id and name must echo the call's")


def test_responses_split_over_several_contents_are_refused() -> None:
    s = Session()
    model = s.model_turn()
    answer = results(model)
    one = {"role": "user", "parts": answer["parts"][:1]}
    two = {"role": "user", "parts": answer["parts"][1:]}
    expect_400(s.post({"contents": [USER, model, one, two]}), "split over several contents")


def test_response_without_a_call_and_call_without_response() -> None:
    s = Session()
    model = s.model_turn()
    expect_400(
        s.post({"contents": [USER, results(model)]}),
        "function response turn comes immediately after a function call turn",
    )
    expect_400(
        s.post({"contents": [USER, model]}),
        "function response turn comes immediately after a function call turn",
    )


def test_response_must_be_an_object() -> None:
    s = Session()
    model = s.model_turn()
    answer = results(model)
    answer["parts"][0]["functionResponse"]["response"] = "plain string"
    expect_400(s.post({"contents": [USER, model, answer]}), "the response must be a JSON object")


# ------------------------------------------------------------------ declarations


@pytest.mark.parametrize("name", ["bad name!", "1starts_with_digit", "a" * 64, "dotted.name", ""])
def test_invalid_function_names_are_refused(name: str) -> None:
    s = Session("ok")
    tools = [{"functionDeclarations": [{"name": name}]}]
    expect_400(s.post({"contents": [USER], "tools": tools}), "Invalid function name")


@pytest.mark.parametrize("name", ["_private", "a" * 63, "mcp_server-tool_2", "Read"])
def test_valid_function_names_pass(name: str) -> None:
    expect_ok(
        Session("ok").post(
            {"contents": [USER], "tools": [{"functionDeclarations": [{"name": name}]}]}
        )
    )


def test_duplicate_declarations_are_refused() -> None:
    tools = [
        {"functionDeclarations": [{"name": "read"}]},
        {"functionDeclarations": [{"name": "read"}]},
    ]
    expect_400(
        Session("ok").post({"contents": [USER], "tools": tools}),
        "Duplicate function declaration found: read",
    )


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}, 'Unknown name "$ref"'),
        ({"type": "object", "$defs": {}}, 'Unknown name "$defs"'),
        ({"oneOf": [{"type": "string"}]}, 'Unknown name "oneOf"'),
        ({"type": "object", "properties": {"k": {"const": "x"}}}, 'Unknown name "const"'),
        (
            {"type": "object", "properties": {"k": {"type": ["string", "null"]}}},
            "['string', 'null']",
        ),
        ({"type": "tuple"}, "expected one of STRING"),
        ({"type": "string", "enum": [1, 2]}, "enum values must be strings"),
        (
            {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            'Unknown name "uniqueItems"',
        ),
        ({"$schema": "https://json-schema.org/draft/2020-12/schema"}, 'Unknown name "$schema"'),
        ({"type": "object", "properties": {}, "required": ["ghost"]}, "property is not defined"),
    ],
)
def test_parameters_outside_the_schema_subset_are_refused(
    schema: dict[str, Any], fragment: str
) -> None:
    tools = [{"functionDeclarations": [{"name": "f", "parameters": schema}]}]
    response = Session("ok").post({"contents": [USER], "tools": tools})
    expect_400(response, fragment)
    expect_400(response, "tools[0].function_declarations[0].parameters")


def test_parameters_subset_passes_in_either_spelling() -> None:
    schema = {
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": ["a", "b"], "nullable": True, "format": "enum"},
            "tags": {"type": "ARRAY", "items": {"type": "STRING"}, "max_items": 3, "minItems": 0},
            "either": {"any_of": [{"type": "string"}, {"type": "integer", "minimum": 0}]},
            "extra": {"type": "object", "additional_properties": False},
        },
        "required": ["mode"],
        "property_ordering": ["mode", "tags"],
    }
    tools = [{"function_declarations": [{"name": "f", "parameters": schema}]}]
    expect_ok(Session("ok").post({"contents": [USER], "tools": tools}))


def test_parameters_json_schema_accepts_full_json_schema() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/A"},
            "b": {"type": ["string", "null"]},
            "c": {"oneOf": [{"const": 1}, {"const": "x"}]},
        },
        "$defs": {"A": {"type": "integer"}},
        "additionalProperties": False,
    }
    tools = [{"functionDeclarations": [{"name": "f", "parametersJsonSchema": schema}]}]
    expect_ok(Session("ok").post({"contents": [USER], "tools": tools}))


def test_parameters_and_parameters_json_schema_are_exclusive() -> None:
    decl = {
        "name": "f",
        "parameters": {"type": "OBJECT"},
        "parameters_json_schema": {"type": "object"},
    }
    expect_400(
        Session("ok").post({"contents": [USER], "tools": [{"functionDeclarations": [decl]}]}),
        "mutually exclusive; function 'f' sets both",
    )


# ------------------------------------------------------------------ request shape


@pytest.mark.parametrize("role", ["assistant", "function", "system"])
def test_roles_must_be_user_or_model(role: str) -> None:
    body = {"contents": [USER, {"role": role, "parts": [{"text": "x"}]}]}
    expect_400(Session("ok").post(body), "Please use a valid role: user, model.")


@pytest.mark.parametrize(
    ("part", "fragment"),
    [
        ({"text": "a", "functionCall": {"name": "f"}}, "exactly one data field"),
        ({"thought": True}, "found: none"),
        ({"txt": "typo"}, 'Unknown name "txt"'),
    ],
)
def test_each_part_holds_exactly_one_data_field(part: dict[str, Any], fragment: str) -> None:
    expect_400(Session("ok").post({"contents": [{"role": "user", "parts": [part]}]}), fragment)


def test_shape_errors() -> None:
    s = Session("ok")
    expect_400(s.post({"contents": []}), "contents is not specified")
    expect_400(
        s.post({"contents": [{"role": "user", "parts": []}]}), "contents.parts must not be empty"
    )
    expect_400(
        s.post({"contents": [USER], "system_instructions": {}}), 'Unknown name "systemInstructions"'
    )
    config = {"thinkingConfig": {"thinkingBudget": 0, "thinking_level": "LOW"}}
    expect_400(s.post({"contents": [USER], "generationConfig": config}), "cannot both be set")
    tool_config = {"functionCallingConfig": {"mode": "REQUIRED"}}
    expect_400(
        s.post({"contents": [USER], "toolConfig": tool_config}), "'REQUIRED': expected one of AUTO"
    )
    string_args = {"role": "model", "parts": [{"functionCall": {"name": "f", "args": "{}"}}]}
    expect_400(s.post({"contents": [USER, string_args]}), "args must be a JSON object")
    call_in_user = {"role": "user", "parts": [{"functionCall": {"name": "f"}}]}
    expect_400(s.post({"contents": [call_in_user]}), "must be in a 'model' content")
    bad_json = s.http.post(URL, content=b"{nope", headers=KEY)
    expect_400(bad_json, "Invalid JSON payload received")
    assert s.fake.remaining == 1, "refused requests must not use up scripted replies"
    expect_ok(s.post({"contents": [USER]}))
    s.fake.assert_consumed()
    assert [r.status for r in s.fake.requests] == [400] * 8 + [200]


def test_snake_case_request_is_accepted_and_recorded_in_camel_case() -> None:
    s = Session()
    model = s.model_turn()
    snake_model = copy.deepcopy(model)
    first = snake_model["parts"][0]
    first["function_call"] = first.pop("functionCall")
    first["thought_signature"] = first.pop("thoughtSignature")
    answer = {
        "role": "user",
        "parts": [{"function_response": p["functionResponse"]} for p in results(model)["parts"]],
    }
    body = {
        "contents": [USER, snake_model, answer],
        "system_instruction": {"parts": [{"text": "Hi"}]},
    }
    expect_ok(s.post(body))
    recorded = s.fake.requests[-1].body
    assert recorded["systemInstruction"] == {"parts": [{"text": "Hi"}]}
    assert recorded["contents"][1]["parts"][0]["functionCall"]["name"] == "get_weather"


def test_strict_false_lets_broken_requests_through() -> None:
    fake = FakeGemini(["anything goes"], strict=False)
    with httpx.Client(transport=fake.transport()) as http:
        body = {
            "contents": [{"role": "assistant", "parts": [{"oops": 1}]}],
            "tools": [{"functionDeclarations": [{"name": "bad name"}]}],
        }
        assert http.post(URL, json=body, headers=KEY).status_code == 200
    fake.assert_consumed()


# ------------------------------------------------------------------ transport-level rules


def test_api_key_and_paths() -> None:
    fake = FakeGemini(["ok"], api_key="right")
    with httpx.Client(transport=fake.transport()) as http:
        body = {"contents": [USER]}
        assert http.post(URL, json=body).status_code == 403
        expect_400(
            http.post(URL, json=body, headers={"x-goog-api-key": "wrong"}), "API key not valid"
        )
        stream = URL.replace(":generateContent", ":streamGenerateContent")
        expect_400(http.post(stream, json=body, headers={"x-goog-api-key": "right"}), "alt=sse")
        assert http.post(URL.replace("v1beta", "v2"), json=body, headers=KEY).status_code == 404
        ok = http.post(URL + "?key=right", json=body)
        expect_ok(ok)
        assert ok.headers["content-type"].startswith("application/json")
    fake.assert_consumed()
    assert all(
        "right" not in str(r.headers) and "wrong" not in str(r.headers) for r in fake.requests
    )


def test_sse_wire_format_has_only_data_lines() -> None:
    fake = FakeGemini(
        [
            reply(
                "One two three four five six.",
                function_call("get_weather"),
                function_call("get_time"),
            )
        ]
    )
    with httpx.Client(transport=fake.transport()) as http:
        url = URL.replace(":generateContent", ":streamGenerateContent?alt=sse")
        response = http.post(url, json={"contents": [USER], "tools": TOOLS}, headers=KEY)
    assert response.headers["content-type"] == "text/event-stream"
    events = response.text.split("\r\n\r\n")
    assert events[-1] == "" and all(e.startswith("data: {") and "\n" not in e for e in events[:-1])
    import json

    chunks = [json.loads(e[len("data: ") :]) for e in events[:-1]]
    parts = [c["candidates"][0]["content"]["parts"] for c in chunks]
    assert [len(p) for p in parts[-1:]] == [2], "parallel calls arrive whole, in one chunk"
    assert "thoughtSignature" in parts[-1][0]
    assert all("usageMetadata" in c for c in chunks)
    assert ["finishReason" in c["candidates"][0] for c in chunks] == [False] * (len(chunks) - 1) + [
        True
    ]


# ------------------------------------------------------- signatures across fake instances


def _resume(fake: FakeGemini, contents: list[dict[str, Any]]) -> httpx.Response:
    with httpx.Client(transport=fake.transport()) as http:
        return http.post(URL, json={"contents": contents, "tools": TOOLS}, headers=KEY)


def test_a_new_fake_accepts_signatures_issued_by_an_earlier_one() -> None:
    model = Session().model_turn()
    assert "thoughtSignature" in model["parts"][0]
    expect_ok(_resume(FakeGemini(["Resumed."]), [USER, model, results(model)]))
    keyed = FakeGemini([reply(function_call("get_weather"))], signing_key="k1")
    signed = _resume(keyed, [USER]).json()["candidates"][0]["content"]
    later = FakeGemini(["Resumed."], signing_key=b"k1")
    expect_ok(_resume(later, [USER, signed, results(signed)]))
    assert later.requests[0].status == 200


def test_a_new_fake_refuses_corrupted_moved_or_foreign_signatures() -> None:
    s = Session(reply(function_call("get_weather", {"city": "A"})), "spare")
    model = s.model_turn()
    corrupted = copy.deepcopy(model)
    raw = bytearray(base64.b64decode(model["parts"][0]["thoughtSignature"]))
    raw[0] ^= 1
    corrupted["parts"][0]["thoughtSignature"] = base64.b64encode(bytes(raw)).decode()
    moved = copy.deepcopy(model)
    moved["parts"][0]["functionCall"]["args"] = {"city": "B"}
    for turn in (corrupted, moved):
        response = _resume(FakeGemini(["never"]), [USER, turn, results(turn)])
        expect_400(response, "Invalid/Corrupted thought signature")
    foreign = _resume(FakeGemini(["never"], signing_key="other"), [USER, model, results(model)])
    expect_400(foreign, "Invalid/Corrupted thought signature")


def test_a_model_refuses_a_signature_another_model_issued_anywhere_in_the_history() -> None:
    # Gemini 3 Pro signs a call; the same history sent to Gemini 3 Flash is refused with
    # Gemini's own message, in the current turn and in an earlier one alike.
    pro = URL.replace("gemini-3-flash-preview", "gemini-3.1-pro-preview")
    s = Session(reply(function_call("get_weather", {"city": "A"})), "spare", "spare")
    response = s.post({"contents": [USER], "tools": TOOLS}, url=pro)
    model = response.json()["candidates"][0]["content"]
    current = [USER, model, results(model)]
    earlier = [*current, {"role": "model", "parts": [{"text": "Sunny."}]}, USER]
    for contents in (current, earlier):
        refused = s.post({"contents": contents, "tools": TOOLS})
        expect_400(refused, "Corrupted thought signature.")
        assert refused.json()["error"]["message"] == "Corrupted thought signature."
    # The model that issued it takes it; the documented placeholder is taken by any model.
    expect_ok(s.post({"contents": current, "tools": TOOLS}, url=pro))
    placeholder = copy.deepcopy(model)
    placeholder["parts"][0]["thoughtSignature"] = "skip_thought_signature_validator"
    expect_ok(s.post({"contents": [USER, placeholder, results(placeholder)], "tools": TOOLS}))
    # Dropped from an earlier turn (where nothing needs one), it is no longer refused.
    unsigned = copy.deepcopy(model)
    del unsigned["parts"][0]["thoughtSignature"]
    later = [USER, unsigned, results(unsigned), {"role": "model", "parts": [{"text": "Sunny."}]}]
    assert s.fake.remaining == 0
    s.fake = FakeGemini(["ok"])
    s.http = httpx.Client(transport=s.fake.transport())
    expect_ok(s.post({"contents": [*later, USER], "tools": TOOLS}))


# ------------------------------------------------------------------ per model family

URL_2_0 = URL.replace("gemini-3-flash-preview", "gemini-2.0-flash")
URL_2_5 = URL.replace("gemini-3-flash-preview", "gemini-2.5-flash")


@pytest.mark.parametrize("url", [URL, URL_2_5])
def test_a_signature_echoed_on_a_call_whose_id_the_client_filled_in_passes(url: str) -> None:
    # Recorded: other clients give id-less calls an id of their own and echo the signature;
    # the real API accepted 66 such requests on gemini-2.5-flash, 2.5-pro and Gemini 3.
    s = Session(reply(function_call("get_weather", {"city": "Paris"}, id=None)), "Sunny.")
    model = s.post({"contents": [USER], "tools": TOOLS}, url).json()["candidates"][0]["content"]
    assert "id" not in model["parts"][0]["functionCall"]
    assert "thoughtSignature" in model["parts"][0]
    model["parts"][0]["functionCall"]["id"] = "client-1"
    expect_ok(s.post({"contents": [USER, model, results(model)], "tools": TOOLS}, url))


def test_a_signature_stays_tied_to_the_calls_content() -> None:
    s = Session(reply(function_call("get_weather", {"city": "Paris"}, id=None)), "Sunny.")
    model = s.model_turn()
    model["parts"][0]["functionCall"]["id"] = "client-1"
    model["parts"][0]["functionCall"]["args"] = {"city": "Oslo"}
    expect_400(
        s.post({"contents": [USER, model, results(model)]}), "Invalid/Corrupted thought signature"
    )


def test_an_unsigned_call_turn_is_accepted_on_gemini_2_and_refused_on_gemini_3() -> None:
    call = {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {}}}]}
    answer = {
        "role": "user",
        "parts": [{"functionResponse": {"name": "get_weather", "response": {}}}],
    }
    expect_ok(Session("ok").post({"contents": [USER, call, answer]}, URL_2_0))
    expect_ok(Session("ok").post({"contents": [USER, call, answer]}, URL_2_5))
    expect_400(
        Session("ok").post({"contents": [USER, call, answer]}), "missing a thought_signature"
    )


def test_answers_split_over_user_contents_are_accepted_on_gemini_2() -> None:
    s = Session()
    model = s.post({"contents": [USER], "tools": TOOLS}, URL_2_5).json()["candidates"][0]["content"]
    answer = results(model)
    one = {"role": "user", "parts": answer["parts"][:1]}
    two = {"role": "user", "parts": answer["parts"][1:]}
    expect_ok(s.post({"contents": [USER, model, one, two]}, URL_2_5))
    missing = {"role": "user", "parts": answer["parts"][:1]}
    expect_400(s.post({"contents": [USER, model, missing]}, URL_2_5), "number of function response")


def test_tools_as_one_object_and_a_video_metadata_part_are_accepted() -> None:
    s = Session("ok", "ok")
    expect_ok(s.post({"contents": [USER], "tools": TOOLS[0]}))
    video = {"videoMetadata": {"startOffset": "10s", "endOffset": "20s"}}
    clip = {"fileData": {"mimeType": "video/mp4", "fileUri": "https://example.com/v.mp4"}}
    user = {"role": "user", "parts": [clip, video, {"text": "What happens?"}]}
    expect_ok(s.post({"contents": [user]}))


def test_function_calling_config_needs_function_declarations() -> None:
    s = Session("ok")
    calling = {"functionCallingConfig": {"mode": "NONE"}}
    search_only = {"contents": [USER], "tools": [{"googleSearch": {}}], "toolConfig": calling}
    expect_400(s.post(search_only), "Function calling config is set without function_declarations")
    expect_400(s.post({"contents": [USER], "toolConfig": calling}), "without function_declarations")
    expect_ok(s.post({"contents": [USER], "tools": TOOLS, "toolConfig": calling}))


def test_a_server_tool_part_echoed_with_more_fields_passes_and_a_changed_one_does_not() -> None:
    from agent.testing import server_tool_call

    search = server_tool_call("FILE_SEARCH", {"query": "refund policy"}, {"chunks": 2})
    s = Session(reply(*search, function_call("get_time")), "Noon.", "Spare.")
    model = s.model_turn()
    echoed = copy.deepcopy(model)
    echoed["parts"][0]["toolCall"]["args"]["fileSearchStoreNames"] = ["fileSearchStores/a"]
    echoed["parts"][0]["toolCall"]["extra"] = {"rank": 1}
    echoed["parts"][1]["toolResponse"]["response"]["store"] = "fileSearchStores/a"
    expect_ok(s.post({"contents": [USER, echoed, results(model)]}))
    changed = copy.deepcopy(model)
    changed["parts"][0]["toolCall"]["args"]["query"] = "something else"
    expect_400(s.post({"contents": [USER, changed, results(model)]}), "exactly as received")
    dropped = copy.deepcopy(model)
    del dropped["parts"][1]["toolResponse"]["response"]
    expect_400(s.post({"contents": [USER, dropped, results(model)]}), "exactly as received")


def test_answers_split_in_an_earlier_turn_pass_on_gemini_3_and_not_in_the_current_one() -> None:
    # A history that mixes providers answers each call in its own user content; the API
    # accepts that in earlier turns. The turn being answered now must send them together.
    s = Session()
    model = s.model_turn()
    answer = results(model)
    one = {"role": "user", "parts": answer["parts"][:1]}
    two = {"role": "user", "parts": answer["parts"][1:]}
    done = {"role": "model", "parts": [{"text": "Sunny, noon."}]}
    again = {"role": "user", "parts": [{"text": "Thanks. And tomorrow?"}]}
    expect_ok(s.post({"contents": [USER, model, one, two, done, again]}))
    expect_400(s.post({"contents": [USER, model, one, two]}), "split over several contents")
    short = {"role": "user", "parts": answer["parts"][:1]}
    expect_400(
        s.post({"contents": [USER, model, short, done, again]}),
        "contents[1] has 2 function calls, contents[2] has 1 responses",
    )


# ------------------------------------------------------------------ model names


@pytest.mark.parametrize("method", ["generateContent", "streamGenerateContent?alt=sse"])
def test_an_unknown_model_gets_geminis_404(method: str) -> None:
    s = Session("ok", "ok")
    base = "https://generativelanguage.googleapis.com/v1beta/models"
    response = s.post({"contents": [USER]}, f"{base}/gemini-2.5-flsh:{method}")
    assert response.status_code == 404, response.text
    error = response.json()["error"]
    assert (error["code"], error["status"]) == (404, "NOT_FOUND")
    assert error["message"] == (
        f"models/gemini-2.5-flsh is not found for API version v1beta, or is not supported for "
        f"{method.split('?')[0]}. Call ListModels to see the list of available models and their "
        "supported methods."
    )
    retired = s.post({"contents": [USER]}, f"{base}/gemini-3-pro-preview:generateContent")
    assert retired.status_code == 404
    assert retired.json()["error"]["message"] == (
        "This model models/gemini-3-pro-preview is no longer available. Please update your "
        "code to use models/gemini-3.1-pro-preview."
    )
    assert s.fake.remaining == 2  # refused requests use no scripted reply
    expect_ok(s.post({"contents": [USER]}, f"{base}/gemini-2.5-flash-lite:{method}"))


def test_a_test_adds_model_names_and_a_scenario_serves_its_model() -> None:
    from agent.testing import read_scenario

    base = "https://generativelanguage.googleapis.com/v1beta/models"
    fake = FakeGemini(["ok"], extra_models=["my-tuned-model"])
    assert "my-tuned-model" in fake.models and "gemini-2.5-flash" in fake.models
    with httpx.Client(transport=fake.transport()) as http:
        ok = http.post(
            f"{base}/my-tuned-model:generateContent", json={"contents": [USER]}, headers=KEY
        )
    expect_ok(ok)
    scenario = read_scenario({"model": "gemini-house", "turns": ["hi"]})
    assert "gemini-house" in scenario.fake().models


def test_known_model_names_come_from_the_price_table() -> None:
    from agent._cost import price_table
    from agent._known_models import known_model, known_models

    priced = set(price_table().models) - {"gemini-3-pro-preview"}
    assert priced <= known_models()
    assert known_model("gemini-2.5-flash") and known_model("models/gemini-3.1-pro-preview")
    assert not known_model("gemini-2.5-flsh") and not known_model("gemini-3-pro-preview")
