"""``toolnexus-agent serve``: the official MCP client against a real server process.

Each test starts ``python -m agent serve`` — over stdio, or over streamable HTTP on
127.0.0.1 at a free port — and talks to it with the ``mcp`` SDK's own client, so what is
checked is what any MCP host sees.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import toolnexus as tn
from agent.testing import FakeGemini, function_call
from agent.testing._server import FakeServer
from tests.cli.conftest import REPO, Cli, cli_env
from tests.cli.serve_support import connect, stdio_params

pytest.importorskip("mcp")

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

SKILL = """\
---
name: greet
description: Greets people warmly.
---
Say hello with the person's name.
"""

HELPER = """\
---
name: helper
description: Answers small questions.
tools: [get_weather, write]
---
You are the helper.
"""

TOOLS = '''\
from toolnexus import define_tool


def get_weather(city: str) -> str:
    """Today's forecast for a city."""
    return f"sunny in {city}"


def broken(city: str) -> str:
    """Always fails."""
    raise RuntimeError(f"no forecast for {city}")


def noisy(text: str) -> str:
    """Prints, and starts a child that prints, before answering."""
    import subprocess
    import sys

    print("stray print")
    subprocess.run([sys.executable, "-c", "print('stray child')"], check=True)
    return text


TOOLS = [get_weather, broken, noisy]
'''


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A folder with a Python tools module, a skill, an agent file and a file to read."""
    (tmp_path / "servetools.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "skills" / "greet").mkdir(parents=True)
    (tmp_path / "skills" / "greet" / "SKILL.md").write_text(SKILL, encoding="utf-8")
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "helper.md").write_text(HELPER, encoding="utf-8")
    (tmp_path / "notes.txt").write_text("the notes\n", encoding="utf-8")
    return tmp_path


def _flags(root: Path) -> list[str]:
    return ["--skills", "skills", "--tools", "servetools:TOOLS", "--root", str(root)]


@contextlib.asynccontextmanager
async def _stdio(
    root: Path, *extra: str, server: FakeServer | None = None
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agent", "serve", *_flags(root), *extra],
        env=cli_env(server),
        cwd=str(root),
    )
    with (root / "server-stderr.txt").open("w", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as streams, ClientSession(*streams) as s:
            await s.initialize()
            yield s


def _text(result: Any) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _gemini_declarations(root: Path) -> list[dict[str, Any]]:
    """What the agent sends Gemini for the same flags, rendered by the library."""
    sys.path.insert(0, str(root))
    try:
        own = [tn.as_tool(fn) for fn in __import__("servetools").TOOLS]
    finally:
        sys.path.remove(str(root))
        sys.modules.pop("servetools", None)
    toolkit = tn.build(skills=[str(root / "skills")], tools=own, root=str(root))
    declarations: list[dict[str, Any]] = tn.to_gemini(toolkit, json_schema=True)[0][
        "functionDeclarations"
    ]
    return declarations


@pytest.mark.parametrize(("transport", "era"), [("stdio", "legacy"), ("http", "modern")])
async def test_tools_list_is_the_toolkit_as_gemini_receives_it(
    workspace: Path, transport: str, era: Any
) -> None:
    with contextlib.ExitStack() as stack:
        if transport == "http":
            target: Any = stack.enter_context(_http_server(workspace))
        else:
            target = stdio_params(workspace, *_flags(workspace))
        async with connect(target, era=era, errlog=workspace / "err.txt") as session:
            listed = (await session.list_tools()).tools
    served = [
        {"name": t.name, "description": t.description, "parametersJsonSchema": t.input_schema}
        for t in listed
    ]
    expected = _gemini_declarations(workspace)
    # The same tools in the same order, each the same JSON: byte for byte once keys are
    # sorted (the SDK writes `properties`, `required`, `type` first in every inputSchema).
    assert _canonical(served) == _canonical(expected)
    assert {"read", "write", "skill", "get_weather"} <= {t.name for t in listed}


async def test_stdio_calls_tools_and_returns_errors_as_the_model_reads_them(
    workspace: Path,
) -> None:
    async with _stdio(workspace) as session:
        read = await session.call_tool("read", {"path": "notes.txt"})
        skill = await session.call_tool("skill", {"name": "greet"})
        weather = await session.call_tool("get_weather", {"city": "Rome"})
        broken = await session.call_tool("broken", {"city": "Rome"})
        missing = await session.call_tool("read", {"path": "missing.txt"})
        bad_args = await session.call_tool("get_weather", {"town": "Rome"})
    assert not read.is_error and "the notes" in _text(read)
    assert not skill.is_error and "Say hello with the person's name." in _text(skill)
    assert (weather.is_error, _text(weather)) == (False, "sunny in Rome")
    assert broken.is_error
    assert _text(broken) == "Tool 'broken' failed: RuntimeError: no forecast for Rome"
    toolkit = tn.build(root=str(workspace))
    assert missing.is_error
    assert _text(missing) == tn.execute(toolkit, "read", {"path": "missing.txt"}).output
    assert bad_args.is_error and "city" in _text(bad_args)


async def test_an_agent_tool_runs_the_agent_and_returns_its_final_text(
    workspace: Path,
) -> None:
    fake = FakeGemini(
        [
            function_call("get_weather", {"city": "Rome"}),
            "Rome: sunny.",
            function_call("write", {"path": "agent.txt", "content": "x"}),
            "I was not allowed to write it.",
        ]
    )
    with fake.serve() as server:
        async with _stdio(workspace, "--agents", "agents", server=server) as session:
            listed = {t.name: t for t in (await session.list_tools()).tools}
            answer = await session.call_tool("helper", {"task": "weather in Rome"})
            refused = await session.call_tool("helper", {"task": "write agent.txt"})
            no_task = await session.call_tool("helper", {})
    assert listed["helper"].description == "Answers small questions."
    assert listed["helper"].input_schema["required"] == ["task"]
    assert set(listed["helper"].input_schema["properties"]) == {"task", "session_id"}
    assert (answer.is_error, answer.content[0].text) == (False, "Rome: sunny.")
    assert answer.content[1].text.startswith("session_id: helper-")
    assert answer.meta["toolnexus/session_id"] in answer.content[1].text
    assert (refused.is_error, refused.content[0].text) == (False, "I was not allowed to write it.")
    assert not (workspace / "agent.txt").exists()
    denial = json.dumps(fake.requests[3].function_responses)
    assert "was not run" in denial and "the MCP client cannot ask" in denial
    assert fake.requests[0].system_text == "You are the helper."
    assert fake.requests[0].declared_functions == ["get_weather", "write"]
    assert no_task.is_error and "needs a `task`" in _text(no_task)
    assert fake.failures == []


@contextlib.contextmanager
def _http_server(root: Path, *extra: str) -> Iterator[str]:
    """Start ``serve --transport http --port 0``; yield its URL; stop it afterwards."""
    command = [sys.executable, "-m", "agent", "serve", "--transport", "http", "--port", "0"]
    process = subprocess.Popen(
        [*command, *_flags(root), *extra],
        cwd=root,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        seen = []
        for line in process.stderr:  # the server says its URL once it accepts connections
            seen.append(line)
            if "MCP (streamable HTTP) at " in line:
                yield line.rsplit(" ", 1)[1].strip()
                break
        else:
            pytest.fail(f"the server never said its URL: {''.join(seen)}")
    finally:
        process.terminate()
        out, _ = process.communicate(timeout=30)
    assert out == ""


async def test_http_serves_on_loopback_and_runs_allowed_calls(workspace: Path) -> None:
    with _http_server(workspace, "--approval", "edits") as url:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        async with streamable_http_client(url) as streams, ClientSession(*streams[:2]) as s:
            await s.initialize()
            names = {t.name for t in (await s.list_tools()).tools}
            written = await s.call_tool("write", {"path": "new.txt", "content": "x"})
            bash = await s.call_tool("bash", {"command": "echo hi > ran.txt"})
    assert {"read", "write", "bash", "get_weather"} <= names
    assert not written.is_error
    assert (workspace / "new.txt").read_text(encoding="utf-8") == "x"
    assert bash.is_error and "was not run" in _text(bash)  # edits: bash still asks
    assert not (workspace / "ran.txt").exists()


_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_http_refuses_a_foreign_host_or_origin(workspace: Path) -> None:
    with _http_server(workspace) as url:
        port = url.rsplit(":", 1)[1].split("/")[0]
        with httpx.Client(timeout=30) as client:
            ok = client.post(url, json=_INITIALIZE, headers=_HEADERS)
            host = client.post(
                url, json=_INITIALIZE, headers={**_HEADERS, "Host": f"evil.example:{port}"}
            )
            origin = client.post(
                url, json=_INITIALIZE, headers={**_HEADERS, "Origin": "http://evil.example"}
            )
    assert ok.status_code == 200
    assert host.status_code == 421
    assert origin.status_code == 403


def test_serve_without_the_mcp_extra_says_how_to_install_it(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(sys.modules):
        if name.split(".")[0] == "mcp":
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "mcp", None)  # None in sys.modules halts the import
    code, out, err = cli("serve")
    assert (code, out) == (2, "")
    assert err.startswith("toolnexus-agent serve: needs the `mcp` extra (mcp")
    assert err.endswith(": pip install '.[mcp]' from a clone of toolnexus-gemini\n")
    assert err.count("\n") == 1


def test_serve_usage_errors_are_one_line(cli: Cli, workdir: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli("serve", "--port", "70000")
    assert exit_info.value.code == 2
    code, out, err = cli("serve", "--agents", "missing")
    assert (code, out) == (2, "")
    assert err.startswith("--agents: no agent file or directory at missing")
    (workdir / "agents").mkdir()
    code, out, err = cli("serve", "--agents", "agents")  # agents need a key; none is set
    assert (code, out) == (2, "")
    assert err.startswith("toolnexus-agent: no Gemini API key.")


def test_stdio_writes_nothing_but_protocol_to_stdout(workspace: Path) -> None:
    messages = [
        _INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "noisy", "arguments": {"text": "quiet answer"}},
        },
    ]
    process = subprocess.Popen(
        [sys.executable, "-m", "agent", "serve", *_flags(workspace)],
        cwd=workspace,
        env=cli_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("".join(json.dumps(message) + "\n" for message in messages))
    process.stdin.flush()
    replies: list[dict[str, Any]] = []
    try:
        while len(replies) < 2:  # the two replies, then the client hangs up
            line = process.stdout.readline()
            assert line, "the server closed stdout before answering"
            replies.append(json.loads(line))  # every line is a JSON-RPC message
    finally:
        rest, err = process.communicate(timeout=60)  # closes stdin: the server ends
    assert (process.returncode, rest) == (0, ""), err
    assert [reply["id"] for reply in replies] == [1, 2]
    assert replies[1]["result"]["content"] == [{"type": "text", "text": "quiet answer"}]
    assert "stray print" in err and "stray child" in err


async def test_the_server_is_itself_an_mcp_source_of_toolnexus(workspace: Path) -> None:
    command = [sys.executable, "-m", "agent", "serve", "--no-builtins", "--tools"]
    config = {
        "mcpServers": {
            "tnx": {
                "command": [*command, "servetools:TOOLS"],
                "cwd": str(workspace),
                "env": {"PYTHONPATH": str(REPO)},
            }
        }
    }
    async with await tn.build_async(mcp=config, builtins=False) as toolkit:
        names = toolkit.names
        weather = await tn.execute_async(toolkit, "tnx_get_weather", {"city": "Rome"})
        broken = await tn.execute_async(toolkit, "tnx_broken", {"city": "Rome"})
    assert set(names) == {"tnx_get_weather", "tnx_broken", "tnx_noisy"}
    assert (weather.is_error, weather.output) == (False, "sunny in Rome")
    assert broken.is_error
    assert "Tool 'broken' failed: RuntimeError: no forecast for Rome" in broken.output
