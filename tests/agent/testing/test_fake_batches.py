"""The fake's Batch API, through the real SDK: jobs, their states, results, refusals."""

from __future__ import annotations

import io
import json
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import errors, types

from agent.testing import FakeGemini, error, function_call, reply

MODEL = "gemini-2.5-flash"


def _echo(body: dict[str, Any]) -> Any:
    text = body["contents"][-1]["parts"][0].get("text", "")
    if text == "fail":
        return error(500)
    if text == "busy":
        return error(429, retry_delay=2)
    return f"echo {text}"


def _inline(*texts: str) -> list[types.InlinedRequest]:
    return [
        types.InlinedRequest(
            contents=[types.Content(role="user", parts=[types.Part(text=text)])],
            metadata={"key": f"k-{text}"},
        )
        for text in texts
    ]


async def _create(client: genai.Client, src: Any, name: str = "job") -> types.BatchJob:
    return await client.aio.batches.create(
        model=MODEL, src=src, config=types.CreateBatchJobConfig(display_name=name)
    )


async def _until_done(client: genai.Client, name: str) -> tuple[types.BatchJob, list[str]]:
    states = []
    while True:
        job = await client.aio.batches.get(name=name)
        assert job.state is not None
        states.append(job.state.name)
        if job.done:
            return job, states


async def test_a_job_goes_pending_running_succeeded_and_answers_by_key_shuffled() -> None:
    fake = FakeGemini(_echo)
    client = fake.client(api_version="v1beta")
    texts = [f"t{i}" for i in range(12)]
    created = await _create(client, _inline(*texts))
    assert created.name == "batches/fakebatch000001"
    assert created.state == types.JobState.JOB_STATE_PENDING
    assert [r.kind for r in fake.requests] == []  # nothing answered before the job runs
    job, states = await _until_done(client, str(created.name))
    assert states == ["JOB_STATE_PENDING", "JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED"]
    assert job.dest is not None and job.dest.inlined_responses is not None
    answered = {
        (item.metadata or {})["key"]: item.response.text
        for item in job.dest.inlined_responses
        if item.response is not None
    }
    assert answered == {f"k-{text}": f"echo {text}" for text in texts}
    keys = [(item.metadata or {})["key"] for item in job.dest.inlined_responses]
    assert keys != [f"k-{text}" for text in texts]  # shuffled
    # The job's requests were answered in input order, as generateContent requests.
    assert [r.kind for r in fake.requests] == ["batch"] * 12
    assert [r.contents[0]["parts"][0]["text"] for r in fake.requests] == texts
    assert fake.requests[0].path == f"/v1beta/models/{MODEL}:batchGenerateContent"
    assert fake.batches.created == 1


async def test_per_request_errors_are_rpc_statuses_inside_a_succeeded_job() -> None:
    fake = FakeGemini(_echo)
    fake.batches.progression = ()
    fake.batches.shuffle = False
    client = fake.client()
    created = await _create(client, _inline("ok", "fail", "busy"))
    job, states = await _until_done(client, str(created.name))
    assert states == ["JOB_STATE_SUCCEEDED"]
    assert job.dest is not None and job.dest.inlined_responses is not None
    ok, failed, busy = job.dest.inlined_responses
    assert ok.response is not None and ok.error is None
    assert failed.response is None and failed.error is not None
    assert (failed.error.code, failed.metadata) == (13, {"key": "k-fail"})  # INTERNAL
    assert busy.error is not None and busy.error.code == 8  # RESOURCE_EXHAUSTED
    assert "quota" in str(busy.error.message)


@pytest.mark.parametrize("ending", ["FAILED", "EXPIRED", "CANCELLED"])
async def test_a_job_can_be_scripted_to_end_badly(ending: str) -> None:
    fake = FakeGemini(_echo)
    fake.batches.endings = [ending]
    client = fake.client()
    first = await _create(client, _inline("a"))
    second = await _create(client, _inline("b"))
    job, states = await _until_done(client, str(first.name))
    assert states[-1] == f"JOB_STATE_{ending}"
    assert job.dest is None  # no results
    assert fake.requests == []  # its request was never answered
    job, states = await _until_done(client, str(second.name))  # the next one succeeds
    assert states[-1] == "JOB_STATE_SUCCEEDED"
    assert len(fake.requests) == 1


async def test_a_job_from_an_uploaded_file_answers_in_a_downloadable_results_file() -> None:
    fake = FakeGemini(_echo)
    fake.batches.progression = ()
    fake.files.processing_gets = 0
    client = fake.client()
    lines = [
        {"key": f"f{i}", "request": {"contents": [{"parts": [{"text": f"y{i}"}]}]}}
        for i in range(3)
    ]
    lines.append({"key": "bad", "request": "not a request"})
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    upload = await client.aio.files.upload(
        file=io.BytesIO(data), config=types.UploadFileConfig(mime_type="jsonl")
    )
    upload = await client.aio.files.get(name=str(upload.name))
    assert upload.state == types.FileState.ACTIVE
    created = await _create(client, str(upload.name))
    job, _ = await _until_done(client, str(created.name))
    assert job.dest is not None and job.dest.file_name and not job.dest.inlined_responses
    results = [
        json.loads(line)
        for line in (await client.aio.files.download(file=job.dest.file_name)).splitlines()
    ]
    by_key = {result["key"]: result for result in results}
    assert sorted(by_key) == ["bad", "f0", "f1", "f2"]
    assert by_key["f1"]["response"]["candidates"][0]["content"]["parts"] == [{"text": "echo y1"}]
    assert by_key["bad"]["error"]["code"] == 3
    # Only generated files download: the input file does not.
    with pytest.raises(errors.ClientError, match="Only generated files"):
        await client.aio.files.download(file=str(upload.name))


async def test_the_jobs_requests_are_checked_like_generate_content_requests() -> None:
    # A function response whose call was never made is refused: an error for that
    # request alone, inside a job that succeeds.
    fake = FakeGemini([reply(function_call("lookup", {"key": "a"}))] + ["spare"] * 2)
    fake.batches.progression = ()
    client = fake.client()
    stray = types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(name="lookup", response={"output": "1"})
            )
        ],
    )
    requests = [
        types.InlinedRequest(contents="hello", metadata={"key": "good"}),
        types.InlinedRequest(contents=[stray], metadata={"key": "stray"}),
    ]
    job, _ = await _until_done(client, str((await _create(client, requests)).name))
    assert job.dest is not None and job.dest.inlined_responses is not None
    by_key = {(i.metadata or {})["key"]: i for i in job.dest.inlined_responses}
    assert by_key["good"].response is not None
    stray_error = by_key["stray"].error
    assert stray_error is not None and stray_error.code == 3  # INVALID_ARGUMENT
    assert fake.requests[1].status == 400 and fake.requests[1].error == stray_error.message


async def test_cancel_delete_and_list() -> None:
    fake = FakeGemini(_echo)
    client = fake.client()
    names = [str((await _create(client, _inline(str(i)), f"job-{i}")).name) for i in range(3)]
    await client.aio.batches.cancel(name=names[0])
    job = await client.aio.batches.get(name=names[0])
    assert job.state == types.JobState.JOB_STATE_CANCELLED
    with pytest.raises(errors.ClientError, match="already ended") as refused:
        await client.aio.batches.cancel(name=names[0])
    assert refused.value.code == 400
    listed = [
        job.display_name async for job in await client.aio.batches.list(config={"page_size": 2})
    ]
    assert listed == ["job-0", "job-1", "job-2"]  # over two pages
    await client.aio.batches.delete(name=names[1])
    with pytest.raises(errors.ClientError, match="Requested entity was not found") as gone:
        await client.aio.batches.get(name=names[1])
    assert gone.value.code == 404
    assert fake.batches.created == 3 and list(fake.batches.jobs) == [
        "fakebatch000001",
        "fakebatch000003",
    ]


async def test_refusals() -> None:
    fake = FakeGemini(_echo)
    client = fake.client()
    fake.batches.inline_limit = 2_000
    with pytest.raises(errors.ClientError) as big:
        await _create(client, _inline("x" * 3_000))
    assert big.value.code == 400
    assert big.value.message == "Request payload size exceeds the limit: 2000 bytes."
    with pytest.raises(errors.ClientError, match="display_name is required"):
        await client.aio.batches.create(model=MODEL, src=_inline("a"))
    with pytest.raises(errors.ClientError, match="not found for API version") as unknown:
        await client.aio.batches.create(
            model="gemini-9-flash", src=_inline("a"), config={"display_name": "d"}
        )
    assert unknown.value.code == 404 and "batchGenerateContent" in str(unknown.value.message)
    with pytest.raises(errors.ClientError, match="may not exist") as missing:
        await _create(client, "files/nosuchfile")
    assert missing.value.code == 403
    upload = await client.aio.files.upload(
        file=io.BytesIO(b'{"key": "a", "request": {}}\n'), config={"mime_type": "jsonl"}
    )
    with pytest.raises(errors.ClientError, match="not in an ACTIVE state"):
        await _create(client, str(upload.name))
    assert fake.batches.created == 0


def test_raw_refusals_of_malformed_create_requests_and_missing_keys() -> None:
    fake = FakeGemini(_echo)
    http = httpx.Client(transport=fake.transport())
    url = f"https://generativelanguage.googleapis.com/v1beta/models/{MODEL}:batchGenerateContent"
    key = {"x-goog-api-key": "k"}
    inline = {"requests": {"requests": [{"request": {"contents": [{"parts": [{"text": "a"}]}]}}]}}

    def post(body: Any, headers: dict[str, str] = key) -> httpx.Response:
        return http.post(url, json=body, headers=headers)

    assert post({"batch": {"displayName": "d", "inputConfig": inline}}, {}).status_code == 403
    problems = {
        "batch is required.": {},
        "Unknown name 'color'": {"batch": {"displayName": "d", "inputConfig": inline, "color": 1}},
        "input_config is required": {"batch": {"displayName": "d"}},
        "only one of requests and file_name": {
            "batch": {"displayName": "d", "inputConfig": {**inline, "fileName": "files/x"}}
        },
        "must not be empty": {
            "batch": {"displayName": "d", "inputConfig": {"requests": {"requests": []}}}
        },
        "requests[0].request is required": {
            "batch": {"displayName": "d", "inputConfig": {"requests": {"requests": [{}]}}}
        },
    }
    for message, body in problems.items():
        answer = post(body)
        assert answer.status_code == 400, body
        assert message in answer.json()["error"]["message"]
    assert fake.batches.created == 0
    assert post({"batch": {"displayName": "d", "inputConfig": inline}}).status_code == 200
    # A job id that is not one: 404 (the SDK itself refuses names without "batches/").
    missing = http.get("https://generativelanguage.googleapis.com/v1beta/batches/nope", headers=key)
    assert missing.status_code == 404


def test_unknown_endings_are_a_script_error() -> None:
    fake = FakeGemini(_echo)
    fake.batches.endings = ["EXPLODED"]
    with pytest.raises(ValueError, match="EXPLODED"):
        fake.client().batches.create(model=MODEL, src=_inline("a"), config={"display_name": "d"})
