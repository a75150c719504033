"""The one way the commands show a run's events: answer text, thoughts, tool calls, retries.

``run``, ``chat`` and ``demo`` show a streamed run through `EventPrinter`; ``batch`` shows
a task's retries with `describe_retry`. So a tool call, a tool result and a retry read the
same in every command::

    (thinking) The user wants a greeting; load the skill first.
    -> skill {"name": "hello-world"}
    <- skill: <skill_content name="hello-world"> (+20 lines)
    (model call failed: UNAVAILABLE; retrying after 1.3 s)
    -> bash {"command": "false"}
    <- bash (error): exit code 1
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TextIO

from agent.cli._secrets import StreamScrubber, scrub_text
from agent.cli._style import Role, Style
from agent.events import (
    CacheEvent,
    CodeExecutionEvent,
    DoneEvent,
    Event,
    FallbackEvent,
    GroundingEvent,
    RetryEvent,
    SubAgentEvent,
    TextEvent,
    ThoughtEvent,
    ToolCall,
    ToolCallEvent,
    ToolResultEvent,
)

if TYPE_CHECKING:
    from agent import Agent, Cost, Prompt, RunResult
    from toolnexus import ToolResult

__all__ = [
    "EventPrinter",
    "describe_cache",
    "describe_call",
    "describe_cost",
    "describe_result",
    "describe_retry",
    "stream_run",
]

_WIDTH = 100
"""The longest tool-call or tool-result line shown; longer ones end in ``...``."""


def describe_call(call: ToolCall) -> str:
    """Return the line for a tool call: ``-> name {"arg": "value"}``."""
    return f"-> {call.name} {_shorten(json.dumps(call.args, ensure_ascii=False))}"


def describe_result(call: ToolCall, result: ToolResult) -> str:
    """Return the line for a tool result: ``<- name: first line (+N lines)``.

    A failed call reads ``<- name (error): ...``; a call waiting on a human reads
    ``<- name: (waiting for an answer)``.
    """
    if result.pending is not None:
        return f"<- {call.name}: (waiting for an answer)"
    lines = result.output.strip().splitlines()
    summary = _shorten(lines[0]) if lines else "(empty)"
    if len(lines) > 1:
        summary += f" (+{len(lines) - 1} lines)"
    label = f"{call.name} (error)" if result.is_error else call.name
    return f"<- {label}: {summary}"


def describe_retry(retry: RetryEvent | FallbackEvent) -> str:
    """Return the line for a retried model call, or one sent to a fallback model.

    The same words serve a line shown while the retry waits (``run``, ``chat``) and one
    shown after the task finished (``batch``)::

        (model call failed: UNAVAILABLE; retrying after 1.3 s)
        (gemini-3.1-pro-preview failed: UNAVAILABLE; turn 2 goes to gemini-3-flash-preview)
    """
    if isinstance(retry, FallbackEvent):
        return f"({retry.model} failed: {retry.status}; turn {retry.turn} goes to {retry.fallback})"
    return f"(model call failed: {retry.status}; retrying after {retry.delay:.1f} s)"


def describe_cost(cost: Cost) -> str | None:
    """Return the line for what a run cost, or ``None`` if nothing was billed or priced.

    ``cost: $0.000410 (gemini-2.5-flash prices of 2026-09-20)``, with ``~`` before the
    figure when it is an estimate.
    """
    if cost.usd is None or not cost.turns:
        return None
    mark = "~" if cost.estimated else ""
    line = f"cost: {mark}${cost.usd:.6f} ({cost.model} prices of {cost.prices_date})"
    if cost.cache_storage:
        line += (
            f"; context cache: storage ${cost.cache_storage:.6f}, "
            f"saved ${cost.cache_saving:.6f} net"
        )
    return line


def describe_cache(event: CacheEvent) -> str:
    """Return the line for a change of the run's context cache.

    ``(context cache created: cachedContents/abc, 3,812 tokens)``
    """
    what = f"(context cache {event.action}: {event.name or 'none'}"
    if event.tokens:
        what += f", {event.tokens:,} tokens"
    if event.action in ("recreated", "failed") and event.reason:
        what += f"; {_shorten(event.reason)}"
    return what + ")"


def _shorten(text: str) -> str:
    return text if len(text) <= _WIDTH else text[: _WIDTH - 3] + "..."


class EventPrinter:
    """Shows a run's events as they arrive: answer text on ``out``, everything else on ``err``.

    Text is written as it streams; a run of thought pieces is shown as one ``(thinking)``
    line; tool calls, results and retries get the lines of `describe_call`,
    `describe_result` and `describe_retry`. Call `close` after the last event. The API key
    is scrubbed from everything shown, a key split over two text pieces included.

    Args:
        out: Where the model's text goes (stdout, so ``> answer.txt`` keeps just the answer).
        err: Where the rest goes; may be ``out`` itself for a single transcript.
        turns: Also show a ``--- turn N ---`` line when a model turn starts.
        style: Colours the lines by kind (see `agent.cli._style`); plain text by default.
    """

    def __init__(
        self, out: TextIO, err: TextIO, *, turns: bool = False, style: Style | None = None
    ) -> None:
        self._out = out
        self._err = err
        self._turns = turns
        self._style = style or Style()
        self._turn = 0
        self._at_line_start = True
        self._thinking: list[str] = []
        self._scrubber = StreamScrubber()

    def show(self, event: Event) -> None:
        """Show one event of the run."""
        if isinstance(event, SubAgentEvent):
            self._show_nested(event)
            return
        turn = event.turn if isinstance(event, TextEvent | ThoughtEvent | ToolCallEvent) else 0
        if self._turns and turn > self._turn:
            self._turn = turn
            self._line(f"\n--- turn {turn} ---", "turn")
        if isinstance(event, ThoughtEvent):
            self._thinking.append(event.text)
        elif isinstance(event, TextEvent):
            self._end_thinking()
            self._out.write(self._scrubber.feed(event.text))
            self._out.flush()
            self._at_line_start = event.text.endswith("\n")
        elif isinstance(event, ToolCallEvent):
            self._line(describe_call(event.call), "call")
        elif isinstance(event, ToolResultEvent):
            self._line(describe_result(event.call, event.result), _result_role(event.result))
        elif isinstance(event, RetryEvent | FallbackEvent | CacheEvent):
            self._show_note(event)
        elif isinstance(event, CodeExecutionEvent | GroundingEvent):
            self._show_server_tool(event)

    def _show_note(self, event: RetryEvent | FallbackEvent | CacheEvent) -> None:
        """Show a retry, a fallback to another model, or a change of the context cache."""
        if isinstance(event, RetryEvent | FallbackEvent):
            self._line(describe_retry(event), "retry")
        else:
            self._line(describe_cache(event), "note")

    def _show_server_tool(self, event: CodeExecutionEvent | GroundingEvent) -> None:
        """Show what one of Gemini's own tools did: code it ran, or what it searched."""
        if isinstance(event, CodeExecutionEvent):
            code = "\n".join("   " + line for line in event.run.code.rstrip().splitlines())
            outcome = event.run.outcome or "no result"
            output = event.run.output.rstrip() or "(no output)"
            self._line(f"(code execution) {event.run.language.lower()}:\n{code}")
            self._line(f"(code output, {outcome}) {output}")
            return
        for query in event.grounding.queries:
            self._line(f"(searched) {query}")
        for source in event.grounding.sources:
            self._line(f"(source) {source.title} <{source.uri}>")

    def _show_nested(self, nested: SubAgentEvent) -> None:
        """Show a sub-agent's tool activity and end, indented and marked with its name."""
        event = nested.event
        mark = "  " * nested.depth + self._style.paint(f"[{nested.agent}]", "agent") + " "
        if isinstance(event, ToolCallEvent):
            self._line(describe_call(event.call), "call", mark)
        elif isinstance(event, ToolResultEvent):
            result = event.result
            self._line(describe_result(event.call, result), _result_role(result), mark)
        elif isinstance(event, RetryEvent | FallbackEvent):
            self._line(describe_retry(event), "retry", mark)
        elif isinstance(event, DoneEvent):
            self._line(f"done ({event.result.status})", "note", mark)

    def close(self) -> None:
        """Finish the output: show pending thoughts and end the answer's last line."""
        self._end_thinking()
        self._end_text()

    def _line(self, text: str, role: Role | None = None, mark: str = "") -> None:
        self.close()
        shown = scrub_text(text)
        shown = shown if role is None else self._style.paint(shown, role)
        self._err.write(mark + shown + "\n")
        self._err.flush()

    def _end_thinking(self) -> None:
        if self._thinking:
            thought = " ".join("".join(self._thinking).split())
            self._thinking.clear()
            self._end_text()
            shown = f"(thinking) {scrub_text(thought)}"
            self._err.write(self._style.paint(shown, "thinking") + "\n")
            self._err.flush()

    def _end_text(self) -> None:
        if not self._at_line_start:
            self._out.write(self._scrubber.flush() + "\n")
            self._out.flush()
            self._at_line_start = True


def _result_role(result: ToolResult) -> Role:
    return "error" if result.is_error else "result"


async def stream_run(
    agent: Agent, prompt: Prompt | None, printer: EventPrinter, *, session: str | None = None
) -> RunResult:
    """Stream one run of ``agent`` through ``printer`` and return its result.

    Raises:
        RunError: The run failed (as `Agent.stream` raises it).
    """
    result: RunResult | None = None
    try:
        async for event in agent.stream(prompt, session=session):
            printer.show(event)
            if isinstance(event, DoneEvent):
                result = event.result
    finally:
        printer.close()
    assert result is not None, "a run always ends with a DoneEvent"
    return result
