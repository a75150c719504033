"""Gemini's wire values in the shapes of the OpenTelemetry GenAI semantic conventions.

Pure functions from JSON-ready Gemini dicts (camelCase wire keys, as `agent._contents.to_dict`
gives them) to the conventions' values: the ``gen_ai.input.messages`` /
``gen_ai.output.messages`` / ``gen_ai.system_instructions`` message lists, the well-known
finish reasons and output types, and the ``error.type`` of a failed model or tool call.

Messages follow the conventions' JSON schemas: every part has a ``type`` (``text``,
``reasoning``, ``tool_call``, ``tool_call_response``, ``server_tool_call``,
``server_tool_call_response``, ``blob``, ``uri``); roles are ``user``, ``assistant`` (Gemini's
``model``) and ``tool`` (a user turn made only of function responses). A thought signature is
an opaque, often kilobyte-long token that means nothing to a reader: it is replaced by its
length and a short hash, which still shows whether a later request echoed it unchanged.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "finish_reason",
    "input_messages",
    "output_messages",
    "output_type",
    "signature_digest",
    "system_instructions",
    "tool_error_type",
    "tool_result",
]

_CONTENT_FILTER = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",
        "JAILBREAK",
    }
)
"""Gemini's finish and block reasons that mean a filter stopped the answer."""

_ERROR = frozenset(
    {
        "FINISH_REASON_UNSPECIFIED",
        "OTHER",
        "IMAGE_OTHER",
        "MALFORMED_FUNCTION_CALL",
        "UNEXPECTED_TOOL_CALL",
        "TOO_MANY_TOOL_CALLS",
        "MISSING_THOUGHT_SIGNATURE",
        "MALFORMED_RESPONSE",
    }
)
"""Gemini's finish reasons that mean the generation went wrong."""


def finish_reason(reason: str | None, *, calls: bool = False, blocked: str | None = None) -> str:
    """Return the conventions' finish reason for Gemini's ``finishReason``.

    Args:
        reason: ``candidates[0].finishReason`` (``"STOP"``, ``"MAX_TOKENS"``, ...), or ``None``.
        calls: The response holds function calls (Gemini says ``STOP`` for those too).
        blocked: ``promptFeedback.blockReason`` when the prompt itself was blocked.

    Returns:
        ``stop``, ``tool_call``, ``length``, ``content_filter`` or ``error`` where one applies,
        else Gemini's reason in lower case.
    """
    if blocked is not None:
        return "content_filter"
    if reason is None:
        return "tool_call" if calls else "error"
    if reason == "STOP":
        return "tool_call" if calls else "stop"
    if reason == "MAX_TOKENS":
        return "length"
    if reason in _CONTENT_FILTER:
        return "content_filter"
    if reason in _ERROR:
        return "error"
    return reason.lower()


def output_type(
    mime_type: str | None, has_schema: bool, modalities: Iterable[str] | None
) -> str | None:
    """Return ``gen_ai.output.type`` for a request's output format, or ``None`` without one.

    Args:
        mime_type: ``responseMimeType``.
        has_schema: The request sets ``responseJsonSchema`` / ``responseSchema``.
        modalities: ``responseModalities`` (``"TEXT"``, ``"IMAGE"``, ``"AUDIO"``).
    """
    wanted = {str(m).upper() for m in modalities or ()}
    if "IMAGE" in wanted:
        return "image"
    if "AUDIO" in wanted:
        return "speech"
    if has_schema or mime_type in ("application/json", "text/x.enum"):
        return "json"
    if mime_type is not None and mime_type.startswith("text/"):
        return "text"
    return None


def input_messages(contents: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Return the transcript sent to the model as the conventions' input messages."""
    return [_message(content) for content in contents]


def output_messages(
    content: Mapping[str, Any] | None, reason: str | None, *, blocked: str | None = None
) -> list[dict[str, Any]]:
    """Return the model's answer (one candidate) as the conventions' output messages.

    Args:
        content: The candidate's Content as a wire dict, or ``None`` when it had no parts.
        reason: The candidate's ``finishReason``.
        blocked: ``promptFeedback.blockReason``, when the prompt was blocked.
    """
    message = _message(content or {"role": "model", "parts": []})
    calls = any(part["type"] == "tool_call" for part in message["parts"])
    message["finish_reason"] = finish_reason(reason, calls=calls, blocked=blocked)
    return [message]


def system_instructions(instruction: Any) -> list[dict[str, Any]]:
    """Return a request's ``systemInstruction`` (text, a Content dict or parts) as parts."""
    if instruction is None:
        return []
    if isinstance(instruction, str):
        return [{"type": "text", "content": instruction}] if instruction else []
    if isinstance(instruction, Mapping):
        if "parts" in instruction:
            return [_part(part) for part in instruction.get("parts") or ()]
        return [_part(instruction)]
    if isinstance(instruction, list | tuple):
        return [part for item in instruction for part in system_instructions(item)]
    return [{"type": "text", "content": str(instruction)}]


def tool_result(output: str) -> Any:
    """Return a tool's output as an object when it is JSON, else the text itself."""
    try:
        return json.loads(output)
    except ValueError:
        return output


_RAISED = re.compile(r"Tool '.*' failed: (?P<kind>[A-Za-z_][\w.]*)(?::|$)")


def tool_error_type(output: str) -> str:
    """Return an error result's ``error.type``: the exception type, ``timeout`` or ``tool_error``.

    The shapes are the ones `toolnexus.execute_async` documents for its error results.
    """
    raised = _RAISED.match(output)
    if raised is not None:
        return raised["kind"]
    if re.match(r"Tool '.*' timed out after ", output):
        return "timeout"
    return "tool_error"


def signature_digest(signature: str) -> dict[str, Any]:
    """Return what a span may say about a thought signature: its size in bytes and a hash."""
    try:
        raw = base64.urlsafe_b64decode(signature.translate(_TO_URLSAFE))
    except (binascii.Error, ValueError):
        raw = signature.encode()
    return {"length": len(raw), "sha256": hashlib.sha256(raw).hexdigest()[:16]}


_TO_URLSAFE = str.maketrans("+/", "-_")
_TO_STANDARD = str.maketrans("-_", "+/")


def _message(content: Mapping[str, Any]) -> dict[str, Any]:
    parts = [_part(part) for part in content.get("parts") or ()]
    role = "assistant" if content.get("role") == "model" else "user"
    if parts and all(part["type"] == "tool_call_response" for part in parts):
        role = "tool"
    return {"role": role, "parts": parts}


def _part(part: Mapping[str, Any]) -> dict[str, Any]:
    converted = _converted(part)
    signature = part.get("thoughtSignature")
    if isinstance(signature, str):
        converted["thought_signature"] = signature_digest(signature)
    return converted


def _converted(part: Mapping[str, Any]) -> dict[str, Any]:
    if "text" in part:
        kind = "reasoning" if part.get("thought") else "text"
        return {"type": kind, "content": part["text"]}
    for key, convert in _CONVERTERS.items():
        value = part.get(key)
        if isinstance(value, Mapping):
            return convert(value)
    if part.get("thought"):  # a signature-only thought part
        return {"type": "reasoning", "content": ""}
    others = [key for key in part if key not in ("thought", "thoughtSignature")]
    return {"type": _snake(others[0]) if others else "empty"}


def _function_call(call: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_call",
        "id": call.get("id"),
        "name": call.get("name", ""),
        "arguments": call.get("args") or {},
    }


def _function_response(response: Mapping[str, Any]) -> dict[str, Any]:
    part: dict[str, Any] = {
        "type": "tool_call_response",
        "id": response.get("id"),
        "name": response.get("name"),
        "response": response.get("response") or {},
    }
    attached = response.get("parts")
    if attached:
        part["parts"] = [_part(p) for p in attached]
    return part


def _blob(blob: Mapping[str, Any]) -> dict[str, Any]:
    mime = blob.get("mimeType")
    return {
        "type": "blob",
        "mime_type": mime,
        "modality": _modality(mime),
        "content": str(blob.get("data", "")).translate(_TO_STANDARD),
    }


def _file(file: Mapping[str, Any]) -> dict[str, Any]:
    mime = file.get("mimeType")
    return {
        "type": "uri",
        "mime_type": mime,
        "modality": _modality(mime),
        "uri": file.get("fileUri", ""),
    }


def _code(code: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "server_tool_call",
        "id": code.get("id"),
        "name": "code_execution",
        "server_tool_call": {
            "type": "code_execution",
            "language": code.get("language"),
            "code": code.get("code", ""),
        },
    }


def _code_result(result: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "server_tool_call_response",
        "id": result.get("id"),
        "server_tool_call_response": {
            "type": "code_execution",
            "outcome": result.get("outcome"),
            "output": result.get("output", ""),
        },
    }


def _server_call(call: Mapping[str, Any]) -> dict[str, Any]:
    kind = str(call.get("toolType", "server_tool")).lower()
    return {
        "type": "server_tool_call",
        "id": call.get("id"),
        "name": kind,
        "server_tool_call": {"type": kind, "arguments": call.get("args") or {}},
    }


def _server_response(response: Mapping[str, Any]) -> dict[str, Any]:
    kind = str(response.get("toolType", "server_tool")).lower()
    return {
        "type": "server_tool_call_response",
        "id": response.get("id"),
        "server_tool_call_response": {"type": kind, "response": response.get("response") or {}},
    }


_CONVERTERS = {
    "functionCall": _function_call,
    "functionResponse": _function_response,
    "inlineData": _blob,
    "fileData": _file,
    "executableCode": _code,
    "codeExecutionResult": _code_result,
    "toolCall": _server_call,
    "toolResponse": _server_response,
}


def _modality(mime: object) -> str:
    """Return ``image`` / ``video`` / ``audio`` for a MIME type, else ``document``."""
    top = str(mime or "").split("/", 1)[0]
    return top if top in ("image", "video", "audio") else "document"


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()
