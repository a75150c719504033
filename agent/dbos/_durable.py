"""`DurableAgent`: an agent's runs as DBOS workflows that survive crashes and restarts."""

from __future__ import annotations

import copyreg
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dbos import DBOS, SetWorkflowID

from agent.dbos._events import EventLog
from agent.dbos._steps import DEFAULT_ANSWER_TIMEOUT, DbosSteps
from agent.errors import AgentError, ConfigurationError
from agent.events import DoneEvent

if TYPE_CHECKING:
    from dbos import WorkflowHandleAsync

    from agent import Agent, Prompt, RunResult

__all__ = ["DurableAgent", "run_durably"]

_names: set[str] = set()


async def run_durably(
    agent: Agent,
    prompt: Prompt | None,
    *,
    history: Sequence[Mapping[str, Any]] | None = None,
    steps: DbosSteps | None = None,
    publish: bool = True,
    deps: Any = None,
) -> RunResult:
    """Run ``agent``'s loop with DBOS steps; call it from inside a DBOS workflow.

    `DurableAgent` does this for you; use it directly to run an agent from a workflow of
    your own (for example one step of a larger pipeline). The events are written to the
    workflow's ``toolnexus.events`` stream a turn at a time, with the step of each model
    call (`agent.dbos.follow` reads them one by one).

    Args:
        agent: The agent to run (its ``wait_for`` is not used: questions wait for `send`;
            its toolkit's `Tool.idempotent` says which tools a crash may run twice).
        prompt: The user message.
        history: An earlier conversation to continue.
        steps: The DBOS steps to use (their answer timeout, rate-limit queue).
        publish: Write the events to the stream (``False`` saves a database write per
            turn when nobody follows them).
        deps: The run's data, as for `Agent.run` (tools get it; a callable system prompt
            is built from it).

    Returns:
        The run's `RunResult`.

    Raises:
        RunError: As `Agent.run` raises it.
    """
    steps = steps or DbosSteps()
    steps.toolkit = agent.toolkit  # whose tools say whether they are idempotent
    events = EventLog() if publish else None
    steps.events = events
    result: RunResult | None = None
    try:
        async for event in agent.plan(prompt, history=history, steps=steps, deps=deps).events():
            if events is not None:
                events.add(event)
            if isinstance(event, DoneEvent):
                result = event.result
    except AgentError as error:
        copyreg.pickle(type(error), _reduce)  # DBOS stores it pickled
        raise
    finally:
        steps.events = None
        if events is not None:
            # The stream ends with the workflow (readers stop at its DoneEvent, or when it
            # has ended): closing it would be one more database write.
            await events.flush()
    assert result is not None
    return result


class DurableAgent:
    """Run an `Agent` as DBOS workflows: one workflow per run, one step per call.

    Create it at import time, like any DBOS workflow (DBOS finds its workflow by name when
    it recovers a run after a restart), then configure and launch DBOS as DBOS documents.
    A run interrupted by a crash resumes from its last finished step when DBOS launches
    again: a model call that finished is not made again, and a tool that finished is not
    run again. A tool cut off mid-call runs again, so a tool with side effects should be
    idempotent (see the durable-runs page of the docs).

    Example::

        from dbos import DBOS
        from agent import Agent
        from agent.dbos import DurableAgent

        durable = DurableAgent(Agent(toolkit=tk), name="support")   # at import time

        DBOS(config={"name": "support-app", "system_database_url": "sqlite:///app.sqlite"})
        DBOS.launch()
        result = await durable.run("Where is my parcel?", run_id="ticket-42")

    Args:
        agent: The agent whose runs become workflows.
        name: A name unique in the application; the workflow is ``toolnexus.agent.NAME``.
        answer_timeout: Seconds a run waits for an answer sent with `agent.dbos.send`
            before it ends ``"pending"`` (a week by default).
        events: Write the run's events to its stream, for `agent.dbos.follow` (one
            database write per turn; ``False`` saves them when nobody follows).

    Raises:
        ConfigurationError: Another `DurableAgent` already has this name.
    """

    def __init__(
        self,
        agent: Agent,
        *,
        name: str,
        answer_timeout: float = DEFAULT_ANSWER_TIMEOUT,
        events: bool = True,
    ) -> None:
        if name in _names:
            raise ConfigurationError(f"a DurableAgent named {name!r} already exists")
        _names.add(name)
        self.agent = agent
        """The agent that runs."""
        self.name = name
        """The name the workflow is registered under (after ``toolnexus.agent.``)."""
        self.answer_timeout = answer_timeout
        """Seconds a run waits for an answer."""
        self.events = events
        """Whether runs write their events for `agent.dbos.follow`."""

        async def workflow(
            prompt: str | None, history: list[dict[str, Any]] | None = None, deps: Any = None
        ) -> RunResult:
            steps = DbosSteps(answer_timeout=self.answer_timeout)
            return await run_durably(
                self.agent, prompt, history=history, steps=steps, publish=self.events, deps=deps
            )

        workflow.__qualname__ = workflow.__name__ = f"toolnexus_agent_{name}"
        self._workflow = DBOS.workflow(name=f"toolnexus.agent.{name}")(workflow)

    def __repr__(self) -> str:
        return f"DurableAgent({self.agent!r}, name={self.name!r})"

    async def start(
        self,
        prompt: str | None = None,
        *,
        run_id: str | None = None,
        history: Sequence[Mapping[str, Any]] | None = None,
        deps: Any = None,
    ) -> WorkflowHandleAsync[RunResult]:
        """Start a run as a workflow and return its handle at once.

        Starting again with the ``run_id`` of a started run starts nothing: the handle is
        that run's.

        Args:
            prompt: The user message (optional when continuing ``history``).
            run_id: The workflow id (default: one DBOS makes up).
            history: An earlier conversation to continue (``result.contents``).
            deps: The run's data, as for `Agent.run`; DBOS records it with the workflow
                (pickled), so it must be picklable and is restored after a crash.

        Returns:
            The workflow handle; ``await handle.get_result()`` gives the `RunResult`.
        """
        contents = [dict(content) for content in history] if history is not None else None
        if run_id is None:
            return await DBOS.start_workflow_async(self._workflow, prompt, contents, deps)
        with SetWorkflowID(run_id):
            return await DBOS.start_workflow_async(self._workflow, prompt, contents, deps)

    async def run(
        self,
        prompt: str | None = None,
        *,
        run_id: str | None = None,
        history: Sequence[Mapping[str, Any]] | None = None,
        deps: Any = None,
    ) -> RunResult:
        """Run the agent as a DBOS workflow whose id is ``run_id``; return its `RunResult`.

        Calling it again with the ``run_id`` of a finished run returns that run's result;
        ``DBOS.retrieve_workflow(run_id)`` gives it too, from any process.

        Args:
            prompt: The user message (optional when continuing ``history``).
            run_id: The workflow id (default: one DBOS makes up).
            history: An earlier conversation to continue (``result.contents``).
            deps: The run's data (picklable), as for `start`.

        Returns:
            The `RunResult`: ``"pending"`` only when a question went unanswered for
            ``answer_timeout`` seconds.

        Raises:
            RunError: As `Agent.run` raises it (`ModelError`, `HookError`).
        """
        handle = await self.start(prompt, run_id=run_id, history=history, deps=deps)
        return await handle.get_result()


# DBOS stores a workflow's exception by pickling it; the agent's errors take keyword-only
# arguments, which plain pickling cannot rebuild, so they are rebuilt from their state
# (the process that reads the error back needs nothing registered: `_rebuild` is named in
# the pickle).


def _rebuild(cls: type[AgentError], args: tuple[Any, ...], state: dict[str, Any]) -> AgentError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


def _reduce(error: AgentError) -> tuple[Any, ...]:
    return _rebuild, (type(error), error.args, dict(error.__dict__))
