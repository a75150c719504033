"""Test your Gemini agent offline: a strict, scripted fake Gemini behind the real protocol.

``FakeGemini`` answers the requests of the real ``google-genai`` client, either in process
(``fake.http_client()`` / ``fake.client()``) or over HTTP on 127.0.0.1 (``fake.serve()``).
It checks every request the way the real API does and records it for assertions.

Example::

    from agent.testing import FakeGemini, function_call, reply, error

    fake = FakeGemini([
        error(429, retry_delay=0.01),                           # a rate limit first
        reply(function_call("read", {"path": "notes.txt"})),    # then a tool call
        "The notes say hello.",                                 # then the answer
    ])
    client = fake.client()
    ...
    fake.assert_consumed()
    assert fake.requests[-1].function_responses[0]["name"] == "read"
"""

from agent.testing._fake import FakeGemini, FakeGeminiError, RecordedRequest
from agent.testing._replies import (
    AUTO,
    Checked,
    Delayed,
    ErrorReply,
    FunctionCallPart,
    ModelFunction,
    Reply,
    ReplyLike,
    TextPart,
    blocked,
    code_execution,
    delay,
    error,
    expect,
    function_call,
    grounding,
    json_output,
    malformed_function_call,
    reply,
    server_tool_call,
    text,
    thought,
)
from agent.testing._scenario import Scenario, ScenarioError, load_scenario, read_scenario

__all__ = [
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
