"""Approval: the agent asks before it writes a file; one call is edited, one refused.

Run it from the repository root (offline: a scripted fake Gemini plays the model)::

    python examples/approval.py

The files go to a temporary directory that is removed at the end.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import toolnexus as tn
from agent import Agent, ApprovalPolicy, ClientSettings
from agent.testing import FakeGemini, function_call, reply
from toolnexus import Answer, Request


def reviewer(request: Request) -> Answer:
    """Plays the human: refuses to touch .env files, tones the greeting down."""
    call = request["data"]
    print(f"asked: {request['prompt']}")
    if call["args"]["path"].endswith(".env"):
        return {"id": request["id"], "ok": True, "data": {"approved": False, "reason": "secrets"}}
    calmer = {**call["args"], "content": call["args"]["content"].rstrip("!") + "."}
    return {"id": request["id"], "ok": True, "data": {"approved": True, "args": calmer}}


def main() -> None:
    fake = FakeGemini(
        [
            reply(
                function_call("write", {"path": "hello.txt", "content": "HELLO!!!"}),
                function_call("write", {"path": ".env", "content": "KEY=1"}),
            ),
            "I wrote hello.txt; I was not allowed to touch .env.",
        ]
    )
    with tempfile.TemporaryDirectory() as root:
        agent = Agent(
            toolkit=tn.build(root=root),
            approval=ApprovalPolicy(tools={"write": "ask", "bash": "ask"}),
            wait_for=reviewer,
            client=ClientSettings(api_key="offline", http_client=fake.http_client()),
        )
        result = agent.run_sync("Greet the world in hello.txt and set KEY in .env")
        for call in result.tool_calls:
            print(f"{call.name} {json.dumps(call.args)} -> {call.result.output}")
        print("files:", sorted(p.name for p in Path(root).iterdir()))
        print("hello.txt:", (Path(root) / "hello.txt").read_text())
        print(result.text)


if __name__ == "__main__":
    main()
