"""The features an agent can add with ``Agent(capabilities=[...])``.

A capability is a feature that plugs into every run of the agent at fixed points (before
each model call, around each attempt, around each tool call, when the result is built)
instead of being a keyword of `Agent` or a branch of the loop. Each applies at its own place
in the run, whatever the order of the list; one of each kind per agent.

Example::

    from agent import Agent
    from agent.capabilities import Hooks

    agent = Agent("gemini-2.5-flash", capabilities=[Hooks(before_tool=guard)])

- `Hooks`: your callbacks around model and tool calls.
- `ContextCache`: the prefix every request repeats (system instruction, tools) kept in a
  Gemini context cache, billed at the cached-input price.
"""

from __future__ import annotations

from agent._caching import CacheMode, ContextCache
from agent.hooks import Hooks

__all__ = ["CacheMode", "ContextCache", "Hooks"]
