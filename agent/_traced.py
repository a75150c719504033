"""Tracing as a capability: the run's OpenTelemetry spans (see `agent._tracing`).

With no tracer provider set (or OpenTelemetry not installed) it stays out of the run, so a
run without tracing creates no span objects at all. Until the application imports
OpenTelemetry (which setting a provider takes), this module loads none of it either.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from agent._capability import AttemptSpan, Capability, Invocation, Proceed, RunCapability

if TYPE_CHECKING:
    from agent._result import RunResult
    from agent._state import RunState
    from agent._tracing import RunTrace
    from agent.hooks import ModelRequest
    from toolnexus import ToolResult

__all__ = ["Tracing"]


class Tracing(Capability):
    """Records ``invoke_agent``, ``generate_content`` and ``execute_tool`` spans."""

    def start(self, run: RunState) -> RunCapability | None:
        if not _provider_possible():
            return None
        from agent._tracing import RunTrace, tracer

        on = tracer()
        if on is None:
            return None
        trace = RunTrace(
            on,
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
        with self.trace.tool_call(invocation.call) as span:
            result = await proceed(invocation)
            # The arguments the tool ran with: a wrapper after this one (a hook) may have
            # changed them.
            self.trace.tool_done(span, invocation.args, result)
        return result

    def close(self, run: RunState, result: RunResult | None, error: BaseException | None) -> None:
        if result is not None:
            self.trace.finish(result)
        self.trace.__exit__(type(error) if error else None, error, None)


def _provider_possible() -> bool:
    """Whether the application may have set a tracer provider (known without OpenTelemetry).

    A provider is set through ``opentelemetry.trace`` (so that module is loaded by then) or
    named in ``OTEL_PYTHON_TRACER_PROVIDER`` for the API to load; otherwise there is none.
    """
    return "opentelemetry.trace" in sys.modules or bool(
        os.environ.get("OTEL_PYTHON_TRACER_PROVIDER")
    )
