"""Gemini's built-in (server-side) tools beside function tools, and what they report back.

``Agent(builtin_tools=["google_search", "code_execution"])`` sends those tools next to the
function declarations. Gemini runs them itself: their records (``toolCall`` /
``toolResponse``, ``executableCode`` / ``codeExecutionResult``) arrive as parts of the
model's turn, which the transcript keeps and sends back unchanged, signatures included.
When built-in and function tools are both present, ``toolConfig.
includeServerSideToolInvocations`` is set on every request, as the API requires. Only
Gemini 3 models take the two kinds together; `check_tool_mix` refuses the mix on older
models before anything is sent.

What the tools found is read from each response: `Grounding` (search queries, sources,
URL-context statuses) and `CodeRun` (code and its output).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.genai import types

from agent._capabilities import generation
from agent._capability import Capability, RequestShape, RunCapability
from agent.errors import ConfigurationError
from agent.events import CodeExecutionEvent, GroundingEvent

if TYPE_CHECKING:
    from agent._capability import Vetoed
    from agent._response import ModelResponse
    from agent._state import RunState
    from agent.hooks import ModelRequest

__all__ = [
    "BUILTIN_TOOLS",
    "BuiltinTools",
    "CodeRun",
    "Grounding",
    "Source",
    "UrlStatus",
    "builtin_tools",
    "check_tool_mix",
    "code_runs",
    "grounding_of",
]

BUILTIN_TOOLS = {
    "google_search": lambda: types.Tool(google_search=types.GoogleSearch()),
    "url_context": lambda: types.Tool(url_context=types.UrlContext()),
    "code_execution": lambda: types.Tool(code_execution=types.ToolCodeExecution()),
    "google_maps": lambda: types.Tool(google_maps=types.GoogleMaps()),
}
"""The built-in tools known by name (others: pass a ``types.Tool``)."""


def builtin_tools(items: Sequence[str | Any]) -> list[types.Tool]:
    """Return SDK ``Tool`` objects for names and ``types.Tool`` values.

    Raises:
        ConfigurationError: An unknown name, or a value that is not a ``types.Tool``.
    """
    tools: list[types.Tool] = []
    for item in items:
        if isinstance(item, types.Tool):
            if item.function_declarations:
                raise ConfigurationError(
                    "builtin_tools= takes Gemini's own tools; give function tools as toolkit="
                )
            tools.append(item)
        elif isinstance(item, str) and item in BUILTIN_TOOLS:
            tools.append(BUILTIN_TOOLS[item]())
        else:
            raise ConfigurationError(
                f"unknown built-in tool {item!r}: use one of {', '.join(BUILTIN_TOOLS)} "
                "or a google.genai types.Tool"
            )
    return tools


def check_tool_mix(model: str, builtin: Sequence[Any], functions: Sequence[str]) -> None:
    """Refuse built-in tools beside function tools on a model that cannot take both.

    Gemini 2.x (and 1.x) answer every such request with 400 "Tool use with function calling
    is unsupported"; combining the two kinds is a Gemini 3 feature. A model name without a
    readable generation (a tuned model, an alias) is let through, as the newest generation.

    Args:
        model: The model name.
        builtin: The built-in tools (names or ``types.Tool`` values).
        functions: The names of the function tools sent beside them.

    Raises:
        ConfigurationError: Both kinds, on a model older than Gemini 3.
    """
    found = generation(model)
    if not builtin or not functions or found is None or found >= 3:
        return
    names = ", ".join(_builtin_name(tool) for tool in builtin)
    shown = ", ".join(sorted(functions)[:5]) + (
        f" and {len(functions) - 5} more" if len(functions) > 5 else ""
    )
    raise ConfigurationError(
        f"{model} cannot use built-in tools ({names}) beside function tools ({shown}): Gemini "
        "refuses it with 'Tool use with function calling is unsupported'. Leave the function "
        "tools out (on the command line --no-builtins and no --tools, --skills or --mcp; in "
        "Python an empty toolkit), or use a Gemini 3 model such as gemini-3-flash-preview"
    )


def _builtin_name(tool: Any) -> str:
    if isinstance(tool, str):
        return tool
    fields = tool.model_dump(exclude_none=True) if isinstance(tool, types.Tool) else {}
    return ", ".join(fields) or type(tool).__name__


@dataclass(frozen=True, slots=True)
class Source:
    """A web page an answer is grounded on."""

    uri: str
    """Its address (for Google Search, a Google redirect URL)."""
    title: str
    """Its title (for Google Search, often the domain)."""


@dataclass(frozen=True, slots=True)
class UrlStatus:
    """How fetching one URL for URL context went."""

    url: str
    status: str
    """``URL_RETRIEVAL_STATUS_SUCCESS``, ``..._ERROR``, ``..._PAYWALL``, ``..._UNSAFE``."""


@dataclass(frozen=True, slots=True)
class Grounding:
    """What Google Search and URL context contributed to an answer."""

    queries: tuple[str, ...] = ()
    """The web search queries the model ran."""
    sources: tuple[Source, ...] = ()
    """The sources, in the order the response cites them (without repeats)."""
    urls: tuple[UrlStatus, ...] = ()
    """URL-context retrievals."""

    def __add__(self, other: Grounding) -> Grounding:
        return Grounding(
            tuple(dict.fromkeys(self.queries + other.queries)),
            tuple(dict.fromkeys(self.sources + other.sources)),
            tuple(dict.fromkeys(self.urls + other.urls)),
        )

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "queries": list(self.queries),
            "sources": [{"uri": s.uri, "title": s.title} for s in self.sources],
            "urls": [{"url": u.url, "status": u.status} for u in self.urls],
        }


@dataclass(frozen=True, slots=True)
class CodeRun:
    """Code Gemini ran with the code-execution tool, and its result."""

    code: str
    language: str
    outcome: str | None
    """``OUTCOME_OK``, ``OUTCOME_FAILED``, ``OUTCOME_DEADLINE_EXCEEDED`` (``None``: no result)."""
    output: str


def grounding_of(raw: Any) -> Grounding | None:
    """Read the grounding of a ``GenerateContentResponse`` (``None`` when it has none)."""
    candidates = getattr(raw, "candidates", None) or []
    if not candidates:
        return None
    candidate = candidates[0]
    meta = candidate.grounding_metadata
    url_meta = candidate.url_context_metadata
    if meta is None and url_meta is None:
        return None
    queries: tuple[str, ...] = ()
    sources: tuple[Source, ...] = ()
    if meta is not None:
        queries = tuple(meta.web_search_queries or ())
        webs = [chunk.web for chunk in meta.grounding_chunks or () if chunk.web is not None]
        sources = tuple(dict.fromkeys(Source(w.uri or "", w.title or "") for w in webs))
    urls: tuple[UrlStatus, ...] = ()
    if url_meta is not None:
        urls = tuple(
            UrlStatus(m.retrieved_url or "", _name(m.url_retrieval_status))
            for m in url_meta.url_metadata or ()
        )
    return Grounding(queries, sources, urls)


def code_runs(content: types.Content | None) -> list[CodeRun]:
    """Return the code-execution steps of a model turn, each with its result."""
    runs: list[CodeRun] = []
    for part in (content.parts if content is not None else None) or ():
        if part.executable_code is not None:
            code = part.executable_code
            runs.append(CodeRun(code.code or "", _name(code.language), None, ""))
        elif part.code_execution_result is not None and runs:
            result = part.code_execution_result
            last = runs[-1]
            runs[-1] = CodeRun(last.code, last.language, _name(result.outcome), result.output or "")
    return runs


def _name(value: Any) -> str:
    return str(getattr(value, "value", value) or "")


class BuiltinTools(Capability):
    """Offers Gemini's own tools beside the toolkit, and reports what they did each turn."""

    def __init__(self, items: Sequence[str | Any]) -> None:
        self.tools = builtin_tools(items)

    def shape(self, shape: RequestShape) -> None:
        shape.builtin.extend(self.tools)

    def start(self, run: RunState) -> RunCapability:
        return _BuiltinRun()


class _BuiltinRun(RunCapability):
    def __init__(self) -> None:
        self.grounding: Grounding | None = None
        """What search and URL context grounded, over the run."""

    async def received(
        self, run: RunState, request: ModelRequest, response: ModelResponse
    ) -> ModelResponse | Vetoed:
        turn = run.turns + 1  # reported before the response is counted
        for code in code_runs(response.content):
            run.emit(CodeExecutionEvent(turn, code))
        found = grounding_of(response.raw)
        if found is not None:
            self.grounding = found if self.grounding is None else self.grounding + found
            run.emit(GroundingEvent(turn, found))
        return response

    def finish(self, run: RunState, fields: dict[str, Any]) -> None:
        fields["grounding"] = self.grounding
