"""Every request within Gemini's inline limit: large files move to the Files API, or a note.

A request may carry at most `agent._media.INLINE_LIMIT` bytes of inline data, counted over
the whole transcript, files in ``functionResponse.parts`` included. A tool (an MCP server, a
screenshot, a generated file) can return more than that in one result, and many smaller
results add up; past the limit Gemini refuses every later request, so the conversation
could never be sent again. Before each model call, when the transcript is over the limit,
the largest inline files of user Contents (prompts and tool results, never the model's
own parts, which may carry thought signatures) are uploaded through the Files API and sent
as ``fileData``, until the rest fits. A file that cannot be uploaded (the upload fails, or
the client has no Files API, as on Vertex AI) is replaced by a note the model reads
instead. The transcript keeps the change, so a session saves it and never holds a request
that cannot be sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent import _media
from agent._capability import Capability, RunCapability

if TYPE_CHECKING:
    from agent._decide import Step
    from agent._state import RunState
    from agent.hooks import ModelRequest

__all__ = ["InlineLimit", "fit_inline_limit"]


class InlineLimit(Capability):
    """Keeps every request's inline data within Gemini's limit (see the module doc)."""

    def start(self, run: RunState) -> RunCapability:
        return _InlineLimitRun()


class _InlineLimitRun(RunCapability):
    async def before_call(self, run: RunState, request: ModelRequest) -> ModelRequest | Step:
        if not await fit_inline_limit(run):
            return request
        return run.request()


async def fit_inline_limit(run: RunState) -> bool:
    """Move the largest inline files of ``run``'s transcript until it fits the limit.

    Returns:
        Whether the transcript changed.
    """
    contents = run.contents
    sizes = [_media.inline_size(c) if c.role == "user" else 0 for c in contents]
    model_bytes = sum(_media.inline_size(c) for c in contents if c.role != "user")
    excess = sum(sizes) + model_bytes - _media.INLINE_LIMIT
    if excess <= 0:
        return False
    for index in sorted(range(len(contents)), key=lambda i: -sizes[i]):
        if excess <= 0 or sizes[index] == 0:
            break
        room = max(0, sizes[index] - excess)
        contents[index] = await run.model.upload_over_limit(contents[index], room=room, notes=True)
        excess -= sizes[index] - _media.inline_size(contents[index])
    return True
