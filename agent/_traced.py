"""Tracing as a capability: the run's OpenTelemetry spans (see `agent._tracing`).

With no tracer provider set (or OpenTelemetry not installed) it stays out of the run, so a
run without tracing creates no span objects at all.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent._capability import AttemptSpan, Capability, Invocation, Proceed, RunCapability
from agent._tracing import RunTrace, tracing_on

if TYPE_CHECKING:
    from agent._result import RunResult
    from agent._state import RunState
    from agent.hooks import ModelRequest
    from toolnexus import ToolResult

__all__ = ["Tracing"]


class Tracing(Capability):
    """Records ``invoke_agent``, ``generate_content`` and ``execute_tool`` spans."""

    def start(self, run: RunState) -> RunCapability | None:
        if not tracing_on():
            return None
        trace = RunTrace(
            run.model.name,
            session=run.session,
            vertex=run.model.vertex,
            base_url=run.model.base_url,
            toolkit=run.toolkit,
            agent_name=run.name,
        )
        return _TracedRun(trace)


class _TracedRun(RunCapability):
    def __init__(self, trace: RunTrace) -> None:
        self.trace = trace

    @contextlib.contextmanager
    def attempt(self, run: RunState, request: ModelRequest, stream: bool) -> Iterator[AttemptSpan]:
        with self.trace.model_call(request, stream=stream) as span:
            yield span

    async def tool(self, run: RunState, invocation: Invocation, proceed: Proceed) -> ToolResult:
        async def running() -> tuple[dict[str, Any], ToolResult]:
            result = await proceed(invocation)
            return invocation.args, result

        _, result = await self.trace.tool_call(invocation.call, running())
        return result

    def close(self, run: RunState, result: RunResult | None, error: BaseException | None) -> None:
        if result is not None:
            self.trace.finish(result)
        self.trace.__exit__(type(error) if error else None, error, None)
