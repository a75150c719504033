"""Managed context caching: the prefix every request repeats, kept in one Gemini cache.

An agent's requests repeat the same prefix turn after turn: the system instruction (a long
prompt, a skills catalog), the tool declarations (often the biggest part) and the tool
config. `ContextCache` keeps that prefix in Gemini's explicit cache (``cachedContents``) and
sends each request with ``cachedContent`` and only the conversation: cached input is billed
at a tenth of the input price, plus storage per token-hour.

Before each model call (as the last capability, so it sees the request every other one
built):

1. The prefix is read (`agent._caches.prefix_of`). Below the model's minimum cacheable size
   (or ``min_tokens``) nothing is created and the request goes unchanged.
2. A cache for it is looked for: this `ContextCache`'s own (shared by every run and agent it
   is given to: turns, runs, sub-agents), the one the session names (kept there by an
   earlier run, maybe in another process), or one the server lists under the prefix's
   display name (another process, a durable run replayed after a crash). One that would
   expire within a minute is extended first.
3. Otherwise one is created: always (``mode="always"``), or, in ``mode="auto"``, when the uses
   of the prefix expected within the TTL pay for its storage. The forecast is the uses of
   the last TTL window (this one included); the break-even is
   ``ttl_hours * storage_price / (input_price - cached_input_price)`` uses.
4. The request names the cache and carries no system instruction, tools or tool config
   (Gemini refuses a request with both).

A prefix that changes within a conversation (a tool added, a per-run system prompt, a hook
rewriting the tools) gets a new cache, and the conversation's old one is deleted unless
another run is using it. A conversation is one run, or a session across runs and processes
(its metadata keeps the cache's name and expiry). The caches of runs without a session are
left to expire at their TTL: nothing tells that their prefix will not come back. Prefixes
that differ only in the tool config (a per-turn tool choice) keep a cache each.

A request whose cache is gone (expired or deleted: Gemini answers 403) is sent again once
with the cache made again (a `CacheEvent` ``"recreated"``); if that fails as well, without a
cache. A run that creates or extends a cache pays for its storage, for the time it was set
to live (`Cost.cache_storage`, counted by cost budgets too).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import sys
import time
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agent._caches import (
    CacheInfo,
    Caches,
    Prefix,
    cached_request,
    is_missing_cache,
    is_other_model,
    min_cache_tokens,
    prefix_of,
    too_small,
    with_documents,
)
from agent._capability import Capability, RequestShape, RunCapability
from agent._contents import check_prompt
from agent._cost import price_table
from agent._retry import CallFailed
from agent.errors import ConfigurationError
from agent.events import CacheEvent

if TYPE_CHECKING:
    from agent._contents import Content
    from agent._decide import Step
    from agent._media import Prompt
    from agent._result import RunResult
    from agent._retry import ErrorInfo
    from agent._state import RunState
    from agent.hooks import ModelRequest

__all__ = ["METADATA_KEY", "CacheMode", "ContextCache", "break_even"]

logger = logging.getLogger("agent")

CacheMode = Literal["auto", "always"]
"""When `ContextCache` creates a cache: when it pays (``"auto"``), or whenever it can."""

METADATA_KEY = "context_cache"
"""The session metadata key under which a session keeps its cache (name, expiry, prefix)."""

_RENEW_WITHIN = 60.0
"""Seconds: a cache with less life left than this (or a quarter of its TTL) is extended
before a request names it, so it does not run out on the way."""

_RETRY_AFTER = 60.0
"""Seconds before a prefix whose cache could not be made is tried again."""

_Key = tuple[str, str]
"""A cache's place in the registry: (account, prefix key)."""


def break_even(model: str, ttl: float) -> float | None:
    """Return how many uses within ``ttl`` seconds pay for a cache's storage on ``model``.

    Each use bills the cached tokens at the cached-input price instead of the input price;
    the cache bills storage per token-hour. The size of the cache cancels out: the uses
    needed are ``ttl_hours * storage / (input - cached_input)``.

    Returns:
        The number of uses (a fraction), or ``None`` when the price table lacks a price.
    """
    found = price_table().lookup(model)
    if found is None:
        return None
    prices = found[1]
    storage, saved = prices.get("cache_storage"), prices["input"] - prices["cached_input"]
    if storage is None or saved <= 0:
        return None
    return float(ttl / 3600 * storage / saved)


@dataclass(slots=True)
class _Entry:
    """A cache the registry knows: where it is, when it ends, what prefix it holds."""

    name: str
    expires: float
    tokens: int
    key: str
    content_key: str
    users: int = 0
    """Runs whose current cache it is."""

    def record(self) -> dict[str, Any]:
        """Return what a session keeps of it."""
        return {
            "name": self.name,
            "expires": self.expires,
            "tokens": self.tokens,
            "key": self.key,
            "content_key": self.content_key,
        }

    @classmethod
    def of(cls, info: CacheInfo, prefix: Prefix) -> _Entry:
        return cls(info.name, info.expires, info.tokens, prefix.key, prefix.content_key)


@dataclass
class _Registry:
    """What one `ContextCache` knows of its caches, shared by every run it is part of."""

    entries: dict[_Key, _Entry] = field(default_factory=dict)
    uses: dict[_Key, list[float]] = field(default_factory=dict)
    """When each prefix was sent (the last TTL window), for the ``auto`` forecast."""
    looked_up: set[_Key] = field(default_factory=set)
    """Prefixes already looked for in the server's list (once per process)."""
    unfit: dict[_Key, float] = field(default_factory=dict)
    """Prefixes whose cache could not be made, until when not to try again."""
    locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_Key, asyncio.Lock]] = field(
        default_factory=weakref.WeakKeyDictionary
    )

    def lock(self, key: _Key) -> asyncio.Lock:
        """Return the lock that lets one run at a time make ``key``'s cache (per event loop)."""
        loop = asyncio.get_running_loop()
        locks = self.locks.setdefault(loop, {})
        return locks.setdefault(key, asyncio.Lock())

    def note_use(self, key: _Key, now: float, window: float, enough: int) -> int:
        """Count a request with ``key``'s prefix; return the uses of the last ``window`` s.

        Only the last ``enough`` uses are kept: more would not change the decision, and a
        busy process sends a prefix thousands of times within a TTL.
        """
        recent = [t for t in self.uses.get(key, ()) if t > now - window]
        kept = recent[-(enough - 1) :] if enough > 1 else []
        kept.append(now)
        self.uses[key] = kept
        return len(kept)

    def prune(self, now: float, window: float) -> None:
        """Forget the caches that expired, and the uses older than ``window`` seconds."""
        for key in [key for key, entry in self.entries.items() if entry.expires <= now]:
            del self.entries[key]
        for key in [key for key, until in self.unfit.items() if until <= now]:
            del self.unfit[key]
        for key in [key for key, times in self.uses.items() if times[-1] <= now - window]:
            del self.uses[key]


class ContextCache(Capability):
    """Keeps the prefix every request repeats in a Gemini context cache (see the module doc).

    Example::

        from agent import Agent
        from agent.capabilities import ContextCache

        agent = Agent("gemini-2.5-flash", toolkit, system_prompt=LONG_PROMPT,
                      capabilities=[ContextCache(ttl=600)])

    Give the same `ContextCache` to the agents that should share caches (a lead and its
    sub-agents): runs of agents with the same prefix then use one cache.
    """

    place = "cache"

    def __init__(
        self,
        ttl: float = 600.0,
        min_tokens: int | None = None,
        mode: CacheMode = "auto",
        documents: Prompt | None = None,
    ) -> None:
        """Set the cache's life and when to make one; nothing is sent yet.

        Args:
            ttl: Seconds a cache lives after it is created or extended. Storage is billed
                for all of it; a cache in use is extended before it runs out.
            min_tokens: Cache no prefix smaller than this many tokens (estimated at four
                characters each); ``None``: the model's minimum (2,048 tokens for Gemini
                2.5, 4,096 for Gemini 3).
            mode: ``"auto"`` creates a cache when the expected uses within ``ttl`` pay for
                its storage (see `break_even`); ``"always"`` whenever the prefix is large
                enough.
            documents: Static documents the model reads before every conversation (text,
                ``pathlib.Path`` files, parts, as a prompt takes them): cached with the
                prefix, or sent first in every request when there is no cache.

        Raises:
            ConfigurationError: ``ttl`` is not positive, ``min_tokens`` is below 1, or
                ``mode`` is not ``"auto"`` or ``"always"``.
            TypeError: ``documents`` is not a prompt.
        """
        if not ttl > 0:
            raise ConfigurationError(f"ContextCache(ttl=...) must be over 0 seconds, not {ttl}")
        if min_tokens is not None and min_tokens < 1:
            raise ConfigurationError(
                f"ContextCache(min_tokens=...) must be at least 1, not {min_tokens}"
            )
        if mode not in ("auto", "always"):
            raise ConfigurationError(f"ContextCache(mode=...) is 'auto' or 'always', not {mode!r}")
        if documents is not None:
            check_prompt(documents)
        self.ttl = float(ttl)
        self.min_tokens = min_tokens
        self.mode: CacheMode = mode
        self.documents = documents
        self.registry = _Registry()
        """The caches of every run this capability is part of."""
        self.last_prefix: tuple[tuple[Any, ...], Prefix | None] | None = None
        """The pieces of the last request read (by identity) and its prefix: the runs of an
        agent share its config, so a large prefix (200 declarations take milliseconds to
        hash) is read once, not once per run."""
        self._documents: Content | None = None

    def __repr__(self) -> str:
        return f"ContextCache(ttl={self.ttl:g}, min_tokens={self.min_tokens}, mode={self.mode!r})"

    def shape(self, shape: RequestShape) -> None:
        """Refuse ``mode="auto"`` for a model whose cache prices are unknown.

        Raises:
            ConfigurationError: The price table has no storage price for the model.
        """
        if self.mode == "auto" and break_even(shape.model, self.ttl) is None:
            raise ConfigurationError(
                f"ContextCache(mode='auto') weighs storage against the input discount, but the "
                f"price table has no cache prices for {shape.model!r}; use mode='always'"
            )

    def start(self, run: RunState) -> RunCapability:
        """Return the run's cache state.

        Raises:
            ConfigurationError: The run's model calls go through a model seam without
                context caches (the Gemini Batch engine's: a job runs hours after it is
                sent, past a cache's life).
        """
        caches = getattr(run.model, "caches", None)
        if not isinstance(caches, Caches):
            raise ConfigurationError(
                f"ContextCache does not apply to runs whose model calls go through "
                f"{type(run.model).__name__}, which has no context caches; give that "
                "agent no ContextCache"
            )
        return _CacheRun(self, caches)

    def minimum(self, model: str) -> int:
        """Return the smallest prefix cached for ``model``, in tokens."""
        return self.min_tokens if self.min_tokens is not None else min_cache_tokens(model)

    def needed_uses(self, model: str) -> int:
        """Return how many uses within the TTL make a cache worth creating (``always``: 1)."""
        if self.mode == "always":
            return 1
        needed = break_even(model, self.ttl)
        return math.ceil(needed) if needed is not None else sys.maxsize

    async def documents_content(self) -> Content | None:
        """Return the documents as one user Content (read once), or ``None``."""
        if self.documents is None:
            return None
        if self._documents is None:
            from agent._media import read_prompt

            self._documents = await read_prompt(self.documents)
        return self._documents


@dataclass(slots=True)
class _Sent:
    """The last request a run sent with its cache, and how to send it again."""

    cached: ModelRequest
    original: ModelRequest
    documents: Content | None
    prefix: Prefix


class _CacheRun(RunCapability):
    """One run's side of the cache: the request's prefix, the cache it names, recovery."""

    def __init__(self, owner: ContextCache, caches: Caches) -> None:
        self.owner = owner
        self.registry = owner.registry
        self.caches = caches
        self.memo: tuple[tuple[Any, ...], Prefix | None] | None = None
        self.current: _Entry | None = None
        self.sent: _Sent | None = None
        self.recreated_at: int | None = None
        """The turn whose cache was last made again (once per turn)."""
        self.session_read = False

    # -- before each call ---------------------------------------------------------------------

    async def before_call(self, run: RunState, request: ModelRequest) -> ModelRequest | Step:
        documents = await self.owner.documents_content()
        prefix = self._prefix(request, documents)
        if not self.session_read:
            self.session_read = True
            await self._leave_session_cache(run, prefix, request.turn)
        entry = await self._entry(run, prefix, request.turn) if prefix is not None else None
        self.sent = None
        if entry is None:
            return with_documents(request, documents)
        assert prefix is not None
        await self._switch(run, entry, request.turn)
        cached = cached_request(request, entry.name, self.caches.http_options)
        self.sent = _Sent(cached, request, documents, prefix)
        return cached

    def _prefix(self, request: ModelRequest, documents: Content | None) -> Prefix | None:
        """Return the request's prefix (read once per config: turns and runs share theirs).

        A config is known by the identity of its prefix's pieces, so one a hook changed
        in place is read again.
        """
        config = request.config
        tools = config.tools
        pieces: tuple[Any, ...] = (request.model, config.system_instruction, tools)
        pieces += (len(tools or ()), config.tool_config, documents)
        for memo in (self.memo, self.owner.last_prefix):
            if memo is not None and _same(memo[0], pieces):
                self.memo = memo
                return memo[1]
        prefix = prefix_of(request, documents)
        self.memo = self.owner.last_prefix = (pieces, prefix)
        return prefix

    async def _entry(self, run: RunState, prefix: Prefix, turn: int) -> _Entry | None:
        """Return the cache this request names: known, found or created; ``None``: none."""
        key = (self.caches.account, prefix.key)
        now = time.time()
        needed = self.owner.needed_uses(prefix.model)
        uses = self.registry.note_use(key, now, self.owner.ttl, min(needed, 1_000))
        small = prefix.tokens < self.owner.minimum(prefix.model)
        if small or self.registry.unfit.get(key, 0) > now:
            return None
        async with self.registry.lock(key):
            entry = self.registry.entries.get(key)
            if entry is not None:
                entry = await self._renewed(run, key, entry, turn)
            if entry is None:
                entry = self._from_session(run, prefix, turn) or await self._listed(
                    run, key, prefix, turn
                )
            if entry is None and uses >= needed:
                entry = await self._create(run, key, prefix, turn)
            if entry is not None:
                self.registry.entries[key] = entry
            return entry

    async def _renewed(self, run: RunState, key: _Key, entry: _Entry, turn: int) -> _Entry | None:
        """Return ``entry``, extended first when it is about to run out (``None``: gone)."""
        now = time.time()
        if entry.expires - now > min(_RENEW_WITHIN, self.owner.ttl / 4):
            return entry
        try:
            info = await self.caches.extend(entry.name, self.owner.ttl, entry.tokens)
        except CallFailed as failed:
            del self.registry.entries[key]
            if not is_missing_cache(failed.info):
                reason = failed.info.message
                run.emit(CacheEvent("failed", entry.name, entry.tokens, turn=turn, reason=reason))
            return None
        self._bill(run, entry.tokens, info.expires - max(entry.expires, now))
        entry.expires = info.expires
        run.emit(CacheEvent("extended", entry.name, entry.tokens, entry.expires, turn))
        return entry

    def _from_session(self, run: RunState, prefix: Prefix, turn: int) -> _Entry | None:
        """Return the cache the session names, when it holds this prefix and lives on."""
        record = _record(run.session_metadata.get(METADATA_KEY))
        if record is None or record.key != prefix.key:
            return None
        if record.expires - time.time() <= min(_RENEW_WITHIN, self.owner.ttl / 4):
            return None
        run.emit(CacheEvent("found", record.name, record.tokens, record.expires, turn))
        return record

    async def _listed(self, run: RunState, key: _Key, prefix: Prefix, turn: int) -> _Entry | None:
        """Return a live cache of this prefix the server lists (looked for once per process)."""
        if key in self.registry.looked_up:
            return None
        self.registry.looked_up.add(key)
        margin = min(_RENEW_WITHIN, self.owner.ttl / 4)
        try:
            info = await self.caches.find(prefix, after=time.time() + margin)
        except CallFailed as failed:
            logger.info("ContextCache: could not list the caches: %s", failed.info.message)
            return None
        if info is None:
            return None
        run.emit(CacheEvent("found", info.name, info.tokens, info.expires, turn))
        return _Entry.of(info, prefix)

    async def _create(
        self, run: RunState, key: _Key, prefix: Prefix, turn: int, reason: str | None = None
    ) -> _Entry | None:
        """Create the prefix's cache and bill its storage (``None``: it could not be made)."""
        self.registry.prune(time.time(), self.owner.ttl)
        try:
            info = await self.caches.create(prefix, self.owner.ttl)
        except CallFailed as failed:
            # A prefix the server finds too small stays so; any other failure may pass.
            wait = float("inf") if too_small(failed.info) else _RETRY_AFTER
            self.registry.unfit[key] = time.time() + wait
            reason = failed.info.message
            run.emit(CacheEvent("failed", None, prefix.tokens, turn=turn, reason=reason))
            return None
        self._bill(run, info.tokens, self.owner.ttl)  # the life it was created with
        action: Literal["created", "recreated"] = "created" if reason is None else "recreated"
        run.emit(CacheEvent(action, info.name, info.tokens, info.expires, turn, reason))
        return _Entry.of(info, prefix)

    def _bill(self, run: RunState, tokens: int, seconds: float) -> None:
        """Bill ``seconds`` of storage of ``tokens`` to the run (when the model is priced)."""
        usd = price_table().storage_usd(run.model.name, tokens, seconds)
        if usd:
            run.bill_storage(usd)

    # -- which cache the conversation holds ---------------------------------------------------

    async def _switch(self, run: RunState, entry: _Entry, turn: int) -> None:
        """Make ``entry`` the run's cache; retire the one it replaces when the text changed."""
        run.session_metadata[METADATA_KEY] = entry.record()
        old = self.current
        if old is entry:
            return
        self.current = entry
        entry.users += 1
        if old is None:
            return
        old.users -= 1
        if old.content_key != entry.content_key:
            await self._retire(run, old.name, old.key, turn)

    async def _leave_session_cache(self, run: RunState, prefix: Prefix | None, turn: int) -> None:
        """Delete the cache the session used last when its text is not this run's prefix."""
        record = _record(run.session_metadata.get(METADATA_KEY))
        if record is None or (prefix is not None and record.content_key == prefix.content_key):
            return
        run.session_metadata.pop(METADATA_KEY, None)
        await self._retire(run, record.name, record.key, turn)

    async def _retire(self, run: RunState, name: str, prefix_key: str, turn: int) -> None:
        """Delete the cache ``name``, unless a run of this process is using it."""
        key = (self.caches.account, prefix_key)
        held = self.registry.entries.get(key)
        if held is not None and held.name == name:
            if held.users > 0:
                return
            del self.registry.entries[key]
        try:
            await self.caches.delete(name)
        except CallFailed as failed:  # gone already, or out of reach: it expires anyway
            logger.info("ContextCache: could not delete %s: %s", name, failed.info.message)
            return
        run.emit(CacheEvent("deleted", name, turn=turn))

    # -- when the cache is gone ---------------------------------------------------------------

    async def failed(
        self, run: RunState, request: ModelRequest, info: ErrorInfo
    ) -> ModelRequest | None:
        """Send a request whose cache is gone again: with the cache made again, once a turn.

        If the cache made again is gone too (or cannot be made), the turn goes without one;
        so does a turn another capability sent to another model with this model's cache (a
        fallback), which Gemini refuses.
        """
        sent = self.sent
        name = request.config.cached_content
        if sent is None or name is None or name != sent.cached.config.cached_content:
            return None
        if is_other_model(info):
            self.sent = None
            original = dataclasses.replace(sent.original, model=request.model)
            return with_documents(original, sent.documents)
        if not is_missing_cache(info):
            return None
        self.sent = None
        prefix = sent.prefix
        key = (self.caches.account, prefix.key)
        gone = request.config.cached_content
        async with self.registry.lock(key):
            entry = self.registry.entries.get(key)
            if entry is None or entry.name == gone:
                self.registry.entries.pop(key, None)  # the next turn looks again
                if self.recreated_at == request.turn:
                    return with_documents(sent.original, sent.documents)
                self.recreated_at = request.turn
                entry = await self._create(run, key, prefix, request.turn, reason=info.message)
            if entry is None:
                return with_documents(sent.original, sent.documents)
            self.registry.entries[key] = entry
        await self._switch(run, entry, request.turn)
        again = cached_request(sent.original, entry.name, self.caches.http_options)
        self.sent = _Sent(again, sent.original, sent.documents, prefix)
        return again

    def close(self, run: RunState, result: RunResult | None, error: BaseException | None) -> None:
        """Let go of the run's cache (a prefix change may delete it once nobody uses it)."""
        if self.current is not None:
            self.current.users -= 1
            self.current = None


def _same(known: tuple[Any, ...], pieces: tuple[Any, ...]) -> bool:
    """Tell whether two requests' prefix pieces are the very same objects (names, counts: equal)."""
    return len(known) == len(pieces) and all(
        a is b or (isinstance(a, int | str) and a == b) for a, b in zip(known, pieces, strict=True)
    )


def _record(value: Any) -> _Entry | None:
    """Read what a session keeps of its cache; ``None`` when missing or malformed."""
    if not isinstance(value, dict):
        return None
    name, key, content_key = value.get("name"), value.get("key"), value.get("content_key")
    expires, tokens = value.get("expires"), value.get("tokens", 0)
    if not all(isinstance(item, str) and item for item in (name, key, content_key)):
        return None
    if not isinstance(expires, int | float) or not isinstance(tokens, int):
        return None
    return _Entry(str(name), float(expires), tokens, str(key), str(content_key))
