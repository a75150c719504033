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
from typing import Any, Literal, TypeAlias

from agent._capabilities import accepts_schema_with_tools
from agent.errors import ConfigurationError

__all__ = [
    "Accept",
    "OutputMode",
    "OutputSpec",
    "Reject",
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
            from toolnexus._schema import check

            found = check(value, self.schema)
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
        import pydantic

        try:
            adapter = pydantic.TypeAdapter(output_type)
            schema = adapter.json_schema()
        except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError) as exc:
            raise ConfigurationError(f"output_type cannot be described as JSON: {exc}") from None
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


Verdict: TypeAlias = Accept | Reject

"""What checking an answer gives."""
