"""Files in the conversation: prompt parts and tool-result attachments as Gemini parts.

A prompt is a string or a list of parts: ``str`` (text), ``pathlib.Path`` (a regular file of
at most 2 GB, read on a worker thread by `read_prompt`, MIME type from the name),
`toolnexus.Attachment`, a ``google.genai`` ``types.Part`` or a Gemini part dict. An
attachment with bytes goes inline (``inlineData``), one with a URI as ``fileData``. When a
prompt's inline bytes would pass `INLINE_LIMIT`, `upload_over_limit` sends the largest inline
parts through the Files API, waits until each file is ``ACTIVE`` and sends it as ``fileData``
instead.

Tool results: on models that take multimodal function responses (Gemini 3 and newer) the
attachments go in ``functionResponse.parts``, each named in ``response.attachments`` as
``{"$ref": name}``. Older models refuse those parts, so there the response says
``See file NAME.`` and the files follow the function responses in the same user Content,
each after a ``This is file NAME:`` text part.
"""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from google.genai import types

from agent._capabilities import generation
from agent._client import api_key_of, scrub
from agent.errors import AgentError, ConfigurationError
from toolnexus import Attachment

__all__ = [
    "INLINE_LIMIT",
    "UPLOAD_POLL",
    "UPLOAD_TIMEOUT",
    "Prompt",
    "attachment_part",
    "function_response_content",
    "inline_data",
    "inline_size",
    "media_tokens",
    "multimodal_function_responses",
    "prompt_content",
    "read_prompt",
    "response_parts",
    "upload_over_limit",
]

INLINE_LIMIT = 100 * 1024 * 1024
"""The most bytes of inline data one request may carry (the Gemini API's limit)."""

UPLOAD_TIMEOUT = 600.0
"""Seconds to wait for an uploaded file to leave ``PROCESSING`` before giving up."""

UPLOAD_POLL = 1.0
"""Seconds between two ``files.get`` checks of an uploaded file's state."""

PromptPart: TypeAlias = str | Path | Attachment | types.Part | Mapping[str, Any]
Prompt: TypeAlias = str | Sequence[PromptPart]
"""What `Agent.run` takes: text, or a list of parts (text, files, SDK parts, part dicts)."""


MEDIA_TOKEN_BYTES = 250
"""Bytes of an inline file per token, for estimates: Gemini bills files by what they show
(258 tokens an image tile or PDF page, 263 a second of video, 32 of audio), not by size;
this errs on the large side for most files."""

MEDIA_TOKENS_MIN = 258
"""The fewest tokens an inline file is estimated at (a small image)."""


def media_tokens(size: int) -> int:
    """Estimate the prompt tokens of an inline file of ``size`` bytes (not its base64 text)."""
    return max(MEDIA_TOKENS_MIN, size // MEDIA_TOKEN_BYTES)


def inline_data(contents: Sequence[Mapping[str, Any]]) -> list[str]:
    """Return the base64 text of every inline file in wire Content dicts.

    Files in ``functionResponse.parts`` (Gemini 3) count as well as parts of their own.
    """
    found = []
    for content in contents:
        for part in content.get("parts") or []:
            response = part.get("functionResponse") or {}
            for inner in [part, *(response.get("parts") or [])]:
                data = (inner.get("inlineData") or {}).get("data")
                if isinstance(data, str):
                    found.append(data)
    return found


def multimodal_function_responses(model: str) -> bool:
    """Tell whether ``model`` takes files in ``functionResponse.parts`` (Gemini 3 and newer)."""
    found = generation(model)
    return found is None or found >= 3


def attachment_part(attachment: Attachment) -> types.Part:
    """Return the part carrying ``attachment``: inline bytes, or file data by URI."""
    if attachment.data is not None:
        return types.Part(
            inline_data=types.Blob(mime_type=attachment.mime_type, data=attachment.data)
        )
    return types.Part(
        file_data=types.FileData(mime_type=attachment.mime_type, file_uri=attachment.uri)
    )


def _part(item: PromptPart, index: int) -> types.Part:
    if isinstance(item, str):
        return types.Part(text=item)
    if isinstance(item, Path):
        try:
            return attachment_part(Attachment.from_path(item))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"prompt part {index}: cannot attach {item}: {exc}") from None
    if isinstance(item, Attachment):
        return attachment_part(item)
    if isinstance(item, types.Part):
        return item
    if isinstance(item, Mapping):
        try:
            return types.Part.model_validate(item)
        except ValueError as exc:
            raise ConfigurationError(f"prompt part {index} is not a Gemini part: {exc}") from None
    raise TypeError(
        f"prompt part {index} is a {type(item).__name__}: use str, pathlib.Path, "
        "toolnexus.Attachment, google.genai types.Part or a part dict"
    )


def prompt_content(prompt: Prompt) -> types.Content:
    """Return the ``user`` Content of a prompt.

    Inline data over `INLINE_LIMIT` stays inline here; `upload_over_limit` moves it.

    Raises:
        TypeError: The prompt (or a part of it) is of a type a prompt cannot hold.
        ConfigurationError: A file cannot be read, a dict is not a part, or the list is empty.
    """
    if isinstance(prompt, str):
        return types.Content(role="user", parts=[types.Part(text=prompt)])
    if not isinstance(prompt, Sequence):
        raise TypeError(f"prompt must be a str or a list of parts, not {type(prompt).__name__}")
    parts = [_part(item, index) for index, item in enumerate(prompt)]
    if not parts:
        raise ConfigurationError("the prompt is an empty list of parts")
    return types.Content(role="user", parts=parts)


async def read_prompt(prompt: Prompt) -> types.Content:
    """`prompt_content` with the prompt's files read on a worker thread, off the event loop.

    A prompt without ``pathlib.Path`` parts is converted in place: there is nothing to read.
    """
    listed = isinstance(prompt, Sequence) and not isinstance(prompt, str)
    if listed and any(isinstance(item, Path) for item in prompt):
        return await asyncio.to_thread(prompt_content, prompt)
    return prompt_content(prompt)


def inline_size(content: types.Content) -> int:
    """Return the bytes of inline data ``content`` carries, function-response files included."""
    return sum(file.size for file in _inline_files(list(content.parts or [])))


@dataclass(frozen=True, slots=True)
class _InlineFile:
    """One inline file of a Content: where it is, its blob and its size."""

    part: int
    """The index of its part."""
    inner: int | None
    """Its index in that part's ``functionResponse.parts``; ``None`` for a part of its own."""
    blob: types.Blob | types.FunctionResponseBlob
    size: int


def _inline_files(parts: list[types.Part]) -> list[_InlineFile]:
    found = []
    for index, part in enumerate(parts):
        if part.inline_data is not None:
            blob: types.Blob | types.FunctionResponseBlob = part.inline_data
            found.append(_InlineFile(index, None, blob, len(blob.data or b"")))
        response = part.function_response
        for inner, item in enumerate((response.parts or []) if response is not None else []):
            if item.inline_data is not None:
                size = len(item.inline_data.data or b"")
                found.append(_InlineFile(index, inner, item.inline_data, size))
    return found


async def upload_over_limit(
    files: Any, content: types.Content, *, room: int | None = None, notes: bool = False
) -> types.Content:
    """Return ``content`` with its largest inline files uploaded, until it fits in ``room``.

    ``files`` is the SDK's ``client.aio.files``; ``room`` is how many bytes may stay inline
    (`INLINE_LIMIT` by default). Files in ``functionResponse.parts`` count and move too.
    Each upload is waited for until the file is ``ACTIVE`` (at most `UPLOAD_TIMEOUT`
    seconds) and then sent as ``fileData``. With ``notes``, a file that cannot be uploaded
    is left out instead, and a note the model reads says so.

    Raises:
        ConfigurationError: Gemini could not process a file (``FAILED``), or it was still
            processing after `UPLOAD_TIMEOUT` seconds (not with ``notes``).
        AgentError: The upload or a state check failed (HTTP or network error; not with
            ``notes``).
    """
    limit = INLINE_LIMIT if room is None else room
    parts = list(content.parts or [])
    found = sorted(_inline_files(parts), key=lambda file: -file.size)
    total = sum(file.size for file in found)
    if total <= limit:
        return content
    kind = "tool file" if any(part.function_response for part in parts) else "prompt part"
    moved: dict[tuple[int, int | None], str | _LeftOut] = {}
    for file in found:
        if total <= limit:
            break
        moved[file.part, file.inner] = await _move(files, file, f"{kind} {file.part}", notes)
        total -= file.size
    placed = [_placed(part, index, moved) for index, part in enumerate(parts)]
    return types.Content(role=content.role, parts=placed)


@dataclass(frozen=True, slots=True)
class _LeftOut:
    """A file that could not be uploaded: the note the model reads instead."""

    note: str


async def _move(files: Any, file: _InlineFile, label: str, notes: bool) -> str | _LeftOut:
    """Upload one file; return its URI, or (with ``notes``) why it was left out."""
    try:
        return await _upload(files, file.blob, label)
    except AgentError as exc:  # ConfigurationError included
        if not notes:
            raise
        name = file.blob.display_name or "this file"
        return _LeftOut(
            f"[{name} ({file.blob.mime_type}, {file.size} bytes) was left out: with it the "
            f"request would pass Gemini's limit of {INLINE_LIMIT} bytes of inline data, and "
            f"{exc}]"
        )


def _placed(
    part: types.Part, index: int, moved: Mapping[tuple[int, int | None], str | _LeftOut]
) -> types.Part:
    """Return ``part`` with its moved files as ``fileData`` (or notes)."""
    own = moved.get((index, None))
    if isinstance(own, _LeftOut):
        return types.Part(text=own.note)
    if own is not None:
        mime = part.inline_data.mime_type if part.inline_data is not None else None
        return types.Part(file_data=types.FileData(mime_type=mime, file_uri=own))
    response = part.function_response
    if response is None or not any(key[0] == index for key in moved):
        return part
    return types.Part(function_response=_moved_response(response, index, moved))


def _moved_response(
    response: types.FunctionResponse,
    index: int,
    moved: Mapping[tuple[int, int | None], str | _LeftOut],
) -> types.FunctionResponse:
    """Return ``response`` with its moved files as file data; a file left out is noted."""
    inner: list[types.FunctionResponsePart] = []
    notes: list[str] = []
    gone: list[dict[str, Any]] = []
    for position, item in enumerate(response.parts or []):
        blob = item.inline_data
        done = moved.get((index, position))
        if done is None or blob is None:
            inner.append(item)
        elif isinstance(done, _LeftOut):
            notes.append(done.note)
            gone.append({"$ref": blob.display_name})
        else:
            data = types.FunctionResponseFileData(
                mime_type=blob.mime_type, file_uri=done, display_name=blob.display_name
            )
            inner.append(types.FunctionResponsePart(file_data=data))
    body = dict(response.response or {})
    if notes:
        body["output"] = "\n".join([str(body.get("output", "")), *notes]).strip()
        refs = [ref for ref in body.pop("attachments", None) or [] if ref not in gone]
        if refs:
            body["attachments"] = refs
    return response.model_copy(update={"parts": inner or None, "response": body})


async def _upload(files: Any, blob: types.Blob | types.FunctionResponseBlob, label: str) -> str:
    display = blob.display_name or label
    try:
        file = await files.upload(
            file=io.BytesIO(blob.data or b""),
            config=types.UploadFileConfig(mime_type=blob.mime_type, display_name=display),
        )
        deadline = time.monotonic() + UPLOAD_TIMEOUT
        while file.state is not None and file.state.name == "PROCESSING":
            if time.monotonic() >= deadline:
                break
            await asyncio.sleep(UPLOAD_POLL)
            file = await files.get(name=file.name)
    except Exception as exc:  # cancellation is a BaseException and passes untouched
        # The SDK's message quotes the response body, which may echo the key.
        detail = scrub(str(exc), api_key_of(files))
        raise AgentError(f"uploading {display} to the Files API failed: {detail}") from None
    state = file.state.name if file.state is not None else "ACTIVE"
    if state == "FAILED":
        reason = f": {file.error.message}" if file.error and file.error.message else ""
        raise ConfigurationError(
            f"Gemini could not process the uploaded {display}{scrub(reason, api_key_of(files))}"
        )
    if state != "ACTIVE":
        raise ConfigurationError(
            f"the uploaded {display} ({file.name}) was still {state} after "
            f"{UPLOAD_TIMEOUT:g} seconds (agent._media.UPLOAD_TIMEOUT)"
        )
    return str(file.uri)


def response_parts(
    response: dict[str, Any], attachments: Sequence[Attachment], *, multimodal: bool
) -> tuple[dict[str, Any], list[types.FunctionResponsePart], list[types.Part]]:
    """Place a tool result's attachments: ``(response, functionResponse parts, siblings)``.

    ``multimodal`` models get them as function-response parts (named in
    ``response["attachments"]``); others as sibling parts after the function responses.
    """
    if not attachments:
        return response, [], []
    names = [a.name or f"attachment_{i + 1}" for i, a in enumerate(attachments)]
    if multimodal:
        inner = [
            _function_response_part(a, name) for a, name in zip(attachments, names, strict=True)
        ]
        return {**response, "attachments": [{"$ref": name} for name in names]}, inner, []
    note = " ".join(f"See file {name}." for name in names)
    output = f"{response.get('output', '')}\n{note}".strip()
    siblings: list[types.Part] = []
    for attachment, name in zip(attachments, names, strict=True):
        siblings.append(types.Part(text=f"This is file {name}:"))
        siblings.append(attachment_part(attachment))
    return {**response, "output": output}, [], siblings


def function_response_content(
    items: Sequence[tuple[str | None, str, dict[str, Any], Sequence[Attachment]]],
    *,
    multimodal: bool,
) -> types.Content:
    """Return one ``user`` Content answering a turn's calls, attachments placed for the model.

    Each item is ``(call id or None, tool name, response object, attachments)``.
    """
    parts: list[types.Part] = []
    siblings: list[types.Part] = []
    for call_id, name, response, attachments in items:
        placed, inner, after = response_parts(response, attachments, multimodal=multimodal)
        parts.append(
            types.Part(
                function_response=types.FunctionResponse(
                    id=call_id, name=name, response=placed, parts=inner or None
                )
            )
        )
        siblings.extend(after)
    return types.Content(role="user", parts=parts + siblings)


def _function_response_part(attachment: Attachment, name: str) -> types.FunctionResponsePart:
    if attachment.data is not None:
        return types.FunctionResponsePart(
            inline_data=types.FunctionResponseBlob(
                mime_type=attachment.mime_type, data=attachment.data, display_name=name
            )
        )
    return types.FunctionResponsePart(
        file_data=types.FunctionResponseFileData(
            mime_type=attachment.mime_type, file_uri=attachment.uri, display_name=name
        )
    )
