"""`define_tool`: schemas, validation, context, return values, errors and cost."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
import json
import re
import threading
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, Optional

import pytest
from pydantic import BaseModel, Field

import toolnexus as tn
from toolnexus import ArgumentError, Tool, ToolContext, ToolError, ToolResult, define_tool
from toolnexus._docstring import parse_docstring


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Address(BaseModel):
    """A postal address."""

    street: str
    zip: str | None = None


@dataclasses.dataclass
class Point:
    x: int
    y: int


def run(tool: Tool, args: Any = None, context: ToolContext | None = None) -> ToolResult:
    return tn.execute(tn.toolkit([tool]), tool.name, args, context)


# --- schemas -------------------------------------------------------------------------------


def prims(s: str, i: int, f: float, b: bool) -> None: ...
def defaults(
    n: int = 3, s: str = "x", flag: bool = False, tags: list[str] | None = None
) -> None: ...
def optional_old(a: Optional[int] = None, b: Optional[int] = 5) -> None: ...  # noqa: UP045
def optional_new(a: int | None = None, b: int | None = 5) -> None: ...
def literal(mode: Literal["fast", "slow"], level: Literal[1, 2] = 1) -> None: ...
def collections_(names: list[str], counts: dict[str, int]) -> None: ...
def nested(addr: Address, others: list[Address] | None = None) -> None: ...
def enum_(color: Color = Color.RED) -> None: ...
def annotated(n: Annotated[int, Field(ge=1, le=10, description="How many.")]) -> None: ...
def no_params() -> None: ...
def unannotated(x, y=2) -> None: ...  # type: ignore[no-untyped-def]


def documented(city: str, days: int = 1) -> None:
    """Forecast the weather.

    Args:
        city: The city name,
            e.g. "Paris".
        days: How many days ahead.
    """


async def searching(query: str, ctx: ToolContext) -> str:
    """Search the index."""
    return query


OPTIONAL_INT = {"anyOf": [{"type": "integer"}, {"type": "null"}]}

SCHEMAS: list[tuple[Callable[..., Any], dict[str, Any]]] = [
    (
        prims,
        {
            "type": "object",
            "properties": {
                "s": {"type": "string"},
                "i": {"type": "integer"},
                "f": {"type": "number"},
                "b": {"type": "boolean"},
            },
            "required": ["s", "i", "f", "b"],
            "additionalProperties": False,
        },
    ),
    (
        defaults,
        {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "default": 3},
                "s": {"type": "string", "default": "x"},
                "flag": {"type": "boolean", "default": False},
                "tags": {
                    "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]
                },
            },
            "additionalProperties": False,
        },
    ),
    (
        optional_old,
        {
            "type": "object",
            "properties": {"a": OPTIONAL_INT, "b": {**OPTIONAL_INT, "default": 5}},
            "additionalProperties": False,
        },
    ),
    (
        literal,
        {
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "level": {"type": "integer", "enum": [1, 2], "default": 1},
            },
            "required": ["mode"],
            "additionalProperties": False,
        },
    ),
    (
        collections_,
        {
            "type": "object",
            "properties": {
                "names": {"type": "array", "items": {"type": "string"}},
                "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
            },
            "required": ["names", "counts"],
            "additionalProperties": False,
        },
    ),
    (
        nested,
        {
            "type": "object",
            "$defs": {
                "Address": {
                    "type": "object",
                    "title": "Address",
                    "description": "A postal address.",
                    "properties": {
                        "street": {"type": "string"},
                        "zip": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                    },
                    "required": ["street"],
                }
            },
            "properties": {
                "addr": {"$ref": "#/$defs/Address"},
                "others": {
                    "anyOf": [
                        {"type": "array", "items": {"$ref": "#/$defs/Address"}},
                        {"type": "null"},
                    ]
                },
            },
            "required": ["addr"],
            "additionalProperties": False,
        },
    ),
    (
        enum_,
        {
            "type": "object",
            "$defs": {"Color": {"type": "string", "title": "Color", "enum": ["red", "green"]}},
            "properties": {"color": {"$ref": "#/$defs/Color", "default": "red"}},
            "additionalProperties": False,
        },
    ),
    (
        annotated,
        {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 1, "maximum": 10, "description": "How many."}
            },
            "required": ["n"],
            "additionalProperties": False,
        },
    ),
    (no_params, {"type": "object", "properties": {}, "additionalProperties": False}),
    (
        unannotated,
        {
            "type": "object",
            "properties": {"x": {}, "y": {"default": 2}},
            "required": ["x"],
            "additionalProperties": False,
        },
    ),
    (
        documented,
        {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": 'The city name, e.g. "Paris".'},
                "days": {"type": "integer", "default": 1, "description": "How many days ahead."},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    ),
    (
        searching,
        {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
            "additionalProperties": False,
        },
    ),
]


@pytest.mark.parametrize(("fn", "expected"), SCHEMAS, ids=[fn.__name__ for fn, _ in SCHEMAS])
def test_schema_from_signature(fn: Callable[..., Any], expected: dict[str, Any]) -> None:
    tool = define_tool(fn)
    assert dict(tool.input_schema) == expected
    json.dumps(dict(tool.input_schema))  # JSON-ready


def test_optional_and_union_none_give_the_same_schema() -> None:
    assert dict(define_tool(optional_old).input_schema) == dict(
        define_tool(optional_new).input_schema
    )


def _walk(node: Any, path: str = "") -> list[tuple[str, Any]]:
    found = [(path, node)]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            found += _walk(item, f"{path}[{index}]")
    return found


@pytest.mark.parametrize("fn", [fn for fn, _ in SCHEMAS], ids=lambda fn: fn.__name__)
def test_no_none_and_only_model_titles_in_schema(fn: Callable[..., Any]) -> None:
    payload = tn.to_gemini([define_tool(fn)], json_schema=True)
    assert [path for path, value in _walk(payload) if value is None] == []
    titles = [path for path, _ in _walk(dict(define_tool(fn).input_schema)) if "title" in path]
    assert all(re.fullmatch(r"/\$defs/\w+/title", path) for path in titles), titles


def test_tool_fields() -> None:
    tool = define_tool(documented)
    assert tool.name == "documented"
    assert tool.description == "Forecast the weather."
    assert tool.source == "native"
    assert tool.validate is not None


# --- names, descriptions and docstrings ------------------------------------------------------


def test_decorator_forms() -> None:
    @define_tool
    def bare(x: int) -> int:
        """Bare."""
        return x

    @define_tool(name="renamed tool", description="Custom.")
    def with_options(x: int) -> int:
        """Ignored."""
        return x

    assert isinstance(bare, Tool)
    assert (bare.name, bare.description) == ("bare", "Bare.")
    assert (with_options.name, with_options.description) == ("renamed_tool", "Custom.")
    assert define_tool(documented, description="").description == ""


def test_description_is_the_first_paragraph_only() -> None:
    def fn() -> None:
        """Fetch a page and
        convert it.

        Details nobody needs in the declaration.
        """

    assert define_tool(fn).description == "Fetch a page and convert it."


def test_no_docstring_gives_empty_description() -> None:
    assert define_tool(no_params).description == ""


def test_rest_style_parameter_docs() -> None:
    def fn(path: str, limit: int = 10) -> None:
        """Read a file.

        :param path: Where the file is,
            relative to the root.
        :param int limit: At most this many lines.
        :returns: the text.
        """

    props = define_tool(fn).input_schema["properties"]
    assert props["path"]["description"] == "Where the file is, relative to the root."
    assert props["limit"]["description"] == "At most this many lines."


def test_numpy_style_parameter_docs() -> None:
    def fn(path: str, limit: int = 10) -> None:
        """Read a file.

        Parameters
        ----------
        path : str
            Where the file is.
        limit : int, optional
            At most this many
            lines.

        Returns
        -------
        str
            The text.
        """

    tool = define_tool(fn)
    assert tool.description == "Read a file."
    props = tool.input_schema["properties"]
    assert props["path"]["description"] == "Where the file is."
    assert props["limit"]["description"] == "At most this many lines."


def test_google_style_with_types_and_other_sections() -> None:
    summary, params = parse_docstring(
        """Summary line.

        Args:
            a (int): First.
            b (list[str], optional): Second,
                continued.
            *rest: Ignored splat docs.

        Returns:
            Something.

        Raises:
            ValueError: never documented as a parameter.
        """
    )
    assert summary == "Summary line."
    assert params == {"a": "First.", "b": "Second, continued.", "rest": "Ignored splat docs."}


def test_docstring_starting_with_a_section_has_no_summary() -> None:
    doc = """
        Args:
            x: The x.
        """
    assert parse_docstring(doc) == ("", {"x": "The x."})
    assert parse_docstring(None) == ("", {})


def test_annotated_description_wins_over_the_docstring() -> None:
    def fn(n: Annotated[int, Field(description="From Field.")]) -> None:
        """Do.

        Args:
            n: From docstring.
        """

    assert define_tool(fn).input_schema["properties"]["n"]["description"] == "From Field."


# --- rejected signatures ---------------------------------------------------------------------


def _star_args(*items: int) -> None: ...
def _star_kwargs(**options: int) -> None: ...
def _positional_only(a: int, /, b: int) -> None: ...


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (_star_args, "parameter *items (variable positional arguments)"),
        (_star_kwargs, "parameter **options (variable keyword arguments)"),
        (_positional_only, "parameter a (positional-only)"),
    ],
)
def test_unsupported_parameters_are_rejected(fn: Callable[..., Any], message: str) -> None:
    with pytest.raises(tn.ConfigError, match=re.escape(message)):
        define_tool(fn)


def test_unbound_method_is_rejected_and_bound_method_works() -> None:
    class Counter:
        def __init__(self) -> None:
            self.total = 0

        def add(self, n: int) -> int:
            """Add to the running total."""
            self.total += n
            return self.total

    with pytest.raises(tn.ConfigError, match="define the tool from the bound method instead"):
        define_tool(Counter.add)
    counter = Counter()
    tool = define_tool(counter.add)
    assert list(tool.input_schema["properties"]) == ["n"]
    assert run(tool, {"n": 2}).output == "2"
    assert run(tool, {"n": 3}).output == "5"


def test_unresolvable_hint_is_rejected() -> None:
    def fn(x: NotDefinedAnywhere) -> None: ...  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(tn.ConfigError, match="cannot resolve the type hints of tool 'fn'"):
        define_tool(fn)


def test_two_context_parameters_are_rejected() -> None:
    def fn(a: ToolContext, b: ToolContext) -> None: ...

    with pytest.raises(tn.ConfigError, match="only one parameter may take the ToolContext"):
        define_tool(fn)


def test_not_callable_is_rejected() -> None:
    with pytest.raises(tn.ConfigError, match="define_tool needs a function, got int"):
        define_tool(3)  # type: ignore[call-overload]


def test_unsupported_type_fails_clearly_when_the_tool_is_defined() -> None:
    class Opaque:
        pass

    def fn(thing: Opaque) -> None: ...

    with pytest.raises(tn.ConfigError, match="cannot build an input schema for tool 'fn'"):
        define_tool(fn)


def test_input_schema_is_a_plain_json_ready_dict() -> None:
    def fn(city: str, days: int = 1) -> str:
        """Forecast."""
        return city

    tool = define_tool(fn)
    assert type(tool.input_schema) is dict
    assert json.loads(json.dumps(tool.input_schema)) == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"default": 1, "type": "integer"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    assert json.dumps(tn.to_anthropic(tn.toolkit([tool])))


# --- validation ------------------------------------------------------------------------------


class Order(BaseModel):
    sku: str
    quantity: int = Field(ge=1)


def place(order: Order, mode: Literal["fast", "slow"], notes: list[str] | None = None) -> str:
    return f"{order.sku} x{order.quantity} {mode}"


def test_validated_values_are_python_objects() -> None:
    seen: dict[str, Any] = {}

    def fn(addr: Address, color: Color, when: datetime.date, count: int = 0) -> str:
        seen.update(addr=addr, color=color, when=when, count=count)
        return "ok"

    result = run(
        define_tool(fn),
        {"addr": {"street": "Main"}, "color": "green", "when": "2026-01-02", "count": "7"},
    )
    assert result == ToolResult("ok")
    assert seen == {
        "addr": Address(street="Main"),
        "color": Color.GREEN,
        "when": datetime.date(2026, 1, 2),
        "count": 7,
    }


def test_validation_lists_every_problem_with_paths() -> None:
    result = run(
        define_tool(place),
        {"order": {"sku": 5, "quantity": 0}, "mode": "warp", "notes": ["a", 3], "colour": "red"},
    )
    assert result.is_error
    assert result.output == (
        "Invalid arguments: "
        "`order.sku`: Input should be a valid string (got 5); "
        "`order.quantity`: Input should be greater than or equal to 1 (got 0); "
        "`mode`: Input should be 'fast' or 'slow' (got 'warp'); "
        "`notes[1]`: Input should be a valid string (got 3); "
        "unknown argument `colour` (allowed: order, mode, notes)"
    )
    assert "pydantic" not in result.output
    assert "https://" not in result.output


def test_union_failures_name_the_real_path_once() -> None:
    def fn(
        x: int | str,
        z: list[int] | Address | None = None,
        counts: dict[str, int] | None = None,
        stops: list[Address] | None = None,
    ) -> None: ...

    result = run(
        define_tool(fn),
        {"x": [1], "z": "bad", "counts": {"a": "b"}, "stops": [{}, {"street": 5}]},
    )
    assert result.output == (
        "Invalid arguments: "
        "`x`: Input should be a valid integer, or Input should be a valid string (got [1]); "
        "`z`: Input should be a valid list, or "
        "Input should be a valid dictionary or instance of Address (got 'bad'); "
        "`counts.a`: Input should be a valid integer, unable to parse string as an integer "
        "(got 'b'); "
        "missing required argument `stops[0].street`; "
        "`stops[1].street`: Input should be a valid string (got 5)"
    )


def test_missing_arguments_are_named() -> None:
    result = run(define_tool(place), {})
    assert result.output == (
        "Invalid arguments: missing required argument `order`; missing required argument `mode`"
    )


def test_validate_raises_argument_error_directly() -> None:
    tool = define_tool(place)
    assert tool.validate is not None
    with pytest.raises(ArgumentError, match="missing required argument `mode`"):
        tool.validate({"order": {"sku": "a", "quantity": 1}})
    with pytest.raises(ArgumentError, match="the arguments: Input should be a valid dictionary"):
        tool.validate(["not", "a", "dict"])


def test_long_bad_input_is_shortened_in_the_message() -> None:
    result = run(define_tool(prims), {"s": "a", "i": "x" * 500, "f": 1.0, "b": True})
    assert result.is_error
    assert "..." in result.output
    assert len(result.output) < 300


def test_parameter_names_that_clash_with_pydantic_work() -> None:
    def fn(json: str, schema: int, model_config: bool = True, _private: str = "p") -> str:
        return f"{json}|{schema}|{model_config}|{_private}"

    tool = define_tool(fn)
    assert list(tool.input_schema["properties"]) == ["json", "schema", "model_config", "_private"]
    result = run(tool, {"json": "j", "schema": 2, "_private": "q"})
    assert result == ToolResult("j|2|True|q")


def test_mutable_defaults_are_not_shared_between_calls() -> None:
    def fn(items: list[str] = []) -> int:  # noqa: B006 - the point of the test
        items.append("x")
        return len(items)

    tool = define_tool(fn)
    assert run(tool).output == "1"
    assert run(tool).output == "1"


# --- context ---------------------------------------------------------------------------------


def test_context_parameter_receives_the_context() -> None:
    def fn(text: str, ctx: ToolContext) -> str:
        return f"{text} {ctx.call_id} {ctx.answer} {ctx.extra.get('user')}"

    tool = define_tool(fn)
    assert list(tool.input_schema["properties"]) == ["text"]
    context = ToolContext(call_id="c7", answer={"id": "r1", "ok": True}, extra={"user": "ada"})
    result = run(tool, {"text": "hi"}, context)
    assert result.output == "hi c7 {'id': 'r1', 'ok': True} ada"


def test_optional_context_parameter_and_model_cannot_fill_it() -> None:
    def fn(context: ToolContext | None = None) -> str:
        return str(context is not None)

    tool = define_tool(fn)
    assert run(tool).output == "True"
    result = run(tool, {"context": {"call_id": "forged"}})
    assert result.is_error
    assert "unknown argument `context`" in result.output


# --- return values ---------------------------------------------------------------------------


def _returning(value: object) -> Tool:
    def fn() -> Any:
        return value

    return define_tool(fn, name="ret")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain text", ToolResult("plain text")),
        ("", ToolResult("")),
        (None, ToolResult("")),
        (ToolResult("as is", metadata={"m": 1}), ToolResult("as is", metadata={"m": 1})),
        (ToolResult("failed", is_error=True), ToolResult("failed", is_error=True)),
        (42, ToolResult("42")),
        (1.5, ToolResult("1.5")),
        (True, ToolResult("true")),
        ({"a": [1, "ü"]}, ToolResult('{"a":[1,"ü"]}')),
        ([1, 2], ToolResult("[1,2]")),
        (Address(street="Main"), ToolResult('{"street":"Main","zip":null}')),
        (Point(1, 2), ToolResult('{"x":1,"y":2}')),
        (datetime.date(2026, 1, 2), ToolResult('"2026-01-02"')),
        (Color.RED, ToolResult('"red"')),
        ("ü".encode(), ToolResult("ü")),
    ],
    ids=repr,
)
def test_return_values(value: object, expected: ToolResult) -> None:
    assert run(_returning(value)) == expected


def test_binary_bytes_are_an_error() -> None:
    result = run(_returning(b"\xff\xfe\x00"))
    assert result.is_error
    assert "3 bytes of binary data" in result.output


def test_unencodable_return_is_an_error() -> None:
    result = run(_returning(object()))
    assert result.is_error
    assert result.output.startswith("The tool returned a object that cannot be encoded as JSON")


def test_tool_result_with_bad_output_is_still_caught_by_execute() -> None:
    result = run(_returning(ToolResult(5)))  # type: ignore[arg-type]
    assert result.is_error
    assert "returned output of type int" in result.output


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (ValueError("bad city"), "Tool 'fn' failed: ValueError: bad city"),
        (KeyError("k"), "Tool 'fn' failed: KeyError: 'k'"),
        (RuntimeError(), "Tool 'fn' failed: RuntimeError"),
        (ToolError("Exactly this."), "Exactly this."),
        (ArgumentError("`x` is wrong"), "`x` is wrong"),
    ],
)
def test_exceptions_become_error_results(exc: Exception, expected: str) -> None:
    def fn() -> str:
        raise exc

    async def afn() -> str:
        raise exc

    assert run(define_tool(fn)) == ToolResult(expected, is_error=True)
    assert run(define_tool(afn, name="fn")) == ToolResult(expected, is_error=True)


# --- sync vs async ---------------------------------------------------------------------------


async def test_sync_function_runs_in_a_worker_thread() -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []

    def fn() -> str:
        seen.append(threading.get_ident())
        return "done"

    tool = define_tool(fn)
    assert not asyncio.iscoroutinefunction(tool.handler)
    result = await tn.execute_async(tn.toolkit([tool]), "fn")
    assert result == ToolResult("done")
    assert seen and seen[0] != loop_thread


async def test_async_function_runs_on_the_loop() -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []

    async def fn(x: int) -> int:
        await asyncio.sleep(0)
        seen.append(threading.get_ident())
        return x * 2

    tool = define_tool(fn)
    assert asyncio.iscoroutinefunction(tool.handler)
    assert await tn.execute_async(tn.toolkit([tool]), "fn", {"x": "21"}) == ToolResult("42")
    assert seen == [loop_thread]


def test_callable_object_with_async_call() -> None:
    class Greeter:
        async def __call__(self, name: str) -> str:
            return f"hi {name}"

    tool = define_tool(Greeter(), name="greet")
    assert list(tool.input_schema["properties"]) == ["name"]
    assert run(tool, {"name": "ada"}) == ToolResult("hi ada")


def test_sync_function_returning_an_awaitable() -> None:
    async def later(x: int) -> int:
        if x < 0:
            raise ValueError("negative")
        return x + 1

    def fn(x: int) -> Awaitable[int]:
        return later(x)

    tool = define_tool(fn)
    assert run(tool, {"x": 1}) == ToolResult("2")
    assert run(tool, {"x": -1}) == ToolResult(
        "Tool 'fn' failed: ValueError: negative", is_error=True
    )


def test_timeout_applies_to_function_tools() -> None:
    release = threading.Event()

    def slow() -> str:
        release.wait(30)
        return "late"

    try:
        result = run(define_tool(slow), {}, ToolContext(timeout=0.1))
    finally:
        release.set()
    assert result == ToolResult("Tool 'slow' timed out after 0.1 s.", is_error=True)


def test_a_tool_declares_itself_idempotent_or_not() -> None:
    @define_tool(idempotent=True)
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    def pay(amount: int) -> str:
        """Pay."""
        return str(amount)

    assert lookup.idempotent is True
    assert define_tool(pay).idempotent is False
    assert Tool("t", lambda args, context: "").idempotent is False
