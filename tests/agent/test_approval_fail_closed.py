"""Approval fails closed: only an explicit yes runs a gated tool, whatever the answer's shape."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import toolnexus as tn
from agent import Agent, ApprovalPolicy, ClientSettings
from agent.testing import FakeGemini, function_call, reply

NOT_A_YES = [
    "no",
    "deny",
    "maybe",
    {"approved": "false"},
    {"approved": "true"},
    {"reason": "looks fine"},
    [],
    0,
    1,
    None,
]
"""Answer data that must never run the tool (``None``: the answer has no ``data`` but its
``ok`` is not the boolean True)."""


def agent_asking(root: Path, fake: FakeGemini, wait_for: Any) -> Agent:
    tools = tn.build(root=root, builtins={"tools": {"bash": False, "webfetch": False}})
    return Agent(
        toolkit=tools,
        approval=ApprovalPolicy(tools={"write": "ask"}),
        wait_for=wait_for,
        client=ClientSettings(api_key="k", http_client=fake.http_client()),
    )


def writing_fake() -> FakeGemini:
    call = function_call("write", {"path": "out.txt", "content": "pwned"})
    return FakeGemini([reply(call), "done"])


@pytest.mark.parametrize("data", NOT_A_YES, ids=repr)
async def test_no_answer_but_an_explicit_yes_runs_the_gated_tool(tmp_path: Path, data: Any) -> None:
    fake = writing_fake()

    def answer(request: dict[str, Any]) -> Any:
        if data is None:
            return {"id": request["id"], "ok": "yes"}  # ok must be the boolean True
        return {"id": request["id"], "ok": True, "data": data}

    result = await agent_asking(tmp_path, fake, answer).run("write it")
    assert not (tmp_path / "out.txt").exists()
    (call,) = result.tool_calls
    assert call.result.is_error and call.result.metadata == {"approval": "denied"}
    sent = fake.requests[1].function_responses[0]["response"]
    assert sent["isError"] is True and "not run" in sent["output"]


@pytest.mark.parametrize("reply_value", ["no", "yes", 0, [], {"approved": True}], ids=repr)
async def test_a_wait_for_that_returns_no_answer_mapping_denies(
    tmp_path: Path, reply_value: Any
) -> None:
    # Even "yes": an answer is a mapping bound to its request, not a bare value.
    fake = writing_fake()
    result = await agent_asking(tmp_path, fake, lambda request: reply_value).run("write it")
    assert not (tmp_path / "out.txt").exists()
    assert "could not be read" in result.tool_calls[0].result.output


@pytest.mark.parametrize(
    "data", [None, True, "yes", "Y", " approve ", {"approved": True}], ids=repr
)
async def test_an_explicit_yes_runs_it(tmp_path: Path, data: Any) -> None:
    fake = writing_fake()

    def answer(request: dict[str, Any]) -> Any:
        given: dict[str, Any] = {"id": request["id"], "ok": True}
        if data is not None:
            given["data"] = data
        return given

    await agent_asking(tmp_path, fake, answer).run("write it")
    assert (tmp_path / "out.txt").read_text() == "pwned"


async def test_the_rule_sees_the_arguments_a_before_tool_hook_left(tmp_path: Path) -> None:
    # The hook points the write elsewhere; the rule must judge that, not the model's call.
    from agent import Hooks

    seen: list[dict[str, Any]] = []

    def rule(call: Any) -> str:
        seen.append(dict(call.args))
        return "deny" if call.args["path"].startswith("../") else "allow"

    fake = writing_fake()
    tools = tn.build(root=tmp_path, builtins={"tools": {"bash": False, "webfetch": False}})
    agent = Agent(
        toolkit=tools,
        approval=ApprovalPolicy(tools={"write": rule}),
        capabilities=[Hooks(before_tool=lambda call: {**call.args, "path": "../escape.txt"})],
        client=ClientSettings(api_key="k", http_client=fake.http_client()),
    )
    result = await agent.run("write it")
    assert seen == [{"path": "../escape.txt", "content": "pwned"}]
    assert result.tool_calls[0].result.metadata == {"approval": "denied"}
    assert result.tool_calls[0].args["path"] == "../escape.txt"
