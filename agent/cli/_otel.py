"""Export the agent's OpenTelemetry spans from the command line, set up by ``OTEL_*`` variables.

The library only emits spans (see ``agent._tracing``); a program decides where they go. The
CLI is such a program: when ``OTEL_TRACES_EXPORTER`` (``otlp``, ``console`` or ``none``) or
an OTLP endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``)
is set and the ``otel`` extra is installed, it installs an SDK tracer provider that sends
the spans there; the exporter itself reads the other standard variables (headers, timeout,
protocol details), and ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES`` name the service
(``toolnexus-agent`` by default). ``console`` writes the spans to stderr, so stdout keeps
only the answer.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

__all__ = ["export_from_env"]

_INSTALL = "pip install 'toolnexus-gemini[otel]'"


def export_from_env() -> Callable[[], None] | None:
    """Install a tracer provider as the ``OTEL_*`` variables ask; return its shutdown.

    Returns:
        A function that flushes and stops the exporters, or ``None`` when nothing was asked
        for (or OpenTelemetry's SDK is not installed: a line on stderr says so).
    """
    chosen = os.environ.get("OTEL_TRACES_EXPORTER")
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    if chosen is None and endpoint is None:
        return None
    names = [n.strip() for n in (chosen or "otlp").split(",") if n.strip() not in ("", "none")]
    if not names:
        return None
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        sys.stderr.write(f"(OTEL_* is set but OpenTelemetry is not installed: {_INSTALL})\n")
        return None
    defaults = {} if "OTEL_SERVICE_NAME" in os.environ else {"service.name": "toolnexus-agent"}
    provider = TracerProvider(resource=Resource.create(defaults))
    for name in names:
        if name == "console":
            exporter: object = ConsoleSpanExporter(out=sys.stderr)
        elif name == "otlp":
            try:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                    OTLPSpanExporter,
                )
            except ImportError:
                sys.stderr.write(f"(the OTLP exporter is not installed: {_INSTALL})\n")
                continue
            exporter = OTLPSpanExporter()
        else:
            sys.stderr.write(
                f"(OTEL_TRACES_EXPORTER={name!r} is not supported here; use otlp or console)\n"
            )
            continue
        provider.add_span_processor(BatchSpanProcessor(exporter))  # type: ignore[arg-type]
    trace.set_tracer_provider(provider)
    return provider.shutdown
