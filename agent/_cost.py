"""What a run costs in US dollars, from Gemini's price table.

The table is data shipped with the package (``agent/prices.json``), versioned with the date
its prices were read (`PriceTable.source_date`). Each model has an input, an output (thinking
included) and a cached-input price per million tokens, and where Gemini has them a
long-context tier (a request whose prompt is over the threshold is billed at it in full),
Batch API prices and the prices of the Flex and Priority service tiers (each turn is priced
at the tier that served it). A model that has a context-cache storage price
(``cache_storage``, per million tokens per hour) can have its caches priced too: a run that
creates or extends a cache pays for the storage (`Cost.cache_storage`), and
`Cost.cache_saving` says what the cached part of its prompts saved, storage taken off.

A model name the table does not hold exactly is priced as the longest table name it starts
with (``gemini-2.5-flash-preview-09-2025`` as ``gemini-2.5-flash``); such a cost, and one
built on a price the table marks *derived*, is flagged `Cost.estimated`. A model with no
price at all has ``Cost.usd`` ``None``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent._result import Usage

__all__ = [
    "Cost",
    "PriceTable",
    "call_usd",
    "price_table",
    "run_cost",
    "with_storage",
    "with_subagents",
]

_PER = 1_000_000


@dataclass(frozen=True, slots=True)
class Cost:
    """What a run cost, in US dollars, by Gemini's published prices.

    Example::

        result = await agent.run("...")
        print(f"${result.cost.usd:.4f}", "(estimated)" if result.cost.estimated else "")
    """

    usd: float | None = 0.0
    """The total: every model turn plus any compaction summary; ``None`` when the model has
    no price in the table."""
    estimated: bool = False
    """The price was not read off the table for this exact model (a name matched by prefix,
    or a price the table marks derived)."""
    turns: tuple[float, ...] = ()
    """Dollars per model turn, in order (matching ``RunResult.turn_usage``)."""
    model: str | None = None
    """The price-table entry used."""
    prices_date: str | None = None
    """The date the price table's prices were read (``YYYY-MM-DD``)."""
    cache_storage: float = 0.0
    """Dollars of context-cache storage: the caches this run created or extended, for the
    time they were set to live (included in ``usd``)."""
    cache_saving: float = 0.0
    """Dollars the cached part of the prompts saved against the full input price, minus
    ``cache_storage``: what caching saved (negative when the storage cost more)."""

    @staticmethod
    def priced(model: str) -> bool:
        """Tell whether the price table can price ``model`` (exactly or by its prefix).

        Example::

            Cost.priced("gemini-2.5-flash")    # True
            Cost.priced("gemini-2.5-flsh")     # False: a budget for it could not be kept
        """
        return price_table().lookup(model) is not None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "usd": None if self.usd is None else round(self.usd, 8),
            "estimated": self.estimated,
            "turns": [round(usd, 8) for usd in self.turns],
            "model": self.model,
            "prices_date": self.prices_date,
            "cache_storage": round(self.cache_storage, 8),
            "cache_saving": round(self.cache_saving, 8),
        }


@dataclass(frozen=True, slots=True)
class PriceTable:
    """Gemini prices per model (USD per million tokens), with the date they were read."""

    source_date: str
    """When the prices were read off Google's pricing pages."""
    models: Mapping[str, Mapping[str, Any]]
    """Model name -> its prices, as in ``prices.json``."""

    def lookup(self, model: str) -> tuple[str, Mapping[str, Any], bool] | None:
        """Find the prices of ``model``.

        Args:
            model: A model name, with or without ``models/``.

        Returns:
            ``(table name, prices, exact)``, or ``None`` when no entry fits.
        """
        name = model.removeprefix("models/")
        if name in self.models:
            return name, self.models[name], True
        fits = [key for key in self.models if name.startswith(key + "-")]
        if not fits:
            return None
        key = max(fits, key=len)
        return key, self.models[key], False

    def turn_cost(
        self,
        prices: Mapping[str, Any],
        usage: Usage,
        *,
        batch: bool = False,
        service_tier: str | None = None,
    ) -> tuple[float, bool]:
        """Return the dollars one request cost and whether a derived price was used.

        Args:
            prices: A model's entry (from `lookup`).
            usage: The request's token counts.
            batch: Price it as a Batch API request.
            service_tier: The tier that served it (``"flex"``, ``"priority"``); ``None`` or
                ``"standard"`` for standard prices.

        Returns:
            ``(usd, derived)``.
        """
        threshold = prices.get("long_context_threshold")
        long = threshold is not None and usage.prompt > threshold
        tier = _row(prices, "batch" if batch else service_tier, long)
        cached_rate = tier.get("cached_input", prices["cached_input"])
        fresh = max(usage.prompt - usage.cached, 0) + usage.tool_use_prompt
        usd = (
            fresh * tier["input"]
            + usage.cached * cached_rate
            + (usage.candidates + usage.thoughts) * tier["output"]
        ) / _PER
        return usd, bool(tier.get("derived"))

    def cached_saving(
        self,
        prices: Mapping[str, Any],
        usage: Usage,
        *,
        batch: bool = False,
        service_tier: str | None = None,
    ) -> float:
        """Return the dollars the cached tokens of one request saved against the input price."""
        if not usage.cached:
            return 0.0
        threshold = prices.get("long_context_threshold")
        long = threshold is not None and usage.prompt > threshold
        tier = _row(prices, "batch" if batch else service_tier, long)
        cached_rate = tier.get("cached_input", prices["cached_input"])
        return float(usage.cached * max(tier["input"] - cached_rate, 0.0) / _PER)

    def storage_usd(self, model: str, tokens: int, seconds: float) -> float | None:
        """Return the dollars of keeping a context cache of ``tokens`` for ``seconds``.

        Returns:
            ``None`` when the table has no storage price for ``model``.
        """
        found = self.lookup(model)
        rate = found[1].get("cache_storage") if found is not None else None
        if rate is None:
            return None
        return float(tokens * rate * max(seconds, 0.0) / 3600 / _PER)


def _row(prices: Mapping[str, Any], kind: str | None, long: bool) -> Mapping[str, Any]:
    """Return the price row of a request: standard, batch or a service tier, long or not."""
    if kind in (None, "standard") or kind not in prices:
        return prices["long_context"] if long else prices
    row: Mapping[str, Any] = prices.get(f"{kind}_long_context" if long else kind) or prices[kind]
    return row


@functools.cache
def price_table() -> PriceTable:
    """Load the price table shipped with the package (once per process)."""
    data = json.loads(resources.files("agent").joinpath("prices.json").read_text("utf-8"))
    return PriceTable(source_date=data["source_date"], models=data["models"])


def run_cost(
    model: str,
    turns: Iterable[Usage],
    extra: Iterable[Usage] = (),
    *,
    batch: bool = False,
    tiers: Sequence[str | None] = (),
    extra_tiers: Sequence[str | None] = (),
    models: Sequence[str | None] = (),
    extra_models: Sequence[str | None] = (),
) -> Cost:
    """Price a run's model turns (and extra calls such as compaction summaries).

    Args:
        model: The model name the requests were sent to.
        turns: The token counts of each model turn.
        extra: Token counts of other calls of the run, counted in the total only.
        batch: Price as Batch API requests.
        tiers: The service tier that served each turn (missing or ``None``: standard).
        extra_tiers: The same for ``extra``.
        models: The model that answered each turn, when not ``model`` (a fallback); each
            turn is priced at its own model.
        extra_models: The same for ``extra``.

    Returns:
        The `Cost`; ``usd`` is ``None`` when a model that answered has no price.
    """
    table = price_table()
    found = table.lookup(model)
    if found is None and not models:
        return Cost(usd=None, estimated=True, prices_date=table.source_date)
    pricing = _Pricing(table, model, batch)
    pricing.estimated = found is not None and not found[2]
    per_turn = [
        pricing.price(usage, _at(tiers, i), _at(models, i)) for i, usage in enumerate(turns)
    ]
    extras = [
        pricing.price(usage, _at(extra_tiers, i), _at(extra_models, i))
        for i, usage in enumerate(extra)
    ]
    if pricing.unpriced:
        return Cost(usd=None, estimated=True, prices_date=table.source_date)
    return Cost(
        usd=sum(per_turn) + sum(extras),
        estimated=pricing.estimated,
        turns=tuple(per_turn),
        model=found[0] if found is not None else None,
        prices_date=table.source_date,
        cache_saving=pricing.saving,
    )


def with_storage(cost: Cost, storage: float) -> Cost:
    """Return ``cost`` with ``storage`` dollars of context-cache storage added.

    The storage is taken off the saving too; a cost without a price stays without one.
    """
    if not storage or cost.usd is None:
        return cost
    return dataclasses.replace(
        cost,
        usd=cost.usd + storage,
        cache_storage=cost.cache_storage + storage,
        cache_saving=cost.cache_saving - storage,
    )


def _at(values: Sequence[str | None], index: int) -> str | None:
    return values[index] if index < len(values) else None


class _Pricing:
    """Prices the calls of one run, each at the model that answered it (the run's by default)."""

    def __init__(self, table: PriceTable, model: str, batch: bool) -> None:
        self.table = table
        self.model = model
        self.batch = batch
        self.estimated = False
        """A price was derived, or matched a model name by its prefix."""
        self.unpriced = False
        """A model that answered has no price."""
        self.saving = 0.0
        """Dollars the cached tokens saved against the input price, over the calls priced."""

    def price(self, usage: Usage, tier: str | None, model: str | None) -> float:
        """Return the dollars of one call (0.0 for a model without a price, noted)."""
        found = self.table.lookup(model or self.model)
        if found is None:
            self.unpriced = True
            return 0.0
        _, prices, exact = found
        usd, derived = self.table.turn_cost(prices, usage, batch=self.batch, service_tier=tier)
        self.saving += self.table.cached_saving(prices, usage, batch=self.batch, service_tier=tier)
        self.estimated = self.estimated or derived or not exact
        return usd


def call_usd(model: str, usage: Usage, service_tier: str | None = None) -> float | None:
    """Return the dollars of one request to ``model`` with ``usage``; ``None`` without a price."""
    table = price_table()
    found = table.lookup(model)
    if found is None:
        return None
    return table.turn_cost(found[1], usage, service_tier=service_tier)[0]


def with_subagents(cost: Cost, children: Iterable[Cost]) -> Cost:
    """Return ``cost`` with the sub-agents' costs added to its total (their turns stay theirs)."""
    children = list(children)
    if not children:  # a run without sub-agents: its own cost, as it is
        return cost
    usd = cost.usd
    estimated = cost.estimated
    storage, saving = cost.cache_storage, cost.cache_saving
    for child in children:
        if child.usd is None:
            continue
        usd = child.usd if usd is None else usd + child.usd
        estimated = estimated or child.estimated
        storage += child.cache_storage
        saving += child.cache_saving
    return dataclasses.replace(
        cost, usd=usd, estimated=estimated, cache_storage=storage, cache_saving=saving
    )
