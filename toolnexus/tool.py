"""Tools as data: `Tool`, `ToolResult`, `ToolContext`, `Toolkit` and `toolkit()`.

A tool is a name, a description, a JSON-Schema object for its input, the source it came
from and a handler: the callable that does the work, which may raise. `toolnexus.execute`
runs a handler safely: everything a model can get wrong comes back as a `ToolResult` with
``is_error=True``. Nothing here talks to a model provider.

Example::

    from toolnexus.tool import Tool, ToolResult, toolkit

    def echo(args, ctx):
        return ToolResult(args["text"])

    tk = toolkit([Tool("echo", echo, "Echo the text.", {"type": "object"})])
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NotRequired, Protocol, TypedDict

from toolnexus._attachment import Attachment
from toolnexus.errors import ArgumentError, ConfigError, ToolError

if TYPE_CHECKING:
    from toolnexus._skills import Skill

__all__ = [
    "Answer",
    "ArgumentError",
    "DEFAULT_TOOL_TIMEOUT",
    "Handler",
    "Request",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "Toolkit",
    "sanitize",
    "toolkit",
]

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")

DEFAULT_TOOL_TIMEOUT = 300.0
"""Seconds a tool call may run (five minutes) unless its `Tool` sets another ``timeout``."""


def sanitize(name: str) -> str:
    """Return ``name`` with every character outside ``[a-zA-Z0-9_-]`` replaced by ``_``."""
    return _UNSAFE.sub("_", name)


class Request(TypedDict):
    """A question a tool puts to a human (or another system) by suspending.

    A tool suspends by returning a `ToolResult` whose ``metadata["pending"]`` is a Request.
    """

    id: str
    """Unique id; the matching `Answer` carries the same id."""
    kind: str
    """What is asked for, e.g. ``"question"``."""
    prompt: str
    """Human-readable text of what is asked."""
    url: NotRequired[str]
    """Where the human can act (an approval page, say)."""
    data: NotRequired[Any]
    """Structured details for a UI (the questions and their options, say)."""
    expires_at: NotRequired[str]
    """ISO-8601 time after which the request is void."""
    state: NotRequired[Any]
    """What the tool needs to carry on once answered (a sub-agent keeps its conversation
    here); kept in the transcript and handed back as `ToolContext.request`."""


class Answer(TypedDict):
    """The reply to a `Request`: ``ok`` is false when the human refused or it expired."""

    id: str
    ok: bool
    data: NotRequired[Any]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one tool call. A failure is a value, never an exception.

    A handler may return one to set ``is_error`` or ``metadata`` itself; returning a
    plain ``str`` is the same as ``ToolResult(text)``.

    Example::

        ToolResult("3 files changed", metadata={"files": 3})
        ToolResult("No such city: Atlantis.", is_error=True)
    """

    output: str
    """Text the model reads."""
    is_error: bool = False
    """True when the call failed; ``output`` then says why in words a model can act on."""
    metadata: dict[str, Any] | None = None
    """Extra data for the host (never sent to the model), e.g. ``{"pending": Request}``."""
    attachments: tuple[Attachment, ...] = ()
    """Files for the model to see (an image the tool rendered, a PDF it fetched...)."""

    @property
    def pending(self) -> Request | None:
        """The `Request` this result suspends on, if any."""
        if self.metadata is None:
            return None
        pending: Request | None = self.metadata.get("pending")
        return pending


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool's handler receives besides its arguments."""

    timeout: float | None = None
    """Seconds the call may run before `execute` gives up on it (``None``: no limit of
    the caller's). The tool's own `Tool.timeout` applies as well: the first to pass wins."""
    call_id: str | None = None
    """The model's id for this call, when it sent one."""
    answer: Answer | None = None
    """The answer to a `Request` this tool suspended on, when the call is a re-run."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Host-defined values (a session id, a user id) passed through untouched."""
    deps: Any = None
    """The run's data: the object given as ``Agent.run(..., deps=...)`` (a user id, a
    database handle), the same for every call of that run; ``None`` when none was given."""
    request: Request | None = None
    """The `Request` this tool suspended on, when the call is a re-run with its ``answer``."""


Handler = Callable[[dict[str, Any], ToolContext], str | ToolResult | Awaitable[str | ToolResult]]
"""``handler(args, context)``: sync or async; returns the output text or a `ToolResult`.

It may raise: `toolnexus.execute` turns whatever it raises into an error result."""

Validator = Callable[[Any], dict[str, Any]]
"""Checks raw arguments and returns the ones to call with; raises `ArgumentError`."""


def _default_schema() -> dict[str, Any]:
    return {"type": "object"}


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool: name, handler, description, input schema and source.

    Most tools come from `toolnexus.define_tool`, `toolnexus.http_tool` or
    `toolnexus.build`; build one directly when you have a JSON Schema and a handler.
    Run it with `toolnexus.execute`, never by calling ``handler`` yourself: execute
    validates the arguments, applies the timeout and turns anything the handler raises
    into an error result.

    Example::

        def echo(args: dict[str, Any], ctx: ToolContext) -> str:
            return args["text"]

        Tool("echo", echo, "Echo the text.",
             {"type": "object", "properties": {"text": {"type": "string"}}})
    """

    name: str
    """The name the model calls it by; sanitised to ``[a-zA-Z0-9_-]``."""
    handler: Handler
    """``handler(args, context)``, sync or async; returns text or a `ToolResult`; may raise."""
    description: str = ""
    """What the tool does and when to use it, for the model."""
    input_schema: Mapping[str, Any] = field(default_factory=_default_schema)
    """JSON Schema (an object schema) of the arguments."""
    source: str = "native"
    """Where it came from: ``"builtin"``, ``"skill"``, ``"native"``, ``"http"``, ``"mcp"``."""
    validate: Validator | None = None
    """Runs before ``handler`` and raises `ArgumentError` naming each bad field."""
    requires_approval: bool = False
    """Ask a human before each call: an agent's approval policy suspends the call with a
    request of kind ``"approval"`` unless the policy names this tool or its source."""
    timeout: float | None = DEFAULT_TOOL_TIMEOUT
    """Seconds a call may run before `execute` ends it with an error result (default
    `DEFAULT_TOOL_TIMEOUT`, five minutes); ``None`` for no limit of the tool's own. The
    caller's ``ToolContext.timeout`` (the agent's ``tool_timeout``) applies as well."""
    idempotent: bool = False
    """Running it twice with the same arguments does no more than running it once. A
    durable run (``agent.dbos``) cut off by a crash while the tool ran runs it again only
    when this is true; otherwise the model is told its effect is unknown."""
    inline: bool = False
    """Run a sync ``handler`` on the event loop instead of on a worker thread. For quick
    handlers that never block (arithmetic, a dict lookup, formatting a string), it saves
    the hand-over to a thread and back. The loop waits while such a handler runs and no
    time limit applies (``timeout`` and the caller's are not used: nothing could stop the
    call part-way); a handler that reads files, sleeps or talks to the network must leave
    this off. An async handler always runs on the loop."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", sanitize(self.name))
        limit = self.timeout
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int | float) or not limit > 0
        ):
            raise ConfigError(
                f"tool {self.name!r}: timeout must be a positive number of seconds or None, "
                f"not {limit!r}"
            )


class Resource(Protocol):
    """Something a toolkit keeps open (an MCP server connection) and must close."""

    def close(self) -> None:
        """Release the resource from synchronous code."""

    async def aclose(self) -> None:
        """Release the resource from async code."""


class Toolkit:
    """An immutable set of tools, looked up by name and iterated in name order.

    A toolkit that holds live connections (MCP servers) is closed with `close` /
    `aclose`, or used as a ``with`` / ``async with`` block.

    Args:
        tools: The tools; their names must be unique.
        skills: The skills the ``skill`` tool among ``tools`` serves (for `skills_prompt`).
        resources: Open connections to close with the toolkit.

    Raises:
        ConfigError: Two tools share a name.
        TypeError: An item is not a `Tool` (`toolkit` also takes plain functions).

    Example::

        tk = Toolkit([echo])
        tk.names          # ("echo",)
        tk["echo"]        # the Tool
    """

    __slots__ = ("_by_name", "_closed", "_resources", "_skills")

    def __init__(
        self,
        tools: Iterable[Tool] = (),
        *,
        skills: Sequence[Skill] = (),
        resources: Sequence[Resource] = (),
    ) -> None:
        by_name: dict[str, Tool] = {}
        for tool in tools:
            if not isinstance(tool, Tool):
                raise TypeError(
                    f"Toolkit takes Tool objects, not {type(tool).__name__}; "
                    "use toolnexus.toolkit([...]) to include plain functions"
                )
            if tool.name in by_name:
                raise ConfigError(f"duplicate tool name {tool.name!r} in one toolkit")
            by_name[tool.name] = tool
        self._by_name = MappingProxyType(dict(sorted(by_name.items())))
        self._skills = tuple(skills)
        self._resources = tuple(resources)
        self._closed = False

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> Tool:
        return self._by_name[name]

    def __repr__(self) -> str:
        return f"Toolkit({list(self._by_name)!r})"

    def get(self, name: str) -> Tool | None:
        """Return the tool called ``name``, or ``None``."""
        return self._by_name.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        """Tool names in sorted order."""
        return tuple(self._by_name)

    @property
    def skills(self) -> tuple[Skill, ...]:
        """The skills the ``skill`` tool serves (empty when there is none)."""
        return self._skills

    @property
    def resources(self) -> tuple[Resource, ...]:
        """Open resources (MCP connections) closed with the toolkit."""
        return self._resources

    def close(self) -> None:
        """Close every resource (stops MCP servers). Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        for resource in reversed(self._resources):
            resource.close()

    async def aclose(self) -> None:
        """Close every resource from async code. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        for resource in reversed(self._resources):
            await resource.aclose()

    def __enter__(self) -> Toolkit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Toolkit:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def toolkit(tools: Iterable[Tool | Callable[..., Any]] = ()) -> Toolkit:
    """Return a `Toolkit` of ``tools``.

    Args:
        tools: The tools; their names must be unique. A plain function is turned into a
            tool as `toolnexus.define_tool` would.

    Returns:
        A toolkit without skills or open connections (use `toolnexus.build` for those).

    Raises:
        ConfigError: Two tools share a name, or a function cannot be described.
        TypeError: An item is neither a `Tool` nor a function.

    Example::

        tk = toolnexus.toolkit([echo, add])
    """
    from toolnexus._function import as_tool

    return Toolkit(as_tool(item) for item in tools)
