"""Serve an agent over MCP, and be its client: approval comes as a form the client answers.

Run it from the repository root (offline: a scripted fake Gemini plays the model)::

    python examples/serve_agent.py

It starts itself a second time as the MCP server (``--serve``: `Agent.serve_mcp` over
stdio) and talks to it with the official ``mcp`` client. The agent's model wants to write
two files; the client denies the first and approves the second, so only one is written.
The agent's conversation goes on in a second call, with the ``session_id`` the first gave.
Files go to a temporary directory that is removed at the end.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any


def serve(folder: str) -> None:
    """The server: an agent that may write files in ``folder``, only when the client says yes."""
    import toolnexus as tn
    from agent import Agent, ApprovalPolicy, ClientSettings
    from agent.testing import FakeGemini, function_call

    fake = FakeGemini(
        [
            function_call("write", {"path": "draft.txt", "content": "rough draft"}),
            function_call("write", {"path": "final.txt", "content": "the final text"}),
            "I saved final.txt; the draft was refused.",
            "You asked me to save a draft and a final version.",
        ]
    )
    agent = Agent(
        toolkit=tn.build(root=folder),
        system_prompt="You keep notes in files.",
        approval=ApprovalPolicy(tools={"write": "ask"}),
        client=ClientSettings(api_key="test", http_client=fake.http_client()),
    )
    agent.serve_mcp("notes", "Keeps notes in files.")


async def approve_final_only(context: Any, params: Any) -> Any:
    """The client's human: sees each form, refuses drafts."""
    from mcp import types

    args = json.loads(params.requested_schema["properties"]["arguments"]["default"])
    decision = "deny" if "draft" in args["path"] else "approve"
    print(f"asked about {args['path']}: {decision}")
    content = {"decision": decision, "reason": "no drafts"}
    return types.ElicitResult(action="accept", content=content)


async def client(folder: str) -> tuple[str, str]:
    """The client: calls the agent twice, in one conversation; returns its two answers."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    server = StdioServerParameters(command=sys.executable, args=[__file__, "--serve", folder])
    ask = approve_final_only
    async with (
        stdio_client(server) as streams,
        ClientSession(*streams, elicitation_callback=ask) as s,
    ):
        await s.initialize()
        first = await s.call_tool("notes", {"task": "Save a draft, then the final text"})
        session_id = first.meta["toolnexus/session_id"]
        second = await s.call_tool("notes", {"task": "What did I ask?", "session_id": session_id})
    return first.content[0].text, second.content[0].text


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2])
    else:
        with tempfile.TemporaryDirectory() as folder:
            for answer in asyncio.run(client(folder)):
                print("agent:", answer)
            print("files:", sorted(path.name for path in Path(folder).iterdir()))
