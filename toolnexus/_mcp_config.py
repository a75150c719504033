"""Read an MCP configuration (``mcp.json`` or a dict) into per-server settings.

Servers sit under a top-level ``mcpServers``, ``servers`` or ``mcp`` object; other keys
beside them are ignored. A server with ``command`` runs over stdio, one with ``url`` over
streamable HTTP (or SSE with ``"type": "sse"``). A server that is disabled or whose entry
is malformed becomes a status record instead of stopping the others; only a file that
cannot be read or has no servers object raises `McpConfigError`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from toolnexus._registry import DEFAULT_HIDDEN_ENV
from toolnexus._secrets import expand_env
from toolnexus.errors import ConfigError, McpConfigError, ToolnexusError

__all__ = ["DEFAULT_TIMEOUT", "McpServerStatus", "ServerConfig", "parse_config"]

DEFAULT_TIMEOUT = 30.0
_SERVER_KEYS = ("mcpServers", "servers", "mcp")

State = Literal["connected", "failed", "disabled"]


@dataclass(frozen=True, slots=True)
class McpServerStatus:
    """How one configured MCP server is doing."""

    name: str
    """The server's key in the configuration."""
    transport: str
    """``"stdio"``, ``"http"`` (streamable HTTP), ``"sse"`` or ``"unknown"``."""
    state: State
    """``connected``, ``failed`` (see ``reason``) or ``disabled`` by configuration."""
    reason: str = ""
    """Why the server failed or is disabled (empty when connected)."""
    tools: int = 0
    """How many of its tools the toolkit exposes."""


@dataclass(slots=True)
class ServerConfig:
    """Settings of one server to start (``${ENV}`` already expanded)."""

    name: str
    transport: str
    timeout: float
    command: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    allow: dict[str, bool] = field(default_factory=dict)
    secrets: list[str] = field(default_factory=list)


def _load(source: str | os.PathLike[str] | Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    if isinstance(source, Mapping):
        return source, "MCP config"
    path = Path(source)
    where = f"MCP config {path}"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise McpConfigError(f"cannot read {where}: {reason}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(
            f"invalid {where}: not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    if not isinstance(data, dict):
        raise McpConfigError(f"invalid {where}: the top level must be a JSON object")
    return data, where


def _servers(data: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    for key in _SERVER_KEYS:
        if key in data:
            servers = data[key]
            if not isinstance(servers, Mapping):
                raise McpConfigError(f"invalid {where}: `{key}` must be an object of servers")
            return servers
    raise McpConfigError(
        f"invalid {where}: no servers; expected a top-level `mcpServers`, `servers` or `mcp` object"
    )


def _str_map(entry: Mapping[str, Any], *keys: str) -> dict[str, str]:
    for key in keys:
        if key in entry:
            value = entry[key]
            if not isinstance(value, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()
            ):
                raise ConfigError(f"`{key}` must be an object of strings")
            return dict(value)
    return {}


def _expand_all(values: dict[str, str], secrets: list[str]) -> dict[str, str]:
    out = {}
    for key, value in values.items():
        out[key], found = expand_env(value)
        secrets += found
    return out


def _command(entry: Mapping[str, Any]) -> list[str]:
    command = entry["command"]
    args = entry.get("args", [])
    if isinstance(command, str):
        command = [command]
    parts = [*command, *args] if isinstance(args, list) else None
    if not parts or not all(isinstance(p, str) for p in parts):
        raise ConfigError("`command` must be a non-empty list of strings (or a string with `args`)")
    return parts


def _parse(
    name: str, entry: Mapping[str, Any], base: Path | None, hidden_env: frozenset[str]
) -> ServerConfig | McpServerStatus:
    """Return the server's settings, or its status when it is disabled or misconfigured."""
    transport = "stdio" if "command" in entry else "unknown"
    if "url" in entry:
        kind = str(entry.get("type") or entry.get("transport") or "http").lower()
        transport = "sse" if kind == "sse" else "http"
    if entry.get("disabled") is True or entry.get("enabled") is False:
        return McpServerStatus(name, transport, "disabled", "disabled in the configuration")
    try:
        timeout = entry.get("timeout", DEFAULT_TIMEOUT)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ConfigError("`timeout` must be a positive number of seconds")
        allow = entry.get("tools", {})
        if not isinstance(allow, Mapping) or not all(isinstance(v, bool) for v in allow.values()):
            raise ConfigError("`tools` must be an object of tool name to true/false")
        config = ServerConfig(name, transport, float(timeout), allow=dict(allow))
        if "command" in entry and "url" in entry:
            raise ConfigError("give either `command` (stdio) or `url` (HTTP), not both")
        if "command" in entry:
            config.command = _command(entry)
            own_env = _expand_all(_str_map(entry, "env", "environment"), config.secrets)
            # The agent's own keys stay out unless the entry's `env` passes them on purpose.
            inherited = {k: v for k, v in os.environ.items() if k not in hidden_env}
            config.env = {**inherited, **own_env}
            cwd = entry.get("cwd")
            if cwd is not None:
                if not isinstance(cwd, str):
                    raise ConfigError("`cwd` must be a string")
                config.cwd = str(base / cwd) if base is not None else cwd
        elif "url" in entry:
            if not isinstance(entry["url"], str):
                raise ConfigError("`url` must be a string")
            config.url = entry["url"]
            config.headers = _expand_all(_str_map(entry, "headers"), config.secrets)
        else:
            raise ConfigError("needs a `command` (stdio server) or a `url` (HTTP server)")
    except ToolnexusError as exc:  # a ConfigError, or a missing ${ENV} variable
        return McpServerStatus(name, transport, "failed", f"invalid configuration: {exc}")
    return config


def parse_config(
    source: str | os.PathLike[str] | Mapping[str, Any],
    hidden_env: frozenset[str] = DEFAULT_HIDDEN_ENV,
) -> tuple[list[ServerConfig], list[McpServerStatus]]:
    """Split an MCP configuration into servers to start and statuses of the others.

    A stdio server inherits the environment minus ``hidden_env`` (by default the Gemini
    API keys), plus its entry's ``env``.
    """
    data, where = _load(source)
    base = None if isinstance(source, Mapping) else Path(source).parent
    configs: list[ServerConfig] = []
    skipped: list[McpServerStatus] = []
    for name, entry in _servers(data, where).items():
        if not isinstance(entry, Mapping):
            continue  # a comment or schema key beside the servers
        parsed = _parse(str(name), entry, base, hidden_env)
        (configs if isinstance(parsed, ServerConfig) else skipped).append(parsed)  # type: ignore[arg-type]
    return configs, skipped
