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
    from agent._contents import Content
    from agent._decide import Step
    from agent._state import RunState
    from agent.hooks import ModelRequest

__all__ = ["InlineLimit", "fit_inline_limit"]


class InlineLimit(Capability):
    """Keeps every request's inline data within Gemini's limit (see the module doc)."""

    def start(self, run: RunState) -> RunCapability:
        return _InlineLimitRun()


class _InlineLimitRun(RunCapability):
    """Measures each Content of the transcript once: a turn measures only what is new."""

    def __init__(self) -> None:
        self.measured: list[tuple[Content, int]] = []
        """The transcript's Contents as last seen, each with its inline bytes."""

    async def before_call(self, run: RunState, request: ModelRequest) -> ModelRequest | Step:
        sizes = self.sizes(run.contents)
        if sum(sizes) <= _media.INLINE_LIMIT:
            return request
        await fit_inline_limit(run, sizes)
        return run.request()

    def sizes(self, contents: list[Content]) -> list[int]:
        """Return the inline bytes of each of ``contents``, measuring only Contents not seen.

        A Content is not changed in place (an upload, compaction or a session load puts a
        new one in its place), so the one at the same place as last time has the same size.
        """
        measured = self.measured
        for index, content in enumerate(contents):
            if index < len(measured) and measured[index][0] is content:
                continue
            del measured[index:]
            measured.append((content, _media.inline_size(content)))
        del measured[len(contents) :]
        return [size for _, size in measured]


async def fit_inline_limit(run: RunState, sizes: list[int]) -> None:
    """Move the largest inline files of ``run``'s user Contents until the transcript fits.

    Args:
        run: The run whose transcript is over the limit.
        sizes: The inline bytes of each Content of the transcript.
    """
    contents = run.contents
    excess = sum(sizes) - _media.INLINE_LIMIT
    movable = [size if c.role == "user" else 0 for c, size in zip(contents, sizes, strict=True)]
    for index in sorted(range(len(contents)), key=lambda i: -movable[i]):
        if excess <= 0 or movable[index] == 0:
            break
        room = max(0, movable[index] - excess)
        contents[index] = await run.model.upload_over_limit(contents[index], room=room, notes=True)
        excess -= movable[index] - _media.inline_size(contents[index])
