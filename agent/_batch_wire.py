"""The Gemini Batch API on the SDK: a job from model requests, its state, its results.

The wire side of the Gemini Batch engine (`agent._batch`), one of the modules behind the
model seam that import ``google.genai``. A job's requests go inline
(``inputConfig.requests``) while they fit under `INLINE_LIMIT`, else as a JSON Lines file
uploaded through the Files API (``inputConfig.fileName``). Each request carries its key in
``metadata.key`` (a file line in ``key``), and each result is matched back by that key:
the API may answer in any order. A job's per-request error is a ``google.rpc.Status``
(gRPC code and message); it is read as the HTTP failure the same request would have had
with ``generateContent``, so the retry policy treats both alike.

The SDK converts a request to its wire form only inside ``batches.create``; the JSON Lines
file needs that form too, so it comes from the SDK's own converter (a private function of
``google.genai.batches``) rather than a second copy of its rules: a test sends the same
requests both ways and compares what the server received.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.genai import _common, types
from google.genai import batches as sdk_batches

from agent._api_errors import RETRYABLE_CODES, translate, unreadable
from agent._client import api_key_of
from agent._response import ModelResponse, parse
from agent._retry import CallFailed, ErrorInfo

if TYPE_CHECKING:
    from google import genai

    from agent.hooks import ModelRequest

__all__ = [
    "INLINE_LIMIT",
    "BATCH_TIER",
    "Entry",
    "JobStatus",
    "Result",
    "create_job",
    "entry",
    "find_job",
    "get_job",
    "job_results",
    "response_of",
]

INLINE_LIMIT = 19_000_000
"""Bytes of inline requests one job carries at most; more go in an uploaded file. The API
refuses a create request over 20 MB; the margin covers the envelope around the requests."""

BATCH_TIER = "batch"
"""The tier a response of a batch job is counted at (the price table's batch rows)."""

FILE_TIMEOUT = 600.0
"""Seconds to wait for an uploaded input file to leave ``PROCESSING``."""

_GRPC_TO_HTTP = {
    1: (499, "CANCELLED"),
    2: (500, "UNKNOWN"),
    3: (400, "INVALID_ARGUMENT"),
    4: (504, "DEADLINE_EXCEEDED"),
    5: (404, "NOT_FOUND"),
    6: (409, "ALREADY_EXISTS"),
    7: (403, "PERMISSION_DENIED"),
    8: (429, "RESOURCE_EXHAUSTED"),
    9: (400, "FAILED_PRECONDITION"),
    10: (409, "ABORTED"),
    11: (400, "OUT_OF_RANGE"),
    12: (501, "UNIMPLEMENTED"),
    13: (500, "INTERNAL"),
    14: (503, "UNAVAILABLE"),
    15: (500, "DATA_LOSS"),
    16: (401, "UNAUTHENTICATED"),
}
"""google.rpc.Code -> the HTTP status and status word Gemini pairs with it."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One request of a job, ready to go inline or into the input file."""

    key: str
    """The key its result comes back under."""
    inlined: types.InlinedRequest
    """The request as the SDK sends it inline."""
    line: str
    """The request as a line of the input file: ``{"key": ..., "request": {...}}``."""
    tokens: int
    """Its size in tokens, estimated (one per four characters of its JSON)."""


def entry(client: genai.Client, key: str, request: ModelRequest) -> Entry:
    """Return the job entry of ``request`` under ``key``.

    Args:
        client: The SDK client the job goes through (its converter needs it).
        key: The key the result comes back under.
        request: The model request.

    Returns:
        The entry.

    Raises:
        CallFailed: The SDK refused the request while converting it (not retryable).
    """
    try:
        wire = _wire_request(client, request)
    except ValueError as exc:
        info = translate(exc, api_key_of(client))
        if info is None:
            raise
        raise CallFailed(info) from None
    # Built without validation: its parts are the SDK's own objects already.
    inlined = types.InlinedRequest.model_construct(
        contents=request.contents, config=request.config, metadata={"key": key}
    )
    line = json.dumps({"key": key, "request": wire}, ensure_ascii=False)
    return Entry(key, inlined, line, len(line) // 4 + 1)


_CONFIGS: dict[int, tuple[Any, dict[str, Any]]] = {}
"""The wire form of each request config seen lately (by identity; the config is held, so
its id is not reused): every request of an agent shares one config, whose conversion
(the tools and their schemas) costs far more than the transcript's."""


def _wire_request(client: genai.Client, request: ModelRequest) -> dict[str, Any]:
    """Return ``request`` in its wire form, as the SDK's inline converter writes it."""
    config = request.config
    cached = _CONFIGS.get(id(config))
    if cached is None or cached[0] is not config:
        fields: dict[str, Any] = {}
        generation = sdk_batches._GenerateContentConfig_to_mldev(client._api_client, config, fields)
        fields["generationConfig"] = generation
        if len(_CONFIGS) >= 64:
            _CONFIGS.clear()
        cached = _CONFIGS[id(config)] = (config, _plain(fields))
    contents = _plain([sdk_batches._Content_to_mldev(c) for c in request.contents])
    return {"contents": contents, **cached[1]}


def _plain(value: Any) -> Any:
    """Return SDK values as plain JSON (bytes as base64), as the SDK sends them."""
    return _common.encode_unserializable_types({"value": _common.convert_to_dict(value)})["value"]


@dataclass(frozen=True, slots=True)
class JobStatus:
    """What a get of a job says."""

    name: str
    """``batches/{id}``."""
    state: str
    """``JOB_STATE_PENDING``, ``..._RUNNING``, ``..._SUCCEEDED``, ``..._FAILED``,
    ``..._CANCELLED`` or ``..._EXPIRED``."""
    job: types.BatchJob
    """The SDK's job (its results, once it succeeded)."""

    @property
    def ended(self) -> bool:
        """Whether the job has ended, well or not."""
        return self.job.done

    @property
    def succeeded(self) -> bool:
        """Whether the job ended with results."""
        return self.state == "JOB_STATE_SUCCEEDED"


@dataclass(frozen=True, slots=True)
class Result:
    """One request's result: a response, or the error the job recorded for it."""

    key: str
    """The request's key."""
    response: Any = None
    """The ``GenerateContentResponse`` (an SDK object, or its JSON dict from the state
    file), or ``None``."""
    error: Mapping[str, Any] | None = None
    """The ``google.rpc.Status`` (``code``, ``message``) when the request failed."""

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-ready dict (for the state file)."""
        if self.error is not None:
            return {"error": dict(self.error)}
        response = self.response
        if isinstance(response, types.GenerateContentResponse):
            response = response.model_dump(mode="json", by_alias=True, exclude_none=True)
        return {"response": response}

    @classmethod
    def from_json(cls, key: str, data: Mapping[str, Any]) -> Result:
        """Read a result back from the state file."""
        error = data.get("error")
        return cls(key, data.get("response"), error if isinstance(error, Mapping) else None)


def response_of(result: Result) -> ModelResponse:
    """Return the `ModelResponse` of a result, counted at the batch tier.

    Raises:
        CallFailed: The request failed (retryable when the same failure of a
            ``generateContent`` call would be), or its response cannot be read.
    """
    if result.error is not None or result.response is None:
        raise CallFailed(error_info(result.error or {}, result.key))
    try:
        raw = result.response
        if not isinstance(raw, types.GenerateContentResponse):
            raw = types.GenerateContentResponse.model_validate(raw)
        response = parse(raw)
    except ValueError as exc:  # pydantic's ValidationError is one
        failure = unreadable(exc)
    else:
        return dataclasses.replace(response, service_tier=BATCH_TIER)
    raise CallFailed(failure)


def error_info(status: Mapping[str, Any], key: str) -> ErrorInfo:
    """Return the failure a job recorded for one request, as an HTTP failure reads."""
    code = status.get("code")
    message = str(status.get("message") or f"the batch job gave no response for {key}")
    if not isinstance(code, int) or code == 0:
        code, word = 500, "UNKNOWN"  # no response and no error: the job lost it
    elif code in _GRPC_TO_HTTP:
        code, word = _GRPC_TO_HTTP[code]
    else:
        word = str(status.get("status") or "UNKNOWN")
    return ErrorInfo(code, word, message, retryable=code in RETRYABLE_CODES)


def _failed(exc: Exception, client: genai.Client) -> CallFailed:
    """Return the `CallFailed` of an SDK or network failure (re-raise anything else)."""
    info = translate(exc, api_key_of(client))
    if info is None:
        raise exc
    return CallFailed(info)


async def create_job(
    client: genai.Client,
    model: str,
    entries: Sequence[Entry],
    display_name: str,
    *,
    inline_limit: int = INLINE_LIMIT,
    poll: float = 1.0,
) -> tuple[JobStatus, str]:
    """Create a job of ``entries``: inline, or through an uploaded file when too large.

    Args:
        client: The SDK client.
        model: The model every request goes to.
        entries: The requests.
        display_name: The job's display name (a restarted engine finds the job by it).
        inline_limit: Bytes of requests sent inline at most.
        poll: Seconds between checks of an uploaded file's state.

    Returns:
        The created job, and ``"inline"`` or ``"file"``.

    Raises:
        CallFailed: The API refused or failed the create (or the upload).
    """
    size = sum(len(item.line) for item in entries)
    try:
        if size <= inline_limit:
            src: Any = [item.inlined for item in entries]
            source = "inline"
        else:
            src = await _upload(client, entries, display_name, poll)
            source = "file"
        job = await client.aio.batches.create(
            model=model, src=src, config=types.CreateBatchJobConfig(display_name=display_name)
        )
    except CallFailed:
        raise
    except Exception as exc:  # cancellation is a BaseException and passes untouched
        failure = _failed(exc, client)
    else:
        return _status(job), source
    raise failure


async def _upload(
    client: genai.Client, entries: Sequence[Entry], display_name: str, poll: float
) -> str:
    """Upload the JSON Lines input file; return its name once it is ``ACTIVE``."""
    data = "".join(item.line + "\n" for item in entries).encode()
    config = types.UploadFileConfig(mime_type="jsonl", display_name=f"{display_name}-input")
    file = await client.aio.files.upload(file=io.BytesIO(data), config=config)
    deadline = time.monotonic() + FILE_TIMEOUT
    while file.state is not None and file.state.name == "PROCESSING":
        if time.monotonic() >= deadline:
            break
        await asyncio.sleep(poll)
        file = await client.aio.files.get(name=str(file.name))
    state = file.state.name if file.state is not None else "ACTIVE"
    if state != "ACTIVE":
        raise CallFailed(
            ErrorInfo(
                None,
                "FILE_" + state,
                f"the batch input file {file.name} is {state}, not ACTIVE",
                retryable=state == "PROCESSING",
            )
        )
    return str(file.name)


async def get_job(client: genai.Client, name: str) -> JobStatus:
    """Read a job's state.

    Raises:
        CallFailed: The get failed (a 404 for a job that is gone).
    """
    try:
        job = await client.aio.batches.get(name=name)
    except Exception as exc:  # cancellation is a BaseException and passes untouched
        failure = _failed(exc, client)
    else:
        return _status(job)
    raise failure


def _status(job: types.BatchJob) -> JobStatus:
    state = job.state.name if job.state is not None else "JOB_STATE_UNSPECIFIED"
    return JobStatus(str(job.name), state, job)


async def find_job(client: genai.Client, display_name: str) -> str | None:
    """Return the name of the job created with ``display_name``, if the API lists one.

    Raises:
        CallFailed: The list failed.
    """
    try:
        async for job in await client.aio.batches.list():
            if job.display_name == display_name and job.name:
                return str(job.name)
    except Exception as exc:  # cancellation is a BaseException and passes untouched
        failure = _failed(exc, client)
    else:
        return None
    raise failure


async def job_results(client: genai.Client, status: JobStatus) -> list[Result]:
    """Return the results of a job that succeeded, inline or from its results file.

    Raises:
        CallFailed: The results file could not be downloaded or read.
    """
    dest = status.job.dest
    if dest is not None and dest.file_name:
        try:
            data = await client.aio.files.download(file=dest.file_name)
        except Exception as exc:  # cancellation is a BaseException and passes untouched
            failure = _failed(exc, client)
        else:
            return _file_results(data)
        raise failure
    found = []
    for item in (dest.inlined_responses if dest is not None else None) or ():
        key = (item.metadata or {}).get("key")
        if key is None:
            continue
        error = item.error.model_dump(exclude_none=True) if item.error is not None else None
        found.append(Result(key, item.response, error))
    return found


def _file_results(data: bytes) -> list[Result]:
    """Read the lines of a results file: ``{"key", "response" | "error" | "status"}``."""
    found = []
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if not isinstance(item, dict) or item.get("key") is None:
            continue
        error = item.get("error", item.get("status"))
        response = item.get("response")
        if isinstance(response, dict):
            converted = sdk_batches._GenerateContentResponse_from_mldev(response)
            response = types.GenerateContentResponse.model_validate(converted)
        found.append(Result(str(item["key"]), response, error if isinstance(error, dict) else None))
    return found
