"""Pure classification of one model response: what kind of turn it is.

The finish-reason policy, in order:

1. ``promptFeedback.blockReason`` set: the prompt was blocked (``BLOCKED``).
2. ``MALFORMED_FUNCTION_CALL`` / ``UNEXPECTED_TOOL_CALL``: a broken call, never executed;
   the loop asks again a bounded number of times (``MALFORMED``).
3. ``MAX_TOKENS``: output was cut; reported, never passed off as an answer (``MAX_TOKENS``).
4. Any other reason except ``STOP`` (the safety family, ``RECITATION``, ``OTHER``, ...):
   the output was withheld or stopped (``BLOCKED`` with that reason).
5. Function calls present: run them (``CALLS``).
6. Visible text present: the answer (``FINAL``).
7. Nothing usable (no text, no calls, or no candidate at all): ``EMPTY``; the loop asks
   again a bounded number of times.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from enum import Enum
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from agent._gemini import Call, Reply

__all__ = ["Kind", "Outcome", "call_signature", "classify"]

CLEAN_FINISH = frozenset({"STOP", "FINISH_REASON_UNSPECIFIED"})
MALFORMED_FINISH = frozenset({"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"})


class Kind(Enum):
    """The kind of a model turn."""

    FINAL = "final"
    CALLS = "calls"
    BLOCKED = "blocked"
    MALFORMED = "malformed"
    MAX_TOKENS = "max_tokens"
    EMPTY = "empty"


class Outcome(NamedTuple):
    """A classified turn: its kind and, for ``BLOCKED``/``MALFORMED``, the reason."""

    kind: Kind
    reason: str | None = None


def classify(reply: Reply) -> Outcome:
    """Return the `Outcome` of one model response (see the module docstring for the order)."""
    if reply.block_reason:
        return Outcome(Kind.BLOCKED, reply.block_reason)
    finish = reply.finish_reason
    if finish in MALFORMED_FINISH:
        return Outcome(Kind.MALFORMED, finish)
    if finish == "MAX_TOKENS":
        return Outcome(Kind.MAX_TOKENS, finish)
    if finish is not None and finish not in CLEAN_FINISH:
        return Outcome(Kind.BLOCKED, finish)
    if reply.calls:
        return Outcome(Kind.CALLS)
    if reply.text.strip():
        return Outcome(Kind.FINAL)
    return Outcome(Kind.EMPTY)


def call_signature(calls: Iterable[Call]) -> frozenset[tuple[str, str]]:
    """Return a hashable identity of a turn's calls: the set of (name, canonical args)."""
    return frozenset((call.name, _canonical(call.args)) for call in calls)


def _canonical(args: Any) -> str:
    try:
        return json.dumps(args, sort_keys=True, separators=(",", ":"), default=repr)
    except (TypeError, ValueError):
        return repr(args)
