"""The one place a run is assembled: `RunPlan`, from the agent's `AgentCore` and a call's inputs.

Every run — ``Agent.run``, ``run_sync``, ``stream``, ``compact``, a sub-agent call, a durable
run, each CLI subcommand's — comes from ``Agent.plan(...)``. The plan resolves what is per
run (the system prompt built from ``deps``, the session, the usage limits, the steps, the
parent run when it is a sub-agent's), starts each capability's run state, and drives the
loop. Nothing else constructs the loop, so a feature cannot work in one entry point and
vanish in another.

`capabilities_of` is the order in which features apply: one list, here.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Sequence,
)
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent._approval import Approval, ApprovalPolicy
from agent._calls import maybe
from agent._capability import Capability, Chain, RunCapability
from agent._contents import check_prompt, to_contents
from agent._declarations import system_instruction
from agent._inline_limit import InlineLimit
from agent._loop import Run
from agent._media import read_prompt
from agent._routing import SignatureRepair
from agent._session import open_session
from agent._state import RECORDING, RunState, current_run
from agent._traced import Tracing
from agent.errors import ConfigurationError, DeadlineExceededError, RunError
from agent.events import DoneEvent, Event, SubAgentEvent
from agent.hooks import Hooks
from agent.steps import Steps

if TYPE_CHECKING:
    from agent._builtin_tools import BuiltinTools
    from agent._calls import WaitFor
    from agent._compaction import Compaction
    from agent._limits import UsageLimits
    from agent._media import Prompt
    from agent._model import GeminiModel
    from agent._options import RunLimits
    from agent._output import TypedOutput
    from agent._result import RunResult
    from agent._routing import ModelChain
    from agent._store import Store
    from agent._tiers import ServiceTiers
    from toolnexus import Answer, Toolkit

__all__ = ["AgentCore", "RunPlan", "SystemPrompt", "capabilities_of"]

SystemPrompt = Callable[[Any], "str | Awaitable[str | None] | None"]
"""A system prompt built per run from the run's ``deps`` (sync or async)."""


def capabilities_of(
    given: Sequence[Capability | Hooks],
    *,
    approval: ApprovalPolicy,
    output: TypedOutput | None,
    builtin: BuiltinTools | None,
    compaction: Compaction | bool | None,
    tiers: ServiceTiers | None = None,
    routing: Capability | None = None,
    turns: Capability | None = None,
    stop: Capability | None = None,
) -> list[Capability]:
    """Return an agent's capabilities in the order they apply at each point of a run.

    Args:
        given: The agent's ``capabilities=``: each goes to its place in the list below; one
            of a kind this list does not name applies right after the hooks, in the order
            given.
        approval: The approval policy (always applied: it is a security control).
        output: Typed output, if asked for.
        builtin: Gemini's built-in tools, if any.
        compaction: The agent's compaction setting.
        tiers: Service tiers, if a tier is asked for.
        routing: Model fallback and signature hygiene, for an agent of several models (or
            one that chooses a model per turn).
        turns: The per-turn policy (the forced final turn, the ``"any"`` reset).
        stop: Ends the run at a stop tool's result (`RunLimits.stop_at_tools`).

    Raises:
        ConfigurationError: Two capabilities of one kind or for one place, or something
            that is not a capability.
    """
    chosen = _by_kind(given)
    hooks = chosen.pop(Hooks, None)
    placed = _by_place(chosen.values())
    rate, cache = placed.get("rate"), placed.get("cache")
    own = [c for c in chosen.values() if isinstance(c, Capability) and c.place is None]
    listed: list[Capability | None] = [
        # Spans first: the run span is open before anything else starts, and each tool
        # span covers the hooks and the approval of its call.
        Tracing(),
        # A recording (`agent.recording.record`) mirrors the spans: same extent, same tree.
        _Recording(),
        # Service tiers: the tier goes on the request before anything sees it; a shed flex
        # call is sent again at the fallback tier before the run would fail.
        tiers,
        # Stop tools: a run whose stop tool answered ends before anything could make
        # another model request (a compaction summary included).
        stop,
        # Budgets: checked before each call (compaction's summary too) and after each turn.
        _Budget(),
        # Compaction before the hooks, so a before-model hook sees the request as sent.
        _Compaction(compaction),
        # Inline files over Gemini's request limit move to the Files API: after compaction
        # (which may drop them with their exchange), before the hooks (they see it as sent).
        InlineLimit(),
        # Model fallback: after the tiers (a shed flex call tries the standard tier of the
        # same model first); it learns who signed each response before a hook replaces it.
        # An agent of one model only sends a history another model signed again without.
        routing if routing is not None else SignatureRepair(),
        # Per-turn policy: forces the last turn's answer, resets tool_choice "any"; before
        # the hooks, so prepare_turn and before_model see (and may change) the request.
        turns,
        # Hooks: the request and response as the user sees them; before-tool rewrites the
        # arguments before the approval rule sees them.
        _hook_calls(hooks),
        # Capabilities of the user's own kinds, in the order given.
        *own,
        # Token rate: the last to see the request before it goes out (compaction and hooks
        # have set its size); each attempt waits for room. Without one of its own, a
        # sub-agent's calls go through its ancestors' limits.
        rate if rate is not None else _InheritedRate(),
        # Built-in tools: report grounding and code runs of each (hook-replaced) response.
        builtin,
        # Typed output: accepts the final answer, or asks again; shapes its schema first.
        output,
        # Approval: the last wrapper before the tool runs.
        Approval(approval),
        # Context cache last: the request as every other capability left it moves its
        # prefix (system instruction, tools, tool config) into a cache just before it goes.
        cache,
    ]
    return [capability for capability in listed if capability is not None]


def _by_kind(given: Sequence[Capability | Hooks]) -> dict[type, Capability | Hooks]:
    """Return ``given`` by class, in order; refuse a second one of a kind and non-capabilities."""
    chosen: dict[type, Capability | Hooks] = {}
    for capability in given:
        kind = type(capability)
        if not isinstance(capability, Capability | Hooks):
            raise ConfigurationError(
                f"capabilities=: {kind.__name__} is not a capability (pass Hooks(...) or a "
                "feature of agent.capabilities)"
            )
        if kind in chosen:
            raise ConfigurationError(f"capabilities=: two {kind.__name__}, pass one")
        chosen[kind] = capability
    return chosen


def _by_place(given: Iterable[Capability | Hooks]) -> dict[str, Capability]:
    """Return the capabilities that take a place of their own (`Capability.place`) by place.

    Raises:
        ConfigurationError: Two capabilities for one place (a kind and its subclass).
    """
    placed: dict[str, Capability] = {}
    for capability in given:
        if not isinstance(capability, Capability) or capability.place is None:
            continue
        other = placed.setdefault(capability.place, capability)
        if other is not capability:
            raise ConfigurationError(
                f"capabilities=: {type(other).__name__} and {type(capability).__name__} do "
                "the same job, pass one"
            )
    return placed


def _hook_calls(hooks: Capability | Hooks | None) -> Capability | None:
    """Return the agent's `Hooks` as a capability; an agent without hooks does not load it."""
    if not isinstance(hooks, Hooks):
        return None
    from agent._hooked import HookCalls

    return HookCalls(hooks)


class _Recording(Capability):
    """Records each run made inside an `agent.recording.record` block.

    A run outside such a block reads one context variable and does not load
    ``agent.recording``; inside one, the module is loaded already (it opened the block).
    """

    def start(self, run: RunState) -> RunCapability | None:
        if RECORDING.get() is None:
            return None
        from agent.recording import Recorder

        return Recorder().start(run)


class _Budget(Capability):
    """Stops a run at its usage limits and those of the runs it is nested in (`Budget`).

    A run under no usage limits needs none of it, and does not load ``agent._limits``.
    """

    def start(self, run: RunState) -> RunCapability | None:
        if next(run.limit_chain(), None) is None:
            return None
        from agent._limits import Budget

        return Budget().start(run)


class _InheritedRate(Capability):
    """Puts a sub-agent's calls under its ancestors' `TokenRate` (a top-level run has none)."""

    def start(self, run: RunState) -> RunCapability | None:
        if run.parent is None:
            return None
        from agent._token_rate import inherited_rate

        return inherited_rate().start(run)


class _Compaction(Capability):
    """Compaction as the agent was configured: always, never, or for session runs.

    The compaction module loads with the first run that compacts, not with the agent.
    """

    def __init__(self, setting: Compaction | bool | None) -> None:
        self.setting = setting

    def start(self, run: RunState) -> RunCapability | None:
        setting, session = self.setting, run.session
        if setting is False or (setting is None and session is None):
            return None
        from agent._compaction import Compaction, Compactor

        policy = setting if isinstance(setting, Compaction) else Compaction()
        return Compactor(policy).start(run)


@dataclass(frozen=True, slots=True)
class AgentCore:
    """What every run of one agent shares, built once when the agent is."""

    model: GeminiModel | ModelChain
    """The model seam, with the agent's fixed request (tools, config, system text)."""
    toolkit: Toolkit
    """The tools the model may call."""
    limits: RunLimits
    """Turn and retry policy."""
    capabilities: tuple[Capability, ...]
    """The features, in the order they apply."""
    wait_for: WaitFor | None
    """Answers suspended tools inline (not in durable runs)."""
    system_prompt: SystemPrompt | None
    """A system prompt built per run from ``deps``, or ``None`` for a fixed one."""
    catalog: str
    """The skills catalog, after the system prompt in the system instruction."""
    usage_limits: UsageLimits | None
    """Budgets of every run (a call's own replace them)."""
    compaction: Compaction | bool | None
    """The agent's compaction setting: a `Compaction`, ``False``, or ``None`` (session runs)."""
    store: Callable[[], Store]
    """Where ``session=`` conversations are kept."""


class RunPlan:
    """One run of an agent, ready to go: ``events()``, ``result()`` or ``compact()``.

    Made by `Agent.plan`; see there.
    """

    def __init__(
        self,
        core: AgentCore,
        prompt: Prompt | None,
        *,
        history: Sequence[Any] | None = None,
        answer: Answer | None = None,
        session: str | None = None,
        deps: Any = None,
        usage_limits: UsageLimits | None = None,
        steps: Steps | None = None,
        streaming: bool = False,
        name: str | None = None,
    ) -> None:
        if session is not None and history is not None:
            raise ConfigurationError("pass either history= or session=, not both")
        if prompt is not None:
            check_prompt(prompt)
        self.core = core
        self.prompt = prompt
        self.history = history
        self.answer = answer
        self.session = session
        self.deps = deps
        self.usage_limits = usage_limits if usage_limits is not None else core.usage_limits
        self.steps = steps or Steps()
        self.parent = current_run()
        """The run whose tool call makes this one (a sub-agent's parent), if any."""
        self.depth = self.parent.depth + 1 if self.parent is not None else 0
        """How deep this run is nested in sub-agent calls (0: a top-level run)."""
        self.streaming = self.parent.streaming if self.parent is not None else streaming
        self.name = name

    # -- entry points ---------------------------------------------------------------------------

    async def events(self) -> AsyncGenerator[Event, None]:
        """Run to the end, yielding every event; the last one is `DoneEvent`.

        A sub-agent's events also reach its parent's stream, as `SubAgentEvent`s.
        """
        async with self._running() as (events, ending):
            async for event in events:
                ending.saw(event)
                yield event

    async def result(self) -> RunResult:
        """Run to the end and return the result (the events are forwarded, not kept)."""
        async with self._running() as (events, ending):
            async for event in events:
                ending.saw(event)
        assert ending.result is not None
        return ending.result

    async def compact(self, policy: Compaction) -> RunResult:
        """Compact the transcript now, whatever its size; save it when it is a session's."""
        async with self._opened(compacting=True) as run:
            result: RunResult | None = None
            error: BaseException | None = None
            from agent._compaction import compact

            try:
                await compact(run.state, policy, force=True)
                await run.checkpoint(None)
                result = run.state.result("completed")
                return result
            except BaseException as exc:
                error = exc
                raise
            finally:
                run.chain.close(run.state, result, error)

    # -- assembly -------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _opened(self, *, compacting: bool = False) -> AsyncIterator[Run]:
        """Hold the session (if any) and yield the run assembled over it."""
        core = self.core
        # A summary request carries no system instruction: compacting builds none.
        model = core.model if compacting else self.steps.model_for(await self._model())
        store = core.store() if self.session is not None else None
        async with open_session(store, self.session, model.name) as opened:
            contents = opened.contents if opened.contents is not None else self.history
            if self.prompt is None and not contents and not compacting:
                raise ConfigurationError("run() needs a prompt, or a history to continue or resume")
            state = RunState(
                model=model,
                toolkit=core.toolkit,
                limits=core.limits,
                steps=self.steps,
                contents=to_contents(contents or ()),
                deps=self.deps,
                wait_for=None if self.steps.durable else core.wait_for,
                usage_limits=self.usage_limits,
                streaming=self.streaming,
                parent=self.parent,
                session=self.session,
                name=self.name,
            )
            state.archive = opened.archive
            state.session_metadata = opened.metadata
            if opened.contents is not None:
                # The session's saved dicts stand for their Contents: a save after this
                # run's first turn writes that turn only, and compaction's estimate starts
                # from the last request's size.
                state.dumped = list(zip(state.contents, opened.contents, strict=True))
                state.sent = opened.sent
            chain = Chain([r for c in core.capabilities if (r := c.start(state)) is not None])
            state.result_fields = chain.finish
            prompt = await read_prompt(self.prompt) if self.prompt is not None else None
            try:
                yield Run(state, chain, prompt=prompt, answer=self.answer, save=opened.save)
            finally:
                # The run is over: its state lets go of the loop (which holds the state), so
                # both are freed as soon as nobody uses them, not later by the cycle collector.
                state.call_model = None

    async def _model(self) -> GeminiModel | ModelChain:
        """Return the model of this run: the agent's, with the per-run system prompt if any."""
        core = self.core
        if core.system_prompt is None:
            return core.model
        text = await maybe(core.system_prompt(self.deps))
        return core.model.with_system(system_instruction(text, core.catalog))

    @contextlib.asynccontextmanager
    async def _running(self) -> AsyncIterator[tuple[AsyncGenerator[Event, None], _Ending]]:
        """Open the run and yield its events; the capabilities close once, however it ends.

        The events are the loop's own (under the deadline, when there is one), so a run
        without a deadline drains the loop directly.
        """
        async with self._opened() as run:
            ending = _Ending(self, run)
            has_deadline = run.state.limits.deadline is not None
            events = self._deadlined(run) if has_deadline else run.events()
            try:
                async with contextlib.aclosing(events):
                    yield events, ending
            except BaseException as exc:
                ending.close(None, exc)
                raise
            finally:
                ending.close(None, None)

    async def _deadlined(self, run: Run) -> AsyncGenerator[Event, None]:
        """Yield the loop's events, ending the run when it passes its deadline."""
        deadline = run.state.limits.deadline
        assert deadline is not None
        events = run.events()
        async with contextlib.aclosing(events):
            # The clock goes through the steps: a durable run replayed after a crash keeps
            # the deadline of its first start.
            started = await self.steps.now()
            loop = asyncio.get_running_loop()
            when = loop.time() + started + deadline - time.time()
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
                        result=run.state.result("incomplete", reason="deadline"),
                    ) from None
                yield event


class _Ending:
    """What a plan does with each event of its run, and once when the run ends.

    A sub-agent's run (one with a parent) also hands its events to the parent's stream and,
    finished or failed, its usage and cost to the parent's result.
    """

    def __init__(self, plan: RunPlan, run: Run) -> None:
        self.plan = plan
        self.run = run
        self.result: RunResult | None = None
        """The run's result, once its `DoneEvent` has been seen."""
        self.closed = False

    def saw(self, event: Event) -> None:
        """Take note of one event on its way out: the last one closes the run at once."""
        if isinstance(event, DoneEvent):
            # Nothing happens after the last event: close now, not when the consumer
            # gets round to closing the stream.
            self.close(event.result, None)
        parent = self.plan.parent
        if parent is not None:
            nested = event if isinstance(event, SubAgentEvent) else None
            plan = self.plan
            parent.emit(nested or SubAgentEvent(plan.name or "agent", plan.depth, event))

    def close(self, result: RunResult | None, error: BaseException | None) -> None:
        """Tell the capabilities (and a parent) how the run ended; only the first call counts."""
        if self.closed:
            return
        self.closed = True
        self.result = result
        self.run.chain.close(self.run.state, result, error)
        parent = self.plan.parent
        if result is None and isinstance(error, RunError):
            result = error.result
        if parent is not None and result is not None:
            parent.adopt(result)
