"""Events as JSON: what the page receives for each typed event of a run (`event_json`)."""

from __future__ import annotations

import base64
import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

from agent.events import SubAgentEvent

__all__ = ["event_json", "json_ready"]


def event_json(event: Any) -> dict[str, Any]:
    """Return one event of `Agent.stream` as JSON-ready data, its class name as ``type``.

    Every field is kept: a `ToolCall` and a `ToolResult` become objects, file bytes
    (images a tool returned) base64 text, a `DoneEvent`'s `RunResult` its ``to_dict()``,
    and a `SubAgentEvent`'s inner event the same form, nested.

    Args:
        event: An event of `agent.events`.

    Returns:
        ``{"type": "ToolCallEvent", "call": {...}}`` and so on.
    """
    if isinstance(event, SubAgentEvent):
        inner = event_json(event.event)
        return {"type": "SubAgentEvent", "agent": event.agent, "depth": event.depth, "event": inner}
    data = json_ready(event)
    assert isinstance(data, dict)
    return {"type": type(event).__name__, **data}


def json_ready(value: Any) -> Any:
    """Return ``value`` as JSON data: dataclasses as objects, bytes as base64, the rest as is.

    Values with a ``to_dict`` method (`RunResult`, `Usage`, `Grounding`) use it; anything
    JSON cannot hold is written as its ``repr``.
    """
    if value is None or isinstance(value, str | int | float | bool):
        return value
    kind: type = type(value)
    if callable(getattr(kind, "to_dict", None)):
        return value.to_dict()
    names = _fields(kind)
    if names is not None:
        return {name: json_ready(getattr(value, name)) for name in names}
    if isinstance(value, Mapping):
        return {str(key): json_ready(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(item) for item in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return repr(value)


@functools.cache
def _fields(kind: type) -> tuple[str, ...] | None:
    """Return the field names of a dataclass type (``None`` for other types), once per type."""
    if not dataclasses.is_dataclass(kind):
        return None
    return tuple(field.name for field in dataclasses.fields(kind))
