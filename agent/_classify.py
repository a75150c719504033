"""Pure classification of one model response: what kind of turn it is.

The finish-reason policy, in order:

1. ``promptFeedback.blockReason`` set: the prompt was blocked (``BLOCKED``).
2. ``MALFORMED_FUNCTION_CALL`` / ``UNEXPECTED_TOOL_CALL``: a broken call, never executed;
   the loop asks again a bounded number of times (``MALFORMED``).
3. ``MAX_TOKENS``: output was cut; reported, never passed off as an answer (``MAX_TOKENS``).
4. Any other reason except ``STOP`` (the safety family, ``RECITATION``, ``OTHER``, ...):
   the output was withheld or stopped (``BLOCKED`` with that reason).
5. Function calls present: run them (``CALLS``).
6. Visible text or data parts (an image, a file) present: the answer (``FINAL``).
7. Nothing usable (no text, no data, no calls, or no candidate at all): ``EMPTY``; the loop
   asks again a bounded number of times.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from agent._response import ModelResponse

__all__ = ["Classification", "Kind", "classify"]

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


class Classification(NamedTuple):
    """A classified turn: its kind and, for ``BLOCKED``/``MALFORMED``/``MAX_TOKENS``, why."""

    kind: Kind
    reason: str | None = None


def classify(response: ModelResponse) -> Classification:
    """Return the kind of one model response (see the module docstring for the order)."""
    if response.block_reason:
        return Classification(Kind.BLOCKED, response.block_reason)
    finish = response.finish_reason
    if finish in MALFORMED_FINISH:
        return Classification(Kind.MALFORMED, finish)
    if finish == "MAX_TOKENS":
        return Classification(Kind.MAX_TOKENS, finish)
    if finish is not None and finish not in CLEAN_FINISH:
        return Classification(Kind.BLOCKED, finish)
    if response.calls:
        return Classification(Kind.CALLS)
    if response.text.strip() or response.media:
        return Classification(Kind.FINAL)
    return Classification(Kind.EMPTY)
