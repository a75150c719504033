"""Service tiers: the tier of every request, the fallback from a shed one, the tier used.

Gemini serves a request at the tier it names: ``standard`` (the default), ``flex`` (half
price, best effort: minutes of latency, and the server may shed the request) or
``priority`` (a surcharge, the lowest latency; over its limit Gemini serves it at standard
instead). The `ServiceTiers` capability

- adds ``service_tier`` to the agent's request config once (every call of every run sends
  it, compaction summaries included);
- when a ``flex`` call still fails with 429 or 503 after the retry policy (which waits per
  ``RetryInfo``), sends it once more at ``fallback_tier``, with a `TierFallbackEvent`;
- records the tier the server reports it used (`ModelResponse.service_tier`, from the
  response header) as ``RunResult.service_tier``.

Each turn is priced at the tier that served it (`agent._state.RunState.count_turn`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from agent._capability import Capability, RequestShape, RunCapability
from agent._client import ClientSettings
from agent._response import requested_tier
from agent.errors import ConfigurationError
from agent.events import TierFallbackEvent

if TYPE_CHECKING:
    from agent._options import ModelSettings
    from agent._response import ModelResponse
    from agent._retry import ErrorInfo
    from agent._state import RunState
    from agent.hooks import ModelRequest

__all__ = ["FLEX_TIMEOUT", "SHED_CODES", "ServiceTiers", "client_for_tier"]

FLEX_TIMEOUT = 900.0
"""Seconds a flex request may take by default: Gemini targets 1 to 15 minutes for it."""

SHED_CODES = frozenset({429, 503})
"""The HTTP statuses with which Gemini sheds a flex request."""

_DEFAULT_TIMEOUT = next(
    f.default for f in dataclasses.fields(ClientSettings) if f.name == "timeout"
)


def client_for_tier(client: ClientSettings, settings: ModelSettings) -> ClientSettings:
    """Return ``client`` with a request timeout long enough for the tier.

    A flex request may take up to 15 minutes, so a timeout left at its default is raised to
    `FLEX_TIMEOUT`; a timeout the user chose (or ``None``, no limit) stays.
    """
    if settings.service_tier != "flex" or client.timeout != _DEFAULT_TIMEOUT:
        return client
    return dataclasses.replace(client, timeout=FLEX_TIMEOUT)


class ServiceTiers(Capability):
    """Sends every request at ``tier``; falls back from a shed flex request to ``fallback``."""

    def __init__(self, tier: str | None, fallback: str | None) -> None:
        self.tier = tier
        self.fallback = fallback

    @classmethod
    def of(cls, settings: ModelSettings) -> ServiceTiers | None:
        """Return the capability for ``settings``, or ``None`` when no tier is asked for."""
        if settings.service_tier is None:
            return None
        return cls(settings.service_tier, settings.fallback_tier)

    def shape(self, shape: RequestShape) -> None:
        """Add ``service_tier`` to the request config.

        Raises:
            ConfigurationError: ``config=`` sets ``service_tier`` too.
        """
        if "service_tier" in shape.options:
            raise ConfigurationError(
                "config={...} sets service_tier, which ModelSettings(service_tier=...) sets "
                "too; use one or the other"
            )
        shape.options["service_tier"] = self.tier

    def start(self, run: RunState) -> RunCapability:
        """Return the run's tier state."""
        return _TierRun(self.fallback)


class _TierRun(RunCapability):
    def __init__(self, fallback: str | None) -> None:
        self.fallback = fallback
        self.served: str | None = None

    def failed(self, run: RunState, request: ModelRequest, info: ErrorInfo) -> ModelRequest | None:
        tier = _tier_of(request)
        if self.fallback is None or tier != "flex" or info.code not in SHED_CODES:
            return None
        run.emit(TierFallbackEvent(tier, self.fallback, info.code, info.status, request.turn))
        config = request.config.model_copy(update={"service_tier": self.fallback})
        return dataclasses.replace(request, config=config)

    async def received(
        self, run: RunState, request: ModelRequest, response: ModelResponse
    ) -> ModelResponse:
        self.served = response.service_tier
        return response

    def finish(self, run: RunState, fields: dict[str, Any]) -> None:
        fields["service_tier"] = self.served


def _tier_of(request: ModelRequest) -> str | None:
    """Return the tier ``request`` is sent at (``None`` when it names none)."""
    tier = requested_tier(request.config)
    return tier.lower() if tier is not None else None
