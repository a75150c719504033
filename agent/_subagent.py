"""Sub-agents: an `Agent` as a tool of another (`Agent.as_tool`).

The tool takes ``{"task": string}`` and runs the sub-agent's own conversation (its own model,
tools, system prompt and limits) on that task, with the parent run's ``deps``, through the
public `Agent.plan`. Started inside the parent's tool call, the run is the parent's child:
its events reach the parent's stream as `SubAgentEvent` events, its calls count against the
parent's usage limits as they happen, and its usage and cost are added to the parent's
result. When the sub-agent suspends (a question, an approval), the tool suspends on the same
request, carrying the sub-agent's transcript in ``Request.state``; the answer re-runs the
tool, which resumes the sub-agent where it stopped.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from toolnexus import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from agent._agent import Agent
    from agent._result import RunResult

__all__ = ["DEFAULT_MAX_DEPTH", "subagent_tool"]

DEFAULT_MAX_DEPTH = 3
"""How deep sub-agents may nest by default (a sub-agent of a sub-agent is depth 2)."""


def subagent_tool(agent: Agent, name: str, description: str, max_depth: int) -> Tool:
    """Return ``agent`` as a tool taking ``{"task": string}`` (see `Agent.as_tool`)."""

    async def handler(args: dict[str, Any], context: ToolContext) -> ToolResult:
        state = context.request.get("state") if context.request is not None else None
        if isinstance(state, dict) and context.answer is not None:
            plan = agent.plan(
                history=state.get("contents"), answer=context.answer, deps=context.deps, name=name
            )
        else:
            plan = agent.plan(str(args["task"]), deps=context.deps, name=name)
        if plan.depth > max_depth:
            return ToolResult(
                f"Sub-agent {name!r} was not started: sub-agents may nest {max_depth} deep "
                "at most. Do this task yourself.",
                is_error=True,
            )
        return _outcome(name, await plan.result())

    schema = {
        "type": "object",
        "properties": {
            "task": {
                "type": "string",
                "description": "The task, with everything the sub-agent needs to know.",
            }
        },
        "required": ["task"],
    }
    return Tool(name, handler, description, schema, source="agent")


def _outcome(name: str, result: RunResult) -> ToolResult:
    """Turn the sub-agent's result into the tool's: its answer, a suspension, or an error."""
    if result.status == "pending" and result.pending is not None:
        request = {**result.pending, "state": {"agent": name, "contents": result.contents}}
        return ToolResult(
            f"Sub-agent {name!r} is waiting for an answer.", metadata={"pending": request}
        )
    if result.status == "completed":
        output = getattr(result, "output", None)
        if output is not None and not isinstance(output, str):
            return ToolResult(_json(output))
        return ToolResult(result.text)
    detail = result.limit or result.reason or ""
    partial = f" Its last text: {result.text}" if result.text else ""
    return ToolResult(
        f"Sub-agent {name!r} did not finish ({result.status}: {detail}).{partial}",
        is_error=True,
    )


def _json(value: Any) -> str:
    dump = getattr(value, "model_dump_json", None)
    if callable(dump):
        return str(dump())
    return json.dumps(value, ensure_ascii=False, default=str)
