"""Thought signatures across models: which model issued each, and a history fit for another.

Gemini 3 signs its function calls (and often its last text part) with a thought signature
that only the model that issued it can read: another model refuses it with ``400 "Corrupted
thought signature."``. It also requires, in the current turn (everything after the last user
message with text), a signature on the first function call of each model step. For a history
that comes from elsewhere, Google documents a placeholder signature the API accepts in the
place of a real one.

`SignatureLedger` remembers which model issued the signatures it was shown (by a digest of
their bytes) and rewrites a history for a given model: every signature another model issued
is dropped, and on the first function call of a step of the current turn it becomes the
placeholder. The model's own signatures stay exactly as received, so a model keeps its own
reasoning context across a detour to another.

A signature the ledger never saw (a history saved by another process) is left as it is;
`SignatureLedger.disown` marks the ones of a history a model refused, so they are dropped
from then on.
"""

from __future__ import annotations

import base64
import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from agent._contents import Content

__all__ = ["PLACEHOLDER", "SignatureLedger", "current_turn_start", "is_signature_refusal"]

PLACEHOLDER: Final = base64.urlsafe_b64decode("skip_thought_signature_validator")
"""The documented placeholder signature, as the bytes the SDK sends back as that very string."""

_UNKNOWN: Final = ""
"""The issuer of a signature some model refused: no model's own."""

_LIMIT: Final = 100_000
"""Signatures remembered at most (the oldest are forgotten first)."""


def is_signature_refusal(code: int | None, message: str) -> bool:
    """Tell whether a failure is Gemini refusing the thought signatures of a history."""
    return code == 400 and "thought signature" in message.lower()


def current_turn_start(contents: Sequence[Content]) -> int:
    """Return the index of the first Content of the current turn.

    The current turn starts after the last ``user`` Content holding something other than
    function responses (the rule Gemini validates signatures by).
    """
    for index in range(len(contents) - 1, -1, -1):
        content = contents[index]
        if content.role == "user" and any(
            part.function_response is None for part in content.parts or ()
        ):
            return index + 1
    return 0


def _digest(signature: bytes) -> bytes:
    return hashlib.blake2b(signature, digest_size=16).digest()


class SignatureLedger:
    """Which model issued each thought signature seen, and histories rewritten for a model."""

    def __init__(self, limit: int = _LIMIT) -> None:
        self.limit = limit
        self._issuers: OrderedDict[bytes, str] = OrderedDict()
        self._models: set[str] = set()
        """Every issuer ever recorded (a quick test that nothing needs rewriting)."""

    def learn(self, content: Content | None, model: str) -> None:
        """Record ``model`` as the issuer of the signatures in ``content`` (a response's)."""
        for part in (content.parts or ()) if content is not None else ():
            signature = part.thought_signature
            if signature and signature != PLACEHOLDER:
                self._record(_digest(signature), model)

    def disown(self, contents: Sequence[Content], model: str) -> None:
        """Mark every signature in ``contents`` that ``model`` did not issue as no model's own.

        Called when ``model`` refused the history's signatures: those it did not issue
        (to the ledger's knowledge) are dropped from every later request.
        """
        for content in contents:
            if content.role != "model":
                continue
            for part in content.parts or ():
                signature = part.thought_signature
                if signature and signature != PLACEHOLDER:
                    key = _digest(signature)
                    if self._issuers.get(key) != model:
                        self._record(key, _UNKNOWN)

    def issuer(self, signature: bytes) -> str | None:
        """Return the model that issued ``signature``; ``None`` if it was never seen."""
        return self._issuers.get(_digest(signature))

    def for_model(
        self, contents: list[Content], model: str, *, repair: bool = False
    ) -> list[Content]:
        """Return ``contents`` as ``model`` accepts them (the same list when nothing changes).

        Args:
            contents: The history about to be sent.
            model: The model it goes to.
            repair: Also drop the signatures the ledger never saw, and put the placeholder on
                every step of the current turn whose first function call has none (for a
                history the model has just refused).

        Returns:
            The history with no signature another model issued; the first function call of
            each step of the current turn carries its own signature or the placeholder.
        """
        if not repair and not self._models - {model}:
            return contents
        start = current_turn_start(contents)
        rewritten = list(contents)
        changed = False
        for index, content in enumerate(contents):
            if content.role == "model" and content.parts:
                fit = self._fit(content, model, current=index >= start, repair=repair)
                if fit is not None:
                    rewritten[index] = fit
                    changed = True
        return rewritten if changed else contents

    def _fit(self, content: Content, model: str, *, current: bool, repair: bool) -> Content | None:
        """Return ``content`` rewritten for ``model``, or ``None`` when it can go as it is."""
        parts: list[Any] = list(content.parts or ())
        changed = False
        first_call = next((i for i, p in enumerate(parts) if p.function_call is not None), None)
        for index, part in enumerate(parts):
            signature = part.thought_signature
            placeholder = current and index == first_call
            if signature == PLACEHOLDER or not (signature or (repair and placeholder)):
                continue
            issuer = self.issuer(signature) if signature else _UNKNOWN
            if issuer == model or (issuer is None and not repair):
                continue
            keep = PLACEHOLDER if placeholder else None
            parts[index] = part.model_copy(update={"thought_signature": keep})
            changed = True
        return content.model_copy(update={"parts": parts}) if changed else None

    def _record(self, key: bytes, model: str) -> None:
        self._issuers[key] = model
        self._issuers.move_to_end(key)
        self._models.add(model)
        while len(self._issuers) > self.limit:
            self._issuers.popitem(last=False)
