"""`Agent`: a Gemini model, a toolkit and the settings of the loop that joins them."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from agent._approval import ApprovalPolicy, Rule
from agent._capabilities import accepts_schema_with_tools
from agent._capability import Capability, RequestShape
from agent._client import ClientSettings
from agent._cost import price_table
from agent._declarations import DeclarationProblem, declaration, split_valid, system_instruction
from agent._known_models import warn_if_unknown
from agent._media import Prompt
from agent._model import GeminiModel
from agent._options import ModelSettings, RunLimits, split_legacy
from agent._plan import AgentCore, RunPlan, SystemPrompt, capabilities_of
from agent._routing import ModelChain, Routing
from agent._settings import generation_options
from agent._subagent import DEFAULT_MAX_DEPTH, subagent_tool
from agent._tiers import ServiceTiers, client_for_tier
from agent._turns import StopAtTools, TurnPolicy
from agent.errors import AgentError, ConfigurationError
from agent.events import Event
from agent.hooks import Hooks
from toolnexus import Answer, ConfigError, Toolkit, skills_prompt

if TYPE_CHECKING:
    from google import genai

    from agent._builtin_tools import BuiltinTools
    from agent._calls import WaitFor
    from agent._compaction import Compaction
    from agent._limits import UsageLimits
    from agent._output import OutputSpec, TypedOutput
    from agent._result import RunResult
    from agent._store import Store
    from agent.steps import Steps
    from toolnexus import Tool

__all__ = ["DEFAULT_MODEL", "Agent", "ToolDeclarationWarning"]

DEFAULT_MODEL = "gemini-2.5-flash"
"""The model used when none is given."""


class ToolDeclarationWarning(AgentError, UserWarning):
    """A tool was left out of the request because Gemini would refuse its declaration.

    A warning, not raised; it sits under `AgentError` so that with warnings turned into
    errors (``-W error``) ``except AgentError`` still catches everything this package raises.
    """


class Agent:
    """A Gemini model with a toolkit: send a prompt, run the tools it asks for, repeat.

    Example::

        import toolnexus as tn
        from agent import Agent

        tk = tn.build(skills="examples/skills")
        agent = Agent(model="gemini-2.5-flash", toolkit=tk, system_prompt="Be brief.")
        result = agent.run_sync("What does README.md say?")
        print(result.status, result.text)
    """

    def __init__(
        self,
        model: str | Sequence[str] = DEFAULT_MODEL,
        toolkit: Toolkit | None = None,
        *,
        system_prompt: str | SystemPrompt | None = None,
        output_type: Any = None,
        settings: ModelSettings | None = None,
        limits: RunLimits | None = None,
        usage_limits: UsageLimits | None = None,
        client: genai.Client | ClientSettings | None = None,
        capabilities: Sequence[Capability | Hooks] = (),
        approval: ApprovalPolicy | Rule | None = None,
        wait_for: WaitFor | None = None,
        store: Store | None = None,
        builtin_tools: Sequence[str | Any] = (),
        compaction: Compaction | Literal[False] | None = None,
        **legacy: Any,
    ) -> None:
        """Set up the model client, the request and the loop's limits; nothing is sent yet.

        Args:
            model: The Gemini model name, sent verbatim; or a list of names: the first is
                the agent's model, and a turn whose call fails for good (overloaded, out of
                quota, after its retries) goes to the next (see the routing docs).
            toolkit: The tools the model may call (none by default).
            system_prompt: Instructions sent with every request, before the skills catalog;
                or a function (sync or async) of the run's ``deps`` that returns them,
                called once at the start of each run.
            output_type: Ask for a typed result: a pydantic model, a dataclass, a TypedDict
                or a JSON Schema dict. A completed run's ``result.output`` is then the
                validated value (see the typed-output docs; the mode is
                `ModelSettings.output_mode`, the re-asks `RunLimits.output_retries`).
            settings: Generation settings (temperature, thinking, tool choice, ...).
            limits: Turn and retry policy (max turns, deadline, retries, tool timeout).
            usage_limits: The most each run may use (requests, tokens, tool calls, dollars);
                a run that reaches a limit ends ``"incomplete"`` with ``limit="usage:<name>"``.
                ``run``/``stream`` take their own for one run. Sub-agents' calls count.
            client: A ready ``google.genai.Client`` to use as is, or the `ClientSettings` to
                build one from (key, endpoint, HTTP client, timeout); by default the key
                comes from ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``.
            capabilities: Features to add to every run, each applied at its place in the
                run (see the capabilities docs): `Hooks` (callbacks around model and tool
                calls), and the features of `agent.capabilities`. One of each kind.
            approval: Which calls run, are refused or wait for a human's approval: an
                `ApprovalPolicy`, or one rule for every call (``"ask"``, or a function of
                the `ToolCall`). Without it, only tools with ``requires_approval`` ask.
            wait_for: Answers a suspended tool's `Request` inline (sync or async); without
                it such a run ends ``"pending"``.
            store: Where ``session=`` conversations are kept (a `MemoryStore` unless given).
            builtin_tools: Gemini's own tools to offer beside the toolkit, by name
                (``"google_search"``, ``"url_context"``, ``"code_execution"``,
                ``"google_maps"``) or as ``google.genai`` ``types.Tool`` objects.
            compaction: When to compact a long transcript before a model call (prune old
                large tool results, then summarise older exchanges). ``None`` (the
                default) compacts ``session=`` runs with `Compaction()` and leaves other
                runs' history as given; a `Compaction` applies to every run; ``False``
                never compacts.
            **legacy: The flat keywords of earlier releases (``temperature=``,
                ``max_turns=``, ``api_key=``, ...): deprecated, each warns and names its
                new place.

        Raises:
            ConfigurationError: A setting is out of range, no API key was found, the client
                settings or ``config`` are invalid, or (with ``invalid_tools="raise"``) a
                tool declaration would be refused.
        """
        hooks = legacy.pop("hooks", None)
        if hooks is not None:
            warnings.warn(
                "Agent(hooks=...) is deprecated; use capabilities=[Hooks(...)]",
                DeprecationWarning,
                stacklevel=2,
            )
            capabilities = [*capabilities, hooks]
        settings, limits, client_options = split_legacy(legacy, settings, limits)
        client = _client_of(client, client_options)
        self.models: tuple[str, ...] = _models_of(model)
        """The model names: the agent's, then those it falls back to."""
        model = self.models[0]
        self.model = model
        """The model name (the first of `models`)."""
        self.toolkit = toolkit if toolkit is not None else Toolkit()
        """The tools the model may call."""
        self.settings = settings
        """The generation settings."""
        self.limits = limits
        """The turn and retry policy."""
        self._store = store
        declarations, problems = split_valid(declaration(tool) for tool in self.toolkit)
        self.problems: tuple[DeclarationProblem, ...] = tuple(problems)
        """What the pre-flight check found wrong with the toolkit's declarations."""
        if problems and limits.invalid_tools == "raise":
            raise ConfigurationError(
                "Gemini would refuse these tool declarations: "
                + "; ".join(str(problem) for problem in problems)
            )
        for problem in problems:
            warnings.warn(f"left out {problem}", ToolDeclarationWarning, stacklevel=2)
        typed = _typed_output(output_type, settings, limits)
        routing = Routing.of(self.models, capabilities, limits)
        features = capabilities_of(
            capabilities,
            approval=ApprovalPolicy.of(approval),
            output=typed,
            builtin=_builtin(builtin_tools),
            compaction=compaction,
            tiers=ServiceTiers.of(settings),
            routing=routing,
            turns=TurnPolicy.of(settings, limits, typed),
            stop=StopAtTools.of(limits),
        )
        shape = RequestShape(model, self.toolkit, declarations, dict(settings.config or {}))
        for capability in features:
            capability.shape(shape)
        self.output: OutputSpec | None = typed.spec if typed is not None else None
        """The resolved typed result (``output_type``), or ``None``."""
        self.declarations: tuple[dict[str, Any], ...] = tuple(shape.declarations)
        """The function declarations sent with every request."""
        _check_tool_mix(self.models, shape)
        for each in self.models:
            warn_if_unknown(each, stacklevel=2)
        _check_output_models(self.models, self.output, bool(self.declarations))
        options = _generation(model, settings, shape)
        try:
            catalog = skills_prompt(self.toolkit, max_chars=settings.skills_catalog_chars)
        except ConfigError as exc:
            raise ConfigurationError(f"skills_catalog_chars: {exc}") from None
        fixed = None if callable(system_prompt) else system_prompt
        self.system_instruction = system_instruction(fixed, catalog)
        """The system instruction sent with every request (``None`` when empty); with a
        callable ``system_prompt``, only the skills catalog part (the rest is built per run)."""
        gemini = GeminiModel.build(
            model,
            system=self.system_instruction,
            declarations=self.declarations,
            options=options,
            client=client if not isinstance(client, ClientSettings) else None,
            builtin=shape.builtin,
            settings=client_for_tier(
                client if isinstance(client, ClientSettings) else ClientSettings(), settings
            ),
        )
        seam: GeminiModel | ModelChain = gemini
        if routing is not None:
            seam = routing.bind(gemini)
        self._core = AgentCore(
            model=seam,
            toolkit=self.toolkit,
            limits=limits,
            capabilities=tuple(features),
            wait_for=wait_for,
            system_prompt=system_prompt if callable(system_prompt) else None,
            catalog=catalog,
            usage_limits=_check_limits(self.models, usage_limits),
            compaction=compaction,
            store=lambda: self.store,
        )

    def __repr__(self) -> str:
        return f"Agent(model={self.model!r}, tools={len(self.declarations)})"

    async def run(
        self,
        prompt: Prompt | None = None,
        *,
        history: Sequence[Mapping[str, Any] | Any] | None = None,
        answer: Answer | None = None,
        session: str | None = None,
        deps: Any = None,
        usage_limits: UsageLimits | None = None,
    ) -> RunResult:
        """Run the loop on ``prompt`` until the model answers or a limit is hit.

        To resume a run that ended ``"pending"``, pass its ``contents`` as ``history`` (or
        its ``session``) and the human's ``answer``; no prompt is needed. A ``session``'s
        transcript is loaded first and saved after every completed turn, so a crash loses
        at most the turn in flight.

        Example::

            result = await agent.run("Summarise README.md")
            if result.status == "pending":
                result = await agent.run(history=result.contents,
                                         answer={"id": result.pending["id"], "ok": True,
                                                 "data": "yes"})

        Args:
            prompt: The new user message: text, or a list of parts (``str``,
                ``pathlib.Path``, `toolnexus.Attachment`, a ``types.Part`` or a part dict)
                to send files with it; optional when continuing ``history``.
            history: An earlier conversation to continue: ``result.contents`` of a previous
                run, or Gemini Content dicts.
            answer: The answer ``{"id": request id, "ok": True, "data": ...}`` to the
                request a pending history waits on.
            session: The name of a conversation kept in the agent's ``store``.
            deps: The run's data (a user id, a database handle): every tool receives it as
                ``context.deps`` and a callable ``system_prompt`` as its argument. It is
                never sent to the model.
            usage_limits: Limits for this run, instead of the agent's.

        Returns:
            The `RunResult`: ``"completed"``, ``"pending"``, ``"blocked"`` or
            ``"incomplete"`` (with the limit that ended it).

        Raises:
            ModelError: The model call failed for good (carries the partial result).
            HookError: A hook or ``wait_for`` raised (carries the partial result).
            DeadlineExceededError: The run passed ``deadline`` (carries the partial result).
            ConfigurationError: No prompt and no history, both ``history`` and ``session``,
                a bad history, or an ``answer`` the history does not wait for.
            SessionBusyError: Another run holds the same session.
            TypeError: ``prompt`` is not a ``str``.
        """
        plan = self.plan(
            prompt,
            history=history,
            answer=answer,
            session=session,
            deps=deps,
            usage_limits=usage_limits,
        )
        return await plan.result()

    def run_sync(
        self,
        prompt: Prompt | None = None,
        *,
        history: Sequence[Mapping[str, Any] | Any] | None = None,
        answer: Answer | None = None,
        session: str | None = None,
        deps: Any = None,
        usage_limits: UsageLimits | None = None,
    ) -> RunResult:
        """Run from synchronous code: `run` on a new event loop, with the same arguments.

        Returns:
            The `RunResult`, as from `run`.

        Raises:
            ConfigurationError: Called inside a running event loop (``await agent.run``
                there), or as `run` raises it.
            RunError: As `run` raises it (`ModelError`, `HookError`,
                `DeadlineExceededError`).
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise ConfigurationError(
                "run_sync() was called from a running event loop; use `await agent.run(...)`"
            )

        async def run_then_release() -> RunResult:
            try:
                return await self.run(
                    prompt,
                    history=history,
                    answer=answer,
                    session=session,
                    usage_limits=usage_limits,
                    deps=deps,
                )
            finally:
                # The pooled connections belong to this event loop, which asyncio.run closes.
                await self._core.model.release_connections()

        return asyncio.run(run_then_release())

    def stream(
        self,
        prompt: Prompt | None = None,
        *,
        history: Sequence[Mapping[str, Any] | Any] | None = None,
        answer: Answer | None = None,
        session: str | None = None,
        deps: Any = None,
        usage_limits: UsageLimits | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Yield the run's events as they happen; the last one is `DoneEvent` with the result.

        Takes the same arguments as `run` and runs the same loop, over Gemini's streaming
        endpoint: text and thoughts arrive as `TextEvent` / `ThoughtEvent` pieces while the
        model writes. If a model call fails part-way and is retried, a `RetryEvent` comes
        before the new attempt's pieces: the pieces of the failed attempt are void. To stop
        early, iterate inside ``contextlib.aclosing(agent.stream(...))``: closing the stream
        cancels the tool calls still running and waits for them (a turn whose calls all
        finished is already saved). Leaving the loop without closing it leaves that cleanup,
        and a ``session``'s lock, to the event loop's finaliser, some iterations later.

        Example::

            async for event in agent.stream("Summarise README.md"):
                if isinstance(event, TextEvent):
                    print(event.text, end="", flush=True)
                elif isinstance(event, DoneEvent):
                    print(event.result.status)

        Returns:
            An async generator of `Event`s; nothing runs until it is iterated.

        Raises:
            RunError: While iterating, as `run` raises it; ``ConfigurationError`` and
                ``SessionBusyError`` as for `run`.
        """
        plan = self.plan(
            prompt,
            history=history,
            answer=answer,
            session=session,
            deps=deps,
            usage_limits=usage_limits,
            streaming=True,
        )
        return plan.events()

    def plan(
        self,
        prompt: Prompt | None = None,
        *,
        history: Sequence[Mapping[str, Any] | Any] | None = None,
        answer: Answer | None = None,
        session: str | None = None,
        deps: Any = None,
        usage_limits: UsageLimits | None = None,
        steps: Steps | None = None,
        streaming: bool = False,
        name: str | None = None,
    ) -> RunPlan:
        """Return one run of this agent, assembled but not started.

        Every entry point builds its run here (`run`, `stream`, `compact`, a sub-agent call,
        a durable run); use it to drive a run yourself: ``plan.events()`` yields its
        events, ``await plan.result()`` returns its result. Called inside another run's
        tool call, the run is that run's sub-agent: it draws on the parent's usage limits,
        and its events and usage reach the parent.

        Example::

            plan = agent.plan("Summarise README.md", deps=user)
            async for event in plan.events():
                ...

        Args:
            prompt: The new user message, as for `run`.
            history: An earlier conversation to continue, as for `run`.
            answer: The answer to the request a pending history waits on.
            session: The name of a conversation kept in the agent's ``store``.
            deps: The run's data (see `run`).
            usage_limits: Limits for this run, instead of the agent's.
            steps: Where the run's side effects happen (`Steps` by default; durable steps
                from ``agent.dbos``, whose runs never use ``wait_for``).
            streaming: Call Gemini's streaming endpoint (a sub-agent streams when its
                parent does).
            name: The name the run's events carry in a parent's stream (`SubAgentEvent`).

        Returns:
            The `RunPlan`.

        Raises:
            ConfigurationError: Both ``history`` and ``session``, or a cost limit for a
                model the price table does not know.
            TypeError: ``prompt`` is not a ``str`` or a list of parts.
        """
        return RunPlan(
            self._core,
            prompt,
            history=history,
            answer=answer,
            session=session,
            deps=deps,
            usage_limits=_check_limits(self.models, usage_limits),
            steps=steps,
            streaming=streaming,
            name=name,
        )

    def as_tool(self, *, name: str, description: str, max_depth: int = DEFAULT_MAX_DEPTH) -> Tool:
        """Return this agent as a tool of another agent: a sub-agent.

        The tool takes ``{"task": string}`` and runs this agent's own conversation on it
        (its own model, tools, system prompt and limits, with the calling run's ``deps``),
        then returns its final text (or its typed output, as JSON, when it has one). Its
        events reach the parent's stream as `SubAgentEvent` events marked with ``name`` and
        the depth; its token usage is added to the parent's result. When it suspends (a
        question, an approval), the parent's run suspends on the same request, and the
        answer resumes the sub-agent where it stopped. A call that would nest sub-agents
        deeper than ``max_depth`` fails with an error the model reads.

        Example::

            researcher = Agent(toolkit=search_tools, system_prompt="Find sources.")
            lead = Agent(toolkit=tn.toolkit([researcher.as_tool(
                name="researcher", description="Finds sources on a topic.")]))

        Args:
            name: The tool name the parent's model calls.
            description: When the parent's model should hand a task to this agent.
            max_depth: How deep sub-agents may nest (1: this one, but none of its own).

        Returns:
            A `toolnexus.Tool` with source ``"agent"``.

        Raises:
            ConfigurationError: ``max_depth`` is below 1.
        """
        if max_depth < 1:
            raise ConfigurationError(f"max_depth must be at least 1, got {max_depth}")
        return subagent_tool(self, name, description, max_depth)

    def serve_mcp(
        self,
        name: str,
        description: str = "",
        *,
        transport: Literal["stdio", "http"] = "stdio",
        host: str = "127.0.0.1",
        port: int = 8000,
        on_ready: Callable[[str], None] | None = None,
    ) -> None:
        """Serve this agent to MCP clients as one tool, until the client leaves or Ctrl-C.

        The tool takes ``{"task": string, "session_id"?: string}`` and runs this agent on
        the task (its own model, tools, approval policy, limits, typed output and store);
        the calls its policy asks about are put to the client as forms. From async code,
        use `agent.mcp_server.serve_mcp` (which also serves a toolkit and several agents).

        Example::

            agent = Agent(toolkit=tn.build(), system_prompt="Review the diff you are given.")
            agent.serve_mcp("reviewer", "Reviews a diff and lists the problems.")

        Args:
            name: The tool name clients call it by.
            description: When a client's model should hand it a task.
            transport: ``"stdio"`` (the host starts this program) or ``"http"``.
            host: With ``"http"``: the address to bind (this machine only by default).
            port: With ``"http"``: the port (``0`` picks a free one).
            on_ready: With ``"http"``: called with the URL once the server listens.

        Raises:
            ConfigurationError: Called inside a running event loop, or as
                `agent.mcp_server.serve_mcp` raises it.
            ImportError: The ``mcp`` extra is not installed.
        """
        from agent.mcp_server import ServedAgent, serve_mcp

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise ConfigurationError(
                "serve_mcp() was called from a running event loop; use "
                "`await agent.mcp_server.serve_mcp(agents=[ServedAgent(...)])`"
            )
        served = ServedAgent(name, self, description)

        async def serve_then_release() -> None:
            try:
                await serve_mcp(
                    agents=[served], transport=transport, host=host, port=port, on_ready=on_ready
                )
            finally:
                # The pooled connections belong to this event loop, which asyncio.run closes.
                await self._core.model.release_connections()

        asyncio.run(serve_then_release())

    @property
    def store(self) -> Store:
        """Where ``session=`` conversations are kept (a `MemoryStore` unless one was given)."""
        if self._store is None:
            from agent._store import MemoryStore

            self._store = MemoryStore()
        return self._store

    async def compact(
        self,
        history: Sequence[Mapping[str, Any] | Any] | None = None,
        *,
        session: str | None = None,
    ) -> RunResult:
        """Compact a conversation now, whatever its size (see `Compaction`).

        For callers who keep the history themselves: prune old large tool results and
        replace the older exchanges by a model-written summary, keeping the most recent
        ``keep_recent_turns`` exchanges verbatim. A ``session`` is compacted in its store,
        with the replaced Contents appended to its archive.

        Example::

            result = await agent.compact(history)
            history = result.contents

        Args:
            history: The conversation (``result.contents`` of earlier runs).
            session: Or the name of a conversation kept in the agent's ``store``.

        Returns:
            A ``"completed"`` `RunResult` whose ``contents`` are the compacted transcript
            and whose ``usage`` and ``cost`` are the summary call's.

        Raises:
            ConfigurationError: Neither or both of ``history`` and ``session``.
            ModelError: The summary call failed.
        """
        if (history is None) == (session is None):
            raise ConfigurationError("compact() needs history= or session=, one of them")
        from agent._compaction import Compaction

        policy = self._core.compaction
        if not isinstance(policy, Compaction):
            policy = Compaction()
        return await self.plan(history=history, session=session).compact(policy)

    async def aclose(self) -> None:
        """Release this agent's share of the HTTP client it created.

        Agents with the same client settings share one client; the last one to close
        closes it. A client passed in is left open.
        """
        await self._core.model.aclose()

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _client_of(
    client: genai.Client | ClientSettings | None, legacy: Mapping[str, Any]
) -> genai.Client | ClientSettings:
    """Return the client, or the settings to build one, from ``client=`` and flat keywords."""
    if legacy and client is not None:
        raise ConfigurationError(
            "pass the client settings in client=ClientSettings(...), not both ways"
        )
    if client is None:
        return ClientSettings(**legacy)
    return client


def _typed_output(
    output_type: Any, settings: ModelSettings, limits: RunLimits
) -> TypedOutput | None:
    """Return the typed-output capability, or ``None``; its module loads only when used."""
    if output_type is None:
        return None
    from agent._output import TypedOutput

    return TypedOutput(output_type, settings.output_mode, limits.output_retries)


def _generation(model: str, settings: ModelSettings, shape: RequestShape) -> dict[str, Any] | None:
    """Return the request's generation config: the shaped options and the typed settings."""
    return generation_options(
        model,
        shape.options,
        temperature=settings.temperature,
        max_output_tokens=settings.max_output_tokens,
        thinking=settings.thinking,
        include_thoughts=settings.include_thoughts,
        tool_choice=settings.tool_choice,
        tool_names=[d["name"] for d in shape.declarations],
    )


def _builtin(items: Sequence[str | Any]) -> BuiltinTools | None:
    """Return Gemini's built-in tools as a capability, when the agent offers any."""
    if not items:
        return None
    from agent._builtin_tools import BuiltinTools

    return BuiltinTools(items)


def _check_tool_mix(models: Sequence[str], shape: RequestShape) -> None:
    """Refuse built-in tools beside function tools on a model that cannot take both."""
    if not shape.builtin:
        return
    from agent._builtin_tools import check_tool_mix

    functions = [declaration["name"] for declaration in shape.declarations]
    for model in models:
        check_tool_mix(model, shape.builtin, functions)


def _check_limits(models: Sequence[str], limits: UsageLimits | None) -> UsageLimits | None:
    if limits is None or limits.cost_usd is None:
        return limits
    for model in models:
        if price_table().lookup(model) is None:
            raise ConfigurationError(
                f"UsageLimits(cost_usd=...) needs a price for {model!r}, and the price table "
                "has none; limit tokens instead"
            )
    return limits


def _models_of(model: str | Sequence[str]) -> tuple[str, ...]:
    """Return the agent's model names: one, or the fallback chain in order.

    Raises:
        ConfigurationError: A list with no name, a name that is not a non-empty string, or
            one twice.
    """
    if isinstance(model, str):
        return (model,)  # sent verbatim, as always (the SDK refuses an empty one)
    models = tuple(model)
    if not models or not all(isinstance(name, str) and name.strip() for name in models):
        raise ConfigurationError(f"model must be a model name or a list of them, got {model!r}")
    if len(set(models)) != len(models):
        raise ConfigurationError(f"model lists a model twice: {list(models)!r}")
    return models


def _check_output_models(models: Sequence[str], output: OutputSpec | None, has_tools: bool) -> None:
    """Refuse a chain with a model that cannot take the typed-output request of the others.

    Raises:
        ConfigurationError: A JSON response schema goes with tools, and a model of the
            chain is of a generation that refuses the two together (Gemini 2.x).
    """
    if len(models) < 2 or output is None or output.mode != "native" or not has_tools:
        return  # one model: the request is the user's explicit choice, sent as asked
    refusing = [model for model in models if not accepts_schema_with_tools(model)]
    if refusing:
        raise ConfigurationError(
            f"output_type is asked for as a JSON response schema beside tools, which "
            f"{', '.join(refusing)} refuses; pass settings=ModelSettings(output_mode='tool')"
        )
