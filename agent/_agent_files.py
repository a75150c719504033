"""Sub-agents defined in Markdown files: `load_agents`.

One file per agent, the shape other agent tools use for sub-agent files: YAML frontmatter,
then the system prompt as the body::

    ---
    name: reviewer
    description: Reviews a diff and lists the problems it finds.
    model: gemini-2.5-pro        # optional: else the model given to load_agents
    tools: [read, grep]          # optional allow-list from the main toolkit; [] for none
    max_turns: 10                # optional
    ---
    You are a careful code reviewer. ...
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.errors import ConfigurationError
from toolnexus import Tool, Toolkit

__all__ = ["AgentFile", "load_agents", "read_agent_file"]

_KEYS = frozenset({"name", "description", "model", "tools", "max_turns"})


@dataclass(frozen=True, slots=True)
class AgentFile:
    """What one agent file says."""

    name: str
    """The tool name the main agent calls it by."""
    description: str
    """When the main agent should hand it a task."""
    system_prompt: str
    """The body of the file."""
    model: str | None = None
    """Its model (else the one given to `load_agents`)."""
    tools: tuple[str, ...] | None = None
    """The names of the main toolkit's tools it may use (``None``: all of them)."""
    max_turns: int | None = None
    """Its turn limit (else the agent default)."""


def read_agent_file(path: str | Path) -> AgentFile:
    """Read one agent file.

    Raises:
        ConfigurationError: The file cannot be read, has no frontmatter, or a field is
            missing or has the wrong type (the message names the file and the field).
    """
    from toolnexus._skills import _MalformedError, _split_frontmatter, _yaml_frontmatter

    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8").replace("\r\n", "\n")
        source, body = _split_frontmatter(text)
        meta: Any = _yaml_frontmatter(source) if source is not None else None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"cannot read the agent file {where}: {exc}") from None
    except _MalformedError as exc:
        raise ConfigurationError(f"agent file {where}: {exc}") from None
    if not isinstance(meta, dict):
        raise ConfigurationError(f"agent file {where}: needs a `---` frontmatter with a name")
    unknown = set(map(str, meta)) - _KEYS
    if unknown:
        raise ConfigurationError(
            f"agent file {where}: unknown field(s) {', '.join(sorted(unknown))}; "
            f"allowed: {', '.join(sorted(_KEYS))}"
        )
    name, description, model = (_text(meta, key, where) for key in ("name", "description", "model"))
    if not name:
        raise ConfigurationError(f"agent file {where}: `name` is required")
    return AgentFile(
        name=name,
        description=description or "",
        system_prompt=body,
        model=model,
        tools=_tools(meta.get("tools"), where),
        max_turns=_turns(meta.get("max_turns"), where),
    )


def _text(meta: dict[str, Any], key: str, where: str) -> str | None:
    value = meta.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigurationError(f"agent file {where}: `{key}` must be text")
    return value.strip() or None


def _tools(value: Any, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):  # "read, grep", as some agent tools write it
        return tuple(name.strip() for name in value.split(",") if name.strip())
    if isinstance(value, list) and all(isinstance(name, str) for name in value):
        return tuple(value)
    raise ConfigurationError(f"agent file {where}: `tools` must be a list of tool names")


def _turns(value: Any, where: str) -> int | None:
    if value is None:
        return None
    try:
        turns = int(value)
    except (TypeError, ValueError):
        turns = 0
    if turns < 1:
        raise ConfigurationError(f"agent file {where}: `max_turns` must be a whole number >= 1")
    return turns


def load_agents(
    path: str | Path | Sequence[str | Path],
    *,
    toolkit: Toolkit | None = None,
    model: str | None = None,
    max_depth: int | None = None,
    **options: Any,
) -> list[Tool]:
    """Load the agent files of a directory (every ``*.md``) as sub-agent tools.

    Each file becomes an `Agent` with its own system prompt, model, turn limit and the
    tools of ``toolkit`` its ``tools`` allow-list names (all of them when it has none),
    turned into a tool with `Agent.as_tool`. Give the tools to the main agent.

    Example::

        tk = tn.build()
        helpers = load_agents("agents/", toolkit=tk, client=ClientSettings(api_key=key))
        main = Agent(toolkit=tn.toolkit([*tk, *helpers]))

    Args:
        path: A directory of agent files, one file, or a list of either.
        toolkit: The main toolkit the allow-lists pick from.
        model: The model of agents whose file names none (else the agent default).
        max_depth: Passed to `Agent.as_tool` (its default otherwise).
        **options: More `Agent` keyword arguments shared by every agent (``client``,
            ``limits``, ``approval``, ``wait_for``, ...).

    Returns:
        The tools, in file-name order.

    Raises:
        ConfigurationError: A file is invalid, two agents share a name, or an allow-list
            names a tool ``toolkit`` does not have.
    """
    from agent._agent import DEFAULT_MODEL, Agent
    from agent._options import RunLimits
    from agent._subagent import DEFAULT_MAX_DEPTH

    files = _agent_paths(path)
    base = toolkit if toolkit is not None else Toolkit()
    tools: list[Tool] = []
    seen: set[str] = set()
    for file in files:
        spec = read_agent_file(file)
        if spec.name in seen:
            raise ConfigurationError(f"agent file {file}: another file already names {spec.name!r}")
        seen.add(spec.name)
        settings: dict[str, Any] = {**options}
        if spec.max_turns is not None:
            limits = settings.get("limits") or RunLimits()
            settings["limits"] = dataclasses.replace(limits, max_turns=spec.max_turns)
        agent = Agent(
            spec.model or model or DEFAULT_MODEL,
            _allowed(base, spec, file),
            system_prompt=spec.system_prompt or None,
            **settings,
        )
        depth = max_depth if max_depth is not None else DEFAULT_MAX_DEPTH
        tools.append(agent.as_tool(name=spec.name, description=spec.description, max_depth=depth))
    return tools


def _agent_paths(path: str | Path | Sequence[str | Path]) -> list[Path]:
    paths = [path] if isinstance(path, str | Path) else list(path)
    files: list[Path] = []
    for item in map(Path, paths):
        if item.is_dir():
            files.extend(sorted(item.glob("*.md")))
        elif item.is_file():
            files.append(item)
        else:
            raise ConfigurationError(f"no agent file or directory at {item}")
    return files


def _allowed(toolkit: Toolkit, spec: AgentFile, file: Path) -> Toolkit:
    if spec.tools is None:
        return toolkit
    missing = [name for name in spec.tools if name not in toolkit]
    if missing:
        raise ConfigurationError(
            f"agent file {file}: no tool named {', '.join(map(repr, missing))}; "
            f"the tools are {', '.join(toolkit.names) or 'none'}"
        )
    skills = toolkit.skills if "skill" in spec.tools else ()
    return Toolkit([toolkit[name] for name in spec.tools], skills=skills)
