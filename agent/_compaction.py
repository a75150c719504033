"""Context compaction: keep a long conversation inside the model's input window.

Before each model call the loop estimates the size of the next request: the last turn's
``promptTokenCount`` plus about one token per four characters of what was added since (for
a ``history=`` passed in with no turn yet, the four-characters rule over all of it). When
that passes the trigger (`Compaction.trigger_tokens`, or `Compaction.trigger_fraction` of
the model's input-token limit), the transcript is compacted in two steps:

1. **Prune**: function results over `Compaction.prune_chars` characters in the older
   exchanges are replaced by a one-line note of what was there (tool, size, first line).
2. **Summarise**, if still over: the older exchanges are replaced by one user message
   holding a summary the model writes in a separate call (`SUMMARY_PROMPT`; its usage is
   counted in the run's usage, cost and limits), and the most recent
   `Compaction.keep_recent_turns` exchanges stay verbatim.

An *exchange* starts at a user message that is not function responses. Cuts fall only
between exchanges, so a function call is never separated from its response; the exchange
in progress (whose thought signatures Gemini checks) is never summarised, only pruned; no
part carrying a thought signature is ever altered or moved: it stays byte for byte where
it was, or leaves with its whole exchange. Replaced Contents go to the run's archive (a
session appends them to its store's archive, see `agent._store.ArchivingStore`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent.errors import ConfigurationError

if TYPE_CHECKING:
    from agent._model import GeminiModel

__all__ = [
    "FALLBACK_INPUT_LIMITS",
    "SUMMARY_PROMPT",
    "Compaction",
    "estimate_tokens",
    "exchange_starts",
    "input_limit",
    "prune",
    "summary_text",
]

logger = logging.getLogger("agent")

SUMMARY_PROMPT = (
    "You are compacting the earlier part of a conversation between a user and an AI agent "
    "that uses tools, so the agent can go on without it. Write a concise summary that keeps "
    "every fact, name, number, decision, file path and open task the agent may need later, "
    "what the tools found, and what the user asked for. Do not invent anything. Write it as "
    "notes, not as a reply to the user.\n\nThe conversation so far:\n\n"
)
"""The instruction of the summary call; the older exchanges follow it as plain text."""

SUMMARY_HEADER = "[Summary of the earlier conversation]\n"
"""How the summary message starts in the transcript."""

FALLBACK_INPUT_LIMITS = {
    "gemini-2.5-pro": 1_048_576,
    "gemini-2.5-flash": 1_048_576,
    "gemini-2.5-flash-lite": 1_048_576,
    "gemini-3-flash-preview": 1_048_576,
    "gemini-3.1-pro-preview": 1_048_576,
    "gemini-3-pro-preview": 1_048_576,
}
"""Input-token limits used when the API's model metadata cannot be read."""
_DEFAULT_LIMIT = 1_048_576
_SMALLEST_LIMIT = 32_768  # no Gemini model takes less: smaller requests need no lookup


@dataclass(frozen=True, slots=True)
class Compaction:
    """When and how a run compacts its transcript.

    Example::

        agent = Agent(compaction=Compaction(trigger_tokens=200_000, keep_recent_turns=6))
    """

    trigger_tokens: int | None = None
    """Compact when the next request would exceed this many tokens; ``None`` uses
    ``trigger_fraction`` of the model's input limit."""
    trigger_fraction: float = 0.7
    """The share of the model's input-token limit that triggers compaction."""
    keep_recent_turns: int = 4
    """Exchanges (a user message and everything up to the next one) kept verbatim."""
    prune_chars: int = 2_000
    """Function results longer than this (in older exchanges) are pruned first."""

    def __post_init__(self) -> None:
        if self.trigger_tokens is not None and self.trigger_tokens < 1:
            raise ConfigurationError("Compaction.trigger_tokens must be at least 1")
        if not 0 < self.trigger_fraction <= 1:
            raise ConfigurationError("Compaction.trigger_fraction must be in (0, 1]")
        if self.keep_recent_turns < 1:
            raise ConfigurationError("Compaction.keep_recent_turns must be at least 1")


def estimate_tokens(contents: Sequence[dict[str, Any]]) -> int:
    """Estimate tokens of wire Content dicts: one per four characters of their JSON."""
    return len(json.dumps(list(contents), ensure_ascii=False)) // 4 + 1 if contents else 0


def _is_prompt(content: dict[str, Any]) -> bool:
    parts = content.get("parts") or []
    return content.get("role", "user") == "user" and any(
        "functionResponse" not in part for part in parts
    )


def exchange_starts(contents: Sequence[dict[str, Any]]) -> list[int]:
    """Return the indexes where an exchange starts (a user message not of function results)."""
    return [i for i, content in enumerate(contents) if _is_prompt(content)]


def prune(
    contents: list[dict[str, Any]], before: int, limit: int
) -> tuple[list[dict[str, Any]], int]:
    """Replace large function results in ``contents[:before]`` by a short note.

    Only ``functionResponse.response`` changes; ids, names and every other part stay.

    Returns:
        The new contents and how many results were pruned.
    """
    pruned = 0
    out = list(contents)
    for index in range(before):
        content = out[index]
        parts = content.get("parts") or []
        if not any("functionResponse" in part for part in parts):
            continue
        new_parts = []
        for part in parts:
            response = part.get("functionResponse")
            text = json.dumps(response.get("response"), ensure_ascii=False) if response else ""
            if response is None or len(text) <= limit:
                new_parts.append(part)
                continue
            output = (response.get("response") or {}).get("output")
            first = str(output if output is not None else text).strip().splitlines()[:1]
            note = (
                f"[pruned to save context: {response.get('name')} returned {len(text)} "
                f"characters, starting: {first[0][:120] if first else ''}]"
            )
            new_parts.append(
                {**part, "functionResponse": {**response, "response": {"output": note}}}
            )
            pruned += 1
        out[index] = {**content, "parts": new_parts}
    return out, pruned


def summary_text(contents: Sequence[dict[str, Any]]) -> str:
    """Render Contents as the plain text the summary call reads."""
    lines: list[str] = []
    for content in contents:
        role = content.get("role", "user")
        for part in content.get("parts") or []:
            if part.get("thought"):
                continue
            if part.get("text"):
                lines.append(f"{role}: {part['text']}")
            elif "functionCall" in part:
                call = part["functionCall"]
                lines.append(f"{role} called {call.get('name')}({json.dumps(call.get('args'))})")
            elif "functionResponse" in part:
                reply = part["functionResponse"]
                lines.append(
                    f"tool {reply.get('name')} returned: {json.dumps(reply.get('response'))}"
                )
    return "\n".join(lines)


_LIMITS: dict[str, int] = {}


async def input_limit(model: GeminiModel, wanted: int) -> int:
    """Return the model's input-token limit, read from the API once per process per model.

    Requests under the smallest Gemini limit never need it: the table's figure is returned
    for them without a lookup. A lookup that fails falls back to `FALLBACK_INPUT_LIMITS`.
    """
    fallback = FALLBACK_INPUT_LIMITS.get(model.name.removeprefix("models/"), _DEFAULT_LIMIT)
    if model.name in _LIMITS:
        return _LIMITS[model.name]
    if wanted < _SMALLEST_LIMIT:
        return fallback
    limit = fallback
    try:
        info = await model.clients.genai.aio.models.get(model=model.name)
        limit = int(info.input_token_limit or fallback)
    except Exception as exc:  # any failure: the table's figure will do
        logger.info(
            "could not read %s's input-token limit (%s); using %d",
            model.name,
            type(exc).__name__,
            limit,
        )
    _LIMITS[model.name] = limit
    return limit
