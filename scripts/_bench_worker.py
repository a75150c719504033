"""One measured process of ``scripts/bench.py``: the raw-SDK floor or ``agent.Agent``.

Usage (driven by bench.py over stdin/stdout, one JSON line per command)::

    python scripts/_bench_worker.py floor pair http://127.0.0.1:PORT decls.json

The implementations: ``floor`` (raw SDK), ``ours`` (``agent.Agent``), and for the tracing
probe ``traced`` (ours with an OpenTelemetry SDK provider recording every span),
``nootel`` (ours with OpenTelemetry not importable) and ``floor-traced`` (the floor creating
by hand the same spans, with the same attributes, on the same provider: what the
OpenTelemetry SDK itself costs for them).

Commands on stdin: ``run`` (one measured run), ``quit`` (report peak RSS and exit).
The first line on stdout reports the import and cold-init times.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

_T0 = time.perf_counter_ns()

import _bench_scenarios as sc  # noqa: E402
import httpx  # noqa: E402

Runner = Callable[[], Awaitable[list[int]]]


def _stamp_hook(stamps: list[int]) -> Callable[[httpx.Request], Awaitable[None]]:
    async def hook(request: httpx.Request) -> None:
        stamps.append(time.perf_counter_ns())

    return hook


async def _floor(
    scenario: str,
    base_url: str,
    raw_decls: list[dict[str, Any]],
    traced: bool = False,
    transport: httpx.AsyncBaseTransport | None = None,
) -> tuple[Runner, int, int]:
    """Build the hand loop on the raw SDK; return (runner, import ns, init ns).

    With ``traced``, the loop creates the spans the agent creates (see `_Spans`). With a
    ``transport``, its requests go there instead of over the network.
    """
    start = time.perf_counter_ns()
    from google import genai
    from google.genai import types

    imported = time.perf_counter_ns()
    funcs = sc.functions(scenario)
    stamps: list[int] = []
    hooks = {"request": [_stamp_hook(stamps)]} if scenario == "long" else {}
    client = genai.Client(
        api_key="bench",
        http_options=types.HttpOptions(
            base_url=base_url,
            httpx_async_client=httpx.AsyncClient(event_hooks=hooks, transport=transport),
        ),
    )
    config = types.GenerateContentConfig(
        tools=[
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(
                        name=d["name"],
                        description=d.get("description"),
                        parameters_json_schema=d.get("parametersJsonSchema"),
                    )
                    for d in raw_decls
                ]
            )
        ],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    spans = _Spans(base_url, {d["name"]: d.get("description") for d in raw_decls}, traced)
    ready = time.perf_counter_ns()

    async def call(fc: types.FunctionCall) -> types.Part:
        with spans.tool(fc):
            fn = funcs[fc.name or ""]
            value = fn(**(fc.args or {}))
            if asyncio.iscoroutine(value):
                value = await value
        return types.Part(
            function_response=types.FunctionResponse(
                id=fc.id, name=fc.name, response={"result": value}
            )
        )

    async def run() -> list[int]:
        stamps.clear()
        contents: list[types.Content] = [
            types.Content(role="user", parts=[types.Part(text=sc.prompt(scenario))])
        ]
        with spans.run() as turns:
            while True:
                with spans.model() as done:
                    response = await client.aio.models.generate_content(
                        model=sc.MODEL, contents=contents, config=config
                    )
                    done(response)
                turns.append(response)
                calls = response.function_calls
                if not calls:
                    assert response.text, "the floor got no final answer"
                    return list(stamps)
                assert response.candidates and response.candidates[0].content
                contents.append(response.candidates[0].content)
                parts = await asyncio.gather(*(call(fc) for fc in calls))
                contents.append(types.Content(role="user", parts=list(parts)))

    return run, imported - start, ready - imported


def _ignore(response: Any) -> None:
    """Take no note of a response (the untraced floor)."""


class _Spans:
    """The spans `agent.Agent` records for a run, made by hand for the traced floor.

    The same names, kinds, parents and attributes (GenAI conventions, no content): one
    ``invoke_agent`` per run, one ``generate_content`` per model call, one ``execute_tool``
    per function call (the current span while it runs). Without ``traced`` nothing is made.
    """

    def __init__(self, base_url: str, descriptions: dict[str, Any], traced: bool) -> None:
        self.descriptions = descriptions
        self.tracer: Any = None
        self.context: Any = None
        if traced:
            from opentelemetry import trace

            self.trace = trace
            self.tracer = trace.get_tracer("bench")
            port = int(base_url.rsplit(":", 1)[1])
            self.base = {
                "gen_ai.provider.name": "gcp.gemini",
                "gen_ai.request.model": sc.MODEL,
                "server.address": "127.0.0.1",
                "server.port": port,
            }

    def run(self) -> contextlib.AbstractContextManager[list[Any]]:
        """Span the run (a plain list of the responses when not traced)."""
        return self._run() if self.tracer is not None else contextlib.nullcontext([])

    def model(self) -> contextlib.AbstractContextManager[Callable[[Any], None]]:
        """Span one model call; the block hands the response to the callable it gets."""
        return self._model() if self.tracer is not None else contextlib.nullcontext(_ignore)

    def tool(self, fc: Any) -> contextlib.AbstractContextManager[None]:
        """Span one function call, the current span while it runs."""
        return self._tool(fc) if self.tracer is not None else contextlib.nullcontext()

    @contextlib.contextmanager
    def _run(self) -> Iterator[list[Any]]:
        responses: list[Any] = []
        span = self.tracer.start_span(
            "invoke_agent",
            kind=self.trace.SpanKind.INTERNAL,
            attributes={"gen_ai.operation.name": "invoke_agent", **self.base},
        )
        self.context = self.trace.set_span_in_context(span)
        try:
            yield responses
        finally:
            usage = [r.usage_metadata for r in responses if r.usage_metadata is not None]
            span.set_attributes(
                {
                    "gen_ai.usage.input_tokens": sum(u.prompt_token_count or 0 for u in usage),
                    "gen_ai.usage.output_tokens": sum(u.candidates_token_count or 0 for u in usage),
                    "gen_ai.response.finish_reasons": ["stop"],
                    "toolnexus.run.status": "completed",
                    "toolnexus.run.turns": len(responses),
                    "toolnexus.run.cost_usd": 0.0,
                }
            )
            span.end()

    @contextlib.contextmanager
    def _model(self) -> Iterator[Callable[[Any], None]]:
        attributes = {"gen_ai.operation.name": "generate_content", **self.base}
        span = self.tracer.start_span(
            f"generate_content {sc.MODEL}",
            context=self.context,
            kind=self.trace.SpanKind.CLIENT,
            attributes=attributes,
        )

        def done(response: Any) -> None:
            usage = response.usage_metadata
            span.set_attributes(
                {
                    "gen_ai.usage.input_tokens": usage.prompt_token_count or 0,
                    "gen_ai.usage.output_tokens": usage.candidates_token_count or 0,
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.usage.cache_read.input_tokens": usage.cached_content_token_count or 0,
                    "gen_ai.usage.reasoning.output_tokens": usage.thoughts_token_count or 0,
                    "gen_ai.response.model": response.model_version or sc.MODEL,
                    "gen_ai.response.id": response.response_id or "",
                }
            )

        try:
            yield done
        finally:
            span.end()

    @contextlib.contextmanager
    def _tool(self, fc: Any) -> Iterator[None]:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": fc.name,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.id": fc.id or "",
            "toolnexus.tool.source": "native",
            "gen_ai.tool.description": self.descriptions.get(fc.name) or "",
        }
        span = self.tracer.start_span(
            f"execute_tool {fc.name}",
            context=self.context,
            kind=self.trace.SpanKind.INTERNAL,
            attributes=attributes,
        )
        with self.trace.use_span(
            span, end_on_exit=True, record_exception=False, set_status_on_exception=False
        ):
            yield


async def _ours(
    scenario: str, base_url: str, transport: httpx.AsyncBaseTransport | None = None
) -> tuple[Runner, int, int]:
    """Build the toolkit and the Agent; return (runner, import ns, init ns).

    With a ``transport``, its requests go there instead of over the network.
    """
    start = time.perf_counter_ns()
    import toolnexus as tn
    from agent import Agent, ClientSettings, RunLimits

    imported = time.perf_counter_ns()
    funcs = sc.functions(scenario)
    # The scenario's sync functions only compute, as the floor's inline calls do: they say so.
    tools = [tn.define_tool(fn, name=name, inline=True) for name, fn in funcs.items()]
    toolkit = tn.build(tools=tools) if scenario == "wide" else tn.toolkit(tools)
    stamps: list[int] = []
    http = None
    if scenario == "long" or transport is not None:
        hooks = {"request": [_stamp_hook(stamps)]} if scenario == "long" else {}
        http = httpx.AsyncClient(event_hooks=hooks, transport=transport)
    agent = Agent(
        model=sc.MODEL,
        toolkit=toolkit,
        client=ClientSettings(api_key="bench", base_url=base_url, http_client=http),
        limits=RunLimits(max_turns=sc.LONG_TURNS + 10),
    )
    ready = time.perf_counter_ns()

    async def run() -> list[int]:
        stamps.clear()
        result = await agent.run(sc.prompt(scenario))
        assert result.text and result.text.startswith("Done"), f"ours ended with {result.text!r}"
        return list(stamps)

    return run, imported - start, ready - imported


def _tracing(impl: str) -> None:
    """Set up the tracing side of the ``traced`` and ``nootel`` implementations."""
    if impl == "nootel":
        sys.modules["opentelemetry"] = None  # type: ignore[assignment]
    elif impl in ("traced", "floor-traced"):
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter

        class Discard(SpanExporter):  # the spans are built and exported, then dropped
            def export(self, spans: Any) -> Any:
                from opentelemetry.sdk.trace.export import SpanExportResult

                return SpanExportResult.SUCCESS

        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(Discard()))
        trace.set_tracer_provider(provider)


async def _main(impl: str, scenario: str, base_url: str, decls: list[dict[str, Any]]) -> None:
    _tracing(impl)
    if impl in ("floor", "floor-traced"):
        run, import_ns, init_ns = await _floor(scenario, base_url, decls, impl == "floor-traced")
    else:
        run, import_ns, init_ns = await _ours(scenario, base_url)
    print(json.dumps({"import_ns": import_ns, "init_ns": init_ns}), flush=True)
    while True:
        # A blocking read: nothing runs on the loop between two runs anyway.
        command = sys.stdin.readline().strip()
        if command != "run":
            break
        begin = time.perf_counter_ns()
        stamps = await run()
        end = time.perf_counter_ns()
        print(json.dumps({"ns": end - begin, "stamps": [s - begin for s in stamps]}), flush=True)
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"maxrss_kib": rss_kib, "total_ns": time.perf_counter_ns() - _T0}), flush=True)


if __name__ == "__main__":
    _impl, _scenario, _url, _decls = sys.argv[1:5]
    asyncio.run(_main(_impl, _scenario, _url, json.loads(Path(_decls).read_text(encoding="utf-8"))))
