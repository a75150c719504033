"""The JSON line of one batch task's result, the same for the local and the DBOS runner."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent.cli._exits import CliError, status_of
from agent.cli._secrets import scrub_data, scrub_text

if TYPE_CHECKING:
    from agent import RunResult

__all__ = ["crashed_record", "result_record"]


def result_record(
    task_id: str, result: RunResult, error: str | None, duration: float
) -> dict[str, Any]:
    """Return the line of a task that ran: its `RunResult`, or the `RunError` it ended in."""
    record: dict[str, Any] = {
        "id": task_id,
        "status": status_of(result, error),
        "text": result.text,
        "usage": result.usage.to_dict(),
        "turns": result.turns,
        "duration": round(duration, 3),
        "model": result.model,
        "tool_calls": len(result.tool_calls),
        "reason": result.reason,
        "limit": result.limit,
        "output": result.output_json,
        "cost_usd": result.cost.usd,
        "cost_estimated": result.cost.estimated,
        "service_tier": result.service_tier,
        "denied": [
            call.name
            for call in result.tool_calls
            if (call.result.metadata or {}).get("approval") == "denied"
        ],
    }
    if error:
        record["error"] = error
    return dict(scrub_data(record))


def crashed_record(
    task_id: str, model: str | None, error: BaseException | str, duration: float
) -> dict[str, Any]:
    """Return the line of a task that failed before it had a result (an unexpected error)."""
    if isinstance(error, BaseException):
        error = str(error) if isinstance(error, CliError) else f"{type(error).__name__}: {error}"
    return {
        "id": task_id,
        "status": "failed",
        "text": "",
        "usage": None,
        "turns": 0,
        "duration": round(duration, 3),
        "model": model,
        "tool_calls": 0,
        "reason": None,
        "limit": None,
        "error": scrub_text(error),
    }
