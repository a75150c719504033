"""OpenTelemetry spans of a run, per the GenAI semantic conventions; a no-op without OpenTelemetry.

Spans go through the global tracer provider (``opentelemetry.trace``), so whatever the
application configured receives them. With ``opentelemetry-api`` not installed, or no provider
set (the API's default proxy), no span object is made at all and a run pays for one check.

- ``invoke_agent [{name}]`` (INTERNAL): one per run, the parent of the others; a child of the
  span current when the run started. A sub-agent (`Agent.as_tool`) is named after its tool.
- ``generate_content {model}`` (CLIENT): one per model call attempt, with the request's
  settings, the token usage, finish reason and response id; a failed call carries Gemini's
  error status as ``error.type`` and its message as the status description.
- ``execute_tool {name}`` (INTERNAL): one per function call; it is the current span while the
  tool runs, so the tool's own spans (and a sub-agent's run) nest under it. An error result
  marks it failed.

Content (``gen_ai.system_instructions``, ``gen_ai.input.messages``,
``gen_ai.output.messages``, tool arguments and results) is recorded only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` asks for it: ``SPAN_ONLY`` (or
``true``) on the spans, ``EVENT_ONLY`` as one ``gen_ai.client.inference.operation.details``
log event per model call (through the global logger provider), ``SPAN_AND_EVENT`` both.
Thought signatures are recorded by size and hash only. No header, URL path or key is ever
recorded.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import os
import time
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from agent import _semconv
from agent._capability import Invocation, Proceed, RunCapability
from agent._response import ModelResponse
from agent._retry import CallFailed
from agent.errors import ModelError

try:
    from opentelemetry import trace
except ImportError:  # the optional extra is not installed: every span is a no-op
    trace = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from agent._result import RunResult, Usage
    from agent._state import RunState
    from agent.hooks import ModelRequest
    from toolnexus import Toolkit, ToolResult

__all__ = ["CONTENT_VARIABLE", "EVENT_NAME", "ModelSpan", "RunTrace", "tracer"]

CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The standard switch for recording message content on spans and events."""
EVENT_NAME = "gen_ai.client.inference.operation.details"
"""The log event a model call emits when content capture includes events."""
_ON_SPANS = frozenset({"true", "span_only", "span_and_event"})
_AS_EVENTS = frozenset({"event_only", "span_and_event"})
_DESCRIPTION_CHARS = 500
"""A status description longer than this is cut (a backend shows it in one line)."""

_AVAILABLE: bool = trace is not None
"""Whether ``opentelemetry-api`` is installed."""

_INVOKED: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "agent_invoked_as", default=None
)
"""The name and description of the sub-agent tool being run here, for the run it starts."""


def _capture() -> tuple[bool, bool]:
    """Return (content on spans, content as events) as the environment asks."""
    mode = os.environ.get(CONTENT_VARIABLE, "").strip().lower()
    return mode in _ON_SPANS, mode in _AS_EVENTS


def tracer() -> Any:
    """Return the tracer of the installed tracer provider, or ``None`` without one.

    The API's own providers (its default proxy, the no-op one) drop every span: with them
    there is no tracer to use.
    """
    if not _AVAILABLE:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    return _tracer_of(provider)


@functools.lru_cache(maxsize=1)
def _tracer_of(provider: Any) -> Any:
    """Return ``provider``'s tracer for this package, made once per provider.

    The SDK makes a new tracer on each ``get_tracer`` call (and resets the process's
    warnings filters doing so), so every run of a process shares one.
    """
    return provider.get_tracer("agent")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


class ModelSpan:
    """The span of one model call; `RunTrace.attempt` starts and ends it."""

    def __init__(self, span: Any, run: RunTrace, *, stream: bool, content: dict[str, Any]) -> None:
        self.span = span
        self.run = run
        self.stream = stream
        self.started = time.monotonic()
        self.first_chunk: float | None = None
        self.content = content
        """The structured content of the call (for the event), when captured."""
        self.attributes: dict[str, Any] = {}
        """What the response added to the span (repeated on the event)."""

    def saw(self, item: object) -> None:
        """Note one item of the call's output; the `ModelResponse` ends the record."""
        if self.stream and self.first_chunk is None:
            # The first piece the stream delivered (a text or thought piece, or the
            # response itself when the stream carried neither).
            self.first_chunk = time.monotonic() - self.started
            self._set({"gen_ai.response.time_to_first_chunk": self.first_chunk})
        if isinstance(item, ModelResponse):
            self.done(item)

    def done(self, response: ModelResponse) -> None:
        """Record the response's model, usage, finish reason (and content when captured)."""
        if not self.span.is_recording():
            return
        reason = _semconv.finish_reason(
            response.finish_reason, calls=bool(response.calls), blocked=response.block_reason
        )
        attributes = _usage(response.usage)
        attributes["gen_ai.response.finish_reasons"] = [reason]
        attributes["gen_ai.usage.cache_read.input_tokens"] = response.usage.cached
        attributes["gen_ai.usage.reasoning.output_tokens"] = response.usage.thoughts
        if response.model_version:
            attributes["gen_ai.response.model"] = response.model_version
        response_id = getattr(response.raw, "response_id", None)
        if isinstance(response_id, str):
            attributes["gen_ai.response.id"] = response_id
        self._set(attributes)
        if self.run.content_on_spans or self.run.logger is not None:
            from agent._contents import to_dict

            content = to_dict(response.content) if response.content is not None else None
            self.content["gen_ai.output.messages"] = _semconv.output_messages(
                content, response.finish_reason, blocked=response.block_reason
            )
            if self.run.content_on_spans:
                self.span.set_attribute(
                    "gen_ai.output.messages", _json(self.content["gen_ai.output.messages"])
                )

    def failed(self, exc: Exception) -> None:
        """Mark the call failed with its error (see `_fail`)."""
        self.attributes["error.type"] = _fail(self.span, exc)

    def end(self, base: Mapping[str, Any]) -> None:
        """Emit the inference event (when asked for), then end the span."""
        if self.run.logger is not None and self.span.is_recording():
            self.run.emit({**base, **self.attributes, **self.content}, self.span)
        self.span.end()

    def _set(self, attributes: dict[str, Any]) -> None:
        self.attributes.update(attributes)
        self.span.set_attributes(attributes)


class RunTrace(RunCapability):
    """The spans of one run: ``invoke_agent`` and its model-call and tool-call children.

    The run capability of `agent._traced.Tracing`: its run span starts with it, each attempt
    of a model call and each tool call is spanned as the run reaches them, and ``close``
    ends the run span.
    """

    def __init__(
        self,
        tracer: Any,
        model: str,
        *,
        session: str | None = None,
        vertex: bool = False,
        base_url: str | None = None,
        toolkit: Toolkit | None = None,
        agent_name: str | None = None,
        agent_description: str | None = None,
    ) -> None:
        """Start the run's span.

        Args:
            tracer: The tracer of the installed provider (`tracer`).
            model: The model name requested.
            session: The session id (``gen_ai.conversation.id``), if any.
            vertex: The model is reached through Vertex AI.
            base_url: The endpoint the model calls (``server.address`` / ``server.port``).
            toolkit: The run's tools (their descriptions and sources).
            agent_name: ``gen_ai.agent.name``; by default the name of the sub-agent tool
                whose call started this run, if one did.
            agent_description: ``gen_ai.agent.description``, likewise.
        """
        assert trace is not None
        invoked = _INVOKED.get()
        if invoked is not None:
            _INVOKED.set(None)  # a run started by one of this agent's tools is not this agent
            agent_name = agent_name or invoked[0]
            agent_description = agent_description or invoked[1]
        self.tracer = tracer
        self.session = session
        self.toolkit = toolkit
        self.content_on_spans, events = _capture()
        self.logger: Any = None
        if events:
            from opentelemetry import _logs

            self.logger = _logs.get_logger("agent")
        self.base = _agent_attributes(model, vertex, base_url)
        """The attributes every span of the run carries."""
        self._described = False
        attributes: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", **self.base}
        if agent_name:
            attributes["gen_ai.agent.name"] = agent_name
        if agent_description:
            attributes["gen_ai.agent.description"] = agent_description
        if session is not None:
            attributes["gen_ai.conversation.id"] = session
        self.span = tracer.start_span(
            f"invoke_agent {agent_name}" if agent_name else "invoke_agent",
            kind=trace.SpanKind.INTERNAL,
            attributes=attributes,
        )
        self.context = trace.set_span_in_context(self.span)

    def close(self, run: RunState, result: RunResult | None, error: BaseException | None) -> None:
        """End the run span with the run's outcome, or its failure (and partial result)."""
        if result is not None:
            self._outcome(result)
        if isinstance(error, Exception):
            _fail(self.span, error)
            partial = getattr(error, "result", None)
            if partial is not None:
                self._outcome(partial)
        self.span.end()

    def _outcome(self, result: RunResult) -> None:
        """Record the run's outcome and total usage on the run span."""
        span = self.span
        if not span.is_recording():
            return
        attributes = _usage(result.usage)
        if result.finish_reason:
            attributes["gen_ai.response.finish_reasons"] = [
                _semconv.finish_reason(result.finish_reason)
            ]
        attributes["toolnexus.run.status"] = result.status
        attributes["toolnexus.run.turns"] = result.turns
        if result.limit:
            attributes["toolnexus.run.limit"] = result.limit
        if result.cost.usd is not None:
            attributes["toolnexus.run.cost_usd"] = result.cost.usd
        span.set_attributes(attributes)

    @contextlib.contextmanager
    def attempt(self, run: RunState, request: ModelRequest, stream: bool) -> Iterator[ModelSpan]:
        """Span one attempt of a model call over ``request`` (streamed if ``stream``).

        The loop hands the call's output to `ModelSpan.saw`.
        """
        assert trace is not None
        attributes = self._request_attributes(request, stream)
        span = self.tracer.start_span(
            f"generate_content {request.model}",
            context=self.context,
            kind=trace.SpanKind.CLIENT,
            attributes=attributes,
        )
        model_span = ModelSpan(span, self, stream=stream, content=self._content(request, span))
        try:
            yield model_span
        except Exception as exc:
            model_span.failed(exc)
            raise
        finally:
            model_span.end(attributes)

    async def tool(self, run: RunState, invocation: Invocation, proceed: Proceed) -> ToolResult:
        """Run one function call under its span, the current span while the tool runs."""
        assert trace is not None
        call = invocation.call
        tool = self.toolkit.get(call.name) if self.toolkit is not None else None
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.type": "function",
        }
        if call.id is not None:
            attributes["gen_ai.tool.call.id"] = call.id
        if tool is not None:
            attributes["toolnexus.tool.source"] = tool.source
            if tool.description:
                attributes["gen_ai.tool.description"] = tool.description
        span = self.tracer.start_span(
            f"execute_tool {call.name}",
            context=self.context,
            kind=trace.SpanKind.INTERNAL,
            attributes=attributes,
        )
        # A sub-agent's run reads who it is from here (see `RunTrace.__init__`).
        invoked = None
        if tool is not None and tool.source == "agent":
            invoked = _INVOKED.set((tool.name, tool.description))
        try:
            with trace.use_span(
                span, end_on_exit=True, record_exception=False, set_status_on_exception=False
            ):
                try:
                    result = await proceed(invocation)
                except Exception as exc:
                    _fail(span, exc)
                    raise
                if span.is_recording():
                    # The arguments the tool ran with: a wrapper after this one (a hook)
                    # may have changed them.
                    self._tool_outcome(span, invocation.args, result)
        finally:
            if invoked is not None:
                _INVOKED.reset(invoked)
        return result

    def _tool_outcome(self, span: Any, args: dict[str, Any], result: ToolResult) -> None:
        """Record a finished call: its error, and its arguments and result when captured."""
        assert trace is not None
        if self.content_on_spans:
            span.set_attribute("gen_ai.tool.call.arguments", _json(args))
        if result.is_error:
            span.set_attribute("error.type", _semconv.tool_error_type(result.output))
            # The error text can quote the tool's data: it is content, shown only when
            # content is captured.
            description = result.output[:_DESCRIPTION_CHARS] if self.content_on_spans else None
            span.set_status(trace.Status(trace.StatusCode.ERROR, description))
        elif self.content_on_spans:
            value = _semconv.tool_result(result.output)
            span.set_attribute("gen_ai.tool.call.result", _json(value))

    def emit(self, attributes: Mapping[str, Any], span: Any) -> None:
        """Emit one inference-details event, correlated with ``span``."""
        from opentelemetry._logs import LogRecord

        assert trace is not None
        try:
            record = LogRecord(
                event_name=EVENT_NAME,
                attributes={"gen_ai.operation.name": "generate_content", **attributes},
                context=trace.set_span_in_context(span),
            )
        except TypeError:  # an OpenTelemetry API older than named log events: none sent
            self.logger = None
            return
        self.logger.emit(record)

    def _request_attributes(self, request: ModelRequest, stream: bool) -> dict[str, Any]:
        """Return the inference span's attributes known before sending (and describe the run)."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "generate_content",
            **self.base,
            "gen_ai.request.model": request.model,
        }
        settings = _settings(request.config)
        attributes.update(settings)
        if stream:
            attributes["gen_ai.request.stream"] = True
        if self.session is not None:
            attributes["gen_ai.conversation.id"] = self.session
        if not self._described:
            # The agent's settings are those of its requests; the first one tells.
            self._described = True
            if settings:
                self.span.set_attributes(settings)
        return attributes

    def _content(self, request: ModelRequest, span: Any) -> dict[str, Any]:
        """Return the request's content as the conventions shape it (set on the span if asked)."""
        if not (self.content_on_spans or self.logger is not None) or not span.is_recording():
            return {}
        from agent._contents import to_dict

        content: dict[str, Any] = {
            "gen_ai.input.messages": _semconv.input_messages(
                to_dict(c) if not isinstance(c, Mapping) else c for c in request.contents
            )
        }
        system = _semconv.system_instructions(
            _plain(getattr(request.config, "system_instruction", None))
        )
        if system:
            content["gen_ai.system_instructions"] = system
        if self.content_on_spans:
            span.set_attributes({key: _json(value) for key, value in content.items()})
            if system and self.span.is_recording():
                self.span.set_attribute("gen_ai.system_instructions", _json(system))
        return content


def _plain(value: Any) -> Any:
    """Return an SDK value (a ``Content``, a ``Part``, a list of them) as wire JSON."""
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(mode="json", by_alias=True, exclude_none=True)
    return value


def _settings(config: Any) -> dict[str, Any]:
    """Return the ``gen_ai.request.*`` and ``gen_ai.output.type`` attributes of a config."""
    attributes: dict[str, Any] = {}
    for field, key in _REQUEST_FIELDS:
        value = getattr(config, field, None)
        if value is not None:
            attributes[key] = list(value) if isinstance(value, list | tuple) else value
    count = getattr(config, "candidate_count", None)
    if count is not None and count != 1:
        attributes["gen_ai.request.choice.count"] = count
    has_schema = (
        getattr(config, "response_json_schema", None) is not None
        or getattr(config, "response_schema", None) is not None
    )
    modalities = getattr(config, "response_modalities", None) or ()
    kind = _semconv.output_type(
        getattr(config, "response_mime_type", None),
        has_schema,
        [getattr(m, "value", m) for m in modalities],
    )
    if kind is not None:
        attributes["gen_ai.output.type"] = kind
    return attributes


_REQUEST_FIELDS = (
    ("temperature", "gen_ai.request.temperature"),
    ("max_output_tokens", "gen_ai.request.max_tokens"),
    ("top_p", "gen_ai.request.top_p"),
    ("top_k", "gen_ai.request.top_k"),
    ("stop_sequences", "gen_ai.request.stop_sequences"),
    ("seed", "gen_ai.request.seed"),
    ("presence_penalty", "gen_ai.request.presence_penalty"),
    ("frequency_penalty", "gen_ai.request.frequency_penalty"),
)


@functools.lru_cache(maxsize=32)
def _agent_attributes(model: str, vertex: bool, base_url: str | None) -> Mapping[str, Any]:
    """Return the attributes of every span of an agent's runs (the same each run: made once)."""
    return MappingProxyType(
        {
            "gen_ai.provider.name": "gcp.vertex_ai" if vertex else "gcp.gemini",
            "gen_ai.request.model": model,
            **_server(base_url),
        }
    )


def _server(base: str | None) -> dict[str, Any]:
    """Return ``server.address`` / ``server.port`` of the endpoint ``base``."""
    if not isinstance(base, str):
        return {}
    parts = urlsplit(base)
    if not parts.hostname:
        return {}
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return {"server.address": parts.hostname, "server.port": port}


def _usage(usage: Usage) -> dict[str, Any]:
    """Return the token-usage attributes shared by run and model spans."""
    return {
        "gen_ai.usage.input_tokens": usage.prompt + usage.tool_use_prompt,
        "gen_ai.usage.output_tokens": usage.candidates + usage.thoughts,
    }


def _fail(span: Any, exc: Exception) -> str:
    """Mark ``span`` failed; return its ``error.type``.

    A model call's error type is Gemini's status (``RESOURCE_EXHAUSTED``), else its HTTP
    code, and the status description is Gemini's message (the key scrubbed out). Any other
    exception is recorded by its type only: its message may hold the run's data.
    """
    assert trace is not None
    info: Any = exc.info if isinstance(exc, CallFailed) else exc
    if isinstance(exc, CallFailed | ModelError):
        kind = info.status or (str(info.code) if info.code is not None else "_OTHER")
        description: str | None = info.message[:_DESCRIPTION_CHARS] or None
    else:
        kind, description = type(exc).__qualname__, None
    span.set_attribute("error.type", kind)
    span.set_status(trace.Status(trace.StatusCode.ERROR, description))
    return kind
