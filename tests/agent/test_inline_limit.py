"""Tool files over the request's inline limit: uploaded through the Files API, or a note.

The limit (100 MB on the real API) is lowered on both sides for these tests: the agent's
``agent._media.INLINE_LIMIT`` and the strict fake's ``agent.testing._strict.INLINE_LIMIT``.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from google.genai import types

import agent._media as media
import agent.testing._strict as strict
import toolnexus as tn
from agent import Agent, ClientSettings, MemoryStore, ModelError, RetryPolicy, RunLimits
from agent._inline_limit import InlineLimit
from agent._transcript import Transcript
from agent.testing import FakeGemini, function_call
from agent.testing._files import FILES_URI
from toolnexus import Attachment, ToolContext, ToolResult

LIMIT = 1_000
"""The inline limit of these tests, in bytes."""


@pytest.fixture(autouse=True)
def small_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(media, "INLINE_LIMIT", LIMIT)
    monkeypatch.setattr(strict, "INLINE_LIMIT", LIMIT)
    monkeypatch.setattr(media, "UPLOAD_POLL", 0.0)


def _render(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    data = bytes([int(args.get("fill", 1))]) * int(args["size"])
    return ToolResult("Rendered.", attachments=(Attachment("image/png", data=data, name="p.png"),))


RENDER = tn.Tool("render", _render, "Render a plot.", {"type": "object"})


def agent_on(fake: FakeGemini, model: str, **kw: Any) -> Agent:
    return Agent(
        model,
        tn.toolkit([RENDER]),
        client=ClientSettings(api_key="k", http_client=fake.http_client()),
        limits=RunLimits(retry=RetryPolicy(attempts=1)),
        **kw,
    )


def _decode(value: str) -> bytes:
    return base64.urlsafe_b64decode(value.replace("+", "-").replace("/", "_") + "==")


async def test_an_oversized_tool_file_goes_through_the_files_api_on_gemini_2_5() -> None:
    fake = FakeGemini([function_call("render", {"size": 3_000}, id=None), "A plot."])
    result = await agent_on(fake, "gemini-2.5-flash").run("Plot it")
    fake.assert_consumed()
    assert result.text == "A plot."
    assert [r.status for r in fake.requests] == [200, 200]
    (stored,) = fake.files.files.values()
    assert (stored.data, stored.mime_type) == (b"\x01" * 3_000, "image/png")
    parts = fake.requests[1].contents[-1]["parts"]
    assert parts[1] == {"text": "This is file p.png:"}
    assert parts[2] == {"fileData": {"mimeType": "image/png", "fileUri": FILES_URI + stored.id}}
    assert result.contents[-2]["parts"][2] == parts[2]  # the transcript keeps the upload


async def test_an_oversized_tool_file_goes_through_the_files_api_on_gemini_3() -> None:
    fake = FakeGemini([function_call("render", {"size": 3_000}), "A plot."])
    result = await agent_on(fake, "gemini-3-flash-preview").run("Plot it")
    fake.assert_consumed()
    assert result.text == "A plot."
    (stored,) = fake.files.files.values()
    (answer,) = fake.requests[1].function_responses
    assert answer["response"]["attachments"] == [{"$ref": "p.png"}]
    assert answer["parts"] == [
        {
            "fileData": {
                "mimeType": "image/png",
                "fileUri": FILES_URI + stored.id,
                "displayName": "p.png",
            }
        }
    ]


async def test_files_that_add_up_past_the_limit_move_largest_first() -> None:
    calls = [
        function_call("render", {"size": 400, "fill": 1}),
        function_call("render", {"size": 700, "fill": 2}),
        function_call("render", {"size": 300, "fill": 3}),
    ]
    fake = FakeGemini([*calls, "Three plots."])
    result = await agent_on(fake, "gemini-3-flash-preview").run("Plot three")
    fake.assert_consumed()
    assert result.text == "Three plots."
    assert [f.data for f in fake.files.files.values()] == [b"\x02" * 700]
    sent = fake.requests[-1].contents
    inline = [
        _decode(p["inlineData"]["data"])
        for c in sent
        for part in c["parts"]
        for p in part.get("functionResponse", {}).get("parts", [])
        if "inlineData" in p
    ]
    assert inline == [b"\x01" * 400, b"\x03" * 300]  # 700 bytes stay inline: under 1,000


async def test_each_turn_counts_the_transcript_as_it_is_after_earlier_uploads() -> None:
    # Turn 2 goes past the limit and its 700-byte file moves; the transcript is then
    # measured as it became (the moved file counts nothing), so turn 3's 400 bytes fit
    # beside turn 1's and nothing else moves.
    calls = [
        function_call("render", {"size": 400, "fill": 1}),
        function_call("render", {"size": 700, "fill": 2}),
        function_call("render", {"size": 400, "fill": 3}),
    ]
    fake = FakeGemini([calls[0], calls[1], calls[2], "Three plots."])
    result = await agent_on(fake, "gemini-3-flash-preview").run("Plot three, one by one")
    fake.assert_consumed()
    assert result.text == "Three plots."
    assert [f.data for f in fake.files.files.values()] == [b"\x02" * 700]
    inline = [
        _decode(p["inlineData"]["data"])
        for c in fake.requests[-1].contents
        for part in c["parts"]
        for p in part.get("functionResponse", {}).get("parts", [])
        if "inlineData" in p
    ]
    assert inline == [b"\x01" * 400, b"\x03" * 400]


def test_the_transcript_is_measured_as_it_is_each_turn() -> None:
    # What before_call sums: a Content put in another's place (an upload, compaction)
    # is measured again, a new one is measured, and one dropped counts no more.
    def content(size: int) -> Any:
        return types.Content(
            role="user", parts=[types.Part.from_bytes(data=b"x" * size, mime_type="image/png")]
        )

    run = InlineLimit().start(None)  # type: ignore[arg-type]
    first, second = content(300), content(500)
    assert run.sizes([first, second]) == [300, 500]
    moved = content(0)
    assert run.sizes([first, moved, content(200)]) == [300, 0, 200]
    assert run.sizes([first]) == [300]


async def test_a_file_that_cannot_be_uploaded_becomes_a_note_and_the_session_goes_on() -> None:
    fake = FakeGemini(
        [function_call("render", {"size": 3_000}), "I could not see it.", "Still here."]
    )
    fake.files.outcome = "FAILED"
    store = MemoryStore()
    agent = agent_on(fake, "gemini-3-flash-preview", store=store)
    result = await agent.run("Plot it", session="s")
    assert result.text == "I could not see it."
    (answer,) = fake.requests[1].function_responses
    assert "parts" not in answer and "attachments" not in answer["response"]
    note = answer["response"]["output"]
    assert note.startswith("Rendered.\n[p.png (image/png, 3000 bytes) was left out:")
    assert "could not process the uploaded p.png: The file could not be processed." in note
    again = await agent.run("Are you there?", session="s")
    assert again.text == "Still here."
    assert all(r.status == 200 for r in fake.requests), fake.requests[-1].error
    fake.assert_consumed()


async def test_a_stored_session_over_the_limit_is_sent_again() -> None:
    fake = FakeGemini([function_call("render", {"size": 3_000}, id=None), "Seen.", "Yes."])
    first = await agent_on(fake, "gemini-2.5-flash").run("Plot it")
    assert fake.files.files  # uploaded in that run; a store from before kept it inline:
    data = base64.b64encode(b"\x01" * 3_000).decode()
    inline = list(first.contents)
    kept = inline[2]["parts"][:2]  # the function response and "This is file p.png:"
    inline[2] = {
        **inline[2],
        "parts": [*kept, {"inlineData": {"mimeType": "image/png", "data": data}}],
    }
    store = MemoryStore()
    await store.save("s", Transcript(inline))
    result = await agent_on(fake, "gemini-2.5-flash", store=store).run("Nice?", session="s")
    assert result.text == "Yes."
    assert fake.requests[-1].status == 200, fake.requests[-1].error
    assert len(fake.files.files) == 2
    saved = await store.get("s")
    assert saved is not None and "fileData" in saved.contents[2]["parts"][2]


async def test_the_fake_counts_files_in_function_response_parts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Without the agent's upload the request is over the limit: the fake refuses it.
    monkeypatch.setattr(media, "INLINE_LIMIT", 10 * LIMIT)
    fake = FakeGemini([function_call("render", {"size": 3_000}), "unused"])
    with pytest.raises(ModelError):
        await agent_on(fake, "gemini-3-flash-preview").run("Plot it")
    assert fake.requests[1].error.startswith(
        f"Request payload size exceeds the limit: {LIMIT} bytes."
    )


async def test_the_fake_checks_file_data_in_function_response_parts() -> None:
    from google.genai import types

    fake = FakeGemini([function_call("render", {"size": 1}), "unused"])
    client = fake.client()
    first = await client.aio.models.generate_content(
        model="gemini-3-flash-preview", contents="Plot"
    )
    call = first.candidates[0].content  # type: ignore[index]
    assert call is not None and call.parts
    function_call_part = call.parts[0].function_call
    assert function_call_part is not None
    unknown = types.FunctionResponsePart(
        file_data=types.FunctionResponseFileData(
            mime_type="image/png", file_uri=FILES_URI + "nope", display_name="p.png"
        )
    )
    answer = types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    id=function_call_part.id,
                    name="render",
                    response={"output": "x", "attachments": [{"$ref": "p.png"}]},
                    parts=[unknown],
                )
            )
        ],
    )
    prompt = types.Content(role="user", parts=[types.Part(text="Plot")])
    with pytest.raises(Exception, match="permission to access the File nope"):
        await client.aio.models.generate_content(
            model="gemini-3-flash-preview", contents=[prompt, call, answer]
        )
