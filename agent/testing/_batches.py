"""The fake's Batch API: ``batchGenerateContent`` jobs, their states and their results.

What the real API does, kept strict:

- ``POST /{version}/models/{model}:batchGenerateContent`` with ``{"batch": {"displayName",
  "inputConfig": {"requests": {"requests": [{"request", "metadata"}]}} | {"fileName"}}}``
  creates a job and answers an Operation ``{"name": "batches/{id}", "metadata": {...,
  "state": "BATCH_STATE_PENDING"}}``. Inline requests over 20 MB, an unknown or inactive
  input file, a missing display name or input are refused.
- ``GET /{version}/batches/{id}`` answers the Operation. Each get moves a job one state on
  (`BatchStore.progression`: pending, then running), then it ends as `BatchStore.endings`
  says (succeeded unless told otherwise). When it succeeds, each of its requests is answered
  as ``generateContent`` would answer it (the same strict checks, the same script), in input
  order; a request the fake refuses or an error reply of the script becomes that request's
  ``error`` (a ``google.rpc.Status``, gRPC code and message) inside the succeeded job.
  Responses come back shuffled (`BatchStore.shuffle`): match them by ``metadata.key``.
- Inline requests get ``output.inlinedResponses``; a job read from an uploaded JSON Lines
  file (``{"key", "request"}`` per line) gets ``output.responsesFile``: a ``GENERATED`` file
  of ``{"key", "response" | "error"}`` lines, downloaded through the Files API.
- ``POST /{version}/batches/{id}:cancel`` cancels a job that has not ended;
  ``DELETE /{version}/batches/{id}`` deletes a job; ``GET /{version}/batches`` lists them
  (``pageSize``, ``pageToken``).

The payload-size message is Gemini's; the other refusal messages are the fake's own wording
where the real API's could not be confirmed.
"""

from __future__ import annotations

import datetime
import json
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent.testing._files import FileStore
from agent.testing._replies import ErrorReply, error
from agent.testing._strict import normalize
from agent.testing._transport import Outcome

__all__ = ["INLINE_LIMIT", "BatchStore", "FakeBatchJob"]

INLINE_LIMIT = 20 * 1024 * 1024
"""Bytes a batch with inline requests may hold (Gemini: "under 20 MB")."""

_VERSION = r"/(?P<version>v1|v1beta|v1alpha)"
_CREATE = re.compile(_VERSION + r"/models/(?P<model>[^/:]+):batchGenerateContent$")
_JOB = re.compile(_VERSION + r"/batches/(?P<id>[^/:]+)(?P<cancel>:cancel)?$")
_LIST = re.compile(_VERSION + r"/batches$")
_JSON = {"content-type": "application/json; charset=UTF-8"}
_ENDED = frozenset({"SUCCEEDED", "FAILED", "CANCELLED", "EXPIRED"})
_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch"
_GRPC = {
    "CANCELLED": 1,
    "UNKNOWN": 2,
    "INVALID_ARGUMENT": 3,
    "DEADLINE_EXCEEDED": 4,
    "NOT_FOUND": 5,
    "ALREADY_EXISTS": 6,
    "PERMISSION_DENIED": 7,
    "RESOURCE_EXHAUSTED": 8,
    "FAILED_PRECONDITION": 9,
    "ABORTED": 10,
    "OUT_OF_RANGE": 11,
    "UNIMPLEMENTED": 12,
    "INTERNAL": 13,
    "UNAVAILABLE": 14,
    "DATA_LOSS": 15,
    "UNAUTHENTICATED": 16,
}
"""google.rpc.Code by status word: a per-request error inside a job is a google.rpc.Status."""

Answer = Callable[[str, str, Any], Outcome]
"""``answer(api version, model, request body)``: one request answered as generateContent."""


@dataclass
class FakeBatchJob:
    """One batch job: what it was given, where it is, and what it answered."""

    id: str
    """The id (the job's name is ``batches/{id}``)."""
    model: str
    """The model named in the create path, without ``models/``."""
    display_name: str
    """The ``displayName`` it was created with."""
    source: str
    """``"inline"`` (``inputConfig.requests``) or ``"file"`` (``inputConfig.fileName``)."""
    keys: list[str | None]
    """Each request's ``metadata.key`` (file: ``key``), in input order."""
    bodies: list[Any]
    """Each request body (camelCase), in input order; ``None`` for an unreadable line."""
    api_version: str = "v1beta"
    """The API version of the create path."""
    ending: str = "SUCCEEDED"
    """How the job ends."""
    state: str = "PENDING"
    """``PENDING``, ``RUNNING``, or how it ended."""
    gets: int = 0
    """How many times it was read."""
    created: str = ""
    """When it was created (RFC 3339)."""
    output: dict[str, Any] | None = None
    """``inlinedResponses`` or ``responsesFile``, once it succeeded."""
    results: list[dict[str, Any]] = field(default_factory=list)
    """``{"key", "response" | "error"}`` per request, in the order they were answered."""

    @property
    def done(self) -> bool:
        """Whether the job has ended."""
        return self.state in _ENDED

    def operation(self) -> dict[str, Any]:
        """Return the job as the API answers it: a long-running Operation."""
        count = len(self.bodies)
        stats = {"requestCount": str(count), "pendingRequestCount": str(count)}
        if self.done:
            failed = sum(1 for result in self.results if "error" in result)
            stats = {
                "requestCount": str(count),
                "successfulRequestCount": str(len(self.results) - failed),
                "failedRequestCount": str(failed),
            }
        metadata: dict[str, Any] = {
            "@type": _TYPE,
            "model": f"models/{self.model}",
            "displayName": self.display_name,
            "name": f"batches/{self.id}",
            "createTime": self.created,
            "updateTime": _now(),
            "batchStats": stats,
            "state": f"BATCH_STATE_{self.state}",
        }
        if self.output is not None:
            metadata["output"] = self.output
        found: dict[str, Any] = {"name": f"batches/{self.id}", "metadata": metadata}
        if self.done:
            found["done"] = True
            found["response"] = metadata
            if self.state == "FAILED":
                found["error"] = {"code": 13, "message": "The batch job failed."}
        return found


@dataclass
class BatchStore:
    """The batch jobs of one `FakeGemini` (``fake.batches``), and how they behave.

    Example::

        fake.batches.progression = ()                 # every job ends at its first get
        fake.batches.endings = ["FAILED", "EXPIRED"]  # the first two jobs fail, then succeed
    """

    progression: tuple[str, ...] = ("PENDING", "RUNNING")
    """The states successive gets of a job answer before it ends (``()``: it ends at the
    first get)."""
    endings: list[str] = field(default_factory=list)
    """How the next jobs end, in creation order: ``"SUCCEEDED"``, ``"FAILED"``,
    ``"EXPIRED"`` or ``"CANCELLED"``; once used up, jobs succeed."""
    shuffle: bool = True
    """Answer a job's responses in a shuffled order (seeded by `seed`), as a client must
    not rely on the order."""
    seed: int = 0
    """The seed of the shuffles."""
    inline_limit: int = INLINE_LIMIT
    """Bytes a create request with inline requests may hold."""
    create_errors: list[ErrorReply] = field(default_factory=list)
    """Errors to answer the next create requests with, in order (an enqueued-tokens
    quota's 429, say); no job is made for them."""
    jobs: dict[str, FakeBatchJob] = field(default_factory=dict)
    """The jobs by id, in creation order (deleted ones are gone)."""
    created: int = 0
    """How many jobs were created (deleted ones included)."""
    requests: list[tuple[str, str]] = field(default_factory=list)
    """``(method, path)`` of every Batch API request, in order."""

    def owns(self, path: str) -> bool:
        """Tell whether ``path`` is a Batch API path."""
        return bool(_CREATE.search(path) or _JOB.search(path) or _LIST.search(path))

    def handle(
        self,
        method: str,
        path: str,
        query: str,
        raw: bytes,
        *,
        check_key: Callable[[], Outcome | None],
        models: Callable[[str], Outcome | None],
        files: FileStore,
        answer: Answer,
    ) -> Outcome:
        """Answer one Batch API request.

        Args:
            method: The HTTP method.
            path: The URL path.
            query: The query string.
            raw: The body.
            check_key: Checks the request's API key (an error answer, or ``None``).
            models: Checks a model name (an error answer, or ``None``).
            files: The Files API store (input files, result files).
            answer: Answers one request of a job as ``generateContent`` would.
        """
        self.requests.append((method, path))
        refused = check_key()
        if refused is not None:
            return refused
        params = dict(p.partition("=")[::2] for p in query.split("&") if p)
        if method == "POST" and (found := _CREATE.search(path)):
            if self.create_errors:
                refusal = self.create_errors.pop(0)
                return Outcome(
                    refusal.status_code, dict(_JSON), [json.dumps(refusal.body).encode()]
                )
            return models(found["model"]) or self._create(found, raw, files)
        if method == "GET" and _LIST.search(path):
            return self._list(params)
        found = _JOB.search(path)
        if found is None:
            return _error(404, "NOT_FOUND", f"FakeGemini: no Batch API method {method} {path}.")
        job = self.jobs.get(found["id"])
        if job is None:
            return _error(404, "NOT_FOUND", "Requested entity was not found.")
        if method == "POST" and found["cancel"]:
            return self._cancel(job)
        if method == "DELETE" and not found["cancel"]:
            del self.jobs[job.id]
            return _ok({})
        if method == "GET" and not found["cancel"]:
            return _ok(self._advance(job, files, answer).operation())
        return _error(404, "NOT_FOUND", f"FakeGemini: no Batch API method {method} {path}.")

    # ------------------------------------------------------------------ create

    def _create(self, found: re.Match[str], raw: bytes, files: FileStore) -> Outcome:
        if len(raw) > self.inline_limit:
            return _error(
                400,
                "INVALID_ARGUMENT",
                f"Request payload size exceeds the limit: {self.inline_limit} bytes.",
            )
        try:
            body = json.loads(raw or b"null")
        except (ValueError, UnicodeDecodeError) as exc:
            return _error(400, "INVALID_ARGUMENT", f"Invalid JSON payload received. {exc}.")
        batch = body.get("batch") if isinstance(body, dict) else None
        problem = _batch_problem(batch)
        if problem is not None:
            return _error(400, "INVALID_ARGUMENT", problem)
        assert isinstance(batch, dict)
        config = batch["inputConfig"]
        if "fileName" in config:
            read = _from_file(str(config["fileName"]), files)
            if isinstance(read, Outcome):
                return read
            keys, bodies, source = read[0], read[1], "file"
        else:
            items = config["requests"]["requests"]
            keys = [_key(item.get("metadata")) for item in items]
            bodies = [normalize(item["request"]) for item in items]
            source = "inline"
        self.created += 1
        job = FakeBatchJob(
            id=f"fakebatch{self.created:06d}",
            model=found["model"],
            display_name=str(batch["displayName"]),
            source=source,
            keys=keys,
            bodies=bodies,
            api_version=found["version"],
            ending=self._ending(),
            created=_now(),
        )
        self.jobs[job.id] = job
        return _ok(job.operation())

    def _ending(self) -> str:
        ending = self.endings.pop(0).upper() if self.endings else "SUCCEEDED"
        if ending not in _ENDED:
            raise ValueError(f"fake.batches.endings: {ending!r} is not one of {sorted(_ENDED)}")
        return ending

    # ------------------------------------------------------------------- jobs

    def _advance(self, job: FakeBatchJob, files: FileStore, answer: Answer) -> FakeBatchJob:
        if job.done:
            return job
        job.gets += 1
        if job.gets <= len(self.progression):
            job.state = self.progression[job.gets - 1].upper()
            return job
        if job.ending == "SUCCEEDED":
            self._run(job, files, answer)
        job.state = job.ending
        return job

    def _run(self, job: FakeBatchJob, files: FileStore, answer: Answer) -> None:
        """Answer every request of ``job``, in input order; store the shuffled results."""
        results = []
        for key, body in zip(job.keys, job.bodies, strict=True):
            result: dict[str, Any] = {} if key is None else {"key": key}
            if body is None:
                result["error"] = {"code": 3, "message": "Invalid JSON payload received."}
            else:
                result.update(_result(answer(job.api_version, job.model, body)))
            results.append(result)
        if self.shuffle:
            random.Random(f"{self.seed}:{job.id}").shuffle(results)
        job.results = results
        if job.source == "file":
            lines = "".join(json.dumps(result) + "\n" for result in results).encode()
            stored = files.generated(lines, "application/jsonl", f"{job.id}-results")
            job.output = {"responsesFile": f"files/{stored.id}"}
            return
        inlined = [_inlined(result) for result in results]
        job.output = {"inlinedResponses": {"inlinedResponses": inlined}}

    def _cancel(self, job: FakeBatchJob) -> Outcome:
        if job.done:
            return _error(
                400,
                "FAILED_PRECONDITION",
                f"The batch batches/{job.id} has already ended ({job.state}).",
            )
        job.state = "CANCELLED"
        return _ok({})

    def _list(self, params: Mapping[str, str]) -> Outcome:
        try:
            size = max(1, min(int(params.get("pageSize") or 50), 1000))
            start = int(params.get("pageToken") or 0)
        except ValueError:
            return _error(400, "INVALID_ARGUMENT", "Invalid page size or page token.")
        jobs = list(self.jobs.values())
        page = jobs[start : start + size]
        found: dict[str, Any] = {"operations": [job.operation() for job in page]}
        if start + size < len(jobs):
            found["nextPageToken"] = str(start + size)
        return _ok(found)


def _batch_problem(batch: Any) -> str | None:
    """Return why a create request's ``batch`` would be refused, or ``None``."""
    if not isinstance(batch, dict):
        return "batch is required."
    unknown = sorted(set(batch) - {"displayName", "inputConfig", "model", "priority", "name"})
    if unknown:
        return f"Invalid JSON payload received. Unknown name {unknown[0]!r} at 'batch'."
    if not batch.get("displayName"):
        return "batch.display_name is required."
    config = batch.get("inputConfig")
    if not isinstance(config, dict) or not ({"requests", "fileName"} & set(config)):
        return "batch.input_config is required: requests or file_name."
    if {"requests", "fileName"} <= set(config):
        return "batch.input_config: only one of requests and file_name may be set."
    if "fileName" in config:
        return None
    requests = config.get("requests")
    items = requests.get("requests") if isinstance(requests, dict) else None
    if not isinstance(items, list) or not items:
        return "batch.input_config.requests.requests must not be empty."
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("request"), dict):
            return f"batch.input_config.requests.requests[{index}].request is required."
    return None


def _from_file(name: str, files: FileStore) -> tuple[list[str | None], list[Any], str] | Outcome:
    """Read a job's input file: its keys and request bodies, or the answer refusing it."""
    file_id = name.removeprefix("files/")
    refused = files.check_uses(
        {"contents": [{"parts": [{"fileData": {"fileUri": _uri(file_id)}}]}]}
    )
    if refused is not None:
        return refused
    keys: list[str | None] = []
    bodies: list[Any] = []
    for line in files.files[file_id].data.decode("utf-8", "replace").splitlines():
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            item = None
        request = item.get("request") if isinstance(item, dict) else None
        keys.append(_key(item) if isinstance(item, dict) else None)
        bodies.append(normalize(request) if isinstance(request, dict) else None)
    if not bodies:
        return _error(400, "INVALID_ARGUMENT", f"The input file {name} holds no requests.")
    return keys, bodies, "file"


def _uri(file_id: str) -> str:
    from agent.testing._files import FILES_URI

    return FILES_URI + file_id


def _key(holder: Any) -> str | None:
    key = holder.get("key") if isinstance(holder, dict) else None
    return None if key is None else str(key)


def _result(outcome: Outcome) -> dict[str, Any]:
    """Return a request's result from its generateContent answer: response or error."""
    body = json.loads(b"".join(outcome.chunks) or b"null")
    if outcome.status == 200:
        return {"response": body}
    err = body.get("error") if isinstance(body, dict) else None
    err = err if isinstance(err, dict) else {}
    code = _GRPC.get(str(err.get("status")), 2)
    return {"error": {"code": code, "message": str(err.get("message") or "")}}


def _inlined(result: Mapping[str, Any]) -> dict[str, Any]:
    """Return a result as an ``inlinedResponses`` item (the key goes in ``metadata``)."""
    item = {name: value for name, value in result.items() if name != "key"}
    if "key" in result:
        item["metadata"] = {"key": result["key"]}
    return item


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat().replace("+00:00", "Z")


def _ok(body: Any) -> Outcome:
    return Outcome(200, dict(_JSON), [json.dumps(body).encode()])


def _error(status_code: int, status: str, message: str) -> Outcome:
    return Outcome(
        status_code, dict(_JSON), [json.dumps(error(status_code, status, message).body).encode()]
    )
