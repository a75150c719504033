"""OpenTelemetry SDK set-up for the span tests: in-memory span and log exporters."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from opentelemetry import _logs, trace
from opentelemetry._logs import _internal as logs_internal
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once


@dataclass
class Telemetry:
    """What a test's runs exported."""

    spans: InMemorySpanExporter
    logs: InMemoryLogRecordExporter


def _reset() -> None:
    # The API lets each global provider be set once per process; tests reset that guard.
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    logs_internal._LOGGER_PROVIDER_SET_ONCE = Once()
    logs_internal._LOGGER_PROVIDER = None


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    """Install SDK tracer and logger providers as the global ones, then remove them."""
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    _reset()
    trace.set_tracer_provider(tracer_provider)
    _logs.set_logger_provider(logger_provider)
    yield Telemetry(spans, logs)
    _reset()
    tracer_provider.shutdown()
    logger_provider.shutdown()


@pytest.fixture
def spans(telemetry: Telemetry) -> InMemorySpanExporter:
    """The finished spans of the test's runs."""
    return telemetry.spans
