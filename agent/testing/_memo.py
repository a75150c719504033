"""What the fake remembers of the previous request, so a growing conversation stays cheap.

Agents resend the same tools and the whole history every turn. ``RequestMemo`` keeps the
previous request's ``tools`` and ``contents`` as parsed and as normalised: an equal piece is
not normalised again, and a piece that already passed the strict checks is not checked again
(the checks that look across contents, such as call/response pairing and thought signatures,
still run on every request). Model functions get their own copy of each body; an unchanged
piece is copied once and handed out again only while it still equals the request's.
"""

from __future__ import annotations

import json
from typing import Any

from agent.testing._render import json_size, tokens
from agent.testing._strict import normalize

__all__ = ["RequestMemo"]

_NOTHING: Any = object()


class RequestMemo:
    """Normalised and validated pieces of the previous request, reused when resent unchanged.

    Pieces are compared with ``==`` on the parsed JSON, so ``1``, ``1.0`` and ``true`` count
    as the same value (no strict rule tells them apart).
    """

    def __init__(self) -> None:
        """Start with nothing remembered."""
        self._tools: tuple[Any, Any] = (_NOTHING, None)
        self._contents: list[tuple[Any, Any]] = []
        self.valid_tools: Any = _NOTHING
        """The normalised ``tools`` value that last passed the checks."""
        self.valid_contents: list[Any] = []
        """The normalised contents (by position) that last passed the checks."""
        self._given_tools: tuple[Any, Any] = (_NOTHING, None)
        self._given_contents: list[tuple[Any, Any]] = []
        self._sizes: dict[int, tuple[Any, int]] = {}

    def normalize(self, parsed: Any) -> Any:
        """Return ``normalize(parsed)``, reusing the previous request's equal pieces."""
        if not isinstance(parsed, dict):
            return normalize(parsed)
        body: dict[str, Any] = {}
        for key, item in parsed.items():
            if key == "tools":
                raw, done = self._tools
                if raw is _NOTHING or item != raw:
                    done = normalize(item)
                    self._tools = (item, done)
                body[key] = done
            elif key == "contents" and isinstance(item, list):
                body[key] = self._normalize_contents(item)
            else:
                body.update(normalize({key: item}))
        return body

    def _normalize_contents(self, contents: list[Any]) -> list[Any]:
        previous = self._contents
        pairs: list[tuple[Any, Any]] = []
        for index, content in enumerate(contents):
            if index < len(previous) and previous[index][0] == content:
                pairs.append(previous[index])
            else:
                pairs.append((content, normalize(content)))
        self._contents = pairs
        return [done for _, done in pairs]

    def passed(self, body: dict[str, Any]) -> None:
        """Remember the pieces of ``body`` (normalised by this memo) that passed the checks."""
        self.valid_tools = body.get("tools", _NOTHING)
        contents = body.get("contents")
        self.valid_contents = list(contents) if isinstance(contents, list) else []

    def copy_for_user(self, body: Any) -> Any:
        """Return a copy of a normalised body that user code may keep or change freely.

        ``tools`` and contents unchanged since the previous copy (same normalised object, and
        the copy handed out then still equal to it) are reused instead of copied again.
        """
        if not isinstance(body, dict):
            return _json_copy(body)
        out: dict[str, Any] = {}
        for key, value in body.items():
            if key == "tools":
                self._given_tools = _reuse(self._given_tools, value)
                out[key] = self._given_tools[1]
            elif key == "contents" and isinstance(value, list):
                given = self._given_contents
                pairs = [
                    _reuse(given[index] if index < len(given) else (_NOTHING, None), content)
                    for index, content in enumerate(value)
                ]
                self._given_contents = pairs
                out[key] = [copy for _, copy in pairs]
            else:
                out[key] = _json_copy(value)
        return out

    def prompt_tokens(self, body: Any) -> int:
        """Return ``estimate_usage``'s prompt estimate, measuring each unchanged piece once."""
        if not isinstance(body, dict):
            return 0
        sizes: dict[int, tuple[Any, int]] = {}
        contents = body.get("contents")
        total = tokens(self._size(body.get("tools"), sizes)) if body.get("tools") else 0
        if body.get("systemInstruction"):
            total += tokens(json_size(body["systemInstruction"]))
        if isinstance(contents, list) and contents:
            # json.dumps of a list: "[" + ", ".join(items) + "]"
            inner = sum(self._size(content, sizes) for content in contents)
            total += tokens(inner + 2 + 2 * (len(contents) - 1))
        elif contents:
            total += tokens(json_size(contents))
        self._sizes = sizes
        return total

    def _size(self, value: Any, sizes: dict[int, tuple[Any, int]]) -> int:
        known = self._sizes.get(id(value))
        size = known[1] if known is not None and known[0] is value else json_size(value)
        sizes[id(value)] = (value, size)
        return size


def _reuse(previous: tuple[Any, Any], value: Any) -> tuple[Any, Any]:
    source, copy = previous
    if source is value and copy == value:
        return previous
    return value, _json_copy(value)


def _json_copy(value: Any) -> Any:
    # A JSON round trip: the values came from JSON, and this is far cheaper than deepcopy.
    return json.loads(json.dumps(value))
