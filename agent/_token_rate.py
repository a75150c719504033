"""A rate limit on model calls: at most N prompt tokens (and M requests) in any window.

Gemini's quotas count input tokens per minute (TPM) and requests per minute (RPM) per
project and model; at the quotas, tokens bind before requests. `TokenRate` holds every
model call of a run under such limits: each attempt (a retry too, waiting its
``RetryInfo`` delay first under the retry policy), compaction's summary calls, a tier
fallback, and the calls of the run's sub-agents, which share their parent's limits as they
share its usage tally.

**The algorithm is a sliding-window log.** Each call is an entry of the ledger holding its
prompt tokens and the time until which it counts. A call is admitted when the entries that
still count, plus this one, hold at most ``tokens`` tokens (and ``requests`` requests);
otherwise it waits until an entry stops counting. An entry counts from its admission until
``per`` seconds after its call came back (its response, or its failure): the server
received the request somewhere in between, so any two calls whose requests arrived less
than ``per`` seconds apart were counted together when the later one was admitted. Hence
**no window of ``per`` seconds of the server's arrivals holds more than ``tokens``
tokens**, given that each call's estimate was not below its real count while it was in
flight. A token bucket of the same capacity does not give this: a full bucket spent at the
end of one minute, refilled and spent again at the start of the next, lets twice the limit
through in the 60 seconds around the boundary.

**Estimates and corrections.** A request that extends the run's last call (the next turn:
the same contents and more) is estimated as that call's reported ``promptTokenCount`` plus
what was added since; any other (a run's first, one after compaction or a hook rewrote the
transcript, a compaction summary) is estimated whole. Added or whole, the estimate is one
token per four characters of the request's JSON (contents, system instruction, tools;
inline files as Gemini bills them; a few tokens for the envelope), times the largest ratio
of reported to estimated tokens among the limit's last 16 whole estimates when it is above
1 (at most 4): a tokenizer denser than four characters per token is learnt from the first
responses. After the call its entry holds what ``usageMetadata`` reported
(``promptTokenCount`` + ``toolUsePromptTokenCount``): the limit counts real tokens, and an
over-estimate frees its room at once. A failed attempt keeps its estimate (the server may
have counted it). The first call of a run that names a cached content cannot see the
cached tokens: it is estimated from what it sends.

**Where the entries live**: a `RateLedger`. The default, `InMemoryLedger`, serves one
process: share one `TokenRate` object among agents (and tasks) that share a quota.
``agent.dbos.DatabaseLedger`` keeps them in a database table, for workers in several
processes (``batch --engine dbos --tpm N``). Calls waiting in one process take their turn in
order; across processes, the first to look when there is room gets it.

A request larger than ``tokens`` can never be admitted: a turn's request ends the run
``"incomplete"`` with ``limit="token_rate"``; any other call (a compaction summary) raises
`ConfigurationError`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import math
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agent._capability import Capability, RunCapability
from agent.errors import ConfigurationError

if TYPE_CHECKING:
    from agent._contents import Config, Content
    from agent._decide import Step
    from agent._state import RunState
    from agent.hooks import ModelRequest

__all__ = [
    "Admission",
    "InMemoryLedger",
    "RateLedger",
    "TokenRate",
    "inherited_rate",
]

CALIBRATION_CALLS = 16
"""How many recent calls the estimate's correction factor is taken from."""

CHARS_PER_TOKEN = 4
"""The estimate's characters of request JSON per token (before the correction factor)."""

MAX_FACTOR = 4.0
"""The largest correction factor learnt (a script four times denser than the rule)."""

MIN_LEARNING_TOKENS = 100
"""Calls estimated below this many tokens teach nothing (the envelope dominates them)."""

ENVELOPE_TOKENS = 16
"""Added to every estimate for the request's own JSON around its parts (rounding up)."""


@dataclass(frozen=True, slots=True)
class Admission:
    """A ledger's answer to a call asking for room."""

    entry: object | None
    """The ledger's key for the call's entry when it was admitted; ``None`` when it must wait."""
    wait: float | None = None
    """When not admitted: seconds until an entry stops counting (``None``: only calls still
    in flight count, and they may end any time)."""


class RateLedger(Protocol):
    """Where a `TokenRate` keeps its entries: one per admitted call, shared by its users.

    Both methods must be atomic with respect to every other user of the ledger (another
    task, another process), and read one clock.
    """

    async def admit(self, tokens: int, rate: TokenRate) -> Admission:
        """Record a call of ``tokens`` if it fits ``rate``'s limits now; say when it may if not.

        The entries that count are those whose time has not passed; the new entry counts
        until its call is settled (a ledger shared by processes may bound that, for a
        process that dies with calls in flight).
        """
        ...

    async def settle(self, entry: object, tokens: int, rate: TokenRate) -> None:
        """Record that the call of ``entry`` came back.

        It holds ``tokens`` from now on and counts ``rate.per`` more seconds.
        """
        ...


class InMemoryLedger:
    """The entries of one process, in memory (the default ledger).

    Args:
        clock: Where the seconds come from (a monotonic clock).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._entries: dict[int, tuple[int, float]] = {}
        """Admitted calls: their tokens, and the time until which they count (``inf``
        while in flight)."""
        self._keys = itertools.count()
        self._lock = threading.Lock()  # agents of several threads may share one

    async def admit(self, tokens: int, rate: TokenRate) -> Admission:
        """See `RateLedger.admit`."""
        with self._lock:
            now = self._clock()
            entries = self._entries
            for key in [key for key, (_, until) in entries.items() if until <= now]:
                del entries[key]
            used = sum(counted for counted, _ in entries.values())
            if rate.fits(used, len(entries), tokens):
                key = next(self._keys)
                entries[key] = (tokens, math.inf)
                return Admission(key)
            ends = [until for _, until in entries.values() if until != math.inf]
            return Admission(None, min(ends) - now if ends else None)

    async def settle(self, entry: object, tokens: int, rate: TokenRate) -> None:
        """See `RateLedger.settle`."""
        assert isinstance(entry, int)
        with self._lock:
            self._entries[entry] = (tokens, self._clock() + rate.per)


class TokenRate(Capability):
    """At most ``tokens`` prompt tokens (and ``requests`` requests) per ``per`` seconds.

    Example::

        from agent import Agent
        from agent.capabilities import TokenRate

        rate = TokenRate(1_000_000)   # Gemini's 1M input tokens per minute
        agent = Agent("gemini-2.5-flash", capabilities=[rate])

    Give the same object to every agent that shares the quota; a sub-agent's calls count
    against its parent's limits without it. See the module's docs for the guarantee and
    how the tokens are estimated.

    Args:
        tokens: Prompt tokens per window (``promptTokenCount`` +
            ``toolUsePromptTokenCount``); ``None`` for no token limit.
        requests: Model requests per window; ``None`` for no request limit.
        per: The window in seconds (60: per minute, as Gemini's quotas count). A shorter
            window with smaller limits spreads the calls more evenly.
        ledger: Where the entries live (default: this process's memory);
            ``agent.dbos.DatabaseLedger`` shares them between processes.

    Raises:
        ConfigurationError: No limit, a limit below 1, or a window that is not positive.
    """

    place = "rate"

    def __init__(
        self,
        tokens: int | None = None,
        *,
        requests: int | None = None,
        per: float = 60.0,
        ledger: RateLedger | None = None,
    ) -> None:
        if tokens is None and requests is None:
            raise ConfigurationError("TokenRate needs tokens=, requests= or both")
        for name, value in (("tokens", tokens), ("requests", requests)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ConfigurationError(f"TokenRate {name}= must be a whole number, got {value!r}")
            if value is not None and value < 1:
                raise ConfigurationError(f"TokenRate {name}= must be at least 1, got {value}")
        if not (isinstance(per, int | float) and 0 < per < math.inf):
            raise ConfigurationError(
                f"TokenRate per= must be a positive number of seconds, got {per!r}"
            )
        self.tokens = tokens
        """Prompt tokens per window, or ``None``."""
        self.requests = requests
        """Requests per window, or ``None``."""
        self.per = float(per)
        """The window, in seconds."""
        self.ledger: RateLedger = ledger if ledger is not None else InMemoryLedger()
        """Where the entries live."""
        self._ratios: collections.deque[float] = collections.deque(maxlen=CALIBRATION_CALLS)
        self._turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return f"TokenRate({self.tokens!r}, requests={self.requests!r}, per={self.per:g})"

    # -- the limits -------------------------------------------------------------------------

    def fits(self, used: int, calls: int, tokens: int) -> bool:
        """Tell whether a call of ``tokens`` fits beside ``calls`` entries holding ``used``."""
        if self.tokens is not None and used + tokens > self.tokens:
            return False
        return self.requests is None or calls + 1 <= self.requests

    def too_large(self, tokens: int) -> bool:
        """Tell whether a call of ``tokens`` could never be admitted, even alone."""
        return self.tokens is not None and tokens > self.tokens

    @property
    def poll(self) -> float:
        """Seconds between two looks while only calls in flight hold the room (at most 1)."""
        return min(1.0, self.per / 20)

    # -- estimates --------------------------------------------------------------------------

    def scaled(self, raw: float) -> int:
        """Return the tokens a call of ``raw`` estimated tokens is admitted as."""
        factor = max(self._ratios, default=1.0)
        return max(1, math.ceil(raw * factor))

    def learn(self, raw: float, reported: int) -> None:
        """Take note of a call's reported prompt tokens against its raw estimate."""
        if raw >= MIN_LEARNING_TOKENS:
            self._ratios.append(min(max(reported / raw, 1.0), MAX_FACTOR))

    # -- taking turns -----------------------------------------------------------------------

    async def acquire(self, tokens: int) -> object:
        """Wait until a call of ``tokens`` fits; return its ledger entry.

        Calls of this process wait in the order they asked.
        """
        loop = asyncio.get_running_loop()
        turn = self._turns.get(loop)
        if turn is None:
            turn = self._turns[loop] = asyncio.Lock()
        async with turn:
            while True:
                admission = await self.ledger.admit(tokens, self)
                if admission.entry is not None:
                    return admission.entry
                wait = self.poll if admission.wait is None else min(admission.wait, self.poll)
                await asyncio.sleep(max(wait, 0.001))

    async def release(self, entry: object, tokens: int) -> None:
        """Settle the call of ``entry`` in the ledger: it came back holding ``tokens``."""
        await self.ledger.settle(entry, tokens, self)

    # -- the capability ---------------------------------------------------------------------

    def start(self, run: RunState) -> RunCapability:
        """Return the run's state: its calls go through this limit and its ancestors'."""
        # The same limit given to a sub-agent and its parent counts each call once.
        limits = tuple(dict.fromkeys((self, *_limits_of(run.parent))))
        return _RateRun(_register(run, limits))


class _Inherited(Capability):
    """A run with no `TokenRate` of its own under a parent that has one: the parent's holds."""

    def start(self, run: RunState) -> RunCapability | None:
        limits = _limits_of(run.parent)
        return _RateRun(_register(run, limits)) if limits else None


_INHERITED = _Inherited()


def inherited_rate() -> Capability:
    """Return the capability that puts a sub-agent's calls under its ancestors' `TokenRate`."""
    return _INHERITED


_TREE: weakref.WeakKeyDictionary[RunState, tuple[TokenRate, ...]] = weakref.WeakKeyDictionary()
"""The limits each running run's calls go through (its own, then its ancestors')."""


def _register(run: RunState, limits: tuple[TokenRate, ...]) -> tuple[TokenRate, ...]:
    _TREE[run] = limits
    return limits


def _limits_of(run: RunState | None) -> tuple[TokenRate, ...]:
    return _TREE.get(run, ()) if run is not None else ()


def input_tokens(usage: Any) -> int:
    """Return the prompt tokens a response's usage reports (tool-use prompt included)."""
    return int(usage.prompt) + int(usage.tool_use_prompt)


@dataclass(slots=True)
class _Estimate:
    """What a request is admitted as, and what it was measured from."""

    tokens: int
    """The tokens the call is admitted as."""
    raw: float
    """The four-characters estimate of the whole request (for learning), or 0 when the
    estimate started from an earlier call's reported count."""


class _RateRun(RunCapability):
    """One run's calls under its limits: estimate, wait for room, count what was sent."""

    def __init__(self, limits: tuple[TokenRate, ...]) -> None:
        self.limits = limits
        self.sizes: list[tuple[Content, float]] = []
        """The estimated tokens of the contents last measured, each with its Content."""
        self.configs: dict[int, tuple[Config, float]] = {}
        """The estimated tokens of the last configs measured, by identity."""
        self.basis: tuple[tuple[Any, ...], int, int] | None = None
        """The last call that reported its size: its prefix (`_prefix_key`), how many of
        `sizes` it sent, and the tokens it reported. A request that extends it is estimated
        from there."""
        self.planned: tuple[int, _Estimate] | None = None
        """The turn's request as the capabilities before a context cache left it (a cached
        request does not show the cached tokens): its turn and estimate."""
        self.reported: int | None = None
        """What the current attempt's response reported, once it arrived."""

    async def before_call(self, run: RunState, request: ModelRequest) -> ModelRequest | Step:
        """End the run when the turn's request could never fit a window."""
        from agent._decide import Stop

        estimate = self._estimate(request)
        self.planned = (request.turn, estimate)
        if any(limit.too_large(self._tokens(limit, estimate)) for limit in self.limits):
            return Stop("incomplete", keep=False, limit="token_rate")
        return request

    @contextlib.asynccontextmanager
    async def sending(self, run: RunState, request: ModelRequest) -> AsyncIterator[None]:
        estimate = self._estimate(request)
        planned = self.planned
        if planned is None or planned[0] != request.turn or not _cached(request):
            planned = None  # the request shows all it holds
        taken: list[tuple[TokenRate, object, int]] = []
        try:
            for limit in self.limits:
                tokens = self._tokens(limit, estimate)
                if planned is not None:
                    tokens = max(tokens, self._tokens(limit, planned[1]))
                if limit.too_large(tokens):
                    raise ConfigurationError(
                        f"a model call of about {tokens:,} prompt tokens can never fit "
                        f"{limit!r}: raise the limit, or compact the conversation sooner"
                    )
                taken.append((limit, await limit.acquire(tokens), tokens))
            self.reported = None
            yield
        finally:
            await self._settle(request, taken, estimate)

    async def _settle(
        self, request: ModelRequest, taken: list[tuple[TokenRate, object, int]], estimate: _Estimate
    ) -> None:
        reported, self.reported = self.reported, None
        if reported is not None:
            self.basis = (_prefix_key(request), len(request.contents), reported)
        for limit, entry, tokens in taken:
            if reported is not None and estimate.raw and not _cached(request):
                limit.learn(estimate.raw, reported)
            await limit.release(entry, tokens if reported is None else reported)

    @contextlib.contextmanager
    def attempt(self, run: RunState, request: ModelRequest, stream: bool) -> Iterator[_RateRun]:
        yield self

    def saw(self, item: object) -> None:
        """Keep the prompt tokens the attempt's response reports (see `attempt`)."""
        from agent._response import ModelResponse

        if isinstance(item, ModelResponse) and item.usage.prompt:
            self.reported = input_tokens(item.usage)

    @staticmethod
    def _tokens(limit: TokenRate, estimate: _Estimate) -> int:
        return limit.scaled(estimate.raw) if estimate.raw else estimate.tokens

    def _estimate(self, request: ModelRequest) -> _Estimate:
        """Estimate the request's prompt tokens.

        A request that sends the contents of the last call that reported its size, and
        more, is that call's reported count plus the four-characters estimate of what was
        added (scaled by the limit's learnt factor). Any other request (the first, one
        after compaction or a hook changed the contents, a summary) is estimated whole.
        """
        sent = self._measure(request)
        basis = self.basis
        if basis is not None and basis[0] == _prefix_key(request) and basis[1] <= len(sent):
            added = sum(tokens for _, tokens in self.sizes[basis[1] : len(sent)])
            factor = max((limit.scaled(added) for limit in self.limits), default=0)
            return _Estimate(basis[2] + factor, 0.0)
        self.basis = None
        raw = sum(tokens for _, tokens in self.sizes) + self._config_tokens(request.config)
        raw += ENVELOPE_TOKENS
        return _Estimate(0, raw)

    def _measure(self, request: ModelRequest) -> list[Content]:
        """Measure the request's contents and config, each Content once; return the contents.

        The contents of the next request are mostly the same objects as the last one's, so
        only the new ones are measured. A measured Content that is not at its place any
        more drops the basis (the transcript was rewritten).
        """
        from agent._contents import to_dict

        sizes, contents = self.sizes, request.contents
        for index, content in enumerate(contents):
            if index < len(sizes) and sizes[index][0] is content:
                continue
            if self.basis is not None and index < self.basis[1]:
                self.basis = None
            del sizes[index:]
            sizes.append((content, _content_tokens(to_dict(content))))
        del sizes[len(contents) :]
        return contents

    def _config_tokens(self, config: Config) -> float:
        """Return the estimated tokens of a config's system text and tools (each measured once)."""
        from agent._contents import config_chars

        known = self.configs.get(id(config))
        if known is None or known[0] is not config:
            if len(self.configs) >= 4:  # the agent's, a cached one, a fallback's: a few
                del self.configs[next(iter(self.configs))]
            known = self.configs[id(config)] = (config, config_chars(config) / CHARS_PER_TOKEN)
        return known[1]


def _prefix_key(request: ModelRequest) -> tuple[Any, ...]:
    """Return what names a request's fixed part (the same for every turn of a run).

    An estimate from an earlier call holds only for a request with the same fixed part.
    """
    config = request.config
    pieces = (config.system_instruction, config.tools, config.tool_config)
    return (request.model, getattr(config, "cached_content", None), *map(id, pieces))


def _cached(request: ModelRequest) -> bool:
    """Tell whether the request names a cached content (its size is not in its JSON)."""
    return bool(getattr(request.config, "cached_content", None))


def _content_tokens(content: Mapping[str, Any]) -> float:
    """Estimate one wire Content dict: its JSON / 4, each inline file as Gemini bills it."""
    from agent._media import inline_data, media_tokens

    blobs = [len(data) for data in inline_data([content])]
    # +2: the separator between two contents in the request's list.
    chars = len(json.dumps(content, ensure_ascii=False)) + 2 - sum(blobs)
    return chars / CHARS_PER_TOKEN + sum(media_tokens(size * 3 // 4) for size in blobs)
