"""How the transcript and the request config are built from our values, and read back.

The transcript is a list of SDK ``Content`` objects. A model turn is kept exactly as received
and re-sent unchanged, so thought signatures survive byte for byte; Contents become JSON dicts
(camelCase wire keys) only for the result and the session store.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from google.genai import types

from agent.errors import ConfigurationError
from toolnexus import Request

__all__ = [
    "Config",
    "Content",
    "calling_mode",
    "check_prompt",
    "config_chars",
    "declared_functions",
    "function_responses",
    "make_config",
    "pending_requests",
    "replace_response",
    "to_contents",
    "to_dict",
    "user_content",
    "with_calling",
    "with_functions",
    "with_thinking",
]

Content = types.Content
"""One turn of the transcript (opaque outside the seam modules)."""
Config = types.GenerateContentConfig
"""The request config: system instruction, tools and generation options."""


def make_config(
    system: str | None,
    declarations: Sequence[Mapping[str, Any]],
    extra: Mapping[str, Any] | None,
    builtin: Sequence[types.Tool] = (),
) -> Config:
    """Build the request config: instruction, tools, the caller's options, AFC off.

    Args:
        system: The system instruction, or ``None``.
        declarations: Function declarations (``name``, ``description``,
            ``parametersJsonSchema``); none means no ``tools`` key at all.
        extra: More ``GenerateContentConfig`` fields (``temperature``, ...).
        builtin: Gemini's built-in tools, sent before the function declarations; with
            both kinds, ``toolConfig.includeServerSideToolInvocations`` is set. Without
            function declarations no ``functionCallingConfig`` is sent (Gemini refuses it).

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
                "(use system_prompt=, toolkit= and builtin_tools= instead)"
            )
    tools: list[types.Tool] | None = list(builtin) or None
    if declarations:
        tools = [
            *builtin,
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(
                        name=decl["name"],
                        description=decl["description"],
                        parameters_json_schema=decl["parametersJsonSchema"],
                    )
                    for decl in declarations
                ]
            ),
        ]
    if builtin and declarations:
        options["tool_config"] = _with_server_side_invocations(options.get("tool_config"))
    elif not declarations and options.get("tool_config") is not None:
        options["tool_config"] = _without_function_calling(options["tool_config"])
        if options["tool_config"] is None:
            del options["tool_config"]
    try:
        return types.GenerateContentConfig(
            **options,
            system_instruction=system,
            tools=tools,  # type: ignore[arg-type]
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
    except (ValueError, TypeError, AttributeError) as exc:
        raise ConfigurationError(f"Invalid generation config: {exc}") from None


def _tool_config(tool_config: Any) -> types.ToolConfig:
    """Return ``tool_config`` (a dict, a ``ToolConfig`` or ``None``) as a ``ToolConfig``."""
    if isinstance(tool_config, types.ToolConfig):
        return tool_config
    try:
        return types.ToolConfig.model_validate(tool_config or {})
    except ValueError as exc:
        raise ConfigurationError(f"Invalid tool_config: {exc}") from None


def _with_server_side_invocations(tool_config: Any) -> types.ToolConfig:
    """Return ``tool_config`` (a dict, a ``ToolConfig`` or ``None``) with the flag set."""
    return _tool_config(tool_config).model_copy(
        update={"include_server_side_tool_invocations": True}
    )


def _without_function_calling(tool_config: Any) -> types.ToolConfig | None:
    """Return ``tool_config`` without ``function_calling_config`` (``None`` when empty).

    A request without function declarations may not carry one: Gemini answers 400
    "Function calling config is set without function_declarations".
    """
    base = _tool_config(tool_config).model_copy(update={"function_calling_config": None})
    return base if base.model_dump(exclude_none=True) else None


def check_prompt(prompt: object) -> None:
    """Refuse a prompt the loop cannot send, before anything is sent.

    A prompt is a ``str`` or a list (tuple) of parts; the parts themselves are checked
    when the prompt is turned into a Content (`agent._media.prompt_content`).

    Raises:
        TypeError: ``prompt`` is neither a ``str`` nor a list of parts (a number, bytes...).
    """
    if not isinstance(prompt, str | list | tuple):
        raise TypeError(
            f"the prompt must be a str or a list of parts, got {type(prompt).__name__}: pass "
            "the text of the user's message, or [text, pathlib.Path(...), ...] to send files"
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


def config_chars(config: Config) -> int:
    """Return the characters of JSON a config adds to a request: system text, tools, tool config.

    For size estimates (the generation options are not prompt tokens).
    """
    fields = config.model_dump(
        mode="json",
        by_alias=True,
        exclude_none=True,
        include={"system_instruction", "tools", "tool_config"},
    )
    return len(json.dumps(fields, ensure_ascii=False)) if fields else 0


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


def declared_functions(config: Config) -> list[str]:
    """Return the names of the function declarations ``config`` sends, in order."""
    return [
        str(declaration.name)
        for tool in config.tools or ()
        if isinstance(tool, types.Tool)
        for declaration in tool.function_declarations or ()
    ]


def calling_mode(config: Config) -> str | None:
    """Return the function-calling mode ``config`` sends (``"ANY"``...), if it sends one."""
    tool_config = config.tool_config
    calling = tool_config.function_calling_config if tool_config is not None else None
    mode = calling.mode if calling is not None else None
    return None if mode is None else str(getattr(mode, "value", mode))


def with_functions(config: Config, allowed: Collection[str]) -> Config:
    """Return ``config`` declaring only the functions named in ``allowed`` (built-ins stay).

    Without a function left, no function-calling config is sent either (Gemini refuses it).
    """
    tools: list[Any] = []
    for tool in config.tools or ():
        if not isinstance(tool, types.Tool) or not tool.function_declarations:
            tools.append(tool)
            continue
        kept = [d for d in tool.function_declarations if d.name in allowed]
        rest = tool.model_copy(update={"function_declarations": kept or None})
        if kept or rest.model_dump(exclude_none=True):
            tools.append(rest)
    config = config.model_copy(update={"tools": tools or None})
    return config if declared_functions(config) else with_calling(config, None)


def with_calling(config: Config, calling: Mapping[str, Any] | None) -> Config:
    """Return ``config`` with another function-calling config (``None``: send none).

    Raises:
        ConfigurationError: ``calling`` is not a valid ``FunctionCallingConfig``.
    """
    tool_config = _tool_config(config.tool_config).model_copy(
        update={"function_calling_config": None}
    )
    if calling is not None:
        try:
            function_calling = types.FunctionCallingConfig.model_validate(dict(calling))
        except ValueError as exc:
            raise ConfigurationError(f"Invalid function calling config: {exc}") from None
        tool_config = tool_config.model_copy(update={"function_calling_config": function_calling})
    kept = tool_config if tool_config.model_dump(exclude_none=True) else None
    return config.model_copy(update={"tool_config": kept})


def with_thinking(config: Config, fields: Mapping[str, Any]) -> Config:
    """Return ``config`` with ``fields`` set on its thinking config (``None`` clears one)."""
    current = config.thinking_config
    merged = {**(current.model_dump(exclude_none=True) if current is not None else {}), **fields}
    thinking = types.ThinkingConfig.model_validate(
        {key: value for key, value in merged.items() if value is not None}
    )
    return config.model_copy(update={"thinking_config": thinking})
