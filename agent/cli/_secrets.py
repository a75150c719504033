"""Keep the API key out of everything the commands print or write.

Errors from the model call are scrubbed where they are made, but the model's own words are
not: a prompt-injected model can be made to quote the key (it may read a ``.env`` file), and
the commands would print it to the terminal, ``--json`` output and result files. So every
output path of the commands passes model text through here first. The keys are the ones the
Gemini client reads: ``GEMINI_API_KEY`` and ``GOOGLE_API_KEY``.
"""

from __future__ import annotations

import os
from typing import Any

from agent import scrub

__all__ = ["StreamScrubber", "api_keys", "scrub_data", "scrub_text"]

_KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


def api_keys() -> tuple[str, ...]:
    """Return the API keys in this process's environment (the ones a command may use)."""
    found = (os.environ.get(name, "").strip() for name in _KEY_VARIABLES)
    return tuple(key for key in found if key)


def scrub_text(text: str, keys: tuple[str, ...] | None = None) -> str:
    """Return ``text`` with every API key replaced by ``***``.

    Args:
        text: What is about to be printed or written.
        keys: The keys to hide; by default those of the environment (`api_keys`).
    """
    for key in api_keys() if keys is None else keys:
        text = scrub(text, key)
    return text


def scrub_data(value: Any, keys: tuple[str, ...] | None = None) -> Any:
    """Return JSON-ready ``value`` with every string in it scrubbed (keys of objects too)."""
    keys = api_keys() if keys is None else keys
    if not keys:
        return value
    if isinstance(value, str):
        return scrub_text(value, keys)
    if isinstance(value, list):
        return [scrub_data(item, keys) for item in value]
    if isinstance(value, dict):
        return {scrub_text(str(k), keys): scrub_data(v, keys) for k, v in value.items()}
    return value


class StreamScrubber:
    """Scrub text that arrives in pieces, so a key split over two pieces is caught too.

    `feed` returns what can be shown now and holds back an end that could be the start of
    a key; `flush` returns the rest once no more text follows.

    Example::

        scrubber = StreamScrubber(("AIzaSECRET-0123",))
        shown = scrubber.feed("the key is AIzaSE") + scrubber.feed("CRET-0123.") + scrubber.flush()
        assert shown == "the key is ***."
    """

    def __init__(self, keys: tuple[str, ...] | None = None) -> None:
        self._keys = api_keys() if keys is None else keys
        self._held = ""

    def feed(self, text: str) -> str:
        """Take the next piece; return the scrubbed text that is safe to show now."""
        if not self._keys:
            return text
        text = scrub_text(self._held + text, self._keys)
        keep = self._partial_key_at_end(text)
        self._held = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep]

    def flush(self) -> str:
        """Return what is held back (the text ended)."""
        held, self._held = self._held, ""
        return held

    def _partial_key_at_end(self, text: str) -> int:
        """How many characters at the end of ``text`` could begin a key (0 when none)."""
        longest = 0
        for key in self._keys:
            for size in range(min(len(key) - 1, len(text)), longest, -1):
                if key.startswith(text[len(text) - size :]):
                    longest = size
                    break
        return longest
