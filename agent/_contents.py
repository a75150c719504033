"""How the transcript and the request config are built from our values, and read back.

The transcript is a list of SDK ``Content`` objects. A model turn is kept exactly as received
and re-sent unchanged, so thought signatures survive byte for byte; Contents become JSON dicts
(camelCase wire keys) only for the result and the session store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from google.genai import types

from agent.errors import ConfigurationError
from toolnexus import Request

__all__ = [
    "Config",
    "Content",
    "check_prompt",
    "function_responses",
    "make_config",
    "pending_requests",
    "replace_response",
    "to_contents",
    "to_dict",
    "user_content",
]

Content = types.Content
"""One turn of the transcript (opaque outside the seam modules)."""
Config = types.GenerateContentConfig
"""The request config: system instruction, tools and generation options."""


def make_config(
    system: str | None,
    declarations: Sequence[Mapping[str, Any]],
    extra: Mapping[str, Any] | None,
) -> Config:
    """Build the request config: instruction, tools, the caller's options, AFC off.

    Args:
        system: The system instruction, or ``None``.
        declarations: Function declarations (``name``, ``description``,
            ``parametersJsonSchema``); none means no ``tools`` key at all.
        extra: More ``GenerateContentConfig`` fields (``temperature``, ...).

    Returns:
        The config sent with every request of the agent.

    Raises:
        ConfigurationError: ``extra`` sets a field the agent owns, or is not a valid config.
    """
    options = dict(extra or {})
    for reserved in ("system_instruction", "tools", "automatic_function_calling"):
        if reserved in options:
            raise ConfigurationError(
                f"config={{...}} may not set {reserved!r}: the agent sets it "
                "(use system_prompt= and toolkit= instead)"
            )
    tools = None
    if declarations:
        tools = [
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(
                        name=decl["name"],
                        description=decl["description"],
                        parameters_json_schema=decl["parametersJsonSchema"],
                    )
                    for decl in declarations
                ]
            )
        ]
    try:
        return types.GenerateContentConfig(
            **options,
            system_instruction=system,
            tools=tools,  # type: ignore[arg-type]
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
    except (ValueError, TypeError, AttributeError) as exc:
        raise ConfigurationError(f"Invalid generation config: {exc}") from None


def check_prompt(prompt: object) -> None:
    """Refuse a prompt the loop cannot send, before anything is sent.

    Raises:
        TypeError: ``prompt`` is not a ``str`` (a list, a number, bytes...).
    """
    if not isinstance(prompt, str):
        raise TypeError(
            f"the prompt must be a str, got {type(prompt).__name__}: pass the text of the "
            "user's message"
        )


def user_content(text: str) -> Content:
    """Return a ``user`` Content holding one text part."""
    return types.Content(role="user", parts=[types.Part(text=text)])


def to_contents(history: Sequence[Mapping[str, Any] | Content]) -> list[Content]:
    """Turn history (Content dicts with wire keys, or SDK Contents) into SDK Contents.

    Raises:
        ConfigurationError: An item is not a Gemini Content.
    """
    contents: list[Content] = []
    for i, item in enumerate(history):
        if isinstance(item, types.Content):
            contents.append(item)
            continue
        try:
            contents.append(types.Content.model_validate(item))
        except (ValueError, TypeError) as exc:
            raise ConfigurationError(f"history[{i}] is not a Gemini Content: {exc}") from None
    return contents


def to_dict(content: Content) -> dict[str, Any]:
    """Return ``content`` as a JSON-ready dict with the wire's camelCase keys."""
    return content.model_dump(mode="json", by_alias=True, exclude_none=True)


def function_responses(responses: Sequence[tuple[str | None, str, dict[str, Any]]]) -> Content:
    """Return one ``user`` Content of ``functionResponse`` parts, in the order given.

    Each item is ``(call id or None, tool name, response object)``; an id is sent only when
    the call had one.
    """
    return types.Content(
        role="user",
        parts=[
            types.Part(function_response=types.FunctionResponse(id=cid, name=name, response=resp))
            for cid, name, resp in responses
        ],
    )


def pending_requests(content: Content) -> list[tuple[int, Request]]:
    """Return ``(call index, Request)`` for each function response still waiting on an answer."""
    if content.role != "user":
        return []
    found = []
    index = 0
    for part in content.parts or ():
        response = part.function_response
        if response is None:
            continue
        pending = (response.response or {}).get("pending")
        if isinstance(pending, Mapping) and "id" in pending:
            found.append((index, Request(**pending)))  # type: ignore[typeddict-item]
        index += 1
    return found


def replace_response(content: Content, index: int, response: dict[str, Any]) -> Content:
    """Return a copy of ``content`` whose ``index``-th function response carries ``response``."""
    parts = list(content.parts or ())
    seen = -1
    for i, part in enumerate(parts):
        if part.function_response is None:
            continue
        seen += 1
        if seen == index:
            old = part.function_response
            parts[i] = types.Part(
                function_response=types.FunctionResponse(
                    id=old.id, name=old.name, response=response
                )
            )
            break
    return types.Content(role=content.role, parts=parts)
