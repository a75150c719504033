"""`Agent`: a Gemini model, a toolkit and the settings of the loop that joins them."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from agent._approval import ApprovalPolicy, Rule
from agent._builtin_tools import builtin_tools as builtin_tools_of
from agent._client import ClientSettings
from agent._compaction import Compaction
from agent._cost import price_table
from agent._decide import TurnLimits
from agent._declarations import DeclarationProblem, declaration, split_valid, system_instruction
from agent._limits import UsageLimits
from agent._loop import Checkpoint, Run, Settings, WaitFor, _maybe
from agent._media import Prompt
from agent._model import GeminiModel
from agent._output import OutputMode, OutputSpec, output_spec
from agent._retry import RetryPolicy
from agent._settings import Thinking, ToolChoice, generation_options
from agent._subagent import DEFAULT_MAX_DEPTH, subagent_tool
from agent._tracing import RunTrace
from agent.errors import AgentError, ConfigurationError, DeadlineExceededError
from agent.events import DoneEvent, Event
from agent.hooks import Hooks
from toolnexus import Answer, ConfigError, Toolkit, skills_prompt

if TYPE_CHECKING:
    import httpx
    from google import genai

    from agent._result import RunResult
    from agent._store import Store
    from toolnexus import Request, Tool

__all__ = ["DEFAULT_MODEL", "Agent", "ToolDeclarationWarning"]

DEFAULT_MODEL = "gemini-2.5-flash"
"""The model used when none is given."""

SystemPrompt = Callable[[Any], "str | Awaitable[str | None] | None"]
"""A system prompt built per run from the run's ``deps`` (sync or async)."""


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
        model: str = DEFAULT_MODEL,
        toolkit: Toolkit | None = None,
        *,
        system_prompt: str | SystemPrompt | None = None,
        max_turns: int = 50,
        wait_for: WaitFor | None = None,
        hooks: Hooks | None = None,
        client: genai.Client | None = None,
        http_client: httpx.AsyncClient | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        api_version: str | None = None,
        vertexai: bool | None = None,
        project: str | None = None,
        location: str | None = None,
        timeout: float | None = 120.0,
        retry: RetryPolicy | None = None,
        config: Mapping[str, Any] | None = None,
        tool_timeout: float | None = None,
        deadline: float | None = None,
        malformed_retries: int = 2,
        empty_retries: int = 1,
        repeat_limit: int = 3,
        invalid_tools: Literal["skip", "raise"] = "skip",
        store: Store | None = None,
        output_type: Any = None,
        output_mode: OutputMode = "auto",
        output_retries: int = 2,
        temperature: float | None = None,
        max_output_tokens: int | None = None,
        thinking: Thinking | None = None,
        include_thoughts: bool | None = None,
        tool_choice: ToolChoice | None = None,
        builtin_tools: Sequence[str | Any] = (),
        usage_limits: UsageLimits | None = None,
        compaction: Compaction | Literal[False] | None = None,
        skills_catalog_chars: int | None = 20_000,
        approval: ApprovalPolicy | Rule | None = None,
    ) -> None:
        """Set up the model client, the request and the loop's limits; nothing is sent yet.

        Args:
            model: The Gemini model name, sent verbatim.
            toolkit: The tools the model may call (none by default).
            system_prompt: Instructions sent with every request, before the skills catalog;
                or a function (sync or async) of the run's ``deps`` that returns them,
                called once at the start of each run.
            max_turns: Model responses per run, at most.
            wait_for: Answers a suspended tool's `Request` inline (sync or async); without
                it such a run ends ``"pending"``.
            hooks: Callbacks around model and tool calls.
            client: A ready ``google.genai.Client`` to use as is (the client settings below
                are then ignored).
            http_client: An ``httpx.AsyncClient`` to build the client on (left open by
                `aclose`).
            api_key: The Gemini API key; else ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``.
            base_url: Another endpoint; else ``GOOGLE_GEMINI_BASE_URL`` or Google's.
            api_version: The API version, e.g. ``"v1beta"``.
            vertexai: Use Vertex AI (with ``project`` and ``location``).
            project: The Vertex AI project.
            location: The Vertex AI location.
            timeout: Seconds per model request; ``None`` for no limit.
            retry: How failed model calls are retried (`RetryPolicy()` by default).
            config: More ``GenerateContentConfig`` fields (``temperature``,
                ``thinking_config``, ...).
            tool_timeout: Seconds per tool call; ``None`` for no limit beyond each
                tool's own ``Tool.timeout``.
            deadline: Seconds for a whole run; ``None`` for no limit.
            malformed_retries: Re-asks after a malformed or unexpected function call.
            empty_retries: Re-asks after an empty response.
            repeat_limit: Turns in a row with the very same calls, which kept returning the
                very same results, before the run is stopped.
            invalid_tools: ``"skip"`` leaves a tool Gemini would refuse out, with a
                `ToolDeclarationWarning`; ``"raise"`` refuses to build the agent.
            store: Where ``session=`` conversations are kept (a `MemoryStore` unless given).
            output_type: Ask for a typed result: a pydantic model, a dataclass, a TypedDict
                or a JSON Schema dict. A completed run's ``result.output`` is then the
                validated value (see the typed-output docs).
            output_mode: How the typed result is asked for: ``"native"`` (a JSON response
                schema), ``"tool"`` (a ``final_result`` function) or ``"auto"``: native
                without tools or on Gemini 3 and newer, tool mode otherwise.
            output_retries: Invalid typed answers sent back with their problems before the
                run ends ``"incomplete"`` with limit ``"invalid_output"``.
            temperature: Sampling temperature (Gemini 3 works best at the default 1.0).
            max_output_tokens: The longest answer, in tokens (thinking counts against it).
            thinking: A thinking level (``"minimal"``, ``"low"``, ``"medium"``,
                ``"high"``) or a token budget; sent as the level or the budget the model
                takes, mapped as the settings docs show.
            include_thoughts: Ask for thought summaries (`ThoughtEvent`s in a stream).
            tool_choice: ``"auto"``, ``"any"`` (must call a function), ``"none"``, or the
                names of the functions the model must choose among.
            builtin_tools: Gemini's own tools to offer beside the toolkit, by name
                (``"google_search"``, ``"url_context"``, ``"code_execution"``,
                ``"google_maps"``) or as ``google.genai`` ``types.Tool`` objects.
            usage_limits: The most each run may use (requests, tokens, tool calls, dollars);
                a run that reaches a limit ends ``"incomplete"`` with ``limit="usage:<name>"``.
                ``run``/``stream`` take their own for one run.
            compaction: When to compact a long transcript before a model call (prune old
                large tool results, then summarise older exchanges). ``None`` (the
                default) compacts ``session=`` runs with `Compaction()` and leaves other
                runs' history as given; a `Compaction` applies to every run; ``False``
                never compacts.
            skills_catalog_chars: Size cap of the skills catalog in the system instruction
                (characters; ``None``: no cap). Past it, the catalog says how many skills
                it left out and how the model finds one by name.
            approval: Which calls run, are refused or wait for a human's approval: an
                `ApprovalPolicy`, or one rule for every call (``"ask"``, or a function of
                the `ToolCall`). Without it, only tools with ``requires_approval`` ask.

        Raises:
            ConfigurationError: A setting is out of range, no API key was found, the client
                settings or ``config`` are invalid, or (with ``invalid_tools="raise"``) a
                tool declaration would be refused.
        """
        _check_options(max_turns, malformed_retries, empty_retries, repeat_limit, invalid_tools)
        self.model = model
        """The model name."""
        self.toolkit = toolkit if toolkit is not None else Toolkit()
        """The tools the model may call."""
        self.deadline = deadline
        """Seconds for a whole run, or ``None``."""
        self._store = store
        self._compaction = compaction
        declarations, problems = split_valid(declaration(tool) for tool in self.toolkit)
        self.problems: tuple[DeclarationProblem, ...] = tuple(problems)
        """What the pre-flight check found wrong with the toolkit's declarations."""
        if problems and invalid_tools == "raise":
            raise ConfigurationError(
                "Gemini would refuse these tool declarations: "
                + "; ".join(str(problem) for problem in problems)
            )
        for problem in problems:
            warnings.warn(f"left out {problem}", ToolDeclarationWarning, stacklevel=2)
        self.output: OutputSpec | None = None
        """The resolved typed result (``output_type``), or ``None``."""
        if output_type is not None:
            self.output = output_spec(
                output_type,
                output_mode,
                output_retries,
                model=model,
                has_tools=bool(declarations),
                tool_names=frozenset(self.toolkit.names),
            )
            if self.output.mode == "tool":
                declarations.append(self.output.declaration())
            config = _with_output(config, self.output)
        self.declarations: tuple[dict[str, Any], ...] = tuple(declarations)
        """The function declarations sent with every request."""
        config = generation_options(
            model,
            config,
            temperature=temperature,
            max_output_tokens=max_output_tokens,
            thinking=thinking,
            include_thoughts=include_thoughts,
            tool_choice=tool_choice,
            tool_names=[d["name"] for d in self.declarations],
        )
        try:
            catalog = skills_prompt(self.toolkit, max_chars=skills_catalog_chars)
        except ConfigError as exc:
            raise ConfigurationError(f"skills_catalog_chars: {exc}") from None
        self._catalog = catalog
        self._system_prompt = system_prompt if callable(system_prompt) else None
        fixed = None if callable(system_prompt) else system_prompt
        self.system_instruction = system_instruction(fixed, catalog)
        """The system instruction sent with every request (``None`` when empty); with a
        callable ``system_prompt``, only the skills catalog part (the rest is built per run)."""
        self._model = GeminiModel.build(
            model,
            system=self.system_instruction,
            declarations=self.declarations,
            options=config,
            client=client,
            builtin=builtin_tools_of(builtin_tools),
            settings=ClientSettings(
                api_key, http_client, base_url, api_version, vertexai, project, location, timeout
            ),
        )
        self._settings = Settings(
            model=self._model,
            toolkit=self.toolkit,
            hooks=hooks or Hooks(),
            wait_for=wait_for,
            max_turns=max_turns,
            retry=retry or RetryPolicy(),
            limits=TurnLimits(malformed_retries, empty_retries, repeat_limit),
            tool_timeout=tool_timeout,
            output=self.output,
            approval=ApprovalPolicy.of(approval),
            usage_limits=_check_limits(model, usage_limits),
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
        result: RunResult | None = None
        events = self._events(
            prompt, history, answer, session, deps, streaming=False, usage_limits=usage_limits
        )
        async with contextlib.aclosing(events):
            async for event in events:
                if isinstance(event, DoneEvent):
                    result = event.result
        assert result is not None
        return result

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
                await self._model.release_connections()

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
        return self._events(
            prompt, history, answer, session, deps, streaming=True, usage_limits=usage_limits
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

    @property
    def store(self) -> Store:
        """Where ``session=`` conversations are kept (a `MemoryStore` unless one was given)."""
        if self._store is None:
            from agent._store import MemoryStore

            self._store = MemoryStore()
        return self._store

    async def _events(
        self,
        prompt: Prompt | None,
        history: Sequence[Any] | None,
        answer: Answer | None,
        session: str | None,
        deps: Any,
        *,
        streaming: bool,
        usage_limits: UsageLimits | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Yield the run's events under its session (if any) and its deadline (if any)."""
        if session is not None and history is not None:
            raise ConfigurationError("pass either history= or session=, not both")
        settings = self._settings_for(session)
        if usage_limits is not None:
            settings = dataclasses.replace(
                settings, usage_limits=_check_limits(self.model, usage_limits)
            )
        settings = await self._with_deps(settings, deps)
        async with self._session(session) as (saved, save, archive):
            trace = RunTrace(
                self.model,
                session=session,
                client=self._model.clients.genai,
                toolkit=settings.toolkit,
            )
            run = Run(
                settings,
                prompt,
                saved or history,
                answer,
                save,
                streaming=streaming,
                trace=trace,
                archive=archive,
            )
            events = run.events()
            deadline = self.deadline
            when = None if deadline is None else asyncio.get_running_loop().time() + deadline
            async with contextlib.aclosing(events), trace:
                while True:
                    try:
                        async with asyncio.timeout_at(when) as scope:
                            event = await anext(events)
                    except StopAsyncIteration:
                        return
                    except TimeoutError:
                        if not scope.expired():
                            raise
                        raise DeadlineExceededError(
                            f"the run passed its deadline of {deadline:g} s",
                            result=run.result("incomplete", reason="deadline"),
                        ) from None
                    if isinstance(event, DoneEvent):
                        trace.finish(event.result)
                    yield event

    def _settings_for(self, session: str | None) -> Settings:
        """Return the agent's settings with the compaction that applies to this run."""
        compaction = self._compaction
        if compaction is None:
            compaction = Compaction() if session is not None else False
        if compaction is False:
            return self._settings
        return dataclasses.replace(self._settings, compaction=compaction)

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
        compaction = self._compaction or Compaction()
        settings = dataclasses.replace(self._settings, compaction=compaction)
        async with self._session(session) as (saved, save, archive):
            run = Run(settings, None, saved or history, None, save, archive=archive)
            async for _ in run.compact(force=True):
                pass
            await run._checkpoint(None)
            return run.result("completed")

    async def _with_deps(self, settings: Settings, deps: Any) -> Settings:
        """Return the settings of one run: its ``deps`` and, if callable, its system prompt."""
        if self._system_prompt is not None:
            text = await _maybe(self._system_prompt(deps))
            instruction = system_instruction(text, self._catalog)
            settings = dataclasses.replace(settings, model=self._model.with_system(instruction))
        if deps is not None:
            settings = dataclasses.replace(settings, deps=deps)
        return settings

    @contextlib.asynccontextmanager
    async def _session(
        self, session: str | None
    ) -> AsyncIterator[
        tuple[list[dict[str, Any]] | None, Checkpoint | None, list[dict[str, Any]] | None]
    ]:
        """Hold ``session``'s lock; give its transcript, how to save it, and its archive."""
        if session is None:
            yield None, None, None
            return
        from agent._session_lock import session_lock
        from agent._store import ArchivingStore
        from agent._transcript import Transcript

        store = self.store
        # What compaction replaced is kept, so nothing is lost. A store with append_archive
        # gets only what this run adds, appended before the save that drops it from the
        # transcript (a crash in between repeats a batch, never loses one); any other store
        # gets the whole archive in the transcript's metadata on every save.
        appender = store if isinstance(store, ArchivingStore) else None
        archive: list[dict[str, Any]] = []

        async def save(contents: list[dict[str, Any]], pending: Request | None) -> None:
            request = {"request": dict(pending)} if pending is not None else None
            metadata: dict[str, Any] = {"model": self.model}
            if appender is not None:
                if archive:
                    count = len(archive)
                    await appender.append_archive(session, archive[:count])
                    del archive[:count]
            elif archive:
                metadata["archive"] = archive
            transcript = Transcript(contents, pending=request, metadata=metadata)
            await store.save(session, transcript)

        async with session_lock(store, session):
            saved = await store.get(session)
            if saved is not None:
                # For a store that appends, an archive saved in the metadata before it could
                # (an older version) moves to its archive on the first save.
                archive.extend(saved.metadata.get("archive") or [])
            yield (saved.contents if saved else None), save, archive

    async def aclose(self) -> None:
        """Close the HTTP client the agent created (a supplied one is left open)."""
        await self._model.aclose()

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _with_output(config: Mapping[str, Any] | None, spec: OutputSpec) -> dict[str, Any]:
    """Add the typed result's generation fields to ``config``; refuse a config that sets them."""
    options = dict(config or {})
    taken = {"response_mime_type", "response_schema", "response_json_schema"} & set(options)
    if taken:
        raise ConfigurationError(
            f"config={{...}} may not set {', '.join(sorted(taken))} together with output_type="
        )
    return {**options, **spec.config()}


def _check_options(
    max_turns: int, malformed_retries: int, empty_retries: int, repeat_limit: int, invalid: str
) -> None:
    if max_turns < 1:
        raise ConfigurationError(f"max_turns must be at least 1, got {max_turns}")
    if malformed_retries < 0 or empty_retries < 0:
        raise ConfigurationError("malformed_retries and empty_retries must be 0 or more")
    if repeat_limit < 2:
        raise ConfigurationError(f"repeat_limit must be at least 2, got {repeat_limit}")
    if invalid not in ("skip", "raise"):
        raise ConfigurationError(f"invalid_tools must be 'skip' or 'raise', got {invalid!r}")


def _check_limits(model: str, limits: UsageLimits | None) -> UsageLimits | None:
    if limits is not None and limits.cost_usd is not None and price_table().lookup(model) is None:
        raise ConfigurationError(
            f"UsageLimits(cost_usd=...) needs a price for {model!r}, and the price table has "
            "none; limit tokens instead"
        )
    return limits
