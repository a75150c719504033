"""`DatabaseLedger`: one token rate for several processes, in a table of their database."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("dbos", reason="needs the dbos extra: pip install '.[dbos]'")

from agent.capabilities import TokenRate
from agent.dbos import DatabaseLedger
from tests.dbos.conftest import PYTHON, env

CALLER = """
import asyncio, json, sys, time
from agent.capabilities import TokenRate
from agent.dbos import DatabaseLedger

async def main(url, calls):
    rate = TokenRate(1_000, per=1.0, ledger=DatabaseLedger(url, name="shared"))
    seen = []
    for _ in range(calls):
        entry = await rate.acquire(400)
        sent = time.time()  # the request is on its way between here and its answer
        await asyncio.sleep(0.01)
        seen.append(sent)
        await rate.release(entry, 400)
    print(json.dumps(seen))

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


def test_three_processes_share_one_limit(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'rate.sqlite'}"
    processes = [
        subprocess.Popen(
            [PYTHON, "-c", CALLER, url, "4"], env=env(), stdout=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    outputs = [process.communicate(timeout=90)[0] for process in processes]
    assert all(process.returncode == 0 for process in processes)
    times = sorted(t for output in outputs for t in json.loads(output))
    assert len(times) == 12
    # 400 tokens each, 1,000 a second: two calls in any second, never three.
    assert max(sum(1 for t in times[i:] if t < s + 1.0) for i, s in enumerate(times)) == 2
    assert times[-1] - times[0] >= 5.0


async def test_a_settled_entry_counts_what_was_reported_for_one_window(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'rate.sqlite'}"
    mine, theirs = DatabaseLedger(url, name="a"), DatabaseLedger(url, name="a")
    rate = TokenRate(100, per=0.5, ledger=mine)
    try:
        first = await mine.admit(60, rate)
        assert first.entry is not None
        full = await theirs.admit(60, rate)  # another process, the same ledger: no room
        assert full.entry is None and full.wait is None  # only a call in flight holds it
        await mine.settle(first.entry, 30, rate)  # the response said 30
        assert (await theirs.admit(60, rate)).entry is not None
        blocked = await mine.admit(20, rate)
        assert blocked.entry is None and blocked.wait is not None and blocked.wait <= 0.5
        await asyncio.sleep(blocked.wait + 0.05)
        assert (await mine.admit(20, rate)).entry is not None  # the settled 30 stopped counting
        other = DatabaseLedger(url, name="b")  # another name: other entries
        assert (await other.admit(100, TokenRate(100, ledger=other))).entry is not None
        other.close()
    finally:
        mine.close()
        theirs.close()


async def test_a_database_out_of_reach_lets_nothing_through_and_fails_nothing() -> None:
    ledger = DatabaseLedger("postgresql://nobody@127.0.0.1:1/none", name="x")
    rate = TokenRate(100, ledger=ledger)
    try:
        assert (await ledger.admit(10, rate)).entry is None
        await ledger.settle(1, 10, rate)  # nothing raised: the entry keeps its estimate
    finally:
        ledger.close()


def test_its_repr_hides_the_password() -> None:
    assert "secret" not in repr(DatabaseLedger("postgresql://agent:secret@db/x"))
