"""Durable agent runs on DBOS: crash-proof runs, questions answered days later, from anywhere.

Needs the ``dbos`` extra (from a clone: ``pip install '.[dbos]'``). The rest of ``agent``
never imports this package.

Example::

    from dbos import DBOS
    from agent import Agent
    from agent.dbos import DurableAgent, pending, send

    durable = DurableAgent(Agent(toolkit=tk), name="support")   # at import time

    DBOS(config={"name": "support-app", "system_database_url": "sqlite:///app.sqlite"})
    DBOS.launch()
    result = await durable.run("Where is my parcel?", run_id="ticket-42")

    # Meanwhile, from any process: answer what the run asks, naming the request.
    request = await pending("ticket-42", wait=30)
    await send("ticket-42", "yes", request_id=request["id"])
"""

try:
    import dbos as _dbos  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "agent.dbos needs the DBOS library: install the dbos extra "
        "(pip install '.[dbos]' from a clone)"
    ) from exc

from agent.dbos._durable import DurableAgent, run_durably
from agent.dbos._events import EVENTS_STREAM
from agent.dbos._ledger import DatabaseLedger
from agent.dbos._messages import follow, pending, send
from agent.dbos._options import engine_options
from agent.dbos._steps import ANSWER_TOPIC, PENDING_EVENT, DbosSteps

__all__ = [
    "ANSWER_TOPIC",
    "EVENTS_STREAM",
    "PENDING_EVENT",
    "DatabaseLedger",
    "DbosSteps",
    "DurableAgent",
    "engine_options",
    "follow",
    "pending",
    "run_durably",
    "send",
]
