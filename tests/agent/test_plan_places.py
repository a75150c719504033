"""The order `capabilities_of` gives an agent's features: each kind at its place."""

from __future__ import annotations

from typing import Any

import pytest

from agent import ApprovalPolicy, ConfigurationError
from agent._capability import Capability
from agent._plan import capabilities_of
from agent.capabilities import ContextCache, TokenRate


class SharedRate(TokenRate):
    """A token rate of the user's own, built on the package's."""


class Audit(Capability):
    """A capability of a kind `capabilities_of` does not name."""


def order(given: list[Any]) -> list[Capability]:
    return capabilities_of(
        given, approval=ApprovalPolicy(), output=None, builtin=None, compaction=False
    )


def test_a_rate_and_a_cache_take_their_places_whatever_the_order_given() -> None:
    rate, cache, audit = SharedRate(1_000), ContextCache(), Audit()
    features = order([cache, rate, audit])
    assert features[-1] is cache
    assert features.index(audit) < features.index(rate) < features.index(cache)


def test_two_capabilities_for_one_place_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="TokenRate and SharedRate do the same job"):
        order([TokenRate(1_000), SharedRate(1_000)])
