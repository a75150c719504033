"""The fake's Files API: resumable uploads, ``files.get`` and the check of ``fileData`` URIs.

What the real API does, kept strict: ``POST /upload/{version}/files`` with
``X-Goog-Upload-Protocol: resumable`` and ``X-Goog-Upload-Command: start`` opens a session
and answers its URL in ``X-Goog-Upload-URL``; the bytes go there (``upload`` and finally
``upload, finalize`` at ``X-Goog-Upload-Offset``), and the last answer is
``{"file": File}`` in state ``PROCESSING``. ``GET /{version}/files/{id}`` answers the File;
it turns ``ACTIVE`` (or `FileStore.outcome`) after `FileStore.processing_gets` checks. A
request whose ``fileData`` names an unknown file, or one not yet ``ACTIVE``, is refused.
Files the fake writes itself (a batch job's results) are ``GENERATED``: only they can be
downloaded (``GET /{version}/files/{id}:download?alt=media``), as on the real API.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent.testing._replies import error
from agent.testing._transport import Outcome

__all__ = ["FileStore", "StoredFile"]

FILES_URI = "https://generativelanguage.googleapis.com/v1beta/files/"
"""How the real API's File URIs start (``uri`` of a File, ``fileUri`` of a part)."""

_UPLOAD = re.compile(r"/upload/(?:v1|v1beta|v1alpha)/files$")
_GET = re.compile(r"/(?:v1|v1beta|v1alpha)/files/(?P<id>[a-z0-9-]{1,40})$")
_DOWNLOAD = re.compile(r"/(?:v1|v1beta|v1alpha)/files/(?P<id>[a-z0-9-]{1,40}):download$")
_URI = re.compile(r"https://generativelanguage\.googleapis\.com/(?:v1|v1beta|v1alpha)/files/(.+)$")
_JSON = {"content-type": "application/json; charset=UTF-8"}


@dataclass
class StoredFile:
    """One uploaded file: its bytes and the File resource the fake answers."""

    id: str
    mime_type: str
    display_name: str | None
    data: bytes
    state: str = "PROCESSING"
    gets: int = 0
    source: str = "UPLOADED"
    """``UPLOADED`` (sent by a client) or ``GENERATED`` (written by the fake: downloadable)."""

    def resource(self) -> dict[str, Any]:
        """Return the File resource (camelCase JSON) as the API answers it."""
        found: dict[str, Any] = {
            "name": f"files/{self.id}",
            "mimeType": self.mime_type,
            "sizeBytes": str(len(self.data)),
            "uri": FILES_URI + self.id,
            "state": self.state,
            "source": self.source,
        }
        if self.source == "GENERATED":
            found["downloadUri"] = f"{FILES_URI}{self.id}:download?alt=media"
        if self.display_name is not None:
            found["displayName"] = self.display_name
        if self.state == "FAILED":
            found["error"] = {"code": 400, "message": "The file could not be processed."}
        return found


@dataclass
class _Session:
    mime_type: str
    display_name: str | None
    size: int
    received: bytearray = field(default_factory=bytearray)


@dataclass
class FileStore:
    """The uploaded files of one `FakeGemini` (``fake.files``)."""

    processing_gets: int = 1
    """How many ``files.get`` answers still say ``PROCESSING`` before the file settles."""
    outcome: str = "ACTIVE"
    """The state a file settles in: ``"ACTIVE"``, or ``"FAILED"`` to test a failed file."""
    files: dict[str, StoredFile] = field(default_factory=dict)
    """Uploaded files by id (``files/{id}`` without the prefix)."""
    requests: list[tuple[str, str]] = field(default_factory=list)
    """``(method, path)`` of every Files API request, in order."""
    _sessions: dict[str, _Session] = field(default_factory=dict)

    def owns(self, path: str) -> bool:
        """Tell whether ``path`` is a Files API path."""
        return bool(_UPLOAD.search(path) or _GET.search(path) or _DOWNLOAD.search(path))

    def generated(self, data: bytes, mime_type: str, display_name: str | None) -> StoredFile:
        """Store a file the fake wrote itself (``GENERATED``, ``ACTIVE``, downloadable)."""
        file_id = f"fake{len(self.files) + 1:06d}"
        stored = StoredFile(file_id, mime_type, display_name, data, "ACTIVE", source="GENERATED")
        self.files[file_id] = stored
        return stored

    def handle(
        self,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        raw: bytes,
        check_key: Any,
    ) -> Outcome:
        """Answer one Files API request (``check_key(headers, query)`` checks the API key)."""
        self.requests.append((method, path))
        lowered = {k.lower(): v for k, v in headers.items()}
        params = dict(p.partition("=")[::2] for p in query.split("&") if p)
        if method == "GET" and (found := _GET.search(path)):
            return check_key(headers, query) or self._get(found["id"])
        if method == "GET" and (found := _DOWNLOAD.search(path)):
            return check_key(headers, query) or self._download(found["id"], params)
        if method != "POST" or not _UPLOAD.search(path):
            return _error(404, "NOT_FOUND", f"FakeGemini: no Files API method {method} {path}.")
        if "upload_id" in params:
            return self._chunk(params["upload_id"], lowered, raw)
        return check_key(headers, query) or self._start(lowered, raw)

    def _start(self, headers: Mapping[str, str], raw: bytes) -> Outcome:
        if headers.get("x-goog-upload-protocol") != "resumable":
            return _error(400, "INVALID_ARGUMENT", "FakeGemini takes resumable uploads only.")
        if headers.get("x-goog-upload-command") != "start":
            return _error(400, "INVALID_ARGUMENT", "Upload command must be 'start'.")
        try:
            meta = (json.loads(raw or b"{}") or {}).get("file") or {}
            size = int(headers["x-goog-upload-header-content-length"])
        except (ValueError, KeyError, AttributeError) as exc:
            return _error(400, "INVALID_ARGUMENT", f"Invalid upload start request: {exc}.")
        # The API reads proto JSON: the SDK sends snake_case names, camelCase works too.
        mime = headers.get("x-goog-upload-header-content-type") or _field(meta, "mimeType")
        if not mime:
            return _error(400, "INVALID_ARGUMENT", "Missing MIME type of the upload.")
        upload_id = f"fake-upload-{len(self._sessions) + 1}"
        self._sessions[upload_id] = _Session(mime, _field(meta, "displayName"), size)
        host = headers.get("host", "generativelanguage.googleapis.com")
        # In process the host is Google's (https); `FakeServer` serves plain http.
        scheme = "https" if host.endswith("googleapis.com") else "http"
        url = (
            f"{scheme}://{host}/upload/v1beta/files?upload_id={upload_id}&upload_protocol=resumable"
        )
        return Outcome(
            200, {**_JSON, "x-goog-upload-url": url, "x-goog-upload-status": "active"}, [b""]
        )

    def _chunk(self, upload_id: str, headers: Mapping[str, str], raw: bytes) -> Outcome:
        session = self._sessions.get(upload_id)
        if session is None:
            return _error(404, "NOT_FOUND", f"No upload session {upload_id}.")
        command = [c.strip() for c in headers.get("x-goog-upload-command", "").split(",")]
        if command not in (["upload"], ["upload", "finalize"]):
            return _error(400, "INVALID_ARGUMENT", f"Bad upload command {command}.")
        if headers.get("x-goog-upload-offset") != str(len(session.received)):
            return _error(400, "INVALID_ARGUMENT", "X-Goog-Upload-Offset does not match.")
        session.received.extend(raw)
        if command == ["upload"]:
            return Outcome(200, {"x-goog-upload-status": "active"}, [b""])
        del self._sessions[upload_id]
        if len(session.received) != session.size:
            return _error(
                400,
                "INVALID_ARGUMENT",
                f"Upload has {len(session.received)} bytes, {session.size} were announced.",
            )
        file_id = f"fake{len(self.files) + 1:06d}"
        stored = StoredFile(
            file_id, session.mime_type, session.display_name, bytes(session.received)
        )
        self.files[file_id] = stored
        body = json.dumps({"file": stored.resource()}).encode()
        return Outcome(200, {**_JSON, "x-goog-upload-status": "final"}, [body])

    def _get(self, file_id: str) -> Outcome:
        stored = self.files.get(file_id)
        if stored is None:
            return _missing(file_id)
        stored.gets += 1
        if stored.state == "PROCESSING" and stored.gets > self.processing_gets:
            stored.state = self.outcome
        return Outcome(200, _JSON, [json.dumps(stored.resource()).encode()])

    def _download(self, file_id: str, params: Mapping[str, str]) -> Outcome:
        stored = self.files.get(file_id)
        if stored is None:
            return _missing(file_id)
        if params.get("alt") != "media":
            return _error(400, "INVALID_ARGUMENT", "FakeGemini downloads with ?alt=media only.")
        if stored.source != "GENERATED":
            # The fake's wording; the SDK refuses this itself for a File without downloadUri.
            return _error(
                400,
                "INVALID_ARGUMENT",
                f"Only generated files can be downloaded; {file_id} was uploaded.",
            )
        return Outcome(200, {"content-type": stored.mime_type}, [stored.data])

    def check_uses(self, body: Any) -> Outcome | None:
        """Refuse a request whose ``fileData`` names an unknown or not-yet-active file.

        Files in ``functionResponse.parts`` are checked too.
        """
        for file_id in _file_ids((body or {}).get("contents") or []):
            stored = self.files.get(file_id)
            if stored is None:
                return _missing(file_id)
            if stored.state != "ACTIVE":
                return _error(
                    400,
                    "FAILED_PRECONDITION",
                    f"The File {file_id} is not in an ACTIVE state and usage is not allowed.",
                )
        return None


def _file_ids(contents: list[Any]) -> list[str]:
    """Return the ids of the Files API files that ``fileData`` parts name, in order."""
    found = []
    for content in contents:
        for part in (content.get("parts") or []) if isinstance(content, dict) else []:
            response = part.get("functionResponse") if isinstance(part, dict) else None
            inner = response.get("parts") if isinstance(response, dict) else None
            for item in [part, *(inner if isinstance(inner, list) else [])]:
                data = item.get("fileData") if isinstance(item, dict) else None
                uri = data.get("fileUri") if isinstance(data, dict) else None
                match = _URI.match(uri) if isinstance(uri, str) else None
                if match is not None:
                    found.append(match[1])
    return found


def _field(meta: Mapping[str, Any], name: str) -> Any:
    snake = re.sub(r"([A-Z])", lambda m: "_" + m[1].lower(), name)
    return meta.get(name, meta.get(snake))


def _missing(file_id: str) -> Outcome:
    return _error(
        403,
        "PERMISSION_DENIED",
        f"You do not have permission to access the File {file_id} or it may not exist.",
    )


def _error(status_code: int, status: str, message: str) -> Outcome:
    return Outcome(
        status_code, _JSON, [json.dumps(error(status_code, status, message).body).encode()]
    )
