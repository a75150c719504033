"""OpenTelemetry spans of a run, per the GenAI semantic conventions; a no-op without OpenTelemetry.

Spans go through the global tracer provider (``opentelemetry.trace``), so whatever the
application configured receives them; with ``opentelemetry-api`` not installed, or no
provider set, nothing is recorded and the cost is a few attribute checks.

- ``invoke_agent`` (INTERNAL): one per run, the parent of the others; a child of the span
  current when the run started.
- ``generate_content {model}`` (CLIENT): one per model call attempt, with the model, token
  usage, finish reason and response id; a failed call carries ``error.type``.
- ``execute_tool {name}`` (INTERNAL): one per function call, with the tool name and call id;
  it is the current span while the tool runs, so the tool's own spans nest under it.

Prompt and response content (``gen_ai.input.messages``, ``gen_ai.output.messages``, tool
arguments and results) is recorded only when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
is ``true``, ``SPAN_ONLY`` or ``SPAN_AND_EVENT``. No header, URL or key is ever recorded.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Awaitable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

try:
    from opentelemetry import trace
except ImportError:  # the optional extra is not installed: every span is a no-op
    trace = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from agent._response import ModelResponse
    from agent._result import RunResult, Usage
    from agent.events import ToolCall
    from toolnexus import ToolResult

__all__ = ["CONTENT_VARIABLE", "ModelSpan", "RunTrace", "tracing_on"]

T = TypeVar("T")

CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The standard switch for recording message content on spans."""
_CONTENT_ON = frozenset({"true", "span_only", "span_and_event"})


def _content_on() -> bool:
    return os.environ.get(CONTENT_VARIABLE, "").strip().lower() in _CONTENT_ON


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


class ModelSpan:
    """The span of one model call; `RunTrace.model_call` ends it."""

    def __init__(self, span: Any, content: bool) -> None:
        self.span = span
        self.content = content

    def done(self, response: ModelResponse) -> None:
        """Record the response's model, usage, finish reason (and content when on)."""
        span = self.span
        if span is None or not span.is_recording():
            return
        attributes = _outcome(response.usage, response.finish_reason)
        attributes["gen_ai.usage.cache_read.input_tokens"] = response.usage.cached
        attributes["gen_ai.usage.reasoning.output_tokens"] = response.usage.thoughts
        if response.model_version:
            attributes["gen_ai.response.model"] = response.model_version
        response_id = getattr(response.raw, "response_id", None)
        if isinstance(response_id, str):
            attributes["gen_ai.response.id"] = response_id
        if self.content and response.content is not None:
            from agent._contents import to_dict

            attributes["gen_ai.output.messages"] = _json([to_dict(response.content)])
        span.set_attributes(attributes)


class RunTrace:
    """The spans of one run: ``invoke_agent`` and its model-call and tool-call children.

    Example::

        trace = RunTrace("gemini-2.5-flash", session="alice")
        with trace:                      # ends the run span, recording a failure
            with trace.model_call(contents) as span:
                ...
                span.done(response)
            trace.finish(result)
    """

    def __init__(
        self, model: str, *, session: str | None = None, vertex: bool = False, record: bool = True
    ) -> None:
        """Start the run's span (a no-op without OpenTelemetry, or with ``record=False``)."""
        self.model = model
        self.provider = "gcp.vertex_ai" if vertex else "gcp.gemini"
        self.content = _content_on()
        self.tracer: Any = None
        self.span: Any = None
        self.context: Any = None
        if trace is None or not record:
            return
        self.tracer = trace.get_tracer("agent")
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": self.provider,
            "gen_ai.request.model": model,
        }
        if session is not None:
            attributes["gen_ai.conversation.id"] = session
        self.span = self.tracer.start_span(
            "invoke_agent", kind=trace.SpanKind.INTERNAL, attributes=attributes
        )
        self.context = trace.set_span_in_context(self.span)

    def __enter__(self) -> RunTrace:
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        if self.span is None:
            return
        if isinstance(exc, Exception):
            _fail(self.span, exc)
            result = getattr(exc, "result", None)
            if result is not None:
                self.finish(result)
        self.span.end()

    async def __aenter__(self) -> RunTrace:
        return self

    async def __aexit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        self.__exit__(kind, exc, tb)

    def finish(self, result: RunResult) -> None:
        """Record the run's outcome and total usage on the run span."""
        span = self.span
        if span is None or not span.is_recording():
            return
        attributes = _outcome(result.usage, result.finish_reason)
        attributes["agent.run.status"] = result.status
        attributes["agent.run.turns"] = result.turns
        if result.limit:
            attributes["agent.run.limit"] = result.limit
        if result.cost.usd is not None:
            attributes["agent.run.cost_usd"] = result.cost.usd
        span.set_attributes(attributes)

    @contextlib.contextmanager
    def model_call(self, contents: list[Any]) -> Iterator[ModelSpan]:
        """Span one model call; the caller reports the response with `ModelSpan.done`."""
        if self.tracer is None:
            yield ModelSpan(None, False)
            return
        span = self.tracer.start_span(
            f"generate_content {self.model}",
            context=self.context,
            kind=trace.SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "generate_content",
                "gen_ai.provider.name": self.provider,
                "gen_ai.request.model": self.model,
            },
        )
        if self.content and span.is_recording():
            from agent._contents import to_dict

            span.set_attribute("gen_ai.input.messages", _json([to_dict(c) for c in contents]))
        try:
            yield ModelSpan(span, self.content)
        except Exception as exc:
            _fail(span, exc)
            raise
        finally:
            span.end()

    async def tool_call(
        self, call: ToolCall, running: Awaitable[tuple[dict[str, Any], ToolResult]]
    ) -> tuple[dict[str, Any], ToolResult]:
        """Await one function call under its span (the current span while the tool runs)."""
        if self.tracer is None:
            return await running
        span = self.tracer.start_span(
            f"execute_tool {call.name}",
            context=self.context,
            kind=trace.SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.type": "function",
            },
        )
        if call.id is not None:
            span.set_attribute("gen_ai.tool.call.id", call.id)
        with trace.use_span(span, end_on_exit=True, record_exception=False):
            try:
                args, result = await running
            except Exception as exc:
                _fail(span, exc)
                raise
            if span.is_recording():
                if result.is_error:
                    span.set_attribute("error.type", "tool_error")
                if self.content:
                    span.set_attribute("gen_ai.tool.call.arguments", _json(args))
                    span.set_attribute("gen_ai.tool.call.result", result.output)
        return args, result


def _outcome(usage: Usage, finish_reason: str | None) -> dict[str, Any]:
    """Return the token-usage and finish-reason attributes shared by run and model spans."""
    attributes: dict[str, Any] = {
        "gen_ai.usage.input_tokens": usage.prompt + usage.tool_use_prompt,
        "gen_ai.usage.output_tokens": usage.candidates + usage.thoughts,
    }
    if finish_reason:
        attributes["gen_ai.response.finish_reasons"] = [finish_reason]
    return attributes


def _fail(span: Any, exc: Exception) -> None:
    """Mark ``span`` failed with the exception's type (never its message: it may hold data)."""
    assert trace is not None
    code = getattr(exc, "status", None) or type(exc).__name__
    span.set_attribute("error.type", str(code))
    span.set_status(trace.Status(trace.StatusCode.ERROR, type(exc).__name__))


def tracing_on() -> bool:
    """Tell whether spans would be recorded: OpenTelemetry is there and a provider is set."""
    if trace is None:
        return False  # type: ignore[unreachable]
    provider = trace.get_tracer_provider()
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)
