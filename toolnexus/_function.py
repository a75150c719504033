"""Tools from plain Python functions: `define_tool`.

The input schema and the argument validation of a function tool come from one pydantic
model built from the function's signature, so what the model is told and what is checked
can never disagree. The schema is a plain ``dict`` made when the tool is defined: it goes
into every request anyway, and a type that cannot be described fails right there.

Example::

    from typing import Literal

    import toolnexus as tn

    @tn.define_tool
    def forecast(city: str, unit: Literal["C", "F"] = "C") -> str:
        \"\"\"Return the weather forecast for a city.\"\"\"
        return f"Sunny in {city}, 21 {unit}"

    tk = tn.toolkit([forecast])
    tn.execute(tk, "forecast", {"city": "Paris"}).output   # 'Sunny in Paris, 21 C'
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import threading
import types
import typing
from collections.abc import Awaitable, Callable, Iterator, Mapping
from types import FrameType
from typing import TYPE_CHECKING, Any, overload

from toolnexus._docstring import parse_docstring
from toolnexus.errors import ArgumentError, ConfigError
from toolnexus.tool import DEFAULT_TOOL_TIMEOUT, Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    import pydantic
    from pydantic.json_schema import GenerateJsonSchema

# pydantic is imported by the first `define_tool` (or the first non-text result), never by
# ``import toolnexus``: it costs more than the rest of the package.

__all__ = ["as_tool", "define_tool"]

_Fn = Callable[..., Any]


# --- the pydantic model ------------------------------------------------------------------


@functools.cache
def _schema_generator() -> type[GenerateJsonSchema]:
    from pydantic.json_schema import GenerateJsonSchema

    class ToolSchemaGenerator(GenerateJsonSchema):
        """JSON Schema without pydantic's automatic field titles."""

        def field_title_should_be_set(self, schema: Any) -> bool:
            return False

        def emit_warning(self, kind: Any, detail: str) -> None:
            # A default that cannot be shown in JSON is simply left out of the schema.
            if kind != "non-serializable-default":
                super().emit_warning(kind, detail)

    return ToolSchemaGenerator


def _strip_none_defaults(node: Any) -> Any:
    """Drop ``"default": null`` everywhere: "not required" already says it may be omitted."""
    if isinstance(node, dict):
        return {
            key: _strip_none_defaults(value)
            for key, value in node.items()
            if not (key == "default" and value is None)
        }
    if isinstance(node, list):
        return [_strip_none_defaults(item) for item in node]
    return node


def _has_description(annotation: Any) -> bool:
    from pydantic.fields import FieldInfo

    if typing.get_origin(annotation) is not typing.Annotated:
        return False
    return any(isinstance(meta, FieldInfo) and meta.description for meta in annotation.__metadata__)


def _is_context(annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return members == [ToolContext]
    return False


class _Param(typing.NamedTuple):
    name: str
    annotation: Any
    default: Any
    description: str | None


class _Spec:
    """Everything `define_tool` learned from the function, and the model built from it."""

    __slots__ = ("_lock", "_model", "_schema", "context_param", "name", "params")

    def __init__(self, name: str, params: list[_Param], context_param: str | None) -> None:
        self.name = name
        self.params = params
        self.context_param = context_param
        self._lock = threading.Lock()
        self._model: type[pydantic.BaseModel] | None = None
        self._schema: dict[str, Any] | None = None

    def model(self) -> type[pydantic.BaseModel]:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._build()
        return self._model

    def _build(self) -> type[pydantic.BaseModel]:
        # Fields get neutral internal names and the real parameter names as aliases, so
        # parameters such as ``json``, ``schema``, ``model_id`` or ``_private`` never clash
        # with BaseModel's own attributes or namespaces.
        import pydantic

        fields: dict[str, Any] = {}
        for index, param in enumerate(self.params):
            info = pydantic.Field(param.default, alias=param.name)
            if param.description and not _has_description(param.annotation):
                info = pydantic.Field(
                    param.default, alias=param.name, description=param.description
                )
            fields[f"p{index}"] = (param.annotation, info)
        # Deferred: rendering the schema does not also compile the validator.
        with self._unusable():
            return pydantic.create_model(
                self.name,
                __config__=pydantic.ConfigDict(extra="forbid", defer_build=True),
                **fields,
            )

    @contextlib.contextmanager
    def _unusable(self) -> Iterator[None]:
        """Turn pydantic's complaint about a type it cannot handle into a clear ConfigError."""
        import pydantic

        try:
            yield
        except pydantic.PydanticUserError as exc:
            message = f"cannot build an input schema for tool {self.name!r}: {exc}"
            raise ConfigError(message) from exc

    def schema(self) -> dict[str, Any]:
        if self._schema is None:
            with self._unusable():
                raw = self.model().model_json_schema(schema_generator=_schema_generator())
            raw.pop("title", None)
            self._schema = _strip_none_defaults(raw)
        return self._schema

    def validate(self, args: Any) -> dict[str, Any]:
        import pydantic

        try:
            with self._unusable():
                instance = self.model().model_validate(args)
        except pydantic.ValidationError as exc:
            raise ArgumentError(_describe(exc, args, [p.name for p in self.params])) from None
        values = instance.__dict__
        return {param.name: values[f"p{i}"] for i, param in enumerate(self.params)}


def _real_path(loc: tuple[int | str, ...], args: Any, last_is_key: bool) -> str:
    """Render ``loc`` as ``a.b[0].c``, leaving out pydantic's union-branch labels.

    A label (``int``, ``list[int]``, a model name) is told from a real key by following
    the arguments: a real key or index exists in the value at that point.
    """
    path = ""
    value = args
    for position, part in enumerate(loc):
        is_last = position == len(loc) - 1
        if isinstance(part, int) and isinstance(value, list | tuple) and part < len(value):
            path += f"[{part}]"
            value = value[part]
        elif isinstance(value, Mapping) and (part in value or (is_last and last_is_key)):
            path += f".{part}" if path else str(part)
            value = value.get(part)
    return path


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _where(path: str) -> str:
    return f"`{path}`" if path else "the arguments"


def _describe(exc: pydantic.ValidationError, args: Any, known: list[str]) -> str:
    """One line listing every problem; a value failing each branch of a union is one problem."""
    problems: list[str] = []
    slot_of: dict[str, int] = {}
    messages: dict[str, list[str]] = {}
    inputs: dict[str, Any] = {}
    for error in exc.errors(include_url=False):
        kind = error["type"]
        path = _real_path(error["loc"], args, last_is_key=kind == "missing")
        if kind == "missing":
            problems.append(f"missing required argument {_where(path)}")
        elif kind == "extra_forbidden" and len(error["loc"]) == 1:
            allowed = ", ".join(known) or "none"
            problems.append(f"unknown argument {_where(path)} (allowed: {allowed})")
        else:
            if path not in slot_of:
                slot_of[path] = len(problems)
                problems.append("")
                messages[path] = []
                inputs[path] = error["input"]
            messages[path].append(error["msg"])
    for path, slot in slot_of.items():
        said = ", or ".join(dict.fromkeys(messages[path]))
        problems[slot] = f"{_where(path)}: {said} (got {_short(inputs[path])})"
    return "Invalid arguments: " + "; ".join(problems)


# --- return values -----------------------------------------------------------------------


def _to_result(value: object) -> ToolResult:
    if isinstance(value, str):
        return ToolResult(value)
    if value is None:
        return ToolResult("")
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        try:
            return ToolResult(bytes(value).decode("utf-8"))
        except UnicodeDecodeError:
            return ToolResult(
                f"The tool returned {len(value)} bytes of binary data, which cannot be shown "
                "as text. This is a bug in the tool, not in the call.",
                is_error=True,
            )
    import pydantic_core

    try:
        return ToolResult(pydantic_core.to_json(value).decode("utf-8"))
    except (pydantic_core.PydanticSerializationError, ValueError, TypeError) as exc:
        return ToolResult(
            f"The tool returned a {type(value).__name__} that cannot be encoded as JSON ({exc}). "
            "This is a bug in the tool, not in the call.",
            is_error=True,
        )


def _call_args(spec: _Spec, args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    if spec.context_param is None:
        return args
    return {**args, spec.context_param: ctx}


def _sync_runner(fn: _Fn, spec: _Spec) -> Callable[[dict[str, Any], ToolContext], Any]:
    def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult | Awaitable[ToolResult]:
        value = fn(**_call_args(spec, args, ctx))
        if inspect.isawaitable(value):
            return _finish(value)
        return _to_result(value)

    return run


async def _finish(awaitable: Awaitable[Any]) -> ToolResult:
    return _to_result(await awaitable)


def _async_runner(fn: _Fn, spec: _Spec) -> Callable[[dict[str, Any], ToolContext], Any]:
    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await _finish(fn(**_call_args(spec, args, ctx)))

    return run


# --- define_tool -------------------------------------------------------------------------

_REJECTED_KINDS = {
    inspect.Parameter.VAR_POSITIONAL: "*{} (variable positional arguments)",
    inspect.Parameter.VAR_KEYWORD: "**{} (variable keyword arguments)",
    inspect.Parameter.POSITIONAL_ONLY: "{} (positional-only)",
}


def _signature(fn: _Fn, tool_name: str, caller: FrameType | None) -> inspect.Signature:
    try:
        try:
            return inspect.signature(fn, eval_str=True)
        except NameError:
            if caller is None:
                raise
            # String hints (``from __future__ import annotations``) naming a class defined
            # next to the function inside another function resolve in the caller's scope.
            return inspect.signature(fn, eval_str=True, locals=dict(caller.f_locals))
    except (NameError, SyntaxError) as exc:
        raise ConfigError(f"cannot resolve the type hints of tool {tool_name!r}: {exc}") from exc
    except ValueError as exc:
        raise ConfigError(f"cannot read the signature of {fn!r}: {exc}") from exc


def _inspect(
    fn: _Fn, tool_name: str, caller: FrameType | None
) -> tuple[list[_Param], str | None, str]:
    signature = _signature(fn, tool_name, caller)
    summary, docs = parse_docstring(inspect.getdoc(fn))
    params: list[_Param] = []
    context_param: str | None = None
    for index, param in enumerate(signature.parameters.values()):
        if index == 0 and param.name in ("self", "cls") and inspect.isfunction(fn):
            raise ConfigError(
                f"define_tool({tool_name!r}): the first parameter is {param.name!r}, so this looks "
                "like a method defined in a class body; define the tool from the bound method "
                "instead, e.g. define_tool(instance.method)"
            )
        if param.kind in _REJECTED_KINDS:
            shown = _REJECTED_KINDS[param.kind].format(param.name)
            raise ConfigError(
                f"define_tool({tool_name!r}): parameter {shown} cannot be filled from "
                "JSON arguments; use named parameters"
            )
        annotation = Any if param.annotation is inspect.Parameter.empty else param.annotation
        if _is_context(annotation):
            if context_param is not None:
                raise ConfigError(
                    f"define_tool({tool_name!r}): only one parameter may take the ToolContext, "
                    f"got {context_param!r} and {param.name!r}"
                )
            context_param = param.name
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        params.append(_Param(param.name, annotation, default, docs.get(param.name)))
    return params, context_param, summary


def _is_async(fn: _Fn) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - an async __call__ on an object
    return not inspect.isfunction(fn) and inspect.iscoroutinefunction(call)


def _make_tool(
    fn: _Fn,
    name: str | None,
    description: str | None,
    caller: FrameType | None,
    requires_approval: bool = False,
    timeout: float | None = DEFAULT_TOOL_TIMEOUT,
    idempotent: bool = False,
    inline: bool = False,
) -> Tool:
    if not callable(fn):
        raise ConfigError(f"define_tool needs a function, got {type(fn).__name__}")
    tool_name = name or getattr(fn, "__name__", None) or type(fn).__name__
    params, context_param, summary = _inspect(fn, tool_name, caller)
    spec = _Spec(tool_name, params, context_param)
    runner = _async_runner(fn, spec) if _is_async(fn) else _sync_runner(fn, spec)
    return Tool(
        name=tool_name,
        handler=runner,
        description=summary if description is None else description,
        input_schema=spec.schema(),
        source="native",
        validate=spec.validate,
        requires_approval=requires_approval,
        timeout=timeout,
        idempotent=idempotent,
        inline=inline,
    )


@overload
def define_tool(
    fn: _Fn,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
    timeout: float | None = DEFAULT_TOOL_TIMEOUT,
    idempotent: bool = False,
    inline: bool = False,
) -> Tool: ...


@overload
def define_tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
    timeout: float | None = DEFAULT_TOOL_TIMEOUT,
    idempotent: bool = False,
    inline: bool = False,
) -> Callable[[_Fn], Tool]: ...


def define_tool(
    fn: _Fn | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
    timeout: float | None = DEFAULT_TOOL_TIMEOUT,
    idempotent: bool = False,
    inline: bool = False,
) -> Tool | Callable[[_Fn], Tool]:
    """Turn a Python function into a `Tool` (source ``"native"``).

    Use it as ``define_tool(fn)``, as ``@define_tool`` or as
    ``@define_tool(name=..., description=...)``. The tool's name defaults to the
    function's name and its description to the docstring's first paragraph; parameter
    descriptions come from the docstring's ``Args:`` section (or ``:param x:`` fields, or
    a numpy ``Parameters`` section), unless ``Annotated[..., Field(description=...)]``
    gives one.

    The input schema and the argument check come from one pydantic model built from the
    type hints; ``input_schema`` is a plain JSON-ready ``dict``. Unknown arguments are
    rejected, and bad arguments never reach the function: the call fails with an error
    result that lists every problem by field path. A parameter annotated `ToolContext`
    receives the call's context (its ``call_id``, ``answer``, ``extra`` and the run's
    ``deps``) and is left out of the schema. ``*args``, ``**kwargs`` and positional-only
    parameters raise `ConfigError` here, as does a type hint that cannot be resolved; for a
    method, pass the bound method (``define_tool(obj.method)``).

    Sync functions run in a worker thread (on the event loop with ``inline=True``), async
    ones on the event loop. The return
    value becomes the output: a ``str`` as is, ``None`` as ``""``, a `ToolResult` as is,
    ``bytes`` decoded as UTF-8 (binary data is an error), anything else as JSON
    (pydantic models, dataclasses, dates and sets included). Raising `ToolError` fails
    the call with exactly its message; any other exception fails it with the message
    every tool fails with, ``Tool '<name>' failed: <ExceptionType>: <message>``.

    Args:
        fn: The function (sync or async, or a callable object); leave it out to use
            ``define_tool(name=..., description=...)`` as a decorator.
        name: The tool's name; default: the function's ``__name__``.
        description: What the tool does, for the model; default: the docstring's first
            paragraph.
        requires_approval: An agent asks a human before each call (`Tool.requires_approval`).
        timeout: Seconds a call may run (default `DEFAULT_TOOL_TIMEOUT`, five minutes);
            ``None`` for no limit of the tool's own.
        idempotent: Running it twice with the same arguments does no more than once, so a
            durable run cut off mid-call may run it again (see `Tool.idempotent`).
        inline: Run a sync function on the event loop, not on a worker thread: only for
            quick code that never blocks (no file, network or sleep; see `Tool.inline`).

    Returns:
        The `Tool` (source ``"native"``), or with ``fn`` left out, a decorator that
        returns it.

    Raises:
        ConfigError: A parameter cannot be filled from JSON arguments, a type hint
            cannot be resolved, a type cannot be turned into a JSON schema, or ``fn`` is
            not callable.

    Example::

        @define_tool(name="add")
        def add_numbers(a: int, b: int = 1) -> int:
            \"\"\"Add two integers.\"\"\"
            return a + b

        add.input_schema   # {"type": "object", "properties": {...}, "required": ["a"], ...}
    """
    if fn is None:

        def decorate(inner: _Fn) -> Tool:
            return _make_tool(
                inner,
                name,
                description,
                sys._getframe(1),
                requires_approval,
                timeout,
                idempotent,
                inline,
            )

        return decorate
    return _make_tool(
        fn, name, description, sys._getframe(1), requires_approval, timeout, idempotent, inline
    )


def as_tool(item: object) -> Tool:
    """Return ``item`` if it is a `Tool`, else the tool `define_tool` makes of a function.

    This is the one rule for every place that takes "your tools" (`toolkit`, `build`,
    the CLI's ``--tools``): a plain function is accepted as ``define_tool(fn)`` would
    describe it.

    Raises:
        TypeError: ``item`` is neither a `Tool` nor callable.
        ConfigError: ``define_tool`` cannot describe the function.
    """
    if isinstance(item, Tool):
        return item
    if callable(item):
        return _make_tool(item, None, None, None)
    raise TypeError(
        f"{type(item).__name__} is not a Tool or a function; pass a Tool, or a function "
        "(it becomes a tool as define_tool(fn) would make it)"
    )
