"""The model the commands talk to: Gemini with the user's key, or a ``--fake`` scenario."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from agent.cli._exits import CliError
from agent.cli._options import reason, yaml_problem
from agent.cli._toolkit import build_toolkit
from agent.errors import ConfigurationError

if TYPE_CHECKING:
    import httpx

    from agent import Agent, ApprovalPolicy, ModelSettings, Store
    from agent.capabilities import ContextCache, TokenRate
    from agent.cli._questions import Asker
    from agent.testing import FakeGemini
    from toolnexus import Tool, Toolkit

__all__ = [
    "AgentFactory",
    "add_subagents",
    "flag_cache",
    "flag_settings",
    "make_agent",
    "open_agents",
    "open_factory",
]

NO_KEY = (
    "toolnexus-agent: no Gemini API key. Set GEMINI_API_KEY (or GOOGLE_API_KEY) in the "
    "environment, for example `export GEMINI_API_KEY=...` with a key from "
    "https://aistudio.google.com/apikey. To try the agent without a key or network, run "
    "`toolnexus-agent demo`, or add `--fake SCENARIO.yaml` to play a scripted model."
)


@dataclass
class AgentFactory:
    """Makes agents that share one HTTP client (to the real Gemini, or to a fake in process)."""

    model: str
    """The model of ``--model`` (or the scenario's, or the default)."""
    http: httpx.AsyncClient
    """The client every agent sends its requests through."""
    api_key: str | None
    """``None`` with the real Gemini (the SDK reads the environment); a dummy for a fake."""
    fake: FakeGemini | None = None
    """The scripted model of ``--fake``."""
    builtin_tools: tuple[str, ...] = ()
    """Gemini's own tools every agent offers (``--builtin-tool``)."""
    settings: ModelSettings | None = None
    """The model settings of the flags (``--service-tier``), if any."""
    cache: ContextCache | None = None
    """The context cache of ``--cache``, shared by every agent the factory makes."""
    fallbacks: tuple[str, ...] = ()
    """The models a turn of ``model`` falls back to (the other names of ``--model``)."""
    rate: TokenRate | None = None
    """The rate limit of the flags (``--tpm``, ``--rpm``), shared by every agent made."""

    def make(
        self,
        toolkit: Toolkit,
        *,
        model: str | None = None,
        fallbacks: Sequence[str] | None = None,
        builtin_tools: Sequence[str] | None = None,
        **options: Any,
    ) -> Agent:
        """Return an `Agent` on the shared client (see `make_agent` for the options).

        ``model``, ``builtin_tools`` and the context cache (``cache``) default to the
        factory's (the command's flags); the factory's model falls back to its `fallbacks`
        unless ``fallbacks`` says otherwise, another model (a batch task's own) to none.

        Raises:
            CliError: The agent's options are wrong (its `ConfigurationError`).
        """
        cache = options.pop("cache", self.cache)
        chosen = model or self.model
        if fallbacks is None:
            fallbacks = self.fallbacks if chosen == self.model else ()
        return make_agent(
            toolkit,
            http=self.http,
            api_key=self.api_key,
            scripted=self.fake is not None,
            model=(chosen, *fallbacks) if fallbacks else chosen,
            builtin_tools=self.builtin_tools if builtin_tools is None else builtin_tools,
            **{"settings": self.settings, "cache": cache, "rate": self.rate, **options},
        )

    def report(self, err: TextIO) -> None:
        """Tell on ``err`` what a ``--fake`` scenario found wrong (failed expectations, ...)."""
        if self.fake is not None:
            for failure in self.fake.failures:
                err.write(f"fake model: {failure}\n")


def make_agent(
    toolkit: Toolkit,
    *,
    http: httpx.AsyncClient,
    api_key: str | None,
    scripted: bool,
    model: str | Sequence[str],
    system: str | None = None,
    max_turns: int | None = None,
    wait_for: Asker | None = None,
    store: Store | None = None,
    output_type: Any = None,
    approval: ApprovalPolicy | None = None,
    builtin_tools: Sequence[str] = (),
    settings: ModelSettings | None = None,
    cache: ContextCache | None = None,
    rate: TokenRate | None = None,
) -> Agent:
    """Return the `Agent` of a command: every subcommand's agents are made here.

    Args:
        toolkit: The tools.
        http: The HTTP client to send on (to Gemini, or to a fake).
        api_key: The key; ``None`` lets the SDK read the environment.
        scripted: The model is a ``--fake`` scenario: failures are retried quickly.
        model: The model name, or the names of a fallback chain (first the agent's model).
        system: The system prompt (``--system``), if any.
        max_turns: ``--max-turns``; ``None`` for the agent's default.
        wait_for: Answers questions and approvals on the terminal, if any.
        store: Where ``--session`` conversations are kept.
        output_type: The typed output (``--output-schema``), if any.
        approval: The approval policy (``--approval``), if any.
        builtin_tools: Gemini's own tools (``--builtin-tool``).
        settings: The model settings (``--service-tier``), if any.
        cache: The context cache (``--cache``), if any.
        rate: The rate limit (``--tpm``, ``--rpm``), if any: the same object for every
            agent of the command.

    Raises:
        CliError: The agent's options are wrong (its `ConfigurationError`).
    """
    from agent import Agent, ClientSettings, ModelSettings, RetryPolicy, RunLimits

    limits = RunLimits() if max_turns is None else RunLimits(max_turns=max_turns)
    if scripted:  # a scripted model's failures are worth showing, not waiting for
        quick = RetryPolicy(attempts=3, initial_backoff=0.1, jitter=0.1)
        limits = dataclasses.replace(limits, retry=quick)
    try:
        return Agent(
            model,
            toolkit,
            system_prompt=system,
            limits=limits,
            settings=settings or ModelSettings(),
            client=ClientSettings(api_key=api_key, http_client=http),
            wait_for=wait_for,
            store=store,
            output_type=output_type,
            approval=approval,
            builtin_tools=builtin_tools,
            capabilities=[c for c in (cache, rate) if c is not None],
        )
    except ConfigurationError as exc:
        raise CliError(f"toolnexus-agent: {exc}") from None


def flag_cache(args: argparse.Namespace) -> ContextCache | None:
    """Return a `ContextCache` for ``--cache TTL`` / ``--cache-mode``, if asked for.

    Raises:
        CliError: ``--cache-mode`` without ``--cache``.
    """
    ttl = getattr(args, "cache", None)
    mode = getattr(args, "cache_mode", None)
    if ttl is None:
        if mode is not None:
            raise CliError("toolnexus-agent: --cache-mode needs --cache TTL")
        return None
    from agent.capabilities import ContextCache

    return ContextCache(ttl=ttl, mode=mode or "auto")


def flag_settings(args: argparse.Namespace) -> ModelSettings | None:
    """Return the `ModelSettings` of ``--service-tier`` / ``--fallback-tier``, if given.

    Raises:
        CliError: The two flags do not fit together.
    """
    from agent import ModelSettings

    tier = getattr(args, "service_tier", None)
    fallback = getattr(args, "fallback_tier", None)
    if tier is None and fallback is None:
        return None
    if fallback is not None and tier != "flex":
        raise CliError("toolnexus-agent: --fallback-tier needs --service-tier flex")
    try:
        return ModelSettings(service_tier=tier, fallback_tier=fallback)
    except ConfigurationError as exc:
        raise CliError(f"toolnexus-agent: {exc}") from None


def _has_key() -> bool:
    if os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"):
        return True
    return os.environ.get("GOOGLE_GENAI_USE_VERTEXAI", "").lower() in ("1", "true")


@contextlib.asynccontextmanager
async def open_factory(args: argparse.Namespace) -> AsyncIterator[AgentFactory]:
    """Yield an `AgentFactory` for the model flags; close its HTTP client afterwards.

    Raises:
        CliError: No API key (without ``--fake``), or the scenario cannot be read.
    """
    import httpx

    from agent import DEFAULT_MODEL
    from agent.cli._rate import rate_of, rate_spec

    builtin = tuple(getattr(args, "builtin_tools", None) or ())
    settings = flag_settings(args)
    cache = flag_cache(args)
    fallbacks = tuple(getattr(args, "models", None) or ())[1:]
    rate = rate_of(rate_spec(args))
    if args.fake is None:
        if not _has_key():
            raise CliError(NO_KEY)
        async with httpx.AsyncClient() as http:
            model = args.model or DEFAULT_MODEL
            yield AgentFactory(
                model,
                http,
                None,
                None,
                builtin,
                settings,
                cache=cache,
                fallbacks=fallbacks,
                rate=rate,
            )
        return
    import yaml

    from agent.testing import ScenarioError, read_scenario

    try:
        scenario = read_scenario(Path(args.fake))
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"--fake: cannot read {args.fake}: {reason(exc)}") from None
    except (yaml.YAMLError, RecursionError) as exc:
        raise CliError(f"--fake: {yaml_problem(args.fake, exc)}") from None
    except (ScenarioError, ValueError) as exc:
        raise CliError(f"--fake: {args.fake} is not a valid scenario: {exc}") from None
    fake = scenario.fake()
    model = args.model or str(scenario.extra.get("model") or DEFAULT_MODEL)
    async with fake.http_client() as http:
        key = "fake-key-not-a-secret"
        yield AgentFactory(
            model, http, key, fake, builtin, settings, cache=cache, fallbacks=fallbacks, rate=rate
        )


@contextlib.asynccontextmanager
async def open_agents(
    args: argparse.Namespace, own: list[Tool]
) -> AsyncIterator[tuple[AgentFactory, Toolkit]]:
    """Yield the `AgentFactory` and the toolkit the flags describe; close both afterwards.

    ``own`` are the tools `check_toolkit_flags` loaded. The toolkit (its MCP servers) is
    closed before the factory's HTTP client.
    """
    async with open_factory(args) as factory, await build_toolkit(args, own) as toolkit:
        yield factory, await with_subagents(args, factory, toolkit)


async def with_subagents(
    args: argparse.Namespace, factory: AgentFactory, toolkit: Toolkit
) -> Toolkit:
    """Add the sub-agents of ``--agents DIR`` to ``toolkit`` (unchanged without the flag).

    Each sub-agent works on the same client, with the tools of ``toolkit`` its file allows,
    under the same ``--approval`` policy.

    Raises:
        CliError: An agent file is invalid or names a tool the toolkit lacks.
    """
    from agent.cli._approval import cli_policy

    policy = cli_policy(
        getattr(args, "approval", "ask"), toolkit, unattended=getattr(args, "unattended", False)
    )
    return await add_subagents(
        args,
        toolkit,
        model=factory.model,
        api_key=factory.api_key,
        http=factory.http,
        approval=policy,
        cache=factory.cache,
    )


async def add_subagents(
    args: argparse.Namespace,
    toolkit: Toolkit,
    *,
    model: str,
    api_key: str | None,
    http: httpx.AsyncClient,
    approval: ApprovalPolicy,
    cache: ContextCache | None = None,
) -> Toolkit:
    """Return ``toolkit`` with the sub-agents of ``--agents DIR`` added, on ``http``.

    The sub-agents share ``cache`` (``--cache``) with the main agent, if any.

    Raises:
        CliError: An agent file is invalid (with ``--strict``) or clashes with a tool.
    """
    directory = getattr(args, "agents", None)
    if directory is None:
        return toolkit
    from agent import ClientSettings, load_agents_async
    from toolnexus import Toolkit

    try:
        helpers = await load_agents_async(
            directory,
            toolkit=toolkit,
            model=model,
            strict=getattr(args, "strict", False),
            client=ClientSettings(api_key=api_key, http_client=http),
            approval=approval,
            capabilities=[cache] if cache is not None else [],
        )
    except ConfigurationError as exc:
        raise CliError(f"--agents: {exc}") from None
    return Toolkit([*toolkit, *helpers], skills=toolkit.skills, resources=toolkit.resources)
