"""Files in prompts and in tool results, over the real SDK against the strict fake."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from google.genai import types

import toolnexus as tn
from agent import Agent, ClientSettings, ConfigurationError, ModelError, RetryPolicy, RunLimits
from agent.testing import FakeGemini, function_call
from agent.testing._files import FILES_URI, StoredFile
from toolnexus import Attachment, ToolContext, ToolResult

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000") + b"\x00" * 16


def _decode(value: str) -> bytes:
    return base64.urlsafe_b64decode(value.replace("+", "-").replace("/", "_") + "==")


def agent_on(fake: FakeGemini, model: str = "gemini-2.5-flash", **kw: Any) -> Agent:
    return Agent(
        model,
        client=ClientSettings(api_key="k", http_client=fake.http_client()),
        limits=RunLimits(retry=RetryPolicy(attempts=1)),
        **kw,
    )


async def test_an_image_prompt_goes_as_inline_data(tmp_path: Path) -> None:
    image = tmp_path / "chart.png"
    image.write_bytes(PNG)
    fake = FakeGemini(["A chart."])
    result = await agent_on(fake).run(
        [
            "What is in these?",
            image,
            Attachment("application/pdf", uri="https://example.org/a.pdf"),
            types.Part(text="Be brief."),
            {"text": "Thanks."},
        ]
    )
    assert result.text == "A chart."
    parts = fake.requests[0].contents[0]["parts"]
    assert parts[0] == {"text": "What is in these?"}
    assert parts[1]["inlineData"]["mimeType"] == "image/png"
    assert _decode(parts[1]["inlineData"]["data"]) == PNG
    assert parts[2] == {
        "fileData": {"mimeType": "application/pdf", "fileUri": "https://example.org/a.pdf"}
    }
    assert parts[3:] == [{"text": "Be brief."}, {"text": "Thanks."}]
    assert result.contents[0]["parts"][1]["inlineData"]["mimeType"] == "image/png"


async def test_bad_prompts_are_refused_before_sending(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeGemini([])
    agent = agent_on(fake)
    with pytest.raises(TypeError, match="prompt part 0 is a int"):
        await agent.run([3])  # type: ignore[list-item]
    assert fake.requests == []


@pytest.mark.timeout(30)  # before regular files only, opening the FIFO hung here
@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero", "folder", "over the cap"])
async def test_a_prompt_path_that_is_no_regular_file_is_refused_before_any_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    import toolnexus._attachment as attachment

    path = tmp_path / "input.png"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    else:
        monkeypatch.setattr(attachment, "MAX_FILE_BYTES", 8)
        path.write_bytes(PNG)
    fake = FakeGemini([])
    with pytest.raises(ConfigurationError, match=r"prompt part 1: cannot attach .*input\.png") as e:
        await agent_on(fake).run(["What is it?", path])
    problem = "is over 8 bytes" if kind == "over the cap" else "is not a regular file"
    assert problem in str(e.value)
    assert fake.requests == []


_READ_OFF_THE_LOOP = """
import asyncio, sys, threading
from pathlib import Path
from agent._media import prompt_content, read_prompt

opened = []
def audit(event, args):  # every open of the file, with the thread that did it
    if event == "open" and str(args[0]).endswith("dot.png"):
        opened.append(threading.current_thread() is threading.main_thread())
sys.addaudithook(audit)
path = Path(sys.argv[1])
content = asyncio.run(read_prompt(["Look", path]))
assert content == prompt_content(["Look", path])
print(opened[0], len(content.parts[1].inline_data.data))
"""


def test_prompt_files_are_read_off_the_event_loop(tmp_path: Path) -> None:
    (tmp_path / "dot.png").write_bytes(PNG)
    done = subprocess.run(
        [sys.executable, "-c", _READ_OFF_THE_LOOP, str(tmp_path / "dot.png")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout == f"False {len(PNG)}\n", done.stderr  # opened on a worker thread


async def test_inline_data_over_the_limit_goes_through_the_files_api(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import agent._media as media

    monkeypatch.setattr(media, "INLINE_LIMIT", 20)
    monkeypatch.setattr(media, "UPLOAD_POLL", 0.0)
    fake = FakeGemini(["A dot."])
    result = await agent_on(fake).run(
        ["Describe", Attachment("image/png", data=PNG), Attachment("text/plain", data=b"tiny")]
    )
    assert result.text == "A dot."
    # start, the bytes (upload, finalize), then files.get until ACTIVE (PROCESSING first)
    assert [m for m, _ in fake.files.requests] == ["POST", "POST", "GET", "GET"]
    (stored,) = fake.files.files.values()
    assert (stored.data, stored.mime_type, stored.state) == (PNG, "image/png", "ACTIVE")
    assert stored.display_name == "prompt part 1"
    parts = fake.requests[0].body["contents"][0]["parts"]
    assert parts[1] == {"fileData": {"mimeType": "image/png", "fileUri": FILES_URI + stored.id}}
    assert parts[2]["inlineData"]["mimeType"] == "text/plain"  # under the limit once moved
    fake.assert_consumed()


async def test_an_upload_that_fails_or_stays_processing_stops_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import agent._media as media

    monkeypatch.setattr(media, "INLINE_LIMIT", 10)
    monkeypatch.setattr(media, "UPLOAD_POLL", 0.0)
    fake = FakeGemini(["unused"])
    fake.files.outcome = "FAILED"
    with pytest.raises(ConfigurationError, match="could not process the uploaded prompt part 0"):
        await agent_on(fake).run([Attachment("image/png", data=PNG)])
    monkeypatch.setattr(media, "UPLOAD_TIMEOUT", 0.0)
    fake.files.outcome = "ACTIVE"
    with pytest.raises(ConfigurationError, match="still PROCESSING after 0 seconds"):
        await agent_on(fake).run([Attachment("image/png", data=PNG)])
    assert fake.requests == []


async def test_the_fake_refuses_unknown_and_processing_files() -> None:
    fake = FakeGemini(["unused", "unused"])
    fake.files.files["busy"] = StoredFile("busy", "image/png", None, PNG)
    with pytest.raises(ModelError):
        await agent_on(fake).run([Attachment("image/png", uri=FILES_URI + "nope")])
    assert fake.requests[0].error == (
        "You do not have permission to access the File nope or it may not exist."
    )
    with pytest.raises(ModelError):
        await agent_on(fake).run([Attachment("image/png", uri=FILES_URI + "busy")])
    assert fake.requests[1].error == (
        "The File busy is not in an ACTIVE state and usage is not allowed."
    )


async def test_the_fake_refuses_inline_data_over_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import agent.testing._strict as strict

    monkeypatch.setattr(strict, "INLINE_LIMIT", 10)
    fake = FakeGemini(["unused"])
    with pytest.raises(ModelError):
        await agent_on(fake).run([Attachment("image/png", data=PNG)])
    assert fake.requests[0].error.startswith("Request payload size exceeds the limit: 10 bytes.")


def _render(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return ToolResult(
        "Rendered.", attachments=(Attachment("image/png", data=PNG, name="plot.png"),)
    )


RENDER = tn.Tool("render", _render, "Render a plot.", {"type": "object"})


async def test_a_tool_png_goes_in_function_response_parts_on_gemini_3() -> None:
    fake = FakeGemini([function_call("render"), "A rising line."])
    result = await agent_on(fake, "gemini-3-flash-preview", toolkit=tn.toolkit([RENDER])).run(
        "Plot"
    )
    fake.assert_consumed()
    assert result.text == "A rising line."
    [answer] = fake.requests[1].function_responses
    assert answer["response"] == {
        "output": "Rendered.",
        "isError": False,
        "attachments": [{"$ref": "plot.png"}],
    }
    [part] = answer["parts"]
    assert part["inlineData"]["mimeType"] == "image/png"
    assert part["inlineData"]["displayName"] == "plot.png"
    assert _decode(part["inlineData"]["data"]) == PNG
    assert len(fake.requests[1].contents[-1]["parts"]) == 1


async def test_a_tool_png_follows_the_responses_on_gemini_2_5() -> None:
    fake = FakeGemini([function_call("render", id=None), "A rising line."])
    result = await agent_on(fake, "gemini-2.5-flash", toolkit=tn.toolkit([RENDER])).run("Plot")
    fake.assert_consumed()
    assert result.status == "completed"
    parts = fake.requests[1].contents[-1]["parts"]
    assert parts[0]["functionResponse"]["response"]["output"] == "Rendered.\nSee file plot.png."
    assert "parts" not in parts[0]["functionResponse"]
    assert parts[1] == {"text": "This is file plot.png:"}
    assert _decode(parts[2]["inlineData"]["data"]) == PNG


async def test_the_fake_refuses_function_response_parts_on_gemini_2_5() -> None:
    fake = FakeGemini([function_call("render", id=None), "unused"])
    client = fake.client()
    first = client.models.generate_content(model="gemini-2.5-flash", contents="Plot")
    answer = types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    name="render",
                    response={"output": "x"},
                    parts=[types.FunctionResponsePart.from_bytes(data=PNG, mime_type="image/png")],
                )
            )
        ],
    )
    history = [types.Content(role="user", parts=[types.Part(text="Plot")])]
    with pytest.raises(Exception, match="multimodal function responses are not supported"):
        client.models.generate_content(
            model="gemini-2.5-flash",
            contents=[*history, first.candidates[0].content, answer],
        )


def test_attachment_needs_one_source() -> None:
    with pytest.raises(ValueError, match="exactly one of data= or uri="):
        Attachment("image/png")
    assert "3 bytes" in repr(Attachment("image/png", data=b"abc"))


async def test_the_fake_server_serves_a_resumable_upload() -> None:
    import io

    from google import genai

    fake = FakeGemini([])
    with fake.serve() as server:
        client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=server.base_url))
        config = types.UploadFileConfig(mime_type="text/plain", display_name="notes")
        uploaded = await client.aio.files.upload(file=io.BytesIO(b"abc"), config=config)
        assert uploaded.state == types.FileState.PROCESSING
        assert uploaded.display_name == "notes"
        first = await client.aio.files.get(name=uploaded.name or "")
        second = await client.aio.files.get(name=uploaded.name or "")
    assert (first.state, second.state) == (types.FileState.PROCESSING, types.FileState.ACTIVE)
    assert second.uri == FILES_URI + "fake000001"
    assert fake.files.files["fake000001"].data == b"abc"
