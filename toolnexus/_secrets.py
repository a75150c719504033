"""Secrets from the environment: ``${ENV}`` expansion, redaction, and a log filter.

Header values (HTTP tools, MCP servers) and MCP server environments may reference
environment variables as ``${NAME}``. The values put in by expansion are secrets: they are
replaced by ``[redacted]`` in everything a model, a transcript or a log could see.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import threading
import warnings
from collections.abc import Iterable, Mapping

from toolnexus.tool import ToolError

__all__ = ["LOG_FILTER", "RedactSecrets", "expand_env", "redact"]

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_REDACTED = "[redacted]"
_SDK_LOGGERS = frozenset({"mcp", "httpx2", "httpcore", "httpx"})


def expand_env(value: str, environ: Mapping[str, str] | None = None) -> tuple[str, list[str]]:
    """Expand ``${NAME}`` references in ``value``; return the text and the inserted values.

    The inserted values are what a caller must treat as secrets. A reference to a variable
    that is not set raises `ToolError` naming the variable (never a value).

    Example::

        text, secrets = expand_env("Bearer ${API_TOKEN}")
    """
    env = os.environ if environ is None else environ
    secrets: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            raise ToolError(f"environment variable {name} is not set")
        _warn_if_short(name, env[name])
        secrets.append(env[name])
        return env[name]

    return _ENV_REF.sub(replace, value), secrets


def redact(text: str, secrets: Iterable[str]) -> str:
    """Return ``text`` with every non-empty secret replaced by ``[redacted]``.

    A secret is replaced where it stands as a whole token: not where it is only part of
    a longer word or number, so a short value (``1``, ``on``) does not cut into
    unrelated output. A percent escape (``%20``) before a value counts as a boundary.
    """
    pattern = _secrets_pattern(frozenset(s for s in secrets if s))
    return text if pattern is None else pattern.sub(_REDACTED, text)


_WORD = re.compile(r"\w")
_BEFORE = r"(?:(?<!\w)|(?<=%[0-9A-Fa-f]{2}))"
_AFTER = r"(?!\w)"


@functools.lru_cache(maxsize=64)
def _secrets_pattern(secrets: frozenset[str]) -> re.Pattern[str] | None:
    """One regex matching any of ``secrets`` as a whole token, longest first."""
    if not secrets:
        return None
    alternatives = []
    for secret in sorted(secrets, key=lambda s: (-len(s), s)):
        before = _BEFORE if _WORD.match(secret[0]) else ""
        after = _AFTER if _WORD.match(secret[-1]) else ""
        alternatives.append(before + re.escape(secret) + after)
    return re.compile("|".join(alternatives))


SHORT_SECRET = 6
"""A ``${NAME}`` value shorter than this (characters) is too short to redact safely."""

_warned_short: set[str] = set()


def _warn_if_short(name: str, value: str) -> None:
    """Warn once per variable whose value is too short to be told apart from other text."""
    if not value or len(value) >= SHORT_SECRET or name in _warned_short:
        return
    _warned_short.add(name)
    warnings.warn(
        f"environment variable {name} holds a value of only {len(value)} character(s): it is "
        "redacted from tool output only where it stands as a whole word, and the same "
        "characters elsewhere may still give it away; use a longer secret",
        stacklevel=4,
    )


class RedactSecrets(logging.Filter):
    """Blanks registered secrets out of the log records of the HTTP and MCP libraries.

    At debug level the MCP SDK logs whole messages, so a server that echoes a header or an
    environment value back would otherwise put the secret in the logs.
    """

    def __init__(self) -> None:
        super().__init__()
        self.secrets: dict[str, int] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = list(self.secrets)
        if secrets:
            message = record.getMessage()
            clean = redact(message, secrets)
            if clean != message:
                record.msg, record.args = clean, None
        return True

    def add(self, secrets: list[str]) -> None:
        """Start redacting ``secrets`` and make sure every SDK logger has this filter."""
        with self._lock:
            for secret in secrets:
                self.secrets[secret] = self.secrets.get(secret, 0) + 1
        for name, item in list(logging.root.manager.loggerDict.items()):
            is_sdk = name.split(".")[0] in _SDK_LOGGERS
            if is_sdk and isinstance(item, logging.Logger) and self not in item.filters:
                item.addFilter(self)

    def remove(self, secrets: list[str]) -> None:
        """Stop redacting ``secrets`` (once every server that uses them is closed)."""
        with self._lock:
            for secret in secrets:
                left = self.secrets.get(secret, 0) - 1
                if left > 0:
                    self.secrets[secret] = left
                else:
                    self.secrets.pop(secret, None)


LOG_FILTER = RedactSecrets()
