"""``--tpm`` and ``--rpm``: one `TokenRate` that every agent of a command shares.

A command's agents (a batch's tasks, an eval's cases and judge, ``run``'s agent) and their
sub-agents draw on one limit, as they draw on one quota. ``batch`` declares ``--rpm`` and
its window with the distributed engine's flags (the limit is the same, kept in the batch
database across workers); ``run`` and ``eval`` count per minute.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from agent.cli._exits import CliError

if TYPE_CHECKING:
    from agent.capabilities import RateLedger, TokenRate

__all__ = ["add_rate_flags", "rate_of", "rate_spec"]


def add_rate_flags(parser: argparse.ArgumentParser, *, requests: bool = True) -> None:
    """Declare ``--tpm`` (and ``--rpm`` when ``requests``)."""
    group = parser.add_argument_group("rate limits")
    group.add_argument(
        "--tpm",
        type=int,
        metavar="N",
        help="at most N prompt tokens per minute over every model call (tasks, sub-agents, "
        "compaction summaries, retries); a call waits for room (default: no limit)",
    )
    if requests:
        group.add_argument(
            "--rpm",
            type=int,
            metavar="N",
            help="at most N model requests per minute; a call waits for room (default: no limit)",
        )


def rate_spec(args: argparse.Namespace) -> dict[str, Any] | None:
    """Return the limits of the flags as plain data, or ``None`` without ``--tpm``/``--rpm``.

    Raises:
        CliError: A limit below 1 or a window that is not positive.
    """
    tokens = getattr(args, "tpm", None)
    requests = getattr(args, "rpm", None)
    if tokens is None and requests is None:
        return None
    for flag, value in (("--tpm", tokens), ("--rpm", requests)):
        if value is not None and value < 1:
            raise CliError(f"{flag} must be at least 1, got {value}")
    per = getattr(args, "rpm_window", None) or 60.0
    if not per > 0:
        raise CliError("--rpm-window must be more than 0 seconds")
    return {"tokens": tokens, "requests": requests, "per": float(per)}


def rate_of(spec: dict[str, Any] | None, ledger: RateLedger | None = None) -> TokenRate | None:
    """Return the `TokenRate` of `rate_spec`'s limits (``None`` for none), on ``ledger``."""
    if spec is None:
        return None
    from agent.capabilities import TokenRate

    return TokenRate(spec["tokens"], requests=spec["requests"], per=spec["per"], ledger=ledger)
