"""Sub-agents defined in Markdown files: `load_agents`.

One file per agent: YAML frontmatter, then the system prompt as the body. The files of
gemini-cli (``.gemini/agents/*.md``) and of Claude Code (``.claude/agents/*.md``) load
unchanged, as do files written for this package::

    ---
    name: reviewer
    description: Reviews a diff and lists the problems it finds.
    model: gemini-2.5-pro        # optional: else the model given to load_agents
    tools: [read, grep]          # optional allow-list from the main toolkit; [] for none
    temperature: 0.2             # optional
    max_turns: 10                # optional
    timeout_mins: 5              # optional: a deadline for each of its runs
    ---
    You are a careful code reviewer. ...

What each field does, how the tool names of the other two (``Read``, ``read_file``, ...) map
to this toolkit's, and what is ignored, is the table in ``docs/subagents.md``; the same facts
are the tables of `agent._agent_vocabulary`.
"""

from __future__ import annotations

import asyncio
import codecs
import dataclasses
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent._agent_vocabulary import (
    APPLIED_FIELDS,
    DISPLAY_FIELDS,
    UNAPPLIED_FIELDS,
    is_gemini_model,
    loose_frontmatter,
    resolve_tool,
)
from agent.errors import AgentError, ConfigurationError
from toolnexus import Tool, Toolkit

if TYPE_CHECKING:
    from agent._agent import Agent

__all__ = [
    "CATALOG_CHARS",
    "AgentFile",
    "AgentFileWarning",
    "fit_descriptions",
    "list_agent_files",
    "load_agents",
    "load_agents_async",
    "load_named_agents_async",
    "read_agent_file",
]

CATALOG_CHARS = 20_000
"""Default cap, in characters, on the sub-agent descriptions the main agent is sent."""

_MIN_CATALOG = 500


class AgentFileWarning(AgentError, UserWarning):
    """An agent file was skipped, or something it asks for was not applied as written.

    One warning per skipped file (its path and the reason), and one per kind of note for a
    whole folder: tools the toolkit lacks, model names that are not Gemini models, fields
    that are not applied. A warning, not raised (``strict=True`` raises for a skipped file);
    it sits under `AgentError` so that ``except AgentError`` still catches it under
    ``-W error``.
    """


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
    """Its model as written (``None``, ``inherit`` or a non-Gemini name: the main one's)."""
    tools: tuple[str, ...] | None = None
    """The tool names it may use, as written (``None``: all of the main toolkit's)."""
    disallowed_tools: tuple[str, ...] = ()
    """Tool names taken out of ``tools`` (Claude Code's ``disallowedTools``)."""
    max_turns: int | None = None
    """Its turn limit (else the agent default)."""
    temperature: float | None = None
    """Its sampling temperature (else the model's default)."""
    timeout: float | None = None
    """Seconds each of its runs may take (``timeout_mins`` times 60), else no limit."""
    ignored: tuple[str, ...] = ()
    """Fields of the file this package does not apply (display-only fields not counted)."""
    path: Path | None = field(default=None, compare=False)
    """The file it was read from."""


def read_agent_file(path: str | Path) -> AgentFile:
    """Read one agent file (gemini-cli, Claude Code or this package's own format).

    Only a regular file of at most 1 MB is read: a FIFO, a device or a link to one is
    refused without blocking on it.

    Args:
        path: The ``.md`` file.

    Returns:
        What the file says; which tools of a toolkit it gets is decided by `load_agents`.

    Raises:
        ConfigurationError: The file cannot be read, has no frontmatter, or a field is
            missing, has the wrong type or an unsupported value (the message names the
            file and the field).
    """
    where = str(path)
    meta, body = _frontmatter(_read_text(path, where), where)
    name = _text(meta, "name", where)
    if not name:
        raise ConfigurationError(f"agent file {where}: `name` is required")
    _check_kind(meta.get("kind"), where)
    keys = set(map(str, meta))
    return AgentFile(
        name=" ".join(name.split()),
        description=_text(meta, "description", where) or "",
        system_prompt=body,
        model=_text(meta, "model", where),
        tools=_names(meta.get("tools"), "tools", where),
        disallowed_tools=_names(meta.get("disallowedTools"), "disallowedTools", where) or (),
        max_turns=_turns(meta, where),
        temperature=_number(meta, "temperature", where, high=2.0, zero=True),
        timeout=_minutes(meta, where),
        ignored=tuple(sorted(keys - APPLIED_FIELDS - DISPLAY_FIELDS)),
        path=Path(path),
    )


def _read_text(path: str | Path, where: str) -> str:
    from toolnexus import read_small_file

    try:
        raw = read_small_file(str(path))
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigurationError(f"cannot read the agent file {where}: {reason}") from None
    bom = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        return raw[bom:].decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError as exc:
        at = bom + exc.start
        raise ConfigurationError(
            f"agent file {where}: not UTF-8 text (byte 0x{raw[at]:02x} at offset {at})"
        ) from None


def _frontmatter(text: str, where: str) -> tuple[dict[str, Any], str]:
    from toolnexus import FrontmatterError, parse_frontmatter, split_frontmatter

    try:
        source, body = split_frontmatter(text)
        meta: Any = parse_frontmatter(source) if source is not None else None
    except FrontmatterError as exc:
        # Claude Code reads frontmatter that is not valid YAML (a description holding
        # "Context: ..." examples, a common shape); so do we, line by line.
        loose = loose_frontmatter(source) if source is not None else None
        if not loose or "name" not in loose:
            raise ConfigurationError(f"agent file {where}: {exc}") from None
        meta = loose
    except RecursionError:
        raise ConfigurationError(
            f"agent file {where}: the frontmatter is nested too deeply"
        ) from None
    if not isinstance(meta, dict):
        raise ConfigurationError(f"agent file {where}: needs a `---` frontmatter with a name")
    return meta, body


def _check_kind(value: Any, where: str) -> None:
    kind = str(value).strip() if value is not None else "local"
    if kind == "remote":
        raise ConfigurationError(
            f"agent file {where}: `kind: remote` (an Agent2Agent server) is not supported; "
            "only local agents are"
        )
    if kind != "local":
        raise ConfigurationError(f"agent file {where}: `kind` must be local, not {kind!r}")


def _text(meta: Mapping[str, Any], key: str, where: str) -> str | None:
    value = meta.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigurationError(f"agent file {where}: `{key}` must be text")
    return value.strip() or None


def _names(value: Any, key: str, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):  # "Read, Grep", as Claude Code writes it
        return tuple(name.strip() for name in value.split(",") if name.strip())
    if isinstance(value, list) and all(isinstance(name, str) for name in value):
        return tuple(name.strip() for name in value if name.strip())
    raise ConfigurationError(f"agent file {where}: `{key}` must be a list of tool names")


def _turns(meta: Mapping[str, Any], where: str) -> int | None:
    key = "max_turns" if "max_turns" in meta else "maxTurns"
    value = meta.get(key)
    if value is None:
        return None
    try:
        turns = int(str(value).strip())
    except ValueError:
        turns = 0
    if turns < 1:
        raise ConfigurationError(f"agent file {where}: `{key}` must be a whole number >= 1")
    return turns


def _number(
    meta: Mapping[str, Any], key: str, where: str, *, high: float, zero: bool
) -> float | None:
    value = meta.get(key)
    if value is None:
        return None
    try:
        number = float(str(value).strip())
    except ValueError:
        number = math.nan
    low_ok = number >= 0 if zero else number > 0
    if not (low_ok and number <= high):
        bounds = f"from 0 to {high:g}" if zero else f"above 0, at most {high:g}"
        raise ConfigurationError(f"agent file {where}: `{key}` must be a number {bounds}")
    return number


def _minutes(meta: Mapping[str, Any], where: str) -> float | None:
    minutes = _number(meta, "timeout_mins", where, high=7 * 24 * 60, zero=False)
    return None if minutes is None else minutes * 60


# --- loading a folder ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Found:
    """One file met while loading: what it says, or why it cannot be used."""

    path: Path
    named: bool
    """Named by the caller (not found in a folder): a problem with it is raised."""
    spec: AgentFile | None = None
    problem: ConfigurationError | None = None


def _read_all(path: str | Path | Sequence[str | Path]) -> list[_Found]:
    """Read every agent file ``path`` names (blocking disk work: keep it off the loop)."""
    found: list[_Found] = []
    for file, named in _agent_paths(path):
        try:
            found.append(_Found(file, named, spec=read_agent_file(file)))
        except ConfigurationError as exc:
            found.append(_Found(file, named, problem=exc))
    return found


def _agent_paths(path: str | Path | Sequence[str | Path]) -> list[tuple[Path, bool]]:
    paths = [path] if isinstance(path, str | Path) else list(path)
    files: list[tuple[Path, bool]] = []
    for item in map(Path, paths):
        if item.is_dir():
            files.extend((file, False) for file in sorted(item.glob("*.md")))
        elif item.exists():
            files.append((item, True))  # a FIFO or a device is refused when it is read
        else:
            raise ConfigurationError(f"no agent file or directory at {item}")
    return files


def list_agent_files(
    path: str | Path | Sequence[str | Path],
) -> tuple[list[AgentFile], list[ConfigurationError]]:
    """Read the agent files ``path`` names without building agents: an inventory.

    Args:
        path: A directory of agent files, one file, or a list of either.

    Returns:
        The files that can be used, and for each other one the error that says why not.

    Raises:
        ConfigurationError: ``path`` does not exist.
    """
    found = _read_all(path)
    specs = [item.spec for item in found if item.spec is not None]
    return specs, [item.problem for item in found if item.problem is not None]


def load_agents(
    path: str | Path | Sequence[str | Path],
    *,
    toolkit: Toolkit | None = None,
    model: str | None = None,
    max_depth: int | None = None,
    strict: bool = False,
    catalog_chars: int | None = CATALOG_CHARS,
    **options: Any,
) -> list[Tool]:
    """Load the agent files of a directory (every ``*.md``) as sub-agent tools.

    Each file becomes an `Agent` with its own system prompt, model, temperature, turn
    limit and deadline, and the tools of ``toolkit`` its ``tools`` allow-list names (all
    of them when it has none), turned into a tool with `Agent.as_tool`. Give the tools to
    the main agent. gemini-cli and Claude Code files load unchanged: their tool names are
    mapped to this toolkit's, and what cannot be applied is said in an `AgentFileWarning`
    (once per kind for the whole folder): tools the toolkit lacks are left out, and a model
    that is not a Gemini model (``sonnet``) runs on ``model`` instead.

    A file of a folder that cannot be used (unreadable, no frontmatter, a field of the
    wrong type) is skipped with one warning naming it and the reason; with
    ``strict=True``, or for a file named in ``path`` itself, it is raised instead.

    Example::

        tk = tn.build()
        helpers = load_agents("agents/", toolkit=tk, client=ClientSettings(api_key=key))
        main = Agent(toolkit=tn.toolkit([*tk, *helpers]))

    Args:
        path: A directory of agent files, one file, or a list of either.
        toolkit: The main toolkit the allow-lists pick from.
        model: The model of agents whose file names none, ``inherit`` or a model that is
            not Gemini's (else the agent default): the main agent's model.
        max_depth: Passed to `Agent.as_tool` (its default otherwise).
        strict: Raise for a file that cannot be used, instead of skipping it.
        catalog_chars: Cap on the characters of all the agents' descriptions together
            (what the main agent is sent with every request): the longest are shortened
            to fit, with a warning. ``None`` for no cap.
        **options: More `Agent` keyword arguments shared by every agent (``api_key``,
            ``http_client``, ``approval``, ``wait_for``, ...).

    Returns:
        The tools, in file-name order.

    Raises:
        ConfigurationError: ``path`` does not exist; a file cannot be used (with
            ``strict``, or named directly); two agents share a name, or an agent is named
            like a tool of ``toolkit``; ``catalog_chars`` is below 500.
    """
    # _named is called from here, so its warnings' stacklevel names the caller of this function.
    named = _named(_read_all(path), toolkit, model, strict, catalog_chars, options)
    return _as_tools(named, max_depth)


async def load_agents_async(
    path: str | Path | Sequence[str | Path],
    *,
    toolkit: Toolkit | None = None,
    model: str | None = None,
    max_depth: int | None = None,
    strict: bool = False,
    catalog_chars: int | None = CATALOG_CHARS,
    **options: Any,
) -> list[Tool]:
    """`load_agents` for async code: the files are read on a worker thread.

    A slow disk or a large folder then does not stall the event loop. Same arguments,
    result and errors as `load_agents`.
    """
    found = await asyncio.to_thread(_read_all, path)
    named = _named(found, toolkit, model, strict, catalog_chars, options)
    return _as_tools(named, max_depth)


def _as_tools(named: list[tuple[str, str, Agent]], max_depth: int | None) -> list[Tool]:
    from agent._subagent import DEFAULT_MAX_DEPTH

    depth = max_depth if max_depth is not None else DEFAULT_MAX_DEPTH
    return [
        agent.as_tool(name=name, description=description, max_depth=depth)
        for name, description, agent in named
    ]


def _named(
    found: list[_Found],
    toolkit: Toolkit | None,
    model: str | None,
    strict: bool,
    catalog_chars: int | None,
    options: dict[str, Any],
) -> list[tuple[str, str, Agent]]:
    from agent._agent import DEFAULT_MODEL

    if catalog_chars is not None and catalog_chars < _MIN_CATALOG:
        raise ConfigurationError(
            f"catalog_chars must be at least {_MIN_CATALOG} (or None), not {catalog_chars}"
        )
    base = toolkit if toolkit is not None else Toolkit()
    specs = _usable(found, base, strict)
    notes = _Notes(model or DEFAULT_MODEL)
    chosen = [(spec, notes.toolkit_for(base, spec), notes.model_for(spec)) for spec in specs]
    descriptions = fit_descriptions([spec.description for spec in specs], catalog_chars)
    if descriptions != [spec.description for spec in specs]:
        notes.shortened = sum(a != b.description for a, b in zip(descriptions, specs, strict=True))
    named = [
        (spec.name, description, build_agent(spec, tools_of, model_of, options))
        for (spec, tools_of, model_of), description in zip(chosen, descriptions, strict=True)
    ]
    notes.warn(catalog_chars)
    return named


async def load_named_agents_async(
    path: str | Path | Sequence[str | Path],
    *,
    toolkit: Toolkit | None = None,
    model: str | None = None,
    strict: bool = False,
    catalog_chars: int | None = CATALOG_CHARS,
    **options: Any,
) -> list[tuple[str, str, Agent]]:
    """Load the agent files like `load_agents_async`, as agents rather than tools.

    For hosts that run the agents themselves (``toolnexus-agent serve`` offers each one as
    an MCP tool): the same files, warnings and errors as `load_agents_async`.

    Returns:
        ``(name, description, agent)`` per file, in file-name order.
    """
    found = await asyncio.to_thread(_read_all, path)
    return _named(found, toolkit, model, strict, catalog_chars, options)


def build_agent(spec: AgentFile, toolkit: Toolkit, model: str, options: Mapping[str, Any]) -> Agent:
    """Build the `Agent` of one agent file: the one place agent files become agents.

    Args:
        spec: What the file says.
        toolkit: The tools it gets.
        model: The model it runs on.
        options: The `Agent` keyword arguments every agent of the folder shares.

    Raises:
        ConfigurationError: The options (or the file's values) do not make a valid agent.
    """
    from agent._agent import Agent
    from agent._options import ModelSettings, RunLimits

    shared: dict[str, Any] = {**options}
    limits = shared.pop("limits", None) or RunLimits()
    settings = shared.pop("settings", None) or ModelSettings()
    if spec.max_turns is not None:
        limits = dataclasses.replace(limits, max_turns=spec.max_turns)
    if spec.timeout is not None:
        limits = dataclasses.replace(limits, deadline=spec.timeout)
    if spec.temperature is not None:
        settings = dataclasses.replace(settings, temperature=spec.temperature)
    return Agent(
        model,
        toolkit,
        system_prompt=spec.system_prompt or None,
        settings=settings,
        limits=limits,
        **shared,
    )


def _usable(found: list[_Found], toolkit: Toolkit, strict: bool) -> list[AgentFile]:
    """Return the files that can be used; warn of (or raise for) the others and clashes."""
    specs: list[AgentFile] = []
    owners: dict[str, Path] = {}
    for item in found:
        if item.problem is not None:
            if strict or item.named:
                raise item.problem
            warnings.warn(f"skipped {item.problem}", AgentFileWarning, stacklevel=4)
            continue
        assert item.spec is not None
        name = item.spec.name
        # A clash is refused in every mode: which agent (or tool) the model gets under that
        # name is not for the loader to guess.
        if name in owners:
            raise ConfigurationError(
                f"agent file {item.path}: {owners[name]} already names an agent {name!r}"
            )
        if name in toolkit:
            raise ConfigurationError(
                f"agent file {item.path}: {name!r} is already a tool of the toolkit "
                f"({toolkit[name].source}); give the agent another name"
            )
        owners[name] = item.path
        specs.append(item.spec)
    return specs


@dataclass
class _Notes:
    """What the folder's files ask for that is not applied as written, said once per kind."""

    parent: str
    """The main agent's model, which the agents without a Gemini model of their own use."""
    lacking: dict[str, list[str]] = field(default_factory=dict)
    models: dict[str, list[str]] = field(default_factory=dict)
    ignored: dict[str, list[str]] = field(default_factory=dict)
    shortened: int = 0

    def toolkit_for(self, toolkit: Toolkit, spec: AgentFile) -> Toolkit:
        """Return the tools of ``toolkit`` the file allows; note the ones it lacks."""
        file = spec.path.name if spec.path else spec.name
        for key in spec.ignored:
            self.ignored.setdefault(key, []).append(file)
        names = toolkit.names if spec.tools is None else self._resolve(toolkit, spec.tools, file)
        denied = set(_resolved(toolkit, spec.disallowed_tools))
        keep = [name for name in dict.fromkeys(names) if name not in denied]
        skills = toolkit.skills if "skill" in keep else ()
        return Toolkit([toolkit[name] for name in keep], skills=skills)

    def _resolve(self, toolkit: Toolkit, written: Iterable[str], file: str) -> list[str]:
        names: list[str] = []
        for entry in written:
            ours = resolve_tool(entry, toolkit)
            if not ours:
                self.lacking.setdefault(entry, []).append(file)
            names.extend(ours)
        return names

    def model_for(self, spec: AgentFile) -> str:
        """Return the model the agent runs on; note a model that is not Gemini's."""
        if spec.model is None or spec.model == "inherit":
            return self.parent
        if is_gemini_model(spec.model):
            return spec.model
        self.models.setdefault(spec.model, []).append(spec.path.name if spec.path else spec.name)
        return self.parent

    def warn(self, catalog_chars: int | None) -> None:
        """Issue one warning per kind of note."""
        if self.lacking:
            _note(f"tools the toolkit lacks were left out: {_listing(self.lacking)}")
        if self.models:
            _note(
                f"models that are not Gemini models run on {self.parent} instead: "
                f"{_listing(self.models)}"
            )
        unapplied = {k: v for k, v in self.ignored.items() if k in UNAPPLIED_FIELDS}
        if unapplied:
            _note(f"fields this package does not apply were ignored: {_listing(unapplied)}")
        unknown = {k: v for k, v in self.ignored.items() if k not in UNAPPLIED_FIELDS}
        if unknown:
            _note(f"unknown fields were ignored: {_listing(unknown)}")
        if self.shortened:
            _note(
                f"the descriptions of {self.shortened} agent(s) were shortened to keep the "
                f"catalog under catalog_chars={catalog_chars}"
            )


def _resolved(toolkit: Toolkit, written: Iterable[str]) -> list[str]:
    return [name for entry in written for name in resolve_tool(entry, toolkit)]


def _listing(where: Mapping[str, list[str]]) -> str:
    def files(names: list[str]) -> str:
        return names[0] if len(names) == 1 else f"{len(names)} files"

    return ", ".join(f"{key} ({files(names)})" for key, names in sorted(where.items()))


def _note(message: str) -> None:
    warnings.warn(f"agent files: {message}", AgentFileWarning, stacklevel=5)


def fit_descriptions(descriptions: Sequence[str], max_chars: int | None) -> list[str]:
    """Shorten the longest ``descriptions`` so that together they fit in ``max_chars``.

    Descriptions shorter than an equal share of what the others leave are kept whole; the
    rest are cut to that share, ending in ``…``. Every agent keeps a description, and the
    order is kept.

    Args:
        descriptions: The agents' descriptions.
        max_chars: The cap on their total length; ``None`` for no cap.

    Returns:
        The descriptions, the long ones shortened.
    """
    if max_chars is None or sum(map(len, descriptions)) <= max_chars:
        return list(descriptions)
    budget, left = max_chars, len(descriptions)
    share = budget // max(left, 1)
    for length in sorted(map(len, descriptions)):
        share = budget // left
        if length > share:
            break
        budget -= length
        left -= 1
    return [
        text if len(text) <= share else text[: max(share - 1, 0)].rstrip() + "…"
        for text in descriptions
    ]
