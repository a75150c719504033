"""Request validation rules of the fake Gemini: pure functions, no I/O.

``normalize`` turns a request body into camelCase keys (proto JSON accepts both spellings, and
the SDK sends a mix); ``check_request`` returns the message of the first rule the body breaks,
or ``None``. The rules are the ones the real API enforces with ``400 INVALID_ARGUMENT``:
request and part shape, roles, function names and ``parameters`` schemas, the pairing of
function calls with function responses, and thought signatures in the current turn.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any, Final

from agent._capabilities import accepts_schema_with_tools
from agent.testing._signatures import (
    SERVER_PART_KINDS,
    SignatureBook,
    call_key,
    decode_signature,
    is_dummy,
)
from toolnexus.adapter import GEMINI_SCHEMA_KEYWORDS as SCHEMA_KEYWORDS

__all__ = ["CORRUPTED_SIGNATURE", "check_request", "lenient_family", "normalize"]

# Values under these keys are user data (arguments, results, free JSON Schema): never renamed.
_OPAQUE: Final = frozenset(
    {
        "args",
        "response",
        "parametersJsonSchema",
        "responseJsonSchema",
        "labels",
        "default",
        "example",
        "enum",
        "partialArgs",
    }
)
# Maps whose keys are names chosen by the user and whose values are schemas.
_NAMED_SCHEMAS: Final = frozenset({"properties", "defs"})

_TOP_LEVEL: Final = frozenset(
    {
        "contents",
        "systemInstruction",
        "tools",
        "toolConfig",
        "safetySettings",
        "generationConfig",
        "cachedContent",
        "labels",
        "serviceTier",
        "continuationToken",
        "store",
        "model",
    }
)
_PART_DATA: Final = (
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "executableCode",
    "codeExecutionResult",
    "toolCall",
    "toolResponse",
)
_PART_META: Final = frozenset(
    {
        "thought",
        "thoughtSignature",
        "videoMetadata",
        "mediaResolution",
        "partMetadata",
        "audioMetadata",
        "audioTranscription",
        "documentMetadata",
        "mediaProcessing",
        "speechMetadata",
        "spreadsheetMetadata",
    }
)
_DECLARATION_KEYS: Final = frozenset(
    {
        "name",
        "description",
        "parameters",
        "parametersJsonSchema",
        "response",
        "responseJsonSchema",
        "behavior",
    }
)
_SCHEMA_KEYS: Final = SCHEMA_KEYWORDS | {"additionalProperties", "ref", "defs"}
_SCHEMA_TYPES: Final = frozenset(
    {"TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}
)
_CONTENT_KEYS: Final = frozenset({"role", "parts"})
_PART_KEYS: Final = frozenset(_PART_DATA) | _PART_META
_SCHEMA_HINT: Final = (
    " (The 'parameters' Schema is an OpenAPI subset; send a full JSON Schema as "
    "'parametersJsonSchema' instead.)"
)
# Part key -> (its snake_case name in messages, its JSON-object payload, the payload rule,
# the role of the content it belongs in).
_FUNCTION_PARTS: Final = {
    "functionCall": ("function_call", "args", "args must be a JSON object.", "model"),
    "functionResponse": (
        "function_response",
        "response",
        'the response must be a JSON object; wrap scalars, e.g. {"output": ...}.',
        "user",
    ),
}
_CALLING_MODES: Final = frozenset({"MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"})
_FUNCTION_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,62}")


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def normalize(value: Any) -> Any:
    """Return a copy of a request body with every protocol key in camelCase.

    Names chosen by the user (function arguments and results, property names, free JSON
    Schemas) are left untouched.
    """
    if isinstance(value, list):
        return [normalize(item) for item in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for raw_key, item in value.items():
        key = _camel(raw_key) if isinstance(raw_key, str) else raw_key
        if key in _OPAQUE:
            out[key] = item
        elif key in _NAMED_SCHEMAS and isinstance(item, dict):
            out[key] = {name: normalize(schema) for name, schema in item.items()}
        else:
            out[key] = normalize(item)
    return out


class _Invalid(Exception):
    """One broken rule; its message goes into the 400 body."""


_GEMINI_VERSION: Final = re.compile(r"gemini-(\d+)")


def lenient_family(model: str | None) -> bool:
    """Tell whether ``model`` is a Gemini 1.x/2.x model, with the looser 2.x rules.

    Recorded traffic shows the API accepting there what Gemini 3 refuses: unsigned call
    turns, and answers split over several user contents. Unknown names (``gemini-test``, a
    tuned model) get the strict Gemini 3 rules.
    """
    found = _GEMINI_VERSION.search(model or "")
    return found is not None and int(found.group(1)) < 3


def check_request(
    body: Any,
    book: SignatureBook | None = None,
    model: str | None = None,
    *,
    models: Collection[str] = (),
) -> str | None:
    """Return why the real API would refuse this (normalised) request body, or ``None``.

    ``book`` enables the thought-signature rules; without it they are skipped. ``model``
    (the name in the request's path) picks the family's rules, see `lenient_family`, and
    the rules that differ between model generations (schema with tools, built-in tools,
    multimodal function responses). A signature that one of ``models`` other than ``model``
    issued is refused wherever it sits in the history, as Gemini refuses it.
    """
    try:
        if book is not None and model is not None:
            _check_foreign_signatures(body, book, model, models)
        _check(body, book, lenient_family(model), model or "")
        if model is not None:
            _check_model_features(body, model)
        if book is not None:
            _check_server_parts(body.get("contents") or [], book)
        _check_inline_size(body.get("contents") or [])
    except _Invalid as exc:
        return str(exc)
    return None


def _check_model_features(body: dict[str, Any], model: str) -> None:
    """Refuse what ``model``'s generation does not take.

    Gemini 2.x: no JSON response schema with tools, no built-in tools beside functions, no
    server-side invocation flag. Gemini 3: built-in tools beside functions need the flag.
    """
    config = body.get("generationConfig")
    json_mime = isinstance(config, dict) and config.get("responseMimeType") == "application/json"
    tools = [tool for tool in body.get("tools") or [] if isinstance(tool, dict)]
    functions = any(tool.get("functionDeclarations") for tool in tools)
    builtin = any(set(tool) - {"functionDeclarations"} for tool in tools)
    tool_config = body.get("toolConfig")
    flag = isinstance(tool_config, dict) and tool_config.get("includeServerSideToolInvocations")
    if not accepts_schema_with_tools(model):
        _check_no_function_response_parts(body.get("contents") or [])
    if accepts_schema_with_tools(model):
        if builtin and functions and not flag:
            raise _Invalid(
                "Please enable tool_config.include_server_side_tool_invocations to use "
                "Built-in tools with Function calling."
            )
        return
    if json_mime and functions:
        raise _Invalid(
            "Function calling with a response mime type: 'application/json' is unsupported"
        )
    if json_mime and builtin:
        raise _Invalid("Tool use with a response mime type: 'application/json' is unsupported")
    if builtin and functions:
        raise _Invalid("Tool use with function calling is unsupported")
    if flag:
        raise _Invalid("Tool call context circulation is not enabled")


INLINE_LIMIT = 100 * 1024 * 1024
"""The most bytes of inline data (decoded) one request may carry."""


def _check_inline_size(contents: list[Any]) -> None:
    """Refuse more inline data than the API takes, files in ``functionResponse.parts`` too."""
    total = 0
    for content in contents:
        for part in (content.get("parts") or []) if isinstance(content, dict) else []:
            response = part.get("functionResponse") if isinstance(part, dict) else None
            inner = response.get("parts") if isinstance(response, dict) else None
            for item in [part, *(inner if isinstance(inner, list) else [])]:
                inline = item.get("inlineData") if isinstance(item, dict) else None
                if isinstance(inline, dict) and isinstance(inline.get("data"), str):
                    total += len(inline["data"]) * 3 // 4
    if total > INLINE_LIMIT:
        raise _Invalid(
            f"Request payload size exceeds the limit: {INLINE_LIMIT} bytes. (The request "
            f"carries about {total} bytes of inline data; upload large files with the Files "
            "API and send them as fileData.)"
        )


def _check_no_function_response_parts(contents: list[Any]) -> None:
    """Gemini 2.x has no multimodal function responses."""
    for index, content in enumerate(contents):
        for position, part in enumerate(content.get("parts") or []):
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if isinstance(response, dict) and response.get("parts"):
                raise _Invalid(
                    f"* GenerateContentRequest.contents[{index}].parts[{position}]."
                    "function_response.parts: multimodal function responses are not supported "
                    "by this model. (Send files as inlineData or fileData parts of the user "
                    "content instead.)"
                )


def _check_server_parts(contents: list[Any], book: SignatureBook) -> None:
    """Server-side tool parts this fake sent must come back exactly as received."""
    for index, content in enumerate(contents):
        if not isinstance(content, dict) or content.get("role") != "model":
            continue
        for position, part in enumerate(content.get("parts") or []):
            for kind in SERVER_PART_KINDS:
                body = part.get(kind) if isinstance(part, dict) else None
                if not isinstance(body, dict):
                    continue
                sent = book.server_parts.get((kind, str(body.get("id"))))
                if sent is not None and not _same_part(part, sent):
                    raise _Invalid(
                        f"* GenerateContentRequest.contents[{index}].parts[{position}]: the "
                        f"{kind} part (id {body['id']!r}) differs from the one the model "
                        "returned; send server-side tool parts back exactly as received, "
                        "thought signature included."
                    )


def _same_part(echoed: dict[str, Any], sent: dict[str, Any]) -> bool:
    """Tell whether ``echoed`` carries everything of ``sent``, the signature byte for byte.

    Fields the fake did not send are let through: the API accepts server-side tool parts
    echoed with more fields than it gave (recorded: file search on Gemini 3).
    """
    signature = decode_signature(echoed.get("thoughtSignature"))
    if signature != decode_signature(sent.get("thoughtSignature")):
        return False
    return all(
        key in echoed and _holds(echoed[key], value)
        for key, value in sent.items()
        if key != "thoughtSignature"
    )


def _holds(echoed: Any, sent: Any) -> bool:
    if isinstance(sent, dict):
        return isinstance(echoed, dict) and all(
            key in echoed and _holds(echoed[key], value) for key, value in sent.items()
        )
    return bool(echoed == sent)


def _check(body: Any, book: SignatureBook | None, lenient: bool = False, model: str = "") -> None:
    if not isinstance(body, dict):
        raise _Invalid("Invalid JSON payload received. Expected a JSON object as the request body.")
    for key in body:
        if key not in _TOP_LEVEL:
            raise _Invalid(
                f'Invalid JSON payload received. Unknown name "{key}": Cannot find field.'
            )
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        raise _Invalid("* GenerateContentRequest.contents: contents is not specified")
    for index, content in enumerate(contents):
        _check_content(content, f"contents[{index}]")
    if body.get("systemInstruction") is not None:
        _check_content(body["systemInstruction"], "system_instruction", system=True)
    _check_tools(body.get("tools"))
    _check_tool_config(body.get("toolConfig"), body.get("tools"))
    _check_generation_config(body.get("generationConfig"))
    _check_pairing(contents, split_ok=lenient)
    if book is not None:
        _check_signatures(contents, book, model, missing_ok=lenient)


def _check_object(
    value: Any, where: str, what: str, allowed: frozenset[str], hint: str = ""
) -> dict[str, Any]:
    """Return ``value`` if it is a JSON object holding only ``allowed`` keys, else refuse it."""
    if not isinstance(value, dict):
        raise _Invalid(f"Invalid value at '{where}': a {what} must be a JSON object.")
    for key in value:
        if key not in allowed:
            raise _Invalid(
                f"Invalid JSON payload received. Unknown name \"{key}\" at '{where}': "
                f"Cannot find field.{hint}"
            )
    return value


def _check_content(content: Any, where: str, *, system: bool = False) -> None:
    content = _check_object(content, where, "Content", _CONTENT_KEYS)
    role = content.get("role")
    if not system and role is not None and role not in ("user", "model"):
        raise _Invalid(f"Please use a valid role: user, model. Found {role!r} at {where}.")
    parts = content.get("parts")
    if not isinstance(parts, list) or not parts:
        raise _Invalid(f"* GenerateContentRequest.{where}.parts: contents.parts must not be empty.")
    for index, part in enumerate(parts):
        _check_part(part, f"{where}.parts[{index}]", role)


def _check_part(part: Any, where: str, role: Any) -> None:
    part = _check_object(part, where, "Part", _PART_KEYS)
    data = [key for key in _PART_DATA if key in part]
    if not data and "videoMetadata" in part:
        return  # recorded: a part holding only videoMetadata is accepted
    if len(data) != 1:
        found = ", ".join(data) or "none"
        raise _Invalid(
            f"* GenerateContentRequest.{where}: a Part must hold exactly one data field "
            f"(text, inlineData, fileData, functionCall, functionResponse, ...); found: {found}."
        )
    if "thoughtSignature" in part and decode_signature(part["thoughtSignature"]) is None:
        raise _Invalid(
            f"Invalid value at '{where}.thought_signature' (TYPE_BYTES), "
            f"Base64 decoding failed for {part['thoughtSignature']!r}"
        )
    for key, (field_name, payload, rule, home) in _FUNCTION_PARTS.items():
        if key in part:
            _check_function_part(part[key], where, key, field_name, payload, rule, home, role)


def _check_function_part(
    value: Any,
    where: str,
    key: str,
    field_name: str,
    payload: str,
    rule: str,
    home: str,
    role: Any,
) -> None:
    """Check a ``functionCall`` or ``functionResponse`` part (see ``_FUNCTION_PARTS``)."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise _Invalid(f"* GenerateContentRequest.{where}.{field_name}.name: name is required.")
    if payload in value and not isinstance(value[payload], dict):
        raise _Invalid(
            f"Invalid value at '{where}.{field_name}.{payload}' (type.googleapis.com/"
            f"google.protobuf.Struct): {rule}"
        )
    if role == ("user" if home == "model" else "model"):
        raise _Invalid(
            f"* GenerateContentRequest.{where}: a {key} part must be in a '{home}' "
            f"content, not a '{role}' one."
        )


def _check_tools(tools: Any) -> None:
    if tools is None:
        return
    if isinstance(tools, dict):
        tools = [tools]  # recorded: one Tool object in place of the list is accepted
    if not isinstance(tools, list):
        raise _Invalid("Invalid value at 'tools': expected a list of Tool objects.")
    seen: set[str] = set()
    for t_index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise _Invalid(f"Invalid value at 'tools[{t_index}]': a Tool must be a JSON object.")
        for d_index, decl in enumerate(tool.get("functionDeclarations") or []):
            where = f"tools[{t_index}].function_declarations[{d_index}]"
            name = _check_declaration(decl, where)
            if name in seen:
                raise _Invalid(
                    f"* GenerateContentRequest.{where}.name: Duplicate function declaration "
                    f"found: {name}"
                )
            seen.add(name)


def _check_declaration(decl: Any, where: str) -> str:
    decl = _check_object(decl, where, "FunctionDeclaration", _DECLARATION_KEYS)
    name = decl.get("name")
    if not isinstance(name, str) or not _FUNCTION_NAME.fullmatch(name):
        raise _Invalid(
            f"* GenerateContentRequest.{where}.name: Invalid function name {name!r}. Must start "
            "with a letter or an underscore, contain only a-z, A-Z, 0-9, underscores and dashes, "
            "with a maximum length of 63."
        )
    if "parameters" in decl and "parametersJsonSchema" in decl:
        raise _Invalid(
            f"* GenerateContentRequest.{where}: parameters and parameters_json_schema are mutually "
            f"exclusive; function {name!r} sets both."
        )
    if "parameters" in decl:
        _check_schema(decl["parameters"], f"{where}.parameters")
    if "parametersJsonSchema" in decl and not isinstance(decl["parametersJsonSchema"], dict):
        raise _Invalid(
            f"Invalid value at '{where}.parameters_json_schema': expected a JSON Schema object."
        )
    return name


def _check_schema(schema: Any, where: str) -> None:
    schema = _check_object(schema, where, "Schema", _SCHEMA_KEYS, _SCHEMA_HINT)
    kind = schema.get("type")
    if kind is not None and (not isinstance(kind, str) or kind.upper() not in _SCHEMA_TYPES):
        raise _Invalid(
            f"Invalid value at '{where}.type' (type.googleapis.com/google.ai.generativelanguage."
            f"Type), {kind!r}: expected one of STRING, NUMBER, INTEGER, BOOLEAN, ARRAY, OBJECT, "
            "NULL."
        )
    enum = schema.get("enum")
    if enum is not None and (
        not isinstance(enum, list) or not all(isinstance(v, str) for v in enum)
    ):
        raise _Invalid(
            f"Invalid value at '{where}.enum': enum values must be strings, got {enum!r}."
        )
    properties = schema.get("properties") or {}
    if not isinstance(properties, dict):
        raise _Invalid(f"Invalid value at '{where}.properties': expected an object of schemas.")
    for prop, sub in properties.items():
        _check_schema(sub, f"{where}.properties[{prop}].value")
    for r_index, required in enumerate(schema.get("required") or []):
        if required not in properties:
            raise _Invalid(
                f"* GenerateContentRequest.{where}.required[{r_index}]: property is not defined "
                f"({required!r})"
            )
    if "items" in schema:
        _check_schema(schema["items"], f"{where}.items")
    for a_index, sub in enumerate(schema.get("anyOf") or []):
        _check_schema(sub, f"{where}.any_of[{a_index}]")
    for def_name, sub in (schema.get("defs") or {}).items():
        _check_schema(sub, f"{where}.defs[{def_name}].value")


def _has_functions(tools: Any) -> bool:
    tools = [tools] if isinstance(tools, dict) else tools
    return isinstance(tools, list) and any(
        isinstance(tool, dict) and tool.get("functionDeclarations") for tool in tools
    )


def _check_tool_config(config: Any, tools: Any) -> None:
    calling = config.get("functionCallingConfig") if isinstance(config, dict) else None
    mode = calling.get("mode") if isinstance(calling, dict) else None
    if mode is not None and mode not in _CALLING_MODES:
        raise _Invalid(
            "Invalid value at 'tool_config.function_calling_config.mode' (type.googleapis.com/"
            f"google.ai.generativelanguage.FunctionCallingConfig.Mode), {mode!r}: expected one "
            "of AUTO, ANY, NONE, VALIDATED."
        )
    # Even beside built-in tools such as googleSearch, which it does not steer.
    if isinstance(calling, dict) and calling and not _has_functions(tools):
        raise _Invalid("Function calling config is set without function_declarations.")


def _check_generation_config(config: Any) -> None:
    if not isinstance(config, dict):
        return
    thinking = config.get("thinkingConfig")
    if isinstance(thinking, dict) and "thinkingBudget" in thinking and "thinkingLevel" in thinking:
        raise _Invalid(
            "* GenerateContentRequest.generation_config.thinking_config: thinking_budget and "
            "thinking_level cannot both be set."
        )


def _calls(content: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [p["functionCall"] for p in content.get("parts", []) if "functionCall" in p]


def _responses(content: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [p["functionResponse"] for p in content.get("parts", []) if "functionResponse" in p]


def _check_pairing(contents: list[dict[str, Any]], *, split_ok: bool = False) -> None:
    # Answers split over consecutive user contents are read as one: always in the turns
    # before the current one (recorded histories that mix providers), and in the current
    # turn too on the lenient (2.x) family.
    before = len(contents) if split_ok else _current_turn_start(contents)
    joined, where = _joined_responses(contents, before)
    for index, content in enumerate(joined):
        responses = _responses(content)
        if not responses:
            continue
        following = joined[index + 1] if index + 1 < len(joined) else None
        if following is not None and following.get("role") != "model" and _responses(following):
            raise _Invalid(
                f"Function responses are split over several contents (contents[{where[index]}] "
                f"and contents[{where[index + 1]}]): all functionResponse parts answering one "
                "function-call turn must be sent together, in one user content."
            )
        previous = joined[index - 1] if index else None
        calls = _calls(previous) if previous is not None else []
        if not calls:
            raise _Invalid(
                f"Please ensure that function response turn comes immediately after a function "
                f"call turn. (contents[{where[index]}] holds functionResponse parts but contents"
                f"[{where[index] - 1}] has no functionCall parts.)"
            )
        _match_responses(calls, responses, where[index - 1], where[index])
    for index, content in enumerate(joined):
        if _calls(content) and (index + 1 >= len(joined) or not _responses(joined[index + 1])):
            raise _Invalid(
                f"Please ensure that function response turn comes immediately after a function "
                f"call turn. (contents[{where[index]}] holds function calls that contents"
                f"[{where[index] + 1}] does not answer.)"
            )


def _joined_responses(
    contents: list[dict[str, Any]], before: int
) -> tuple[list[dict[str, Any]], list[int]]:
    """Join consecutive user contents of function responses into one, up to ``before``.

    Returns the contents and, for each, the index of its first content in ``contents``.
    """
    joined: list[dict[str, Any]] = []
    where: list[int] = []
    for index, content in enumerate(contents):
        previous = joined[-1] if joined else None
        if (
            previous is not None
            and index < before
            and content.get("role", "user") == "user"
            and previous.get("role", "user") == "user"
            and _responses(previous)
            and len(_responses(content)) == len(content.get("parts", []))
        ):
            joined[-1] = {**previous, "parts": [*previous["parts"], *content["parts"]]}
        else:
            joined.append(content)
            where.append(index)
    return joined, where


def _match_responses(
    calls: list[Mapping[str, Any]], responses: list[Mapping[str, Any]], turn: int, index: int
) -> None:
    if len(calls) != len(responses):
        raise _Invalid(
            "Please ensure that the number of function response parts is equal to the number of "
            f"function call parts of the function call turn. (contents[{turn}] has "
            f"{len(calls)} function calls, contents[{index}] has {len(responses)} responses.)"
        )
    call_keys = [(c.get("id"), c.get("name")) for c in calls]
    response_keys = [(r.get("id"), r.get("name")) for r in responses]
    for position, (call, response) in enumerate(zip(call_keys, response_keys, strict=True)):
        call_id, call_name = call
        response_id, response_name = response
        if call_id is not None and response_id == call_id and response_name == call_name:
            continue
        if call_id is None and response_name == call_name:
            continue
        if sorted(map(str, call_keys)) == sorted(map(str, response_keys)):
            raise _Invalid(
                f"Function responses in contents[{index}] are not in the order of the calls: "
                f"position {position} answers {_describe(response)} but the call there is "
                f"{_describe(call)}. Send the responses in call order."
            )
        raise _Invalid(
            f"Function response at contents[{index}].parts[{position}] ({_describe(response)}) "
            f"does not match function call {_describe(call)} of contents[{turn}]: the id and "
            "name must echo the call's."
        )


def _describe(key: tuple[Any, Any]) -> str:
    call_id, name = key
    return f"{name!r} (id {call_id!r})" if call_id is not None else f"{name!r} (no id)"


def _current_turn_start(contents: list[dict[str, Any]]) -> int:
    for index in range(len(contents) - 1, -1, -1):
        content = contents[index]
        if content.get("role", "user") == "user" and any(
            "functionResponse" not in part for part in content.get("parts", [])
        ):
            return index + 1
    return 0


CORRUPTED_SIGNATURE: Final = "Corrupted thought signature."
"""Gemini's message for a thought signature it cannot use: another model's, for one."""


def _check_foreign_signatures(
    body: Any, book: SignatureBook, model: str, models: Collection[str]
) -> None:
    """Refuse a signature another model issued, in any model turn of the history."""
    contents = body.get("contents") if isinstance(body, dict) else None
    others = [name for name in models if name != model]
    if not isinstance(contents, list) or not others:
        return
    for content in contents:
        if not isinstance(content, dict) or content.get("role") != "model":
            continue
        for part in content.get("parts") or ():
            raw = part.get("thoughtSignature") if isinstance(part, dict) else None
            signature = decode_signature(raw) if raw is not None and not is_dummy(raw) else None
            if signature is None or book.issuer(signature, part, [model]) is not None:
                continue
            if book.issuer(signature, part, others) is not None:
                raise _Invalid(CORRUPTED_SIGNATURE)


def _check_signatures(
    contents: list[dict[str, Any]], book: SignatureBook, model: str, *, missing_ok: bool = False
) -> None:
    for index in range(_current_turn_start(contents), len(contents)):
        content = contents[index]
        if content.get("role") != "model":
            continue
        first = next((p for p in content["parts"] if "functionCall" in p), None)
        if first is None:
            continue
        call = first["functionCall"]
        raw = first.get("thoughtSignature")
        if raw is None:
            if missing_ok or call_key(call) in book.unsigned:
                continue
            raise _Invalid(
                "Function call is missing a thought_signature in functionCall parts. This is "
                "required for tools to work correctly, and missing thought_signature may lead to "
                f"degraded model performance. Additional data, function call `default_api:"
                f"{call['name']}`, position {index + 1}. (contents[{index}]: the model turn must "
                "be sent back exactly as received, signature included.)"
            )
        if is_dummy(raw):
            continue
        signature = decode_signature(raw)
        if signature is None or not book.accepts(signature, call, model):
            raise _Invalid(
                f"Invalid/Corrupted thought signature at contents[{index}] (function call "
                f"{call['name']!r}): it is not a signature this model gave for that call."
            )
