"""``toolnexus-agent serve``: approval and questions by MCP elicitation, with the official client.

A call the approval policy asks about is put to the client as a form; only an explicit
approve (or an edit that fits the tool's schema) runs the tool. Each test runs a real
server process (stdio, or streamable HTTP on 127.0.0.1) and the ``mcp`` SDK's own clients of
both protocol eras (see ``serve_support``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import pytest

from agent.testing import FakeGemini, function_call
from tests.cli.conftest import cli_env
from tests.cli.serve_support import (
    TasksClient,
    accept,
    all_text,
    connect,
    http_server,
    in_turn,
    stdio_params,
    text_of,
)

pytest.importorskip("mcp")

WRITER = """\
---
name: writer
description: Writes files.
tools: [write, question]
---
You write files.
"""

Transport = Literal["stdio", "http"]
Era = Literal["legacy", "modern"]
CLIENTS = [("stdio", "legacy"), ("stdio", "modern"), ("http", "legacy"), ("http", "modern")]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "writer.md").write_text(WRITER, encoding="utf-8")
    return tmp_path


@contextlib.asynccontextmanager
async def served(
    root: Path,
    transport: Transport,
    era: Era,
    *args: str,
    fake: FakeGemini | None = None,
    **client: Any,
) -> AsyncIterator[Any]:
    """Serve ``root`` (with ``args``) over ``transport``; yield a client of ``era``."""
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(fake.serve()) if fake is not None else None
        env = cli_env(server)
        flags = ["--root", str(root), *args]
        if transport == "http":
            target: Any = stack.enter_context(http_server(root, *flags, env=env))
        else:
            target = stdio_params(root, *flags, env=env)
        errlog = root / "server-stderr.txt"
        async with connect(target, era=era, errlog=errlog, **client) as session:
            yield session


@pytest.mark.parametrize(("transport", "era"), CLIENTS)
async def test_a_direct_gated_write_runs_once_on_approve(
    workspace: Path, transport: Transport, era: Era
) -> None:
    forms: list[Any] = []
    async with served(
        workspace, transport, era, elicit=accept({"decision": "approve"}, forms)
    ) as c:
        result = await c.call_tool("write", {"path": "new.txt", "content": "approved"})
    assert not result.is_error, all_text(result)
    assert (workspace / "new.txt").read_text(encoding="utf-8") == "approved"
    [form] = forms
    assert "'write'" in form.message and '"content": "approved"' in form.message
    schema = form.requested_schema
    assert schema["required"] == ["decision"]
    decisions = [choice["const"] for choice in schema["properties"]["decision"]["oneOf"]]
    assert decisions == ["approve", "deny", "edit"]
    assert json.loads(schema["properties"]["arguments"]["default"]) == {
        "path": "new.txt",
        "content": "approved",
    }


REFUSALS = [
    ({"action": "decline"}, "declined in the MCP client"),
    ({"action": "cancel"}, "dismissed in the MCP client"),
    ({"content": {"decision": "deny", "reason": "not today"}}, "not today"),
    ({"content": {}}, "named no decision"),
    ({"content": {"decision": "yes"}}, "named no decision"),
    (
        {"content": {"decision": "approve", "arguments": '{"path": "other.txt", "content": "x"}'}},
        "the arguments were changed but the decision was approve",
    ),
    ({"content": {"decision": "edit", "arguments": "not json"}}, "not a JSON object"),
    ({"content": {"decision": "edit", "arguments": '{"path": "new.txt"}'}}, "was edited, but"),
]


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_anything_but_a_clear_approval_refuses_and_never_runs(
    workspace: Path, era: Era
) -> None:
    edited = json.dumps({"path": "edited.txt", "content": "from the human"})
    last = {"content": {"decision": "edit", "arguments": edited}}
    elicit = in_turn(*(reply for reply, _ in REFUSALS), last)
    async with served(workspace, "stdio", era, elicit=elicit) as c:
        refused = [
            await c.call_tool("write", {"path": "new.txt", "content": "from the model"})
            for _ in REFUSALS
        ]
        result = await c.call_tool("write", {"path": "new.txt", "content": "from the model"})
    for answer, (_, why) in zip(refused, REFUSALS, strict=True):
        assert answer.is_error
        assert why in all_text(answer)
        assert "The tool was not run." in all_text(answer)
    assert not result.is_error, all_text(result)  # an edit that fits runs the edited call
    assert not (workspace / "new.txt").exists()
    assert (workspace / "edited.txt").read_text(encoding="utf-8") == "from the human"


@pytest.mark.parametrize(("transport", "era"), [("stdio", "modern"), ("http", "legacy")])
async def test_a_client_without_elicitation_is_denied(
    workspace: Path, transport: Transport, era: Era
) -> None:
    async with served(workspace, transport, era) as c:
        write = await c.call_tool("write", {"path": "new.txt", "content": "x"})
        bash = await c.call_tool("bash", {"command": "echo hi > ran.txt"})
        question = await c.call_tool("question", {"questions": [{"question": "Why?"}]})
    assert write.is_error and bash.is_error
    assert all_text(write) == (
        "The user did not approve this call to 'write': the MCP client cannot ask (it has no "
        "form elicitation). The tool was not run."
    )
    assert question.is_error and "cannot ask" in all_text(question)
    assert not (workspace / "new.txt").exists()
    assert not (workspace / "ran.txt").exists()


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_the_question_tool_asks_through_elicitation(workspace: Path, era: Era) -> None:
    questions = [
        {"question": "Which colour?", "options": ["red", "blue"]},
        {"question": "Why?"},
    ]
    forms: list[Any] = []
    elicit = accept({"answer_1": "blue", "answer_2": "calmer"}, forms)
    async with served(workspace, "stdio", era, elicit=elicit) as c:
        answered = await c.call_tool("question", {"questions": questions})
    assert not answered.is_error, all_text(answered)
    assert json.loads(text_of(answered)) == {"Which colour?": "blue", "Why?": "calmer"}
    properties = forms[0].requested_schema["properties"]
    assert properties["answer_1"]["enum"] == ["red", "blue"]
    assert properties["answer_2"]["type"] == "string"


def _writer_script() -> list[Any]:
    """The writer agent's model: write a file, then report how it went (twice)."""
    call = function_call("write", {"path": "agent.txt", "content": "from the agent"})
    return [call, "Done as far as I could.", call, "Done as far as I could."]


@pytest.mark.parametrize(("transport", "era"), CLIENTS)
async def test_a_gated_write_inside_a_served_agent_elicits(
    workspace: Path, transport: Transport, era: Era
) -> None:
    fake = FakeGemini(_writer_script())
    forms: list[Any] = []
    elicit = in_turn({"action": "decline"}, {"content": {"decision": "approve"}}, seen=forms)
    flags = ("--agents", "agents")
    async with served(workspace, transport, era, *flags, fake=fake, elicit=elicit) as c:
        first = await c.call_tool("writer", {"task": "write agent.txt"})
        assert not (workspace / "agent.txt").exists()  # declined: never written
        second = await c.call_tool("writer", {"task": "write agent.txt"})
    denial = json.dumps(fake.requests[1].function_responses)
    assert "did not approve this call to 'write': declined in the MCP client" in denial
    assert "Agent 'writer' wants to run the tool 'write'" in forms[0].message
    assert (text_of(first), text_of(second)) == ("Done as far as I could.",) * 2
    assert (workspace / "agent.txt").read_text(encoding="utf-8") == "from the agent"
    assert "Wrote" in json.dumps(fake.requests[3].function_responses)
    assert len(forms) == 2  # asked once per run: the approved write ran once
    assert fake.failures == []


async def test_an_agent_of_a_client_without_elicitation_reads_the_denial(workspace: Path) -> None:
    fake = FakeGemini(_writer_script()[:2])
    async with served(workspace, "http", "legacy", "--agents", "agents", fake=fake) as c:
        result = await c.call_tool("writer", {"task": "write agent.txt"})
    assert text_of(result) == "Done as far as I could."
    assert not (workspace / "agent.txt").exists()
    denial = json.dumps(fake.requests[1].function_responses)
    assert "the MCP client cannot ask (it has no form elicitation)" in denial


async def test_a_task_asks_through_tasks_get_and_update(workspace: Path) -> None:
    fake = FakeGemini(_writer_script()[:2])
    forms: list[Any] = []
    approve = accept({"decision": "approve"}, forms)
    tasks = TasksClient(approve)
    flags = ("--agents", "agents")
    async with served(
        workspace, "http", "modern", *flags, fake=fake, elicit=approve, tasks=tasks
    ) as c:
        result = await c.call_tool("writer", {"task": "write agent.txt"})
    assert text_of(result) == "Done as far as I could."
    assert (workspace / "agent.txt").read_text(encoding="utf-8") == "from the agent"
    assert len(tasks.created) == 1 and len(forms) == 1
    assert any(poll.startswith("input_required: waiting for an answer") for poll in tasks.polls)
