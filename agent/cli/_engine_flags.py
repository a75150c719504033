"""The flags of ``batch --engine dbos``, declared without importing DBOS (``--help`` stays fast)."""

from __future__ import annotations

import argparse

__all__ = ["DEFAULT_DB", "add_db_flag", "add_engine_flags"]

DEFAULT_DB = "sqlite:///toolnexus-batch.sqlite"
"""The batch database without ``--db``: a SQLite file in the current directory."""


def add_engine_flags(parser: argparse.ArgumentParser) -> None:
    """Declare the flags of ``batch --engine dbos``."""
    group = parser.add_argument_group("distributed batch (--engine dbos)")
    group.add_argument(
        "--engine",
        choices=("local", "dbos", "gemini-batch"),
        default="local",
        help="local: run here into --out (default); dbos: enqueue the tasks for "
        "`toolnexus-agent worker` processes; gemini-batch: run here, with the model calls "
        "in Gemini Batch API jobs at half the price (see the Gemini Batch API flags)",
    )
    add_db_flag(group)
    group.add_argument(
        "--name",
        metavar="BATCH",
        help="the batch name; task workflow ids are BATCH:TASK_ID (default: the tasks "
        "file name without extension)",
    )
    group.add_argument(
        "--worker-concurrency",
        type=int,
        metavar="N",
        help="tasks one worker runs at the same time (default: --concurrency)",
    )
    group.add_argument(
        "--rpm",
        type=int,
        metavar="N",
        help="at most N model requests per minute (--rpm-window), here or, with --engine "
        "dbos, across all workers (default: no limit)",
    )
    group.add_argument(
        "--rpm-window",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="the window --rpm and --tpm count in: N per this many seconds (default: 60; "
        "shorter spreads them more evenly)",
    )


def add_db_flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Declare ``--db``: the database of the distributed batches."""
    parser.add_argument(
        "--db",
        metavar="URL",
        help=f"the DBOS database: postgresql://USER:PASSWORD@HOST/DB for workers on "
        f"several machines (default: {DEFAULT_DB})",
    )
