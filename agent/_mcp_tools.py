"""The toolkit's tools as MCP tools: their declarations, and a call run under the approval policy.

A direct call is judged by the same `ApprovalPolicy` a served agent's model meets: allowed
calls run at once; refused ones never run; a call the policy would ask about is put to the
client (`ServedCall.ask`) and runs only on an explicit approval, with edited arguments
checked against the tool's schema first. A tool that suspends on a `Request` (the
``question`` tool) is asked the same way and re-run with the answer.
"""

from __future__ import annotations

import base64
import inspect
import uuid
from typing import TYPE_CHECKING, Any

import mcp_types as types

from agent._approval import (
    ApprovalPolicy,
    Deny,
    approval_request,
    decide_call,
    denied,
    read_approval,
)
from agent._mcp_calls import error_result
from agent.events import ToolCall

if TYPE_CHECKING:
    from agent._mcp_calls import ServedCall
    from toolnexus import Tool, Toolkit, ToolResult

__all__ = ["MAX_ASKS", "ServedTools", "converted"]

MAX_ASKS = 10
"""Questions one direct call may ask in a row before it is given up."""


class ServedTools:
    """The tools of ``toolkit`` as MCP serves them, judged by ``policy``."""

    def __init__(self, toolkit: Toolkit, policy: ApprovalPolicy) -> None:
        self.toolkit = toolkit
        self.policy = policy

    def declared(self) -> list[types.Tool]:
        """Return each tool with the JSON Schema Gemini receives as ``parametersJsonSchema``."""
        from toolnexus.adapter import json_schema_parameters

        return [
            types.Tool(
                name=tool.name,
                description=tool.description or "",
                input_schema=json_schema_parameters(tool.input_schema),
            )
            for tool in self.toolkit
        ]

    async def run(self, name: str, args: dict[str, Any], call: ServedCall) -> types.CallToolResult:
        """Run one direct call: judge it, ask if need be, execute it, answer its questions."""
        import toolnexus as tn

        call.note(f"running {name}")
        tool = self.toolkit.get(name)
        if tool is not None:
            refusal, args = await self._judged(tool, args, call)
            if refusal is not None:
                return _error_of(refusal)
        context = tn.ToolContext(call_id=uuid.uuid4().hex)
        result = await tn.execute_async(self.toolkit, name, args, context)
        for _ in range(MAX_ASKS):
            request = result.pending
            if request is None:
                return converted(name, result)
            call.note(f"waiting for an answer to {name}")
            answer = await call.ask(request)
            call.note(f"running {name}")
            context = tn.ToolContext(call_id=context.call_id, answer=answer, request=request)
            result = await tn.execute_async(self.toolkit, name, args, context)
        return error_result(f"Tool {name!r} kept asking questions; it was given up.")

    async def _judged(
        self, tool: Tool, args: dict[str, Any], call: ServedCall
    ) -> tuple[ToolResult | None, dict[str, Any]]:
        """Return (the refusal, or ``None``; the arguments to run with)."""
        verdict = await _verdict(self.policy, tool, args)
        if isinstance(verdict, Deny):
            return denied(tool.name, verdict.reason, by="the approval policy"), args
        if verdict == "deny":
            return denied(tool.name, None, by="the approval policy"), args
        if verdict == "allow":
            return None, args
        request = approval_request(ToolCall(tool.name, args, None, 0), args, uuid.uuid4().hex)
        call.note(f"waiting for approval of {tool.name}")
        answer = await call.ask(request)
        call.note(f"running {tool.name}")
        refusal, edited = read_approval(tool, tool.name, answer)
        return refusal, args if edited is None else edited


async def _verdict(policy: ApprovalPolicy, tool: Tool, args: dict[str, Any]) -> str | Deny:
    """Return the policy's decision for a direct call; a rule that fails refuses the call."""
    if policy.rule_for(tool) == "allow":
        return "allow"
    try:
        return await decide_call(policy, tool, ToolCall(tool.name, args, None, 0), _rule)
    except Exception as exc:  # a broken rule must not let the call through
        return Deny(f"the approval rule failed ({type(exc).__name__}: {exc})")


async def _rule(name: str, rule: Any, *args: Any) -> Any:
    """Call an approval rule, sync or async."""
    value = rule(*args)
    return await value if inspect.isawaitable(value) else value


def _error_of(result: ToolResult) -> types.CallToolResult:
    return error_result(result.output)


def converted(name: str, result: ToolResult) -> types.CallToolResult:
    """Return a tool's result as MCP content: its text, then its images and audio."""
    if result.pending is not None:
        return error_result(f"Tool {name!r} still waits for an answer; it was given up.")
    content: list[types.ContentBlock] = [types.TextContent(text=result.output)]
    for attachment in result.attachments:
        if attachment.data is None:
            continue
        data = base64.b64encode(attachment.data).decode("ascii")
        if attachment.mime_type.startswith("image/"):
            content.append(types.ImageContent(data=data, mime_type=attachment.mime_type))
        elif attachment.mime_type.startswith("audio/"):
            content.append(types.AudioContent(data=data, mime_type=attachment.mime_type))
    return types.CallToolResult(content=content, is_error=result.is_error)
