"""How an API key is kept out of a text: `scrub`, with no dependency.

The model seam scrubs the errors it makes with it, and the command line everything it shows;
it lives apart from the SDK client so that the command line can use it without importing the
SDK.
"""

from __future__ import annotations

import re

__all__ = ["scrub"]


def scrub(text: str, secret: str | None) -> str:
    """Return ``text`` with ``secret`` (an API key) replaced by ``***``.

    A real key (8 characters or more) is replaced wherever it appears. A shorter one (a
    test key such as ``"k"``) only where it stands alone, so it does not mangle every word
    that holds the letter.
    """
    secret = (secret or "").strip()
    if len(secret) >= 8:
        return text.replace(secret, "***")
    if not secret:
        return text
    return re.sub(rf"(?<![\w-]){re.escape(secret)}(?![\w-])", "***", text)
