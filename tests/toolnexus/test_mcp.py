"""MCP servers through `build` / `build_async` against a real server written with the SDK.

The server (tests/toolnexus/mcp_servers/demo_server.py) runs as a child process over
stdio, or over streamable HTTP / SSE on 127.0.0.1. Starting one costs about a second of
imports, so one sync toolkit with several servers is shared by most tests of this module.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolnexus
from toolnexus import McpConfigError, McpServerStatus, Toolkit, mcp_status

SERVER = Path(__file__).parent / "mcp_servers" / "demo_server.py"
SECRET = "mcp-s3cr3t-9917"
ALL_TOOLS = ["add", "cwd", "echo", "env", "fail", "header", "image", "pid", "raise", "sleep"]
ALL_TOOLS += ["t_0"]
ALL_TOOLS += ["t_1", "t_2", "t_3", "t_4"]


def cmd(*args: str) -> list[str]:
    return [sys.executable, str(SERVER), *args]


def alive(pid: int) -> bool:
    """True when ``pid`` is a live process (a zombie waiting to be reaped is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():
        text = stat.read_text()
        return text[text.rindex(")") + 2] != "Z"
    return True


@pytest.fixture(scope="module")
def work_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("mcp")
    (base / "srv").mkdir()
    return base


@pytest.fixture(scope="module")
def built(work_dir: Path) -> Iterator[Toolkit]:
    os.environ["TOOLNEXUS_TEST_SECRET"] = SECRET
    os.environ["GEMINI_API_KEY"] = "agent-key-not-for-servers"
    config = {
        "$schema": "https://example.invalid/mcp.schema.json",
        "mcpServers": {
            "demo": {
                "command": cmd("stdio"),
                "env": {
                    "DEMO_TOKEN": "${TOOLNEXUS_TEST_SECRET}",
                    "DEMO_MODE": "test",
                    "GOOGLE_API_KEY": "passed-on-purpose",
                },
                "cwd": "srv",
            },
            "victim": {"command": cmd("stdio"), "tools": {"pid": True, "echo": True}},
            "crashy": {"command": cmd("crash")},
            "hangs": {"command": cmd("hang"), "timeout": 1},
            "off": {"command": cmd("stdio"), "disabled": True},
            "not-on": {"url": "http://127.0.0.1:9/mcp", "enabled": False},
            "broken": {"args": ["x"]},
            "note": "servers may sit beside other keys",
        },
    }
    path = work_dir / "mcp.json"
    path.write_text(json.dumps(config))
    try:
        tk = toolnexus.build(mcp=path, builtins=False)
    finally:
        del os.environ["GEMINI_API_KEY"]
    try:
        yield tk
    finally:
        tk.close()
        del os.environ["TOOLNEXUS_TEST_SECRET"]


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    proc = subprocess.Popen(cmd("http"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        proc.stdin.close()
        proc.wait(10)
        proc.stdout.close()


def statuses(tk: Toolkit) -> dict[str, McpServerStatus]:
    return {status.name: status for status in mcp_status(tk)}


def test_lists_every_page_of_tools_with_prefixed_names(built: Toolkit) -> None:
    tk = built
    assert [n for n in tk.names if n.startswith("demo_")] == [f"demo_{n}" for n in ALL_TOOLS]
    echo = tk["demo_echo"]
    assert echo.source == "mcp"
    assert echo.description == "Echo the text back."
    assert echo.input_schema["required"] == ["text"]
    demo = statuses(tk)["demo"]
    assert demo == McpServerStatus("demo", "stdio", "connected", "", len(ALL_TOOLS))


def test_calls_return_text_structured_content_and_errors(built: Toolkit) -> None:
    tk = built
    echoed = toolnexus.execute(tk, "demo_echo", {"text": "hi there"})
    assert echoed.output == "echo:\nhi there"
    assert not echoed.is_error
    assert echoed.metadata == {"mcp_server": "demo"}
    added = toolnexus.execute(tk, "demo_add", {"a": 2, "b": 40})
    assert json.loads(added.output) == {"sum": 42}
    failed = toolnexus.execute(tk, "demo_fail", {})
    assert failed.is_error
    assert failed.output == "it broke\nbadly"
    raised = toolnexus.execute(tk, "demo_raise", {})
    assert raised.is_error
    assert raised.output == "Tool 'demo_raise' failed: MCPError: server-side boom"


def test_image_and_audio_content_become_attachments(built: Toolkit) -> None:
    tk = built
    result = toolnexus.execute(tk, "demo_image", {})
    assert (result.output, result.is_error) == ("a dot", False)
    assert [(a.mime_type, a.data, a.name) for a in result.attachments] == [
        ("image/png", b"\x89PNG\r\n\x1a\nfake", "image_2.png"),
        ("audio/wav", b"RIFFfake", "audio_3.wav"),
    ]


def test_arguments_are_checked_against_the_server_schema_before_the_call(
    built: Toolkit,
) -> None:
    tk = built
    bad = toolnexus.execute(tk, "demo_add", {"a": "two", "c": 1})
    assert bad.is_error
    assert bad.output == (
        "Invalid arguments: missing required argument `b`; `a` must be a number, got string"
    )
    missing = toolnexus.execute(tk, "demo_echo", {})
    assert missing.output == "Invalid arguments: missing required argument `text`"


def test_a_schema_the_checker_cannot_read_is_left_to_the_server() -> None:
    from toolnexus._mcp import _checked_against

    odd = _checked_against({"type": "object", "properties": {"x": True}})
    assert odd({"x": 1}) == {"x": 1}


async def test_sync_built_tools_work_from_another_event_loop(built: Toolkit) -> None:
    tk = built
    result = await toolnexus.execute_async(tk, "demo_add", {"a": 1, "b": 1})
    assert json.loads(result.output) == {"sum": 2}


def test_env_is_merged_over_the_process_environment_and_cwd_is_relative_to_the_file(
    built: Toolkit, work_dir: Path
) -> None:
    tk = built
    assert toolnexus.execute(tk, "demo_env", {"name": "DEMO_MODE"}).output == "test"
    assert toolnexus.execute(tk, "demo_env", {"name": "PATH"}).output == os.environ["PATH"]
    # The expanded value reached the server but is redacted on the way back.
    token = toolnexus.execute(tk, "demo_env", {"name": "DEMO_TOKEN"})
    assert token.output == "[redacted]"
    cwd = toolnexus.execute(tk, "demo_cwd", {}).output
    assert Path(cwd).resolve() == (work_dir / "srv").resolve()


def test_the_agent_keys_are_hidden_from_servers_unless_passed_in_env(
    built: Toolkit,
) -> None:
    tk = built
    # GEMINI_API_KEY was set when the servers started; no server inherits it.
    for server in ("demo", "victim"):
        tool = f"{server}_env"
        if tool in tk:
            assert toolnexus.execute(tk, tool, {"name": "GEMINI_API_KEY"}).output == "<unset>"
    passed = toolnexus.execute(tk, "demo_env", {"name": "GOOGLE_API_KEY"})
    assert passed.output == "passed-on-purpose"


def test_hidden_env_of_build_reaches_the_server_config() -> None:
    from toolnexus._mcp_config import parse_config

    config = {"mcpServers": {"s": {"command": ["x"], "env": {"KEEP": "1"}}}}
    os.environ["TOOLNEXUS_TEST_HIDE"] = "v"
    try:
        (default,), _ = parse_config(config)
        (custom,), _ = parse_config(config, frozenset({"TOOLNEXUS_TEST_HIDE"}))
    finally:
        del os.environ["TOOLNEXUS_TEST_HIDE"]
    assert "TOOLNEXUS_TEST_HIDE" in default.env and default.env["KEEP"] == "1"
    assert "TOOLNEXUS_TEST_HIDE" not in custom.env and custom.env["KEEP"] == "1"


def test_a_server_that_crashes_at_start_is_isolated(built: Toolkit) -> None:
    tk = built
    crashy = statuses(tk)["crashy"]
    assert crashy.state == "failed"
    assert crashy.transport == "stdio"
    assert crashy.tools == 0
    assert crashy.reason.startswith("failed while connecting:")
    assert "configuration missing, giving up" in crashy.reason
    assert not any(name.startswith("crashy_") for name in tk.names)


def test_a_server_that_hangs_is_bounded_by_its_timeout(built: Toolkit) -> None:
    # The build returned (one that waited on the server would hang until pytest's
    # timeout) and says it gave up on its own 1 s timer: no wall-clock bound to flake.
    tk = built
    hangs = statuses(tk)["hangs"]
    assert hangs.state == "failed"
    assert hangs.reason == "timed out after 1 s while connecting"


def test_disabled_and_misconfigured_servers_have_a_status(built: Toolkit) -> None:
    tk = built
    all_status = statuses(tk)
    assert list(all_status) == ["demo", "victim", "crashy", "hangs", "off", "not-on", "broken"]
    assert all_status["off"].state == "disabled"
    assert all_status["not-on"] == McpServerStatus(
        "not-on", "http", "disabled", "disabled in the configuration"
    )
    broken = all_status["broken"]
    assert broken.state == "failed"
    assert broken.reason == (
        "invalid configuration: needs a `command` (stdio server) or a `url` (HTTP server)"
    )


async def test_async_build_over_http_with_allowlist_headers_and_sse_fallback(
    http_server: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("WEB_TOKEN", SECRET)
    pidfile = tmp_path / "grandchild.pid"
    config: dict[str, Any] = {
        "servers": {
            "web": {
                "url": http_server + "/mcp",
                "headers": {"X-Token": "${WEB_TOKEN}", "X-Plain": "plain"},
                "tools": {"add": True, "header": True, "echo": False},
            },
            "legacy": {"url": http_server + "/sse", "tools": {"echo": True}},
            "kids": {"command": cmd("stdio-child", str(pidfile)), "tools": {"pid": True}},
        }
    }
    async with await toolnexus.build_async(mcp=config, builtins=False) as tk:
        assert tk.names == ("kids_pid", "legacy_echo", "web_add", "web_header")
        all_status = statuses(tk)
        assert all_status["web"] == McpServerStatus("web", "http", "connected", "", 2)
        assert all_status["legacy"] == McpServerStatus("legacy", "sse", "connected", "", 1)
        plain = await toolnexus.execute_async(tk, "web_header", {"name": "x-plain"})
        assert plain.output == "plain"
        secret = await toolnexus.execute_async(tk, "web_header", {"name": "x-token"})
        assert secret.output == "[redacted]"
        added = await toolnexus.execute_async(tk, "web_add", {"a": 0.5, "b": 1})
        assert json.loads(added.output) == {"sum": 1.5}
        legacy = await toolnexus.execute_async(tk, "legacy_echo", {"text": "old"})
        assert legacy.output == "echo:\nold"
        server_pid = int((await toolnexus.execute_async(tk, "kids_pid", {})).output)
        grandchild = int(pidfile.read_text())
        assert alive(server_pid) and alive(grandchild)
    assert not alive(server_pid)
    assert not alive(grandchild)
    # The SDK logs whole messages at debug level; the echoed secret is blanked there too.
    assert any("[redacted]" in record.getMessage() for record in caplog.records)
    assert not [r for r in caplog.records if SECRET in r.getMessage()]
    assert statuses(tk)["web"] == McpServerStatus("web", "http", "failed", "closed")
    closed = await toolnexus.execute_async(tk, "web_add", {"a": 1, "b": 1})
    assert closed.is_error
    assert closed.output == "the MCP servers of this toolkit are closed"


def test_missing_mcp_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    monkeypatch.setitem(sys.modules, "mcp.client", None)
    monkeypatch.setitem(sys.modules, "mcp.client.session", None)
    with pytest.raises(ImportError, match=r"pip install mcp .*pip install '\.\[mcp\]'"):
        toolnexus.build(mcp={"mcp": {"demo": {"command": cmd("stdio")}}}, builtins=False)


def test_config_without_enabled_servers_needs_no_connection() -> None:
    with toolnexus.build(mcp={"mcp": {"a": {"disabled": True}}}, builtins=False) as tk:
        assert len(tk) == 0
        assert mcp_status(tk) == [McpServerStatus("a", "unknown", "disabled", mcp_disabled())]
    assert mcp_status(toolnexus.build(builtins=False)) == []


def mcp_disabled() -> str:
    return "disabled in the configuration"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "cannot read MCP config {path}: No such file or directory"),
        ("{not json", "invalid MCP config {path}: not JSON (Expecting property name"),
        ("[1, 2]", "invalid MCP config {path}: the top level must be a JSON object"),
        ('{"other": {}}', "invalid MCP config {path}: no servers; expected a top-level"),
        ('{"servers": [1]}', "invalid MCP config {path}: `servers` must be an object"),
    ],
)
def test_unreadable_or_invalid_config_names_the_path_and_the_reason(
    tmp_path: Path, content: str | None, reason: str
) -> None:
    path = tmp_path / "mcp.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(McpConfigError) as info:
        toolnexus.build(mcp=path, builtins=False)
    assert str(info.value).startswith(reason.format(path=path))


def test_bad_server_entries_fail_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOT_SET_FOR_MCP", raising=False)
    config = {
        "mcpServers": {
            "t": {"command": cmd("stdio"), "timeout": "soon"},
            "u": {"url": "http://127.0.0.1:9/", "headers": {"A": "${NOT_SET_FOR_MCP}"}},
            "v": {"command": cmd("stdio"), "url": "http://127.0.0.1:9/"},
            "w": {"command": [], "tools": {"x": True}},
            "x": {"command": cmd("stdio"), "tools": ["echo"]},
        }
    }
    with toolnexus.build(mcp=config, builtins=False) as tk:
        reasons = {s.name: s.reason for s in mcp_status(tk)}
    assert reasons == {
        "t": "invalid configuration: `timeout` must be a positive number of seconds",
        "u": "invalid configuration: environment variable NOT_SET_FOR_MCP is not set",
        "v": "invalid configuration: give either `command` (stdio) or `url` (HTTP), not both",
        "w": "invalid configuration: `command` must be a non-empty list of strings "
        "(or a string with `args`)",
        "x": "invalid configuration: `tools` must be an object of tool name to true/false",
    }


async def test_plain_with_in_async_code_stops_the_servers_once_the_loop_runs(
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "grandchild.pid"
    config = {"mcp": {"kids": {"command": cmd("stdio-child", str(pidfile))}}}
    with await toolnexus.build_async(mcp=config, builtins=False) as tk:
        server_pid = int((await toolnexus.execute_async(tk, "kids_pid", {})).output)
        grandchild = int(pidfile.read_text())
    # close() cannot block the loop it runs on; the shutdown runs as soon as we yield.
    for _ in range(1000):
        if not alive(server_pid) and not alive(grandchild):
            break
        await asyncio.sleep(0.01)
    assert not alive(server_pid)
    assert not alive(grandchild)


def test_a_call_past_the_context_timeout_is_cancelled_and_the_server_stays_usable(
    built: Toolkit,
) -> None:
    tk = built
    context = toolnexus.ToolContext(timeout=0.3)
    slow = toolnexus.execute(tk, "demo_sleep", {"seconds": 30}, context)
    assert slow.is_error
    assert slow.output == "Tool 'demo_sleep' timed out after 0.3 s."
    assert toolnexus.execute(tk, "demo_echo", {"text": "still here"}).output == "echo:\nstill here"


def test_a_server_that_dies_mid_session_turns_failed(built: Toolkit) -> None:
    tk = built
    assert statuses(tk)["victim"].state == "connected"
    pid = int(toolnexus.execute(tk, "victim_pid", {}).output)
    os.kill(pid, signal.SIGKILL)
    for _ in range(500):
        if statuses(tk)["victim"].state == "failed":
            break
        time.sleep(0.01)
    victim = statuses(tk)["victim"]
    assert victim.state == "failed"
    assert victim.reason.startswith("connection lost: the server process exited with status")
    result = toolnexus.execute(tk, "victim_echo", {"text": "anyone?"})
    assert result.is_error
    assert result.output.startswith("MCP server 'victim' is not connected: connection lost")
