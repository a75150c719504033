"""Export the agent's OpenTelemetry spans from the command line, set up by ``OTEL_*`` variables.

The library only emits spans (see the tracing docs); a program decides where they go. The
CLI is such a program: when ``OTEL_TRACES_EXPORTER`` (``otlp``, ``console`` or ``none``) or
an OTLP endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``)
is set and the ``otel`` extra is installed, it installs an SDK tracer provider that sends
the spans there; the exporter itself reads the other standard variables (headers, timeout,
protocol details), and ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES`` name the service
(``toolnexus-agent`` by default). ``console`` writes the spans to stderr, so stdout keeps
only the answer.

Telemetry must not slow the command down or bury its output: at exit the CLI waits at most
`SHUTDOWN_WAIT` seconds for the last spans to go out, and an endpoint that refuses or does
not answer is reported in one line on stderr (the SDK's own retry messages are kept quiet).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

__all__ = ["SHUTDOWN_WAIT", "export_from_env"]

SHUTDOWN_WAIT = 1.0
"""Seconds the CLI waits at exit for its spans to be exported before it gives up on them."""

_INSTALL = "pip install '.[otel]' from a clone of toolnexus-gemini"


class _Notice:
    """Writes one line on stderr about failed exports, however often they fail."""

    def __init__(self, where: str) -> None:
        self.where = where
        self._said = False
        self._lock = threading.Lock()

    def say(self, why: str) -> None:
        with self._lock:
            if self._said:
                return
            self._said = True
        sys.stderr.write(f"(OpenTelemetry: spans not exported to {self.where}: {why})\n")


def _watched(exporter: Any, notice: _Notice) -> Any:
    """Return ``exporter`` wrapped so that a failed export is reported (once)."""
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class Watched(SpanExporter):
        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            result: SpanExportResult = exporter.export(spans)
            if result is not SpanExportResult.SUCCESS:
                notice.say("the export failed; is the collector running?")
            return result

        def shutdown(self) -> None:
            exporter.shutdown()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return bool(exporter.force_flush(timeout_millis))

    return Watched()


def _endpoint() -> str:
    """Return the OTLP endpoint's ``host:port`` (never its path, query or credentials)."""
    url = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318"
    )
    parts = urlsplit(url)
    if parts.hostname is None:
        return "the OTLP endpoint"
    return f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname


def _otlp(notice: _Notice) -> Any | None:
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        sys.stderr.write(f"(the OTLP exporter is not installed: {_INSTALL})\n")
        return None
    # The exporter logs every retry at WARNING, which Python prints on stderr when nothing
    # configured logging; `notice` says it once instead.
    logging.getLogger("opentelemetry.exporter.otlp").setLevel(logging.CRITICAL)
    return _watched(OTLPSpanExporter(), notice)


def _bounded(shutdown: Callable[[], object], notice: _Notice) -> Callable[[], None]:
    """Return ``shutdown`` made to give up after `SHUTDOWN_WAIT` seconds."""

    def bounded() -> None:
        # In a daemon thread, so an export still waiting on the endpoint is abandoned
        # when the process exits instead of holding it up.
        worker = threading.Thread(target=shutdown, name="otel-shutdown", daemon=True)
        worker.start()
        worker.join(SHUTDOWN_WAIT)
        if worker.is_alive():
            notice.say(f"not done within {SHUTDOWN_WAIT:g} s; is the collector running?")

    return bounded


def export_from_env() -> Callable[[], None] | None:
    """Install a tracer provider as the ``OTEL_*`` variables ask; return its shutdown.

    Returns:
        A function that flushes and stops the exporters, waiting at most `SHUTDOWN_WAIT`
        seconds, or ``None`` when nothing was asked for (or OpenTelemetry's SDK is not
        installed: a line on stderr says so).
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
    # Shut down by the function returned here, never again at exit (unbounded there).
    provider = TracerProvider(resource=Resource.create(defaults), shutdown_on_exit=False)
    notice = _Notice(_endpoint())
    for name in names:
        if name == "console":
            exporter: Any = ConsoleSpanExporter(out=sys.stderr)
        elif name == "otlp":
            exporter = _otlp(notice)
            if exporter is None:
                continue
        else:
            sys.stderr.write(
                f"(OTEL_TRACES_EXPORTER={name!r} is not supported here; use otlp or console)\n"
            )
            continue
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return _bounded(provider.shutdown, notice)
