"""Typed results: the output schema, how it is asked for, and how an answer is checked (pure).

``Agent(output_type=T)`` makes a run end with ``RunResult.output``, an instance of ``T``
(a pydantic model, a dataclass, a TypedDict) or a dict (for a JSON Schema dict). Two ways
to ask Gemini for it:

- **native**: ``responseMimeType: application/json`` + ``responseJsonSchema`` on every
  request; the final text answer is parsed and validated.
- **tool**: one more function, ``final_result`` (``final_output`` if a tool already has
  that name), whose parameters are the schema; the run completes when the model calls it
  with valid arguments. The call is answered in the transcript, so the history stays valid.

``auto`` (the default) is native when the request has no tools or the model takes a schema
together with tools (Gemini 3 and newer), and tool mode otherwise (Gemini 2.x).

An answer that fails validation is sent back naming each problem by field, at most
``output_retries`` times; then the run ends ``incomplete`` with limit ``invalid_output``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from agent._capabilities import accepts_schema_with_tools
from agent._capability import Capability, RequestShape, RunCapability
from agent._decide import AskAgain, RunCalls, Stop
from agent.errors import ConfigurationError
from toolnexus import ToolResult

if TYPE_CHECKING:
    from agent._decide import Step
    from agent._response import ModelResponse
    from agent._state import RunState

__all__ = [
    "Accept",
    "OutputMode",
    "OutputSpec",
    "Reject",
    "TypedOutput",
    "Verdict",
    "output_spec",
]

OutputMode = Literal["auto", "native", "tool"]
"""How the typed result is asked for (see the module doc)."""

_WRAP_KEY = "result"
"""Property that carries a non-object output in tool mode (function parameters are objects)."""


@dataclass(frozen=True, slots=True)
class Accept:
    """The answer is valid: the run completes with ``value``."""

    value: Any


@dataclass(frozen=True, slots=True)
class Reject:
    """The answer is invalid: tell the model ``feedback`` and ask again."""

    feedback: str


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """A resolved ``output_type``: its schema, the mode and how values are checked."""

    schema: dict[str, Any]
    """The JSON Schema of the output."""
    mode: Literal["native", "tool"]
    """How it is asked for."""
    retries: int
    """How many invalid answers are sent back before the run ends ``invalid_output``."""
    tool_name: str
    """The output function's name (tool mode)."""
    adapter: Any = None
    """A pydantic ``TypeAdapter`` of the type; ``None`` for a JSON Schema dict."""
    wrapped: bool = False
    """Tool mode with a non-object schema: the value sits under ``{"result": ...}``."""

    def declaration(self) -> dict[str, Any]:
        """Return the output function's declaration (tool mode)."""
        schema = self.schema
        if self.wrapped:
            schema = {
                "type": "object",
                "properties": {_WRAP_KEY: schema},
                "required": [_WRAP_KEY],
            }
        return {
            "name": self.tool_name,
            "description": (
                "Give your final answer by calling this function with it as the arguments. "
                "Call it once, when you are done; the run ends with it."
            ),
            "parametersJsonSchema": schema,
        }

    def config(self) -> dict[str, Any]:
        """Return the generation-config fields of native mode (none in tool mode)."""
        if self.mode != "native":
            return {}
        return {"response_mime_type": "application/json", "response_json_schema": self.schema}

    def check_text(self, text: str) -> Accept | Reject:
        """Check a native-mode answer: JSON text that must fit the schema."""
        try:
            value = json.loads(text)
        except ValueError as exc:
            return Reject(
                f"Your answer is not valid JSON ({exc}). Answer again with only a JSON value "
                "that fits the required schema."
            )
        return self.check_value(value, "Your answer")

    def check_call(self, args: Mapping[str, Any]) -> Accept | Reject:
        """Check the arguments of a ``final_result`` call."""
        value: Any = dict(args)
        if self.wrapped:
            value = value.get(_WRAP_KEY)
        return self.check_value(value, f"The arguments of `{self.tool_name}`")

    def check_value(self, value: Any, what: str) -> Accept | Reject:
        """Validate ``value``; on failure say every problem by field."""
        problems = self._problems(value)
        if isinstance(problems, Accept):
            return problems
        listed = "\n".join(f"- {problem}" for problem in problems)
        return Reject(f"{what} did not match the required schema:\n{listed}\nPlease fix it.")

    def _problems(self, value: Any) -> Accept | list[str]:
        if self.adapter is None:
            from toolnexus import schema_problems

            found = schema_problems(value, self.schema)
            return found or Accept(value)
        import pydantic

        try:
            return Accept(self.adapter.validate_python(value))
        except pydantic.ValidationError as exc:
            return [
                f"`{'.'.join(str(p) for p in error['loc']) or '(the whole value)'}`: {error['msg']}"
                for error in exc.errors()
            ]

    def dump(self, value: Any) -> Any:
        """Return ``value`` as JSON-ready data (for ``RunResult.to_dict``)."""
        if value is None or self.adapter is None:
            return value
        return self.adapter.dump_python(value, mode="json")


def output_spec(
    output_type: Any,
    mode: str,
    retries: int,
    *,
    model: str,
    has_tools: bool,
    tool_names: frozenset[str],
) -> OutputSpec:
    """Resolve ``output_type`` and ``output_mode`` for an agent.

    Args:
        output_type: A pydantic model, a dataclass, a TypedDict or a JSON Schema dict.
        mode: ``"auto"``, ``"native"`` or ``"tool"``.
        retries: Invalid answers sent back before the run gives up.
        model: The model name (for the ``auto`` rule).
        has_tools: Whether requests carry tools besides the output function.
        tool_names: The toolkit's names (the output function must not clash with one).

    Raises:
        ConfigurationError: An unknown mode, a negative ``retries`` or a type pydantic
            cannot describe.
    """
    if mode not in ("auto", "native", "tool"):
        raise ConfigurationError(f"output_mode must be 'auto', 'native' or 'tool', got {mode!r}")
    if retries < 0:
        raise ConfigurationError(f"output_retries must be 0 or more, got {retries}")
    adapter = None
    if isinstance(output_type, Mapping):
        schema = dict(output_type)
    else:
        adapter = _adapter(output_type)
        schema = adapter.json_schema()
    if mode == "auto":
        native = not has_tools or accepts_schema_with_tools(model)
        mode = "native" if native else "tool"
    name = next(n for n in ("final_result", "final_output", "final_answer") if n not in tool_names)
    return OutputSpec(
        schema=schema,
        mode=mode,  # type: ignore[arg-type]
        retries=retries,
        tool_name=name,
        adapter=adapter,
        wrapped=schema.get("type") != "object",
    )


def _adapter(output_type: Any) -> Any:
    """Return a pydantic ``TypeAdapter`` of ``output_type``, or say what to pass instead."""
    import typing

    import pydantic

    if isinstance(output_type, str):
        raise ConfigurationError(
            f"output_type is the string {output_type!r}: pass the class itself (import it), "
            "or a JSON Schema dict; 'module:Class' is the command line's spelling "
            "(--output-schema)"
        )
    name = getattr(output_type, "__qualname__", repr(output_type))
    if typing.is_typeddict(output_type) and type(output_type).__module__ == "typing":
        raise ConfigurationError(
            f"output_type {name} is a typing.TypedDict, which pydantic cannot read before "
            "Python 3.12: define it with typing_extensions.TypedDict (the same syntax)"
        )
    try:
        adapter = pydantic.TypeAdapter(output_type)
        adapter.json_schema()
    except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError) as exc:
        if isinstance(output_type, type):
            raise ConfigurationError(
                f"output_type {name} cannot be described as JSON: make it a pydantic model "
                f"(class {name}(pydantic.BaseModel)) or a @dataclass, or pass a TypedDict or "
                "a JSON Schema dict"
            ) from None
        first = str(exc).splitlines()[0]
        raise ConfigurationError(f"output_type cannot be described as JSON: {first}") from None
    return adapter


Verdict: TypeAlias = Accept | Reject

"""What checking an answer gives."""


class TypedOutput(Capability):
    """Asks for a typed result (``Agent(output_type=...)``) and checks each final answer.

    In tool mode, a turn that calls the output function beside other functions runs the
    other calls first, then ends with the output (every call is in ``result.tool_calls``).
    """

    def __init__(self, output_type: Any, mode: str, retries: int) -> None:
        self.output_type = output_type
        self.mode = mode
        self.retries = retries
        self.spec: OutputSpec | None = None
        """The resolved output, once the agent's request is shaped."""

    def shape(self, shape: RequestShape) -> None:
        spec = output_spec(
            self.output_type,
            self.mode,
            self.retries,
            model=shape.model,
            has_tools=bool(shape.declarations),
            tool_names=frozenset(shape.toolkit.names),
        )
        if spec.mode == "tool":
            shape.declarations.append(spec.declaration())
        taken = {"response_mime_type", "response_schema", "response_json_schema"}
        taken &= set(shape.options)
        if taken:
            raise ConfigurationError(
                f"config={{...}} may not set {', '.join(sorted(taken))} together with output_type="
            )
        shape.options.update(spec.config())
        self.spec = spec

    def start(self, run: RunState) -> RunCapability:
        assert self.spec is not None, "the agent shapes its request before any run"
        return _OutputRun(self.spec)


class _OutputRun(RunCapability):
    def __init__(self, spec: OutputSpec) -> None:
        self.spec = spec
        self.rejects = 0
        """Invalid answers sent back so far."""

    async def review(self, run: RunState, response: ModelResponse, step: Step) -> Step:
        spec = self.spec
        if isinstance(step, RunCalls) and spec.mode == "tool":
            outputs = [i for i, call in enumerate(step.calls) if call.name == spec.tool_name]
            if outputs:
                return self._output_call(response, step, outputs)
        if isinstance(step, Stop) and step.status == "completed":
            if spec.mode == "native":
                verdict = spec.check_text(response.text)
            else:
                verdict = Reject(
                    f"Give your final answer by calling `{spec.tool_name}` with it as the "
                    "arguments, not as text."
                )
            if isinstance(verdict, Accept):
                return Stop("completed", text=response.text, output=verdict.value)
            if self._spent():
                return Stop("incomplete", text=response.text, limit="invalid_output")
            return AskAgain(feedback=verdict.feedback)
        return step

    def _output_call(self, response: ModelResponse, step: RunCalls, outputs: list[int]) -> Step:
        """Answer the output call(s); the turn's other calls still run."""
        first, *extra = outputs
        verdict = self.spec.check_call(step.calls[first].args)
        answered = {i: ToolResult("Only the first final result counts.", True) for i in extra}
        then: Stop | None
        if isinstance(verdict, Accept):
            answered[first] = ToolResult("Final result accepted.")
            then = Stop("completed", text=response.text, output=verdict.value)
        else:
            answered[first] = ToolResult(verdict.feedback, is_error=True)
            spent = self._spent()
            then = Stop("incomplete", text=response.text, limit="invalid_output") if spent else None
        return RunCalls(step.calls, answered=answered, then=then)

    def _spent(self) -> bool:
        """Count one more invalid answer; tell whether the re-asks are used up."""
        self.rejects += 1
        return self.rejects > self.spec.retries

    def finish(self, run: RunState, fields: dict[str, Any]) -> None:
        fields["output_json"] = self.spec.dump(fields.get("output"))
