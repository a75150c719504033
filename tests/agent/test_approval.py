"""Approval: policies, inline answers, edited arguments, and a resume in another process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import toolnexus as tn
from agent import Agent, ApprovalPolicy, ClientSettings, ConfigurationError, Deny
from agent.events import PendingEvent, ToolCall
from agent.testing import FakeGemini, function_call, reply
from toolnexus import Answer, Request

ROOT = Path(__file__).resolve().parents[2]


def write_call(path: str = "notes.txt", content: str = "hello") -> Any:
    return function_call("write", {"path": path, "content": content})


def builtins_in(root: Path) -> tn.Toolkit:
    return tn.build(builtins={"tools": {"bash": False, "webfetch": False}}, root=root)


def answering(data: dict[str, Any], seen: list[Request] | None = None) -> Any:
    def wait_for(request: Request) -> Answer:
        if seen is not None:
            seen.append(request)
        return {"id": request["id"], "ok": True, "data": data}

    return wait_for


def test_denied_the_model_sees_the_reason_and_nothing_changed(tmp_path: Path) -> None:
    fake = FakeGemini([write_call(), "Understood, I will not write."])
    seen: list[Request] = []
    agent = Agent(
        toolkit=builtins_in(tmp_path),
        approval=ApprovalPolicy(tools={"write": "ask"}),
        wait_for=answering({"approved": False, "reason": "not on a Friday"}, seen),
        client=ClientSettings(api_key="test", http_client=fake.http_client()),
    )
    result = agent.run_sync("Write the notes")
    assert result.status == "completed"
    (request,) = seen
    assert request["kind"] == "approval"
    assert request["data"] == {"tool": "write", "args": {"path": "notes.txt", "content": "hello"}}
    sent = fake.requests[1].function_responses[0]["response"]
    assert sent["isError"] is True
    assert "not on a Friday" in sent["output"] and "not run" in sent["output"]
    assert list(tmp_path.iterdir()) == []
    assert result.tool_calls[0].result.metadata == {"approval": "denied"}


def test_approved_with_edited_arguments_runs_with_the_edits(tmp_path: Path) -> None:
    fake = FakeGemini([write_call(content="rm -rf"), "Written."])
    edits = {"approved": True, "args": {"path": "notes.txt", "content": "safe text"}}
    agent = Agent(
        toolkit=builtins_in(tmp_path),
        approval=ApprovalPolicy(tools={"write": "ask"}),
        wait_for=answering(edits),
        client=ClientSettings(api_key="test", http_client=fake.http_client()),
    )
    result = agent.run_sync("Write the notes")
    assert (tmp_path / "notes.txt").read_text() == "safe text"
    assert result.tool_calls[0].args == {"path": "notes.txt", "content": "safe text"}
    assert fake.requests[1].function_responses[0]["response"]["isError"] is False


def test_edited_arguments_that_break_the_schema_are_refused(tmp_path: Path) -> None:
    fake = FakeGemini([write_call(), "Oh well."])
    agent = Agent(
        toolkit=builtins_in(tmp_path),
        approval="ask",
        wait_for=answering({"approved": True, "args": {"path": 3}}),
        client=ClientSettings(api_key="test", http_client=fake.http_client()),
    )
    result = agent.run_sync("Write the notes")
    output = result.tool_calls[0].result.output
    assert "edited" in output and "content" in output and "not run" in output
    assert list(tmp_path.iterdir()) == []


def test_requires_approval_asks_and_a_policy_decides_by_name_source_or_function() -> None:
    ran: list[str] = []

    @tn.define_tool(requires_approval=True)
    def launch(target: str) -> str:
        """Launch at a target."""
        ran.append(target)
        return f"launched at {target}"

    @tn.define_tool
    def shell(command: str) -> str:
        """Run a command."""
        ran.append(command)
        return "ok"

    assert launch.requires_approval and not shell.requires_approval

    def shell_rule(call: ToolCall) -> Any:
        return "allow" if call.args["command"].startswith("ls") else Deny("only ls here")

    script = [
        reply(
            function_call("launch", {"target": "moon"}),
            function_call("shell", {"command": "ls"}),
            function_call("shell", {"command": "rm x"}),
        ),
        "Done.",
    ]
    fake = FakeGemini(script)
    agent = Agent(
        toolkit=tn.toolkit([launch, shell]),
        approval=ApprovalPolicy(tools={"shell": shell_rule}),
        client=ClientSettings(api_key="test", http_client=fake.http_client()),
    )
    result = agent.run_sync("Go")
    assert result.status == "pending"
    assert result.pending is not None and result.pending["data"]["tool"] == "launch"
    assert ran == ["ls"]  # the other calls of the turn ran (or were refused) as usual
    denied = result.tool_calls[2].result
    assert denied.is_error and "only ls here" in denied.output
    answer: Answer = {"id": result.pending["id"], "ok": True, "data": {"approved": True}}
    resumed = agent.run_sync(history=result.contents, answer=answer)
    assert resumed.status == "completed"
    assert ran == ["ls", "moon"]
    sent = [r["response"]["output"] for r in fake.requests[1].function_responses]
    assert sent[0] == "launched at moon" and sent[1] == "ok"

    by_source = Agent(
        toolkit=tn.toolkit([shell]),
        approval=ApprovalPolicy(sources={"native": "deny"}),
        client=ClientSettings(
            api_key="test",
            http_client=FakeGemini([function_call("shell", {"command": "ls"}), "ok"]).http_client(),
        ),
    )
    refused = by_source.run_sync("Go").tool_calls[0].result
    assert refused.is_error and "approval policy" in refused.output


def test_a_rule_that_returns_nonsense_is_a_configuration_error() -> None:
    @tn.define_tool
    def noop() -> str:
        """Nothing."""
        return ""

    fake = FakeGemini([function_call("noop", {})])
    agent = Agent(
        toolkit=tn.toolkit([noop]),
        approval=lambda call: "maybe",
        client=ClientSettings(api_key="test", http_client=fake.http_client()),
    )
    with pytest.raises(ConfigurationError, match="'maybe'"):
        agent.run_sync("Go")


RESUME = """import json, sys
import toolnexus as tn
from agent import Agent, ApprovalPolicy, ClientSettings

saved, root, base_url = sys.argv[1:]
state = json.loads(open(saved).read())
agent = Agent(
    toolkit=tn.build(builtins={"tools": {"bash": False, "webfetch": False}}, root=root),
    approval=ApprovalPolicy(tools={"write": "ask"}),
    client=ClientSettings(api_key="test", base_url=base_url),
)
answer = {"id": state["request"]["id"], "ok": True, "data": {"approved": True}}
result = agent.run_sync(history=state["contents"], answer=answer)
print(result.status, result.text)
"""


async def test_answered_from_another_process_after_a_restart(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    fake = FakeGemini([write_call(), "Saved your notes."])
    with fake.serve() as server:
        agent = Agent(
            toolkit=builtins_in(workspace),
            approval=ApprovalPolicy(tools={"write": "ask"}),
            client=ClientSettings(api_key="test", base_url=server.base_url),
        )
        events = [event async for event in agent.stream("Write the notes")]
        await agent.aclose()
        (pending,) = [e for e in events if isinstance(e, PendingEvent)]
        assert pending.request["kind"] == "approval"
        assert pending.call.name == "write"
        saved = tmp_path / "saved.json"
        result = events[-1].result  # type: ignore[union-attr]
        saved.write_text(json.dumps({"contents": result.contents, "request": result.pending}))
        assert list(workspace.iterdir()) == []
        (tmp_path / "resume.py").write_text(RESUME)
        script = tmp_path / "resume.py"
        done = subprocess.run(
            [sys.executable, str(script), str(saved), str(workspace), server.base_url],
            capture_output=True,
            text=True,
            timeout=120,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "completed Saved your notes.\n"
    assert (workspace / "notes.txt").read_text() == "hello"
    response = fake.requests[1].function_responses[0]["response"]
    assert response["isError"] is False and "5" in response["output"]


def _pending_write(tmp_path: Path, fake: FakeGemini, store: Any = None) -> Agent:
    return Agent(
        toolkit=builtins_in(tmp_path),
        approval=ApprovalPolicy(tools={"write": "ask"}),
        store=store,
        client=ClientSettings(api_key="test", http_client=fake.http_client()),
    )


MALFORMED = ["maybe", {"reason": "x"}, 0, {"approved": "false"}, []]


async def test_a_malformed_answer_is_refused_before_anything_runs(tmp_path: Path) -> None:
    from agent import MemoryStore

    store = MemoryStore()
    fake = FakeGemini([write_call(), write_call(), "Saved."])
    agent = _pending_write(tmp_path, fake, store)
    first = await agent.run("Write the notes")
    on_session = await agent.run("Write the notes", session="s")
    assert first.pending is not None and on_session.pending is not None
    saved = await store.get("s")
    asked = len(fake.requests)
    for data in MALFORMED:
        answer: Any = {"id": first.pending["id"], "ok": True, "data": data}
        with pytest.raises(ConfigurationError, match="neither approves nor refuses") as info:
            await agent.run(history=first.contents, answer=answer)
        assert '{"ok": true}' in str(info.value)  # names the shapes it takes
        session_answer: Any = {**answer, "id": on_session.pending["id"]}
        with pytest.raises(ConfigurationError, match="nothing ran"):
            await agent.run(session="s", answer=session_answer)
    with pytest.raises(ConfigurationError, match="must be a mapping"):
        await agent.run(history=first.contents, answer="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="boolean 'ok'"):
        await agent.run(history=first.contents, answer={"id": first.pending["id"], "ok": 1})  # type: ignore[typeddict-item]
    assert len(fake.requests) == asked  # no request was sent
    assert list(tmp_path.iterdir()) == []  # the tool did not run
    assert await store.get("s") == saved  # the session still waits, unchanged
    # The request still waits: a well-formed answer runs the call.
    yes: Answer = {"id": on_session.pending["id"], "ok": True, "data": "yes"}
    done = await agent.run(session="s", answer=yes)
    assert done.status == "completed"
    assert (tmp_path / "notes.txt").read_text() == "hello"
