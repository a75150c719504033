"""Record what runs did, as a tree: run → turn → model call → tool call.

Inside a `record` block every run (and every sub-agent run its tool calls start) is
recorded with the timing, the tokens and the cost of each node, each attempt of a retried
model call, and the request and response of each model call, kept to be read on demand::

    from agent.recording import record

    with record() as recording:
        result = await agent.run("Summarise README.md")
    (run,) = recording.runs
    for turn in run.children:
        print(turn.name, [child.name for child in turn.children])
    first_call = run.children[0].children[0]
    print(recording.exchange(first_call.id)["response"]["candidates"][0])

Without a `record` block nothing is recorded and a run pays for one context-variable read.

The tree mirrors the OpenTelemetry spans of the same run (see the tracing docs): a run node
is the ``invoke_agent`` span, a model-call node a ``generate_content`` span (one per
attempt), a tool-call node an ``execute_tool`` span, and a sub-agent's run sits under the
tool call that started it. The turn nodes group a run's calls by model turn; `TraceNode.spans`
leaves them out, giving the span tree itself. Tool calls of one turn run in parallel and are
siblings. Calls re-run with a human's answer at the start of a resumed run belong to turn 0.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agent._capability import Capability, Invocation, Proceed, RunCapability
from agent._state import RECORDING

if TYPE_CHECKING:
    from agent._result import RunResult, Usage
    from agent._state import RunState
    from agent.hooks import ModelRequest
    from toolnexus import ToolResult

__all__ = ["Recording", "TraceNode", "record"]

NodeKind = Literal["run", "turn", "model_call", "tool_call"]
"""What a node stands for."""

_CALLER: contextvars.ContextVar[TraceNode | None] = contextvars.ContextVar(
    "agent_recording_caller", default=None
)
"""The tool-call node whose tool is running here: a run started inside it is its child."""

_OUTPUT_CHARS = 2000
"""A tool's output is kept up to this many characters on its node (the transcript has all)."""


@dataclass(eq=False)
class TraceNode:
    """One node of a recorded run: the run, a turn, a model call or a tool call."""

    id: str
    """Unique in its `Recording` (``"n1"``, ``"n2"``, ...)."""
    kind: NodeKind
    """``"run"``, ``"turn"``, ``"model_call"`` or ``"tool_call"``."""
    name: str
    """The OpenTelemetry span name (``invoke_agent reviewer``, ``generate_content
    gemini-2.5-flash``, ``execute_tool read``); ``turn N`` for a turn."""
    started: float
    """When it started, in seconds since the epoch."""
    attributes: dict[str, Any] = field(default_factory=dict)
    """JSON-ready facts: tokens, status, error, arguments, ... (see the docs of each kind)."""
    children: list[TraceNode] = field(default_factory=list)
    """The nodes under it, in the order they started."""
    duration: float | None = None
    """Seconds from start to end; ``None`` while it runs."""
    _clock: float = field(default_factory=time.monotonic, init=False, repr=False)

    def end(self) -> None:
        """Mark the node finished now."""
        self.duration = time.monotonic() - self._clock

    @property
    def usage(self) -> dict[str, int]:
        """Tokens of this node: a model call's own, else the sum over the nodes under it.

        A run counts its sub-agents' tokens too (they are under its tool calls).
        """
        own = self.attributes.get("usage")
        if isinstance(own, dict):
            return own
        total: dict[str, int] = {}
        for child in self.children:
            for key, value in child.usage.items():
                total[key] = total.get(key, 0) + value
        return total

    @property
    def cost_usd(self) -> float | None:
        """Dollars of this node by the price table, summed like `usage`; ``None`` if unpriced."""
        if self.kind == "model_call":
            own: float | None = self.attributes.get("cost_usd")
            return own
        total = 0.0
        for child in self.children:
            cost = child.cost_usd
            if cost is None:
                return None
            total += cost
        return total

    def spans(self) -> list[TraceNode]:
        """Return this node as the OpenTelemetry span tree has it: turn nodes left out.

        Returns:
            ``[self]`` with its turns replaced by their children (at every depth), or a
            turn's children for a turn.
        """
        children = [span for child in self.children for span in child.spans()]
        if self.kind == "turn":
            return children
        copy = TraceNode(self.id, self.kind, self.name, self.started, self.attributes)
        copy.children, copy.duration = children, self.duration
        return [copy]

    def extent(self) -> float | None:
        """Return the seconds the node lasted; a turn lasts from its start to its last end."""
        if self.kind != "turn":
            return self.duration
        ends = [c._clock + c.duration for c in self.children if c.duration is not None]
        if not ends or len(ends) < len(self.children):
            return None  # still going on
        return max(ends) - self._clock

    def to_dict(self) -> dict[str, Any]:
        """Return the node and everything under it as JSON-ready data."""
        cost = self.cost_usd
        return {
            "id": self.id,
            "kind": self.kind,
            "name": self.name,
            "started": self.started,
            "duration": self.extent(),
            "usage": self.usage,
            "cost_usd": None if cost is None else round(cost, 8),
            "attributes": self.attributes,
            "children": [child.to_dict() for child in self.children],
        }


class Recording:
    """The runs recorded inside one `record` block (and any block it was entered again in)."""

    def __init__(self) -> None:
        self.runs: list[TraceNode] = []
        """The top-level runs, in the order they started (sub-agents are under tool calls)."""
        self._nodes: dict[str, TraceNode] = {}
        self._exchanges: dict[str, tuple[ModelRequest, Any]] = {}
        self._ids = itertools.count(1)

    def node(self, node_id: str) -> TraceNode | None:
        """Return the node with this id, if it was recorded here."""
        return self._nodes.get(node_id)

    def exchange(self, node_id: str) -> dict[str, Any] | None:
        """Return the request and response of a model call, as Gemini JSON.

        Args:
            node_id: A ``model_call`` node's id.

        Returns:
            ``{"request": {"model", "contents", "config"}, "response": {...} | None}``
            (``None`` for the response of an attempt that failed), or ``None`` when the
            id is not a model call of this recording.
        """
        found = self._exchanges.get(node_id)
        if found is None:
            return None
        request, raw = found
        return {"request": _request_json(request), "response": _sdk_json(raw)}

    def to_dict(self) -> dict[str, Any]:
        """Return every recorded run as JSON-ready data (the requests and responses left out)."""
        return {"runs": [run.to_dict() for run in self.runs]}

    def _add(
        self, parent: TraceNode | None, kind: NodeKind, name: str, **attributes: Any
    ) -> TraceNode:
        node = TraceNode(f"n{next(self._ids)}", kind, name, time.time(), attributes)
        self._nodes[node.id] = node
        (parent.children if parent is not None else self.runs).append(node)
        return node


@contextlib.contextmanager
def record(recording: Recording | None = None) -> Iterator[Recording]:
    """Record every run started inside the block (their sub-agents' runs too).

    Args:
        recording: Add to this recording (a web page keeps one per conversation); a new
            one by default.

    Yields:
        The `Recording`; it fills in while the runs go on.
    """
    recording = recording if recording is not None else Recording()
    token = RECORDING.set(recording)
    caller = _CALLER.set(None)
    try:
        yield recording
    finally:
        _CALLER.reset(caller)
        RECORDING.reset(token)


class Recorder(Capability):
    """Records each run into the `Recording` of the `record` block it runs in, if any."""

    def start(self, run: RunState) -> RunCapability | None:
        recording = RECORDING.get()
        if recording is None:
            return None
        parent = _CALLER.get()
        name = f"invoke_agent {run.name}" if run.name else "invoke_agent"
        node = recording._add(
            parent, "run", name, agent=run.name, model=run.model.name, session=run.session
        )
        return _RecordedRun(recording, node)


class _Attempt:
    """Notes what one model-call attempt delivered (its pieces, then its response)."""

    def __init__(self, recording: Recording, node: TraceNode, request: ModelRequest) -> None:
        self.recording = recording
        self.node = node
        self.request = request

    def saw(self, item: object) -> None:
        from agent._response import ModelResponse

        attributes = self.node.attributes
        if "first_chunk" not in attributes:
            attributes["first_chunk"] = round(time.monotonic() - self.node._clock, 6)
        if isinstance(item, ModelResponse):
            usage = item.usage
            attributes.update(
                usage=_usage(usage),
                cost_usd=_call_usd(self.request.model, usage, item.service_tier),
                finish_reason=item.finish_reason,
                model_version=item.model_version,
                calls=[call.name for call in item.calls],
            )
            self.recording._exchanges[self.node.id] = (self.request, item.raw)


class _RecordedRun(RunCapability):
    def __init__(self, recording: Recording, node: TraceNode) -> None:
        self.recording = recording
        self.node = node
        self.turns: dict[int, TraceNode] = {}

    def _turn(self, number: int) -> TraceNode:
        turn = self.turns.get(number)
        if turn is None:
            turn = self.recording._add(self.node, "turn", f"turn {number}", turn=number)
            self.turns[number] = turn
        return turn

    @contextlib.contextmanager
    def attempt(self, run: RunState, request: ModelRequest, stream: bool) -> Iterator[_Attempt]:
        turn = self._turn(request.turn)
        earlier = [c for c in turn.children if c.kind == "model_call"]
        waited = None
        if earlier and earlier[-1].duration is not None:
            # The time between the last attempt's end and this one's start: the retry wait.
            waited = round(time.monotonic() - earlier[-1]._clock - earlier[-1].duration, 6)
        node = self.recording._add(
            turn,
            "model_call",
            f"generate_content {request.model}",
            model=request.model,
            turn=request.turn,
            attempt=len(earlier) + 1,
            stream=stream,
            waited=waited,
            status="ok",
            cost_usd=0.0,  # a failed attempt is not billed
        )
        self.recording._exchanges[node.id] = (request, None)
        try:
            yield _Attempt(self.recording, node, request)
        except Exception as exc:
            node.attributes.update(status="error", error=_error(exc))
            raise
        finally:
            node.end()

    async def tool(self, run: RunState, invocation: Invocation, proceed: Proceed) -> ToolResult:
        call = invocation.call
        node = self.recording._add(
            self._turn(call.turn),
            "tool_call",
            f"execute_tool {call.name}",
            tool=call.name,
            call_id=call.id,
            turn=call.turn,
            index=call.index,
            args=call.args,
            status="running",
        )
        caller = _CALLER.set(node)
        try:
            result = await proceed(invocation)
        except BaseException as exc:
            node.attributes.update(status="error", error=_error(exc))
            raise
        finally:
            _CALLER.reset(caller)
            node.end()
        node.attributes.update(_outcome(invocation.args, result))
        return result

    def close(self, run: RunState, result: RunResult | None, error: BaseException | None) -> None:
        node = self.node
        node.end()
        if error is not None and result is None:
            result = getattr(error, "result", None)
            node.attributes["error"] = _error(error)
        if result is not None:
            node.attributes.update(
                status=result.status,
                turns=result.turns,
                limit=result.limit,
                reason=result.reason,
                cost_total_usd=result.cost.usd,
            )
        elif error is not None:
            node.attributes["status"] = "failed"


def _outcome(args: Mapping[str, Any], result: ToolResult) -> dict[str, Any]:
    """Return what a finished tool call adds to its node."""
    output = result.output
    outcome: dict[str, Any] = {
        "args": dict(args),
        "status": "error" if result.is_error else "ok",
        "output": output if len(output) <= _OUTPUT_CHARS else output[:_OUTPUT_CHARS] + "…",
    }
    pending = result.pending
    if pending is not None:
        outcome["status"] = "pending"
        outcome["pending"] = pending.get("id")
    approval = (result.metadata or {}).get("approval")
    if isinstance(approval, str):
        outcome["approval"] = approval
    return outcome


def _usage(usage: Usage) -> dict[str, int]:
    return {key: value for key, value in usage.to_dict().items() if value}


def _call_usd(model: str, usage: Usage, tier: str | None) -> float | None:
    from agent._cost import call_usd

    return call_usd(model, usage, tier)


def _error(exc: BaseException) -> dict[str, Any]:
    """Describe a failure: Gemini's code, status and message, or the exception's type."""
    from agent._retry import CallFailed

    if isinstance(exc, CallFailed):
        info = exc.info
        return {"code": info.code, "status": info.status, "message": info.message[:500]}
    return {"type": type(exc).__name__}


def _sdk_json(value: Any) -> Any:
    """Return an SDK object as wire JSON (camelCase), without the HTTP response it came in."""
    dump = getattr(value, "model_dump", None)
    if dump is None:
        return value
    data = dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(data, dict):
        # Headers and per-request HTTP options are transport, not the model's exchange.
        data.pop("sdkHttpResponse", None)
        data.pop("httpOptions", None)
    return data


def _request_json(request: ModelRequest) -> dict[str, Any]:
    return {
        "model": request.model,
        "contents": [_sdk_json(content) for content in request.contents],
        "config": _sdk_json(request.config),
    }
