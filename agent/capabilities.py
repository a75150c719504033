"""The features an agent can add with ``Agent(capabilities=[...])``.

A capability is a feature that plugs into every run of the agent at fixed points (before
each model call, around each attempt, around each tool call, when the result is built)
instead of being a keyword of `Agent` or a branch of the loop. Each applies at its own place
in the run, whatever the order of the list; one of each kind per agent.

Example::

    from agent import Agent
    from agent.capabilities import Hooks, TokenRate

    agent = Agent("gemini-2.5-flash", capabilities=[Hooks(before_tool=guard), TokenRate(1_000_000)])

- `Hooks`: your callbacks around model and tool calls.
- `ContextCache`: the prefix every request repeats (system instruction, tools) kept in a
  Gemini context cache, billed at the cached-input price.
- `TokenRate`: at most N prompt tokens (and M requests) in any window of its calls, its
  sub-agents' included; `RateLedger` is where its entries live (`InMemoryLedger` by default,
  ``agent.dbos.DatabaseLedger`` across processes).
"""

from __future__ import annotations

from agent._caching import CacheMode, ContextCache
from agent._token_rate import Admission, InMemoryLedger, RateLedger, TokenRate
from agent.hooks import Hooks

__all__ = [
    "Admission",
    "CacheMode",
    "ContextCache",
    "Hooks",
    "InMemoryLedger",
    "RateLedger",
    "TokenRate",
]
