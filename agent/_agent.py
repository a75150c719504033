"""`Agent`: a Gemini model, a toolkit and the settings of the loop that joins them."""

from __future__ import annotations

import asyncio
import contextlib
import warnings
from collections.abc import AsyncGenerator, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from agent import _gemini
from agent._loop import Run, Settings, WaitFor
from agent._request import DeclarationProblem, declaration, split_valid, system_instruction
from agent._retry import RetryPolicy
from agent.errors import ConfigurationError, DeadlineExceededError
from agent.events import DoneEvent, Event
from agent.hooks import Hooks
from toolnexus import Answer, Toolkit

if TYPE_CHECKING:
    import httpx
    from google import genai

    from agent._result import RunResult
    from agent._store import Store
    from toolnexus import Request

__all__ = ["DEFAULT_MODEL", "Agent", "ToolDeclarationWarning"]

DEFAULT_MODEL = "gemini-2.5-flash"
"""The model used when none is given."""


class ToolDeclarationWarning(UserWarning):
    """A tool was left out of the request because Gemini would refuse its declaration."""


class Agent:
    """A Gemini model with a toolkit: send a prompt, run the tools it asks for, repeat.

    Example::

        import toolnexus as tn
        from agent import Agent

        tk = tn.build(skills="examples/skills")
        agent = Agent(model="gemini-2.5-flash", toolkit=tk, system_prompt="Be brief.")
        result = agent.run_sync("What does README.md say?")
        print(result.status, result.text)

    Client settings: ``api_key`` (else ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``), Vertex AI
    (``vertexai``, ``project``, ``location``), ``base_url`` (else ``GOOGLE_GEMINI_BASE_URL``),
    ``api_version``; or a ready ``client`` (a ``google.genai.Client``), or an
    ``http_client`` (an ``httpx.AsyncClient``) to build one on. ``timeout`` is seconds per
    model request (``None``: no limit).

    Loop settings (defaults in brackets): ``max_turns`` [50] model responses per run;
    ``malformed_retries`` [2] re-asks after a malformed or unexpected function call;
    ``empty_retries`` [1] re-asks after an empty response; ``repeat_limit`` [3] turns in a
    row with the very same calls before the breaker stops the run; ``tool_timeout`` [none]
    seconds per tool call; ``deadline`` [none] seconds for a whole run; ``retry`` the
    `RetryPolicy` of the model call. ``config`` holds extra ``GenerateContentConfig`` fields
    (``temperature``, ``thinking_config``, ...). ``invalid_tools`` is ``"skip"`` (leave a
    tool Gemini would refuse out, with a `ToolDeclarationWarning`) or ``"raise"``.

    Humans and memory: ``wait_for`` answers a suspended tool's `Request` inline (else the
    run ends ``"pending"``); ``hooks`` are the `Hooks` around model and tool calls;
    ``store`` keeps ``session=`` conversations (a `MemoryStore` unless given).
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        toolkit: Toolkit | None = None,
        *,
        system_prompt: str | None = None,
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
    ) -> None:
        _check_options(max_turns, malformed_retries, empty_retries, repeat_limit, invalid_tools)
        self.model = model
        self.toolkit = toolkit if toolkit is not None else Toolkit()
        self.deadline = deadline
        self._store = store
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
        self.declarations: tuple[dict[str, Any], ...] = tuple(declarations)
        """The function declarations sent with every request."""
        from toolnexus import skills_prompt  # loads the skills machinery only when needed

        self.system_instruction = system_instruction(system_prompt, skills_prompt(self.toolkit))
        """The system instruction sent with every request (``None`` when empty)."""
        if client is not None:
            self._clients = _gemini.Clients(client)
        else:
            self._clients = _gemini.build_client(
                api_key=api_key,
                http_client=http_client,
                base_url=base_url,
                api_version=api_version,
                vertexai=vertexai,
                project=project,
                location=location,
                timeout=timeout,
            )
        self._settings = Settings(
            model=model,
            config=_gemini.make_config(self.system_instruction, self.declarations, config),
            toolkit=self.toolkit,
            hooks=hooks or Hooks(),
            wait_for=wait_for,
            max_turns=max_turns,
            retry=retry or RetryPolicy(),
            malformed_retries=malformed_retries,
            empty_retries=empty_retries,
            repeat_limit=repeat_limit,
            tool_timeout=tool_timeout,
            client=self._client,
        )

    def __repr__(self) -> str:
        return f"Agent(model={self.model!r}, tools={len(self.declarations)})"

    def _client(self) -> _gemini.Clients:
        return self._clients

    async def run(
        self,
        prompt: str | None = None,
        *,
        history: Sequence[Mapping[str, Any] | Any] | None = None,
        answer: Answer | None = None,
        session: str | None = None,
    ) -> RunResult:
        """Run the loop on ``prompt`` until the model answers or a limit is hit.

        ``history`` continues an earlier conversation (``result.contents`` of a previous
        run, or Gemini Content dicts). To resume a run that ended ``"pending"``, pass its
        ``contents`` as ``history`` and the human's ``answer`` (``{"id": request id, "ok":
        True, "data": ...}``); no prompt is needed. Raises `ModelError` when the model call
        fails for good, `HookError` when a hook or ``wait_for`` raises and
        `DeadlineExceededError` past ``deadline``; all carry the partial result.

        ``session`` names a conversation kept in the agent's ``store`` (in memory unless
        one was given): its transcript is loaded first and saved after every completed
        turn, so a crash loses at most the turn in flight. A suspended session resumes
        with ``run(session=..., answer=...)``; two runs on one session at once are refused
        with `SessionBusyError`.

        Example::

            result = await agent.run("Summarise README.md")
            if result.status == "pending":
                result = await agent.run(history=result.contents,
                                         answer={"id": result.pending["id"], "ok": True,
                                                 "data": "yes"})
        """
        result: RunResult | None = None
        events = self._events(prompt, history, answer, session, streaming=False)
        async with contextlib.aclosing(events):
            async for event in events:
                if isinstance(event, DoneEvent):
                    result = event.result
        assert result is not None
        return result

    def run_sync(
        self,
        prompt: str | None = None,
        *,
        history: Sequence[Mapping[str, Any] | Any] | None = None,
        answer: Answer | None = None,
        session: str | None = None,
    ) -> RunResult:
        """Run from synchronous code; see `run`. Not allowed inside a running event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise ConfigurationError(
                "run_sync() was called from a running event loop; use `await agent.run(...)`"
            )
        return asyncio.run(
            self._released_after(self.run(prompt, history=history, answer=answer, session=session))
        )

    async def _released_after(self, run: Coroutine[Any, Any, RunResult]) -> RunResult:
        try:
            return await run
        finally:
            # The pooled connections belong to this event loop, which asyncio.run closes.
            if self._clients.transport is not None:
                await self._clients.transport.aclose()

    async def stream(
        self,
        prompt: str | None = None,
        *,
        history: Sequence[Mapping[str, Any] | Any] | None = None,
        answer: Answer | None = None,
        session: str | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Yield the run's events as they happen; the last one is `DoneEvent` with the result.

        Takes the same arguments as `run` and runs the same loop, over Gemini's streaming
        endpoint: text and thoughts arrive as `TextEvent` / `ThoughtEvent` pieces while the model
        writes. If a model call fails part-way and is retried, a `RetryEvent` comes before
        the new attempt's pieces: the pieces of the failed attempt are void. To stop early,
        iterate inside ``contextlib.aclosing(agent.stream(...))``: closing the stream cancels
        the tool calls still running and waits for them (a turn whose calls all finished is
        already saved). Leaving the loop without closing it leaves that cleanup, and a
        ``session``'s lock, to the event loop's finaliser, some iterations later.

        Example::

            async for event in agent.stream("Summarise README.md"):
                if isinstance(event, TextEvent):
                    print(event.text, end="", flush=True)
                elif isinstance(event, DoneEvent):
                    print(event.result.status)
        """
        events = self._events(prompt, history, answer, session, streaming=True)
        async with contextlib.aclosing(events):
            async for event in events:
                yield event

    @property
    def store(self) -> Store:
        """Where ``session=`` conversations are kept (a `MemoryStore` unless one was given)."""
        if self._store is None:
            from agent._store import MemoryStore

            self._store = MemoryStore()
        return self._store

    async def _events(
        self,
        prompt: str | None,
        history: Sequence[Any] | None,
        answer: Answer | None,
        session: str | None,
        *,
        streaming: bool,
    ) -> AsyncGenerator[Event, None]:
        if session is None:
            run = Run(self._settings, prompt, history, answer, streaming=streaming)
            async with contextlib.aclosing(self._drive(run)) as events:
                async for event in events:
                    yield event
            return
        if history is not None:
            raise ConfigurationError("pass either history= or session=, not both")
        from agent._session_lock import session_lock
        from agent._transcript import Transcript

        store = self.store

        async def save(contents: list[dict[str, Any]], pending: Request | None) -> None:
            request = {"request": dict(pending)} if pending is not None else None
            transcript = Transcript(contents, pending=request, metadata={"model": self.model})
            await store.save(session, transcript)

        async with session_lock(store, session):
            saved = await store.get(session)
            history = saved.contents if saved else None
            run = Run(self._settings, prompt, history, answer, save, streaming=streaming)
            async with contextlib.aclosing(self._drive(run)) as events:
                async for event in events:
                    yield event

    async def _drive(self, run: Run) -> AsyncGenerator[Event, None]:
        events = run.events()
        try:
            if self.deadline is None:
                async for event in events:
                    yield event
                return
            when = asyncio.get_running_loop().time() + self.deadline
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
                        f"the run passed its deadline of {self.deadline:g} s",
                        result=run.result("incomplete", reason="deadline"),
                    ) from None
                yield event
        finally:
            await events.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client the agent created (a supplied one is left open)."""
        if self._clients.http is not None:
            await self._clients.http.aclose()

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


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
