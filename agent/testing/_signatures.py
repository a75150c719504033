"""Thought signatures of the fake Gemini: issued as HMACs, so any fake with the key checks them.

A signature is an HMAC-SHA256 (truncated to 24 bytes), under a signing key, of the model
that issued it and the content it is put on (the name and arguments of a step's first
function call, or the text of a signed text part). A fake, in this process or a later one,
accepts a signature it could have issued for that very call from that very model; a
corrupted one, one moved to another call, one made without the key, or one another model
issued is refused, with no state shared between fakes. Like Gemini, a model refuses another
model's signature anywhere in the history ("Corrupted thought signature."), so a history
that moves between models must drop them (the documented placeholders stay accepted).

The call's ``id`` is not part of it: the real API ties a signature to the part's content
and position, and accepted echoed signatures on calls whose id the client filled in
(recorded traffic, gemini-2.5-flash, gemini-2.5-pro and Gemini 3 models). The position is
checked by the rules: the signature must be on the step's first function call.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "DEFAULT_SIGNING_KEY",
    "DUMMY_SIGNATURES",
    "SignatureBook",
    "call_key",
    "decode_signature",
]

DEFAULT_SIGNING_KEY: Final = b"agent.testing.FakeGemini thought signatures"
"""The key every ``FakeGemini`` signs with unless given ``signing_key=``."""

DUMMY_SIGNATURES: Final = (
    "skip_thought_signature_validator",
    "context_engineering_is_the_way_to_go",
)
"""The placeholders Google documents for calls built by hand: always accepted."""

_SIZE: Final = 24

SERVER_PART_KINDS: Final = ("toolCall", "toolResponse", "executableCode", "codeExecutionResult")
"""Parts of server-side (built-in) tools, which must be echoed back verbatim."""


def decode_signature(value: Any) -> bytes | None:
    """Decode a ``thoughtSignature`` sent in standard or URL-safe base64, padded or not."""
    if not isinstance(value, str):
        return None
    data = value.strip().replace("-", "+").replace("_", "/")
    data += "=" * (-len(data) % 4)
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


_DUMMY_BYTES: Final = frozenset(
    {decode_signature(d) for d in DUMMY_SIGNATURES} | {d.encode() for d in DUMMY_SIGNATURES}
) - {None}


def is_dummy(raw: Any) -> bool:
    """Tell whether a ``thoughtSignature`` value is one of the documented placeholders."""
    return raw in DUMMY_SIGNATURES or decode_signature(raw) in _DUMMY_BYTES


def _part_content(part: Mapping[str, Any]) -> list[Any]:
    call = part.get("functionCall")
    if isinstance(call, Mapping):
        return ["call", call.get("name"), call.get("args") or {}]
    return ["text", part.get("text")]


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def call_key(call: Mapping[str, Any]) -> str:
    """Return what identifies a function call for the signature rules: its name and args."""
    return _canonical(_part_content({"functionCall": call})).decode()


@dataclass
class SignatureBook:
    """Issues thought signatures and checks the ones that come back.

    Signatures the fake issues are HMACs under ``key`` (see the module doc), checked without
    memory. Signatures given explicitly in a script (``reply(..., signature=b"...")``) and
    steps sent unsigned (Gemini 2.5 style) are remembered per fake, by the first call's
    name and arguments (`call_key`).
    """

    key: bytes = DEFAULT_SIGNING_KEY
    """The HMAC key."""
    signed: dict[bytes, set[str]] = field(default_factory=dict)
    """Signature bytes sent -> the `call_key` of the calls they were put on."""
    unsigned: set[str] = field(default_factory=set)
    """The `call_key` of first calls of steps sent without a signature."""
    server_parts: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """Server-side tool parts sent (``toolCall``, ``executableCode``...), by (kind, id):
    they must come back exactly as sent."""

    def sign(self, part: Mapping[str, Any], model: str) -> bytes:
        """Return the signature ``model`` gives a wire part (its call, else its ``text``)."""
        signed = _canonical([model.removeprefix("models/"), *_part_content(part)])
        return hmac.new(self.key, signed, hashlib.sha256).digest()[:_SIZE]

    def accepts(self, signature: bytes, call: Mapping[str, Any], model: str) -> bool:
        """Tell whether ``signature`` is valid on the first function call ``call`` of a step."""
        if call_key(call) in self.signed.get(signature, ()):
            return True
        return hmac.compare_digest(signature, self.sign({"functionCall": call}, model))

    def issuer(
        self, signature: bytes, part: Mapping[str, Any], models: Iterable[str]
    ) -> str | None:
        """Return which of ``models`` issued ``signature`` for ``part``, if one did."""
        for model in models:
            if hmac.compare_digest(signature, self.sign(part, model)):
                return model
        return None

    def record_step(self, parts: Sequence[Mapping[str, Any]]) -> None:
        """Remember the signature (or its absence) of a model step about to be sent."""
        for part in parts:
            for kind in SERVER_PART_KINDS:
                body = part.get(kind)
                if isinstance(body, Mapping) and isinstance(body.get("id"), str):
                    self.server_parts[(kind, body["id"])] = dict(part)
        first = next((p for p in parts if isinstance(p.get("functionCall"), Mapping)), None)
        if first is None:
            return
        key = call_key(first["functionCall"])
        signature = decode_signature(first.get("thoughtSignature"))
        if signature is None:
            self.unsigned.add(key)
        else:
            self.signed.setdefault(signature, set()).add(key)
