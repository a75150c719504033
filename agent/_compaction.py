"""Context compaction: keep a long conversation inside the model's input window.

Before each model call the loop estimates the size of the next request: the last turn's
``promptTokenCount`` plus about one token per four characters of what was added since (a
session's next run starts from the count its last run saved; for a ``history=`` passed in
with no turn yet, the four-characters rule applies to all of it). When
that passes the trigger (`Compaction.trigger_tokens`, or `Compaction.trigger_fraction` of
the model's input-token limit), the transcript is compacted in two steps:

1. **Prune**: function results over `Compaction.prune_chars` characters in the older
   exchanges are replaced by a one-line note of what was there (tool, size, first line).
2. **Summarise**, if still over: the older exchanges are replaced by one user message
   holding a summary the model writes in a separate call (`SUMMARY_PROMPT`; its usage is
   counted in the run's usage, cost and limits), and the most recent
   `Compaction.keep_recent_turns` exchanges stay verbatim. A summary no shorter than what
   it would replace is not used: the older exchanges stay.
3. **Prune the rest**, if still over: large function results of the kept exchanges too,
   the exchange in progress included, except the latest results (the model has not read
   them yet).

An *exchange* starts at a user message that is neither function responses nor the files
that follow them (Gemini 2.x takes a tool's files as parts after the function responses,
in the same Content). Cuts fall only between exchanges, so a function call is never
separated from its response or its files; the exchange in progress (whose thought
signatures Gemini checks) is never summarised, only pruned; no part carrying a thought
signature is ever altered or moved: it stays byte for byte where it was, or leaves with its
whole exchange. Replaced Contents go to the run's archive (a session appends them to its
store's archive, see `agent._store.ArchivingStore`).

Sizes are estimated at four characters of JSON per token, except inline files, which count
as the tokens Gemini bills for them (`agent._media.media_tokens`), not as their base64. A run
measures each Content once (`TranscriptSize`): when the size of the last request is unknown
(the first turn over a ``history=``, the turn after a compaction, a response without usage),
the estimate measures only the Contents it has not seen.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent._capability import Capability, RunCapability
from agent._contents import to_contents, to_dict, user_content
from agent._media import inline_data, media_tokens
from agent.errors import ConfigurationError
from agent.events import Compacted

if TYPE_CHECKING:
    from agent._decide import Step
    from agent._state import RunState
    from agent.hooks import ModelRequest

__all__ = [
    "SUMMARY_PROMPT",
    "Compaction",
    "Compactor",
    "TranscriptSize",
    "compact",
    "estimate_tokens",
    "exchange_starts",
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
    """Estimate tokens of wire Content dicts: one per four characters of their JSON.

    Inline files count as `media_tokens` of their size instead of their base64 text.
    """
    return _tokens([_measure(content) for content in contents])


@dataclass(frozen=True, slots=True)
class _Size:
    """What one Content adds to `estimate_tokens`."""

    chars: int
    """Characters of its JSON, its inline files' base64 left out."""
    blobs: tuple[int, ...]
    """The base64 length of each of its inline files."""


def _measure(content: dict[str, Any]) -> _Size:
    blobs = tuple(len(data) for data in inline_data([content]))
    return _Size(len(json.dumps(content, ensure_ascii=False)) - sum(blobs), blobs)


def _tokens(sizes: Sequence[_Size]) -> int:
    """Return `estimate_tokens` of Contents of these sizes.

    Their JSON as one list is theirs plus ``[``, ``]`` and a ``, `` between two: two
    characters each.
    """
    if not sizes:
        return 0
    chars = sum(size.chars for size in sizes) + 2 * len(sizes)
    media = sum(media_tokens(blob * 3 // 4) for size in sizes for blob in size.blobs)
    return chars // 4 + 1 + media


class TranscriptSize:
    """A run's transcript size (`estimate_tokens`), each Content measured once.

    A Content's dict is never changed in place (compaction and uploads put a new one where
    it was, see `RunState.transcript`), so the dict at the same place as last time has the
    same size: an estimate measures only the dicts it has not seen there.
    """

    def __init__(self) -> None:
        self.measured: list[tuple[dict[str, Any], _Size]] = []
        """The transcript's dicts as last seen, each with its size."""

    def tokens(self, contents: list[dict[str, Any]]) -> int:
        """Return `estimate_tokens` of ``contents``, measuring only the dicts not seen."""
        measured = self.measured
        del measured[len(contents) :]
        for index, content in enumerate(contents):
            if index == len(measured):
                measured.append((content, _measure(content)))
            elif measured[index][0] is not content:
                measured[index] = (content, _measure(content))
        return _tokens([size for _, size in measured])


def _is_prompt(content: dict[str, Any]) -> bool:
    """Tell whether ``content`` starts an exchange: a user message without function results."""
    parts = content.get("parts") or []
    return (
        content.get("role", "user") == "user"
        and bool(parts)
        and not any("functionResponse" in part for part in parts)
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
        new_parts = [_pruned_part(part, limit) for part in parts]
        pruned += sum(new is not old for new, old in zip(new_parts, parts, strict=True))
        out[index] = {**content, "parts": new_parts}
    return out, pruned


def _pruned_part(part: dict[str, Any], limit: int) -> dict[str, Any]:
    """Return ``part`` with its function result replaced by a note, if over ``limit``."""
    response = part.get("functionResponse")
    text = json.dumps(response.get("response"), ensure_ascii=False) if response else ""
    if response is None or len(text) <= limit:
        return part
    output = (response.get("response") or {}).get("output")
    first = str(output if output is not None else text).strip().splitlines()[:1]
    note = (
        f"[pruned to save context: {response.get('name')} returned {len(text)} "
        f"characters, starting: {first[0][:120] if first else ''}]"
    )
    return {**part, "functionResponse": {**response, "response": {"output": note}}}


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


class Compactor(Capability):
    """Compacts the transcript before a model call when the request would pass the trigger."""

    def __init__(self, policy: Compaction) -> None:
        self.policy = policy

    def start(self, run: RunState) -> RunCapability:
        return _CompactionRun(self.policy)


class _CompactionRun(RunCapability):
    def __init__(self, policy: Compaction) -> None:
        self.policy = policy
        self.size = TranscriptSize()

    async def before_call(self, run: RunState, request: ModelRequest) -> ModelRequest | Step:
        compacted = await compact(run, self.policy, size=self.size)
        if compacted is None:
            return request
        run.emit(compacted)
        return run.request()


async def compact(
    run: RunState, policy: Compaction, *, force: bool = False, size: TranscriptSize | None = None
) -> Compacted | None:
    """Compact ``run``'s transcript when the next request would pass the trigger.

    Prunes large function results of older exchanges first, then replaces older exchanges
    by a model-written summary if still needed.

    Args:
        run: The run whose transcript is compacted (in place; replaced Contents go to
            ``run.archive``).
        policy: When and how.
        force: Compact whatever the size (``Agent.compact``).
        size: The run's transcript size, kept from one call to the next (a new one measures
            the whole transcript).

    Returns:
        What was done, or ``None`` when nothing was.
    """
    size = size if size is not None else TranscriptSize()
    before = _estimate(run, size)
    trigger = policy.trigger_tokens
    if trigger is None:
        trigger = int(policy.trigger_fraction * await run.model.input_limit(before))
    if before <= trigger and not force:
        return None
    dicts = run.transcript()
    starts = exchange_starts(dicts)
    keep = policy.keep_recent_turns
    cut = starts[-keep] if len(starts) > keep else 0
    pruned = _prune(run, dicts, policy, cut)
    after = size.tokens(run.transcript())
    summarised = 0
    if (after > trigger or force) and cut > 0:
        summarised = await _replace_older(run, cut, len([s for s in starts if s < cut]))
        after = size.tokens(run.transcript())
    if after > trigger:
        # Still over: the kept exchanges' results too, but not the latest ones.
        kept = run.transcript()
        pruned += _prune(run, kept, policy, _last_results(kept))
        after = size.tokens(run.transcript())
    if not (pruned or summarised):
        return None
    run.sent = (0, 0)
    return Compacted(before, after, summarised, pruned)


def _prune(run: RunState, dicts: list[dict[str, Any]], policy: Compaction, before: int) -> int:
    """Prune ``run``'s results before ``before``; archive what changed; return how many."""
    new_dicts, pruned = prune(dicts, before, policy.prune_chars)
    for index, (old, new) in enumerate(zip(dicts, new_dicts, strict=True)):
        if old is not new:
            run.archive.append(old)
            run.contents[index] = to_contents([new])[0]
    return pruned


def _last_results(contents: list[dict[str, Any]]) -> int:
    """Return the index of the last Content of function results (``0`` without one)."""
    for index in range(len(contents) - 1, -1, -1):
        if any("functionResponse" in part for part in contents[index].get("parts") or []):
            return index
    return 0


async def _replace_older(run: RunState, cut: int, exchanges: int) -> int:
    """Replace ``run.contents[:cut]`` by a summary; return the exchanges it replaced.

    A summary that is no shorter than what it would replace is not used (``0``).
    """
    old = run.transcript()[:cut]
    summary = await _summarise(run, old)
    if summary is None:
        return 0
    note = {"text": SUMMARY_HEADER + summary}
    # The summary joins the first kept Content as one more part: that part is its cost.
    if len(json.dumps(note, ensure_ascii=False)) // 4 + 1 >= estimate_tokens(old):
        logger.info("compaction: the summary is no shorter than what it replaces; not used")
        return 0
    run.archive.extend(old)
    first = to_dict(run.contents[cut])
    first = {**first, "parts": [note, *first.get("parts", [])]}
    run.contents = [*to_contents([first]), *run.contents[cut + 1 :]]
    return exchanges


def _estimate(run: RunState, size: TranscriptSize) -> int:
    """Estimate the next request's tokens: the last prompt plus what was added since."""
    prompt, length = run.sent
    if prompt == 0 or length > len(run.contents):
        return size.tokens(run.transcript())
    added = [to_dict(content) for content in run.contents[length:]]
    return prompt + estimate_tokens(added)


async def _summarise(run: RunState, old: list[dict[str, Any]]) -> str | None:
    """Ask the model for a summary of ``old`` (a separate call, counted in usage and limits)."""
    if run.over_before_call() is not None or run.call_model is None:
        return None
    prompt = user_content(SUMMARY_PROMPT + summary_text(old))
    response = await run.call_model(run.model.summary_request([prompt], run.turns + 1))
    return response.text or None
