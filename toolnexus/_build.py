"""Assemble a `Toolkit` from every source: MCP servers, skills, built-ins and your tools."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import toolnexus.builtins  # noqa: F401  (importing it registers the ten built-ins)
from toolnexus._function import as_tool
from toolnexus._registry import BUILTINS, DEFAULT_HIDDEN_ENV, BuiltinSettings, Limits
from toolnexus._skill_tool import skill_tool
from toolnexus._skills import Skill, found_skills
from toolnexus.errors import ConfigError
from toolnexus.tool import Resource, Tool, Toolkit

__all__ = ["build", "build_async"]

SkillDirs = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None
BuiltinsOption = bool | Mapping[str, Any]
McpOption = str | os.PathLike[str] | Mapping[str, Any] | None
YourTools = Sequence[Tool | Callable[..., Any]]


def _skill_dirs(skills: SkillDirs) -> list[Path]:
    if skills is None:
        return []
    if isinstance(skills, str | os.PathLike):
        return [Path(skills)]
    return [Path(s) for s in skills]


def _builtin_names(option: BuiltinsOption) -> list[str]:
    """Names of the built-ins that ``option`` turns on, in registry order."""
    if option is True:
        return list(BUILTINS)
    if option is False:
        return []
    if not isinstance(option, Mapping):
        raise ConfigError(f"builtins must be a bool or a mapping, not {type(option).__name__}")
    unknown_keys = set(option) - {"disabled", "enabled", "tools"}
    if unknown_keys:
        raise ConfigError(f"unknown builtins option(s): {', '.join(sorted(unknown_keys))}")
    for key in ("disabled", "enabled"):
        if key in option and not isinstance(option[key], bool):
            raise ConfigError(
                f"builtins[{key!r}] must be true or false, not {type(option[key]).__name__}"
            )
    if option.get("disabled") is True or option.get("enabled") is False:
        return []
    per_tool: Mapping[str, bool] = option.get("tools") or {}
    if not isinstance(per_tool, Mapping):
        raise ConfigError(
            "builtins['tools'] must be a mapping of tool name to true/false, "
            f"not {type(per_tool).__name__}"
        )
    for name, on in per_tool.items():
        if not isinstance(on, bool):
            raise ConfigError(
                f"builtins['tools'][{name!r}] must be true or false, not {type(on).__name__}"
            )
    unknown = set(per_tool) - set(BUILTINS)
    if unknown:
        # Configs move between implementations of this toolkit, which ignore names they
        # do not have: say so, and build the rest.
        warnings.warn(
            f"builtins['tools']: ignoring unknown built-in tool(s) "
            f"{', '.join(map(repr, sorted(unknown)))}; the built-ins are "
            f"{', '.join(sorted(BUILTINS))}",
            stacklevel=4,
        )
    return [name for name in BUILTINS if per_tool.get(name, True)]


@dataclass(frozen=True)
class _Plan:
    """The toolkit's tools other than MCP's, made and checked before any MCP server starts."""

    skills: Sequence[Skill]
    """The skills the ``skill`` tool serves."""
    sources: tuple[Sequence[Tool], ...]
    """The skill tool, the built-ins and your tools, in the order they win a name clash."""
    hidden_env: frozenset[str]
    """Variables kept from ``bash`` commands and stdio MCP servers."""

    def assemble(self, mcp_tools: Iterable[Tool], resources: Sequence[Resource]) -> Toolkit:
        """Return the toolkit; on a name clash the first source wins, with a warning."""
        chosen: dict[str, Tool] = {}
        for source in (mcp_tools, *self.sources):
            for tool in source:
                kept = chosen.get(tool.name)
                if kept is None:
                    chosen[tool.name] = tool
                else:
                    warnings.warn(
                        f"tool name {tool.name!r} from source {tool.source!r} clashes with the "
                        f"one from {kept.source!r}; keeping the {kept.source!r} tool",
                        stacklevel=3,
                    )
        return Toolkit(chosen.values(), skills=self.skills, resources=resources)


def _settings(
    root: str | os.PathLike[str] | None,
    skill_dirs: Sequence[Path],
    confine: bool,
    limits: Limits | None,
    hidden_env: Iterable[str] | None = None,
    switches: Mapping[str, bool] | None = None,
) -> BuiltinSettings:
    base = Path(root) if root is not None else Path.cwd()
    if not base.exists():
        raise ConfigError(f"root {os.fspath(base)!r} does not exist")
    if not base.is_dir():
        raise ConfigError(f"root {os.fspath(base)!r} is not a directory")
    return BuiltinSettings(
        root=base.resolve(),
        # realpath, unlike Path.resolve, does not raise for a symlink loop.
        read_only=tuple(Path(os.path.realpath(d)) for d in skill_dirs),
        confine=confine,
        limits=limits or Limits(),
        hidden_env=DEFAULT_HIDDEN_ENV if hidden_env is None else frozenset(hidden_env),
        **(switches or {}),
    )


def _plan(
    skill_dirs: Sequence[Path],
    found: Sequence[Skill],
    builtins: BuiltinsOption,
    tools: YourTools,
    root: str | os.PathLike[str] | None,
    confine: bool,
    limits: Limits | None,
    skill_files: int,
    hidden_env: Iterable[str] | None,
    switches: Mapping[str, bool] | None = None,
) -> _Plan:
    if isinstance(hidden_env, str):
        raise ConfigError("hidden_env must be a collection of variable names, not one string")
    settings = _settings(root, skill_dirs, confine, limits, hidden_env, switches)
    yours = [as_tool(item) for item in tools]
    own = {tool.name for tool in yours}  # one of your tools replaces the built-in it names
    builtin_tools = [
        BUILTINS[name](settings) for name in _builtin_names(builtins) if name not in own
    ]
    skill_tools = [skill_tool(found, sample=skill_files)] if found else []
    return _Plan(found, (skill_tools, builtin_tools, yours), settings.hidden_env)


def _discover(skill_dirs: Sequence[Path]) -> list[Skill]:
    return found_skills(skill_dirs) if skill_dirs else []


def build(
    skills: SkillDirs = None,
    builtins: BuiltinsOption = True,
    tools: YourTools = (),
    *,
    mcp: McpOption = None,
    root: str | os.PathLike[str] | None = None,
    confine: bool = True,
    limits: Limits | None = None,
    skill_files: int = 10,
    hidden_env: Iterable[str] | None = None,
    isolate_shell: bool = True,
    allow_private_network: bool = False,
    allow_hard_links: bool = False,
) -> Toolkit:
    """Build a `Toolkit` from skills, built-in tools, your own tools and MCP servers.

    Args:
        skills: A skills directory, or a list of them; every ``**/SKILL.md`` is a skill.
        builtins: ``True`` (default) for the ten built-in tools; ``False``,
            ``{"disabled": True}`` or ``{"enabled": False}`` for none;
            ``{"tools": {"bash": False}}`` to drop single tools (a name that is not a
            built-in is ignored, with a warning).
        tools: Your own `Tool` objects, or plain functions (turned into tools as
            `define_tool` would). One named like a built-in replaces it.
        mcp: An ``mcp.json`` path or the same data as a dict (needs the ``mcp`` extra).
        root: The workspace the file tools are confined to (default: the current dir);
            it must be an existing directory.
        confine: ``False`` lets file tools reach outside ``root`` (trusted hosts only).
        limits: Output caps of the built-in tools.
        skill_files: How many sibling files the ``skill`` tool lists (``-1``: no list).
        hidden_env: Environment variables ``bash`` commands and stdio MCP servers do
            not see; default ``GEMINI_API_KEY`` and ``GOOGLE_API_KEY`` (``()`` passes
            everything). A server's ``env`` in ``mcp.json`` can still pass one on purpose.
        isolate_shell: ``False`` runs ``bash`` commands without their own PID namespace,
            so they can see (and read the environment of) the agent's process.
        allow_private_network: ``True`` lets ``webfetch`` reach loopback, private and
            link-local addresses (local development).
        allow_hard_links: ``True`` lets the file tools read files with more than one
            hard link (by default refused: another link may be outside the workspace).

    On a name clash the first source wins, in the order MCP, skill, built-in, your tools,
    with a warning. Close a toolkit that has MCP servers (``with build(...) as tk:``).
    From async code with MCP servers, use `build_async`. A bad ``SKILL.md`` (a FIFO, a
    huge file, bad frontmatter...) or a skills directory that does not exist is skipped,
    and every skip is summarised in one warning (`list_skills` gives them all with
    reasons); an MCP server that fails to start is reported by `mcp_status`. Neither raises.

    Returns:
        The `Toolkit`; the ``skill`` tool is in it only when at least one skill was found.

    Raises:
        ConfigError: ``root`` is missing or not a directory, an option is unknown or
            has the wrong type (``{"tools": {"bash": "no"}}``), or a function in
            ``tools`` cannot be described.
        TypeError: An item of ``tools`` is neither a `Tool` nor a function.
        McpConfigError: The ``mcp`` configuration cannot be read or has no servers.
        ImportError: ``mcp`` is given but the ``mcp`` extra is not installed; the message
            says how to install it.

    Example::

        tk = toolnexus.build(skills="examples/skills")
        toolnexus.to_gemini(tk)
    """
    skill_dirs = _skill_dirs(skills)
    plan = _plan(
        skill_dirs,
        _discover(skill_dirs),
        builtins,
        tools,
        root,
        confine,
        limits,
        skill_files,
        hidden_env,
        {
            "isolate_shell": isolate_shell,
            "allow_private_network": allow_private_network,
            "allow_hard_links": allow_hard_links,
        },
    )
    if mcp is None:
        return plan.assemble((), ())
    from toolnexus._mcp import connect_mcp

    mcp_tools, resource = connect_mcp(mcp, plan.hidden_env)
    return plan.assemble(mcp_tools, [resource])


async def build_async(
    skills: SkillDirs = None,
    builtins: BuiltinsOption = True,
    tools: YourTools = (),
    *,
    mcp: McpOption = None,
    root: str | os.PathLike[str] | None = None,
    confine: bool = True,
    limits: Limits | None = None,
    skill_files: int = 10,
    hidden_env: Iterable[str] | None = None,
    isolate_shell: bool = True,
    allow_private_network: bool = False,
    allow_hard_links: bool = False,
) -> Toolkit:
    """Async `build`: connects MCP servers on the running event loop.

    Use it from async code (an agent, a web server); close with ``await tk.aclose()`` or
    ``async with``. Skill folders are scanned on a worker thread, so a large skills tree
    does not stall the loop. The toolkit's MCP tools must be run on this same loop.

    Args:
        skills: A skills directory, or a list of them (as for `build`).
        builtins: Which built-in tools to include (as for `build`).
        tools: Your own tools or functions (as for `build`).
        mcp: An ``mcp.json`` path or the same data as a dict.
        root: The workspace the file tools are confined to.
        confine: ``False`` lets file tools reach outside ``root``.
        limits: Output caps of the built-in tools.
        skill_files: How many sibling files the ``skill`` tool lists.
        hidden_env: Environment variables ``bash`` commands and stdio MCP servers do
            not see.
        isolate_shell: ``False`` runs ``bash`` commands without their own PID namespace.
        allow_private_network: ``True`` lets ``webfetch`` reach private addresses.
        allow_hard_links: ``True`` lets the file tools read hard-linked files.

    Returns:
        The `Toolkit`.

    Raises:
        ConfigError: As for `build`.
        McpConfigError: The ``mcp`` configuration cannot be read or has no servers.
        ImportError: ``mcp`` is given but the ``mcp`` extra is not installed.

    Example::

        async with await toolnexus.build_async(skills="examples/skills") as tk:
            ...
    """
    import asyncio

    skill_dirs = _skill_dirs(skills)
    found = await asyncio.to_thread(_discover, skill_dirs) if skill_dirs else []
    plan = _plan(
        skill_dirs,
        found,
        builtins,
        tools,
        root,
        confine,
        limits,
        skill_files,
        hidden_env,
        {
            "isolate_shell": isolate_shell,
            "allow_private_network": allow_private_network,
            "allow_hard_links": allow_hard_links,
        },
    )
    if mcp is None:
        return plan.assemble((), ())
    from toolnexus._mcp import connect_mcp_async

    mcp_tools, resource = await connect_mcp_async(mcp, plan.hidden_env)
    return plan.assemble(mcp_tools, [resource])
