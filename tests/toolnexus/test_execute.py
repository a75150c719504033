"""`execute` / `execute_async` never raise for anything a model can cause."""

from __future__ import annotations

import asyncio
import dataclasses
import multiprocessing
import os
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import toolnexus as tn
from toolnexus import Tool, ToolContext, ToolError, ToolResult
from toolnexus._execute import _time_limit
from toolnexus._schema import schema_validator
from toolnexus.tool import DEFAULT_TOOL_TIMEOUT

ECHO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}
NESTED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": ["n"],
            },
        }
    },
    "required": ["items"],
}

RELEASE = threading.Event()
"""Lets the hanging sync tool finish once a test has seen its timeout."""
HANG_DONE = threading.Event()
"""Set when the hanging sync tool has returned."""


def _echo(args: dict[str, Any], ctx: ToolContext) -> str:
    return str(args["text"])


def _nested(args: dict[str, Any], ctx: ToolContext) -> str:
    return str(sum(item["n"] for item in args["items"]))


def _raiser(exc: BaseException) -> Any:
    def run(args: dict[str, Any], ctx: ToolContext) -> str:
        raise exc

    return run


def _recurse(args: dict[str, Any], ctx: ToolContext) -> str:
    return _recurse(args, ctx)


def _returns(value: object) -> Any:
    def run(args: dict[str, Any], ctx: ToolContext) -> Any:
        return value

    return run


def _hang_sync(args: dict[str, Any], ctx: ToolContext) -> str:
    RELEASE.wait(30)
    HANG_DONE.set()
    return "released"


async def _hang_async(args: dict[str, Any], ctx: ToolContext) -> str:
    await asyncio.Event().wait()
    return "never"


async def _async_echo(args: dict[str, Any], ctx: ToolContext) -> str:
    return f"async {args.get('text', '')}"


TOOLS = [
    Tool("echo", _echo, "Echo.", ECHO_SCHEMA, validate=schema_validator(ECHO_SCHEMA)),
    Tool("nested", _nested, "Sum.", NESTED_SCHEMA, validate=schema_validator(NESTED_SCHEMA)),
    Tool("async_echo", _async_echo),
    Tool("raise_value", _raiser(ValueError("bad value"))),
    Tool("raise_tool_error", _raiser(ToolError("exactly this"))),
    Tool("raise_empty_tool_error", _raiser(ToolError())),
    Tool("raise_key", _raiser(KeyError("missing"))),
    Tool("raise_timeout", _raiser(TimeoutError("upstream slow"))),
    Tool("raise_stop", _raiser(StopIteration())),
    Tool("raise_runtime", _raiser(RuntimeError("boom"))),
    Tool("recurse", _recurse),
    Tool("return_none", _returns(None)),
    Tool("return_bytes", _returns(b"raw")),
    Tool("return_int", _returns(42)),
    Tool("return_bad_result", _returns(ToolResult(123))),  # type: ignore[arg-type]
    Tool("return_result", _returns(ToolResult("fine", metadata={"k": 1}))),
    Tool("hang_sync", _hang_sync),
    Tool("hang_async", _hang_async),
]


@pytest.fixture
def tk() -> Iterator[tn.Toolkit]:
    RELEASE.clear()
    HANG_DONE.clear()
    yield tn.toolkit(TOOLS)
    RELEASE.set()


SHORT = ToolContext(timeout=0.2)

HOSTILE: list[tuple[str, Any, Any, str]] = [
    # (tool name, args, context, text the error must contain)
    ("nope", {}, None, "Unknown tool 'nope'. Available tools: async_echo, echo, hang_async"),
    ("", {}, None, "Unknown tool ''"),
    ("ツール", {}, None, "Unknown tool 'ツール'"),
    ("echo\n", {}, None, "Unknown tool 'echo\\n'"),
    ("echo", [], None, "must be a JSON object, got an array"),
    ("echo", ["text"], None, "must be a JSON object, got an array"),
    ("echo", "text=hi", None, "must be a JSON object, got a string"),
    ("echo", 7, None, "must be a JSON object, got an integer"),  # the schema's type names
    ("echo", 7.5, None, "must be a JSON object, got a number"),
    ("echo", True, None, "must be a JSON object, got a boolean"),
    ("echo", None, None, "missing required argument `text`"),
    ("echo", {}, None, "missing required argument `text`"),
    ("echo", {"text": 5}, None, "`text` must be a string, got integer"),
    ("echo", {"text": None}, None, "`text` must be a string, got null"),
    ("echo", {"text": ["a"]}, None, "`text` must be a string, got array"),
    ("echo", {"text": "hi", "extra": 1}, None, "unknown argument `extra` (allowed: text)"),
    ("nested", {"items": "no"}, None, "`items` must be an array, got string"),
    ("nested", {"items": [{"n": "x"}]}, None, "`items[0].n` must be an integer, got string"),
    ("nested", {"items": [{"n": 1}, {}]}, None, "missing required argument `items[1].n`"),
    ("nested", {"items": [3]}, None, "`items[0]` must be an object, got integer"),
    ("raise_value", {}, None, "Tool 'raise_value' failed: ValueError: bad value"),
    ("raise_key", {}, None, "Tool 'raise_key' failed: KeyError: 'missing'"),
    ("raise_timeout", {}, None, "Tool 'raise_timeout' failed: TimeoutError: upstream slow"),
    ("raise_timeout", {}, SHORT, "Tool 'raise_timeout' failed: TimeoutError: upstream slow"),
    (
        "raise_stop",
        {},
        None,
        "Tool 'raise_stop' failed: RuntimeError: the tool raised StopIteration",
    ),
    ("raise_empty_tool_error", {}, None, "ToolError"),
    ("recurse", {}, None, "Tool 'recurse' failed: RecursionError: maximum recursion depth"),
    ("return_none", {}, None, "Tool 'return_none' returned NoneType; expected text."),
    ("return_bytes", {}, None, "Tool 'return_bytes' returned bytes; expected text."),
    ("return_int", {}, None, "Tool 'return_int' returned int; expected text."),
    ("return_bad_result", {}, None, "returned output of type int; expected text"),
    ("hang_sync", {}, SHORT, "Tool 'hang_sync' timed out after 0.2 s."),
    ("hang_async", {}, SHORT, "Tool 'hang_async' timed out after 0.2 s."),
    ("echo", {"text": "x", **{f"k{i}": i for i in range(2000)}}, None, "unknown argument `k1999`"),
]


@pytest.mark.parametrize(("name", "args", "context", "expected"), HOSTILE)
def test_hostile_input_is_an_error_result(
    tk: tn.Toolkit, name: str, args: Any, context: ToolContext | None, expected: str
) -> None:
    result = tn.execute(tk, name, args, context)
    assert isinstance(result, ToolResult)
    assert result.is_error is True
    assert expected in result.output


@pytest.mark.parametrize(("name", "args", "context", "expected"), HOSTILE)
async def test_hostile_input_is_an_error_result_async(
    tk: tn.Toolkit, name: str, args: Any, context: ToolContext | None, expected: str
) -> None:
    result = await tn.execute_async(tk, name, args, context)
    assert result.is_error is True
    assert expected in result.output


def test_tool_error_message_is_passed_on_exactly(tk: tn.Toolkit) -> None:
    assert tn.execute(tk, "raise_tool_error") == ToolResult("exactly this", is_error=True)


def test_name_that_is_not_a_string_is_unknown(tk: tn.Toolkit) -> None:
    result = tn.execute(tk, 123, {})  # type: ignore[arg-type]
    assert result.is_error
    assert result.output.startswith("Unknown tool 123.")


def test_unknown_tool_in_empty_toolkit_says_none() -> None:
    result = tn.execute(tn.toolkit([]), "echo", {})
    assert result == ToolResult("Unknown tool 'echo'. Available tools: none", is_error=True)


def test_huge_arguments_go_through(tk: tn.Toolkit) -> None:
    text = "ü" * 1_000_000
    assert tn.execute(tk, "echo", {"text": text}) == ToolResult(text)


def test_good_calls_succeed(tk: tn.Toolkit) -> None:
    assert tn.execute(tk, "echo", {"text": "hi"}) == ToolResult("hi")
    assert tn.execute(tk, "nested", {"items": [{"n": 1}, {"n": 2}]}) == ToolResult("3")
    assert tn.execute(tk, "async_echo", None) == ToolResult("async ")
    result = tn.execute(tk, "return_result")
    assert result == ToolResult("fine", metadata={"k": 1})


def test_sync_tools_run_off_the_calling_thread() -> None:
    seen: list[int] = []

    def where(args: dict[str, Any], ctx: ToolContext) -> str:
        seen.append(threading.get_ident())
        return "ok"

    assert tn.execute(tn.toolkit([Tool("where", where)]), "where").output == "ok"
    assert seen and seen[0] != threading.get_ident()


async def test_an_inline_sync_tool_runs_on_the_event_loop_and_fails_like_any_other() -> None:
    loop_thread = threading.get_ident()
    seen: list[tuple[str, int]] = []

    def where(args: dict[str, Any], ctx: ToolContext) -> str:
        seen.append((args["how"], threading.get_ident()))
        if args["how"] == "exit":
            raise SystemExit(3)
        return "ok"

    schema = {"type": "object", "properties": {"how": {"type": "string"}}}
    kit = tn.toolkit(
        [
            Tool("inline", where, input_schema=schema, inline=True),
            Tool("threaded", where, input_schema=schema),
        ]
    )
    assert (await tn.execute_async(kit, "inline", {"how": "inline"})).output == "ok"
    assert (await tn.execute_async(kit, "threaded", {"how": "threaded"})).output == "ok"
    exited = await tn.execute_async(kit, "inline", {"how": "exit"})
    assert exited == ToolResult("Tool 'inline' tried to exit the process (exit code 3).", True)
    assert seen[0] == ("inline", loop_thread)
    assert seen[1][0] == "threaded" and seen[1][1] != loop_thread
    assert seen[2] == ("exit", loop_thread)


async def test_define_tool_inline_marks_the_tool_and_its_calls_stay_on_the_loop() -> None:
    threads: list[int] = []

    @tn.define_tool(inline=True)
    def add(a: int, b: int) -> int:
        """Add two integers."""
        threads.append(threading.get_ident())
        return a + b

    assert add.inline and not tn.define_tool(_echo).inline
    result = await tn.execute_async(tn.toolkit([add]), "add", {"a": 2, "b": "3"})
    assert result.output == "5"
    assert threads == [threading.get_ident()]


def test_a_hung_sync_tool_does_not_hold_up_sync_execute(tk: tn.Toolkit) -> None:
    # The tool is still blocked when execute returns: the call was abandoned, not awaited.
    result = tn.execute(tk, "hang_sync", {}, SHORT)
    assert result.output == "Tool 'hang_sync' timed out after 0.2 s."
    assert not HANG_DONE.is_set()
    # The blocked worker thread does not starve later calls.
    assert tn.execute(tk, "hang_sync", {}, SHORT).is_error
    assert tn.execute(tk, "echo", {"text": "still fine"}) == ToolResult("still fine")
    assert not HANG_DONE.is_set()


def test_context_reaches_the_tool() -> None:
    def show(args: dict[str, Any], ctx: ToolContext) -> str:
        return f"{ctx.call_id} {ctx.extra['user']}"

    tk = tn.toolkit([Tool("show", show)])
    result = tn.execute(tk, "show", {}, ToolContext(call_id="c-1", extra={"user": "ada"}))
    assert result.output == "c-1 ada"


async def test_sync_execute_works_inside_a_running_loop(tk: tn.Toolkit) -> None:
    asyncio.get_running_loop()
    assert tn.execute(tk, "echo", {"text": "inside"}) == ToolResult("inside")
    assert tn.execute(tk, "async_echo", {"text": "too"}) == ToolResult("async too")
    assert tn.execute(tk, "nope").is_error


async def test_cancellation_propagates_from_execute_async() -> None:
    started = asyncio.Event()

    async def wait_forever(args: dict[str, Any], ctx: ToolContext) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    tk = tn.toolkit([Tool("wait", wait_forever)])
    task = asyncio.create_task(tn.execute_async(tk, "wait", {}, ToolContext(timeout=30)))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancellation_propagates_while_a_sync_tool_runs(tk: tn.Toolkit) -> None:
    started = threading.Event()

    def block(args: dict[str, Any], ctx: ToolContext) -> str:
        started.set()
        RELEASE.wait(30)
        return "released"

    kit = tn.toolkit([Tool("block", block)])
    task = asyncio.create_task(tn.execute_async(kit, "block", {}))
    await asyncio.to_thread(started.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_calls_run_concurrently(tk: tn.Toolkit) -> None:
    barrier = threading.Barrier(3, timeout=10)

    def meet(args: dict[str, Any], ctx: ToolContext) -> str:
        barrier.wait()
        return str(args["i"])

    kit = tn.toolkit([Tool("meet", meet)])
    results = await asyncio.gather(*(tn.execute_async(kit, "meet", {"i": i}) for i in range(3)))
    assert [r.output for r in results] == ["0", "1", "2"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_sync_tools_still_run_in_a_forked_child(tk: tn.Toolkit) -> None:
    assert tn.execute(tk, "echo", {"text": "warm up the workers"}).output == "warm up the workers"
    ctx = multiprocessing.get_context("fork")
    with warnings.catch_warnings():
        # Python warns that forking a process with threads may deadlock; that is the point.
        warnings.simplefilter("ignore", DeprecationWarning)
        with ctx.Pool(1) as pool:
            assert pool.apply(_echo_in_child, (), {}) == "from the child"


def _echo_in_child() -> str:
    kit = tn.toolkit([TOOLS[0]])
    return tn.execute(kit, "echo", {"text": "from the child"}, ToolContext(timeout=10)).output


# --- a tool that tries to end the process fails its call instead ----------------------


def _exit_three(args: dict[str, Any], ctx: ToolContext) -> str:
    raise SystemExit(3)


async def _exit_four(args: dict[str, Any], ctx: ToolContext) -> str:
    raise SystemExit(4)


def _generator_exit(args: dict[str, Any], ctx: ToolContext) -> str:
    raise GeneratorExit("misused")


def _interrupt(args: dict[str, Any], ctx: ToolContext) -> str:
    raise KeyboardInterrupt


async def _cancelled(args: dict[str, Any], ctx: ToolContext) -> str:
    raise asyncio.CancelledError


@tn.define_tool
def parse_cli(argv: list[str]) -> str:
    """Parse command-line style arguments with argparse."""
    import argparse

    parser = argparse.ArgumentParser(prog="parse_cli", add_help=False)
    parser.add_argument("--count", type=int, required=True)
    return str(parser.parse_args(argv).count)


EXIT_KIT = tn.toolkit(
    [
        Tool("exit_sync", _exit_three),
        Tool("exit_async", _exit_four),
        Tool("generator_exit", _generator_exit),
        Tool("interrupt", _interrupt),
        Tool("cancelled", _cancelled),
        parse_cli,
    ]
)


def test_sys_exit_in_a_sync_tool_is_an_error_result() -> None:
    result = tn.execute(EXIT_KIT, "exit_sync", {})
    assert result.is_error
    assert result.output == "Tool 'exit_sync' tried to exit the process (exit code 3)."


async def test_sys_exit_in_an_async_tool_is_an_error_result() -> None:
    result = await tn.execute_async(EXIT_KIT, "exit_async", {})
    assert result.output == "Tool 'exit_async' tried to exit the process (exit code 4)."
    assert result.is_error


def test_argparse_on_bad_arguments_does_not_end_the_process(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = tn.execute(EXIT_KIT, "parse_cli", {"argv": ["--count", "many"]})
    assert result.is_error
    assert result.output == "Tool 'parse_cli' tried to exit the process (exit code 2)."
    assert "invalid int value" in capsys.readouterr().err
    assert tn.execute(EXIT_KIT, "parse_cli", {"argv": ["--count", "7"]}).output == "7"


def test_generator_exit_from_a_sync_tool_is_an_error_result() -> None:
    result = tn.execute(EXIT_KIT, "generator_exit", {})
    assert result.is_error
    assert result.output == "Tool 'generator_exit' failed: GeneratorExit: misused"


def test_keyboard_interrupt_still_propagates() -> None:
    with pytest.raises(KeyboardInterrupt):
        tn.execute(EXIT_KIT, "interrupt", {})


async def test_a_tools_own_cancelled_error_is_an_error_result() -> None:
    # The call was not cancelled: the error is the tool's, and must not cancel the caller.
    result = await tn.execute_async(EXIT_KIT, "cancelled", {})
    assert result.is_error
    assert result.output == "Tool 'cancelled' failed: CancelledError"


# --- hostile BaseExceptions: every one fails its call, in every kind of tool ----------------


class _Custom(BaseException):
    """A BaseException subclass outside the standard ones."""


def _raising_sync(error: BaseException) -> Tool:
    def handler(args: dict[str, Any], ctx: ToolContext) -> str:
        raise error

    return Tool("hostile", handler)


def _raising_async(error: BaseException) -> Tool:
    async def handler(args: dict[str, Any], ctx: ToolContext) -> str:
        raise error

    return Tool("hostile", handler)


def _raising_defined(error: BaseException) -> Tool:
    async def hostile() -> str:
        raise error

    return tn.define_tool(hostile)


HOSTILE_ERRORS = {
    "custom BaseException": (_Custom("odd"), "Tool 'hostile' failed: _Custom: odd"),
    "GeneratorExit": (GeneratorExit("misused"), "Tool 'hostile' failed: GeneratorExit: misused"),
    "CancelledError": (asyncio.CancelledError(), "Tool 'hostile' failed: CancelledError"),
    "SystemExit": (SystemExit(5), "Tool 'hostile' tried to exit the process (exit code 5)."),
}


@pytest.mark.parametrize("make", [_raising_sync, _raising_async, _raising_defined])
@pytest.mark.parametrize("kind", sorted(HOSTILE_ERRORS))
async def test_a_base_exception_from_a_tool_fails_its_call(
    make: Callable[[BaseException], Tool], kind: str
) -> None:
    error, message = HOSTILE_ERRORS[kind]
    kit = tn.toolkit([make(error)])
    result = await tn.execute_async(kit, "hostile", {})
    assert (result.is_error, result.output) == (True, message)
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
    # and from sync code, on the execute path
    assert tn.execute(kit, "hostile", {}).output == message


async def test_a_real_cancellation_still_propagates_while_a_tool_raises_cancelled() -> None:
    started = asyncio.Event()

    async def handler(args: dict[str, Any], ctx: ToolContext) -> str:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            raise asyncio.CancelledError("the tool's own") from None
        return "unreachable"

    kit = tn.toolkit([Tool("slow", handler)])
    task = asyncio.create_task(tn.execute_async(kit, "slow", {}))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# --- the default time limit ---------------------------------------------------------------


def _blocks_forever(release: threading.Event) -> Tool:
    def handler(args: dict[str, Any], ctx: ToolContext) -> str:
        release.wait()
        return "released"

    return Tool("stuck", handler)


def test_every_tool_has_a_finite_default_time_limit(tmp_path: Any) -> None:
    assert Tool("t", _plain_sync).timeout == DEFAULT_TOOL_TIMEOUT == 300.0
    assert tn.define_tool(_defined_sync).timeout == DEFAULT_TOOL_TIMEOUT
    limits = {tool.name: tool.timeout for tool in tn.build(root=tmp_path)}
    # bash and webfetch bound themselves with their own `timeout` argument.
    assert limits.pop("bash") is None and limits.pop("webfetch") is None
    assert set(limits.values()) == {DEFAULT_TOOL_TIMEOUT}


def test_a_sync_tool_that_blocks_forever_ends_at_its_own_limit() -> None:
    release = threading.Event()
    try:
        stuck = dataclasses.replace(_blocks_forever(release), timeout=0.2)
        result = tn.execute(tn.toolkit([stuck]), "stuck", {})
        assert (result.is_error, result.output) == (True, "Tool 'stuck' timed out after 0.2 s.")
    finally:
        release.set()


@pytest.mark.parametrize(
    ("own", "callers", "ends_after"),
    [(0.2, None, 0.2), (None, 0.2, 0.2), (30.0, 0.2, 0.2), (0.2, 30.0, 0.2)],
)
def test_the_shorter_of_the_tools_and_the_callers_limit_wins(
    own: float | None, callers: float | None, ends_after: float
) -> None:
    release = threading.Event()
    try:
        stuck = dataclasses.replace(_blocks_forever(release), timeout=own)
        result = tn.execute(tn.toolkit([stuck]), "stuck", {}, ToolContext(timeout=callers))
        assert result.output == f"Tool 'stuck' timed out after {ends_after:g} s."
    finally:
        release.set()


def test_no_limit_at_all_only_when_both_say_none() -> None:
    unlimited = Tool("t", _plain_sync, timeout=None)
    assert _time_limit(unlimited, ToolContext(timeout=None)) is None
    assert _time_limit(unlimited, ToolContext(timeout=4)) == 4
    assert _time_limit(Tool("t", _plain_sync), ToolContext()) == DEFAULT_TOOL_TIMEOUT


def test_define_tool_takes_a_timeout() -> None:
    @tn.define_tool(timeout=None)
    def unlimited() -> str:
        """Run as long as it takes."""
        return "done"

    assert unlimited.timeout is None
    assert tn.define_tool(_defined_sync, timeout=12.5).timeout == 12.5


@pytest.mark.parametrize("bad", [0, -1, float("nan"), True, "10"])
def test_a_bad_tool_timeout_is_a_config_error(bad: object) -> None:
    with pytest.raises(tn.ConfigError, match="timeout must be a positive number of seconds"):
        Tool("t", _plain_sync, timeout=bad)  # type: ignore[arg-type]


# --- one message shape, however the tool was made ------------------------------------------


def _plain_sync(args: dict[str, Any], ctx: ToolContext) -> str:
    raise LookupError("no such row")


async def _plain_async(args: dict[str, Any], ctx: ToolContext) -> str:
    raise LookupError("no such row")


def _defined_sync() -> str:
    raise LookupError("no such row")


async def _defined_async() -> str:
    raise LookupError("no such row")


@pytest.mark.parametrize(
    "tool",
    [
        Tool("lookup", _plain_sync),
        Tool("lookup", _plain_async),
        tn.define_tool(_defined_sync, name="lookup"),
        tn.define_tool(_defined_async, name="lookup"),
    ],
    ids=["Tool sync", "Tool async", "define_tool sync", "define_tool async"],
)
def test_a_raising_tool_fails_with_one_message_shape(tool: Tool) -> None:
    # http_tool and MCP tools pin the same shape in test_http.py and test_mcp.py.
    result = tn.execute(tn.toolkit([tool]), "lookup", {})
    assert result == ToolResult("Tool 'lookup' failed: LookupError: no such row", is_error=True)
