"""Tracing as a capability: the run's OpenTelemetry spans (see `agent._tracing`).

With no tracer provider set (or OpenTelemetry not installed) it stays out of the run, so a
run without tracing creates no span objects at all. Until the application imports
OpenTelemetry (which setting a provider takes), this module loads none of it either.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from agent._capability import Capability, RunCapability

if TYPE_CHECKING:
    from agent._state import RunState

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
        return RunTrace(
            on,
            run.model.name,
            session=run.session,
            vertex=run.model.vertex,
            base_url=run.model.base_url,
            toolkit=run.toolkit,
            agent_name=run.name,
        )


def _provider_possible() -> bool:
    """Whether the application may have set a tracer provider (known without OpenTelemetry).

    A provider is set through ``opentelemetry.trace`` (so that module is loaded by then) or
    named in ``OTEL_PYTHON_TRACER_PROVIDER`` for the API to load; otherwise there is none.
    """
    return "opentelemetry.trace" in sys.modules or bool(
        os.environ.get("OTEL_PYTHON_TRACER_PROVIDER")
    )
