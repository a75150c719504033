"""`GeminiModel`: everything the loop needs from Gemini, behind one small class.

The loop hands it a `ModelRequest` and gets back text pieces as they arrive, then one parsed
`ModelResponse`; a failed call raises `CallFailed` with our own `ErrorInfo` (the API key
scrubbed out), never an SDK or httpx exception. The SDK's automatic function calling is off;
the model name is sent verbatim.

The modules behind it, each answering one question about the wire: `agent._client` (the SDK
client and the key), `agent._contents` (the transcript and the request config),
`agent._response` (reading a response, unary or streamed), `agent._api_errors` (what a
failure means), `agent._media` (files: inline or through the Files API) and
`agent._batch_wire` (Batch API jobs: creating one from requests, reading its results). They,
and only they, import ``google.genai``.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from agent._api_errors import translate, unreadable
from agent._client import Clients, ClientSettings, api_key_of, build_client
from agent._contents import Config, Content, make_config
from agent._media import upload_over_limit
from agent._response import ModelResponse, StreamAssembler, parse, requested_tier
from agent._retry import CallFailed
from agent.events import TextEvent, ThoughtEvent
from agent.hooks import ModelRequest

if TYPE_CHECKING:
    from google import genai

    from agent._caches import Caches

__all__ = ["GeminiModel", "Model"]

logger = logging.getLogger("agent")

_FALLBACK_INPUT_LIMIT = 1_048_576
"""The input-token limit assumed when the API's model metadata cannot be read (every
current Gemini model takes 1,048,576)."""
_SMALLEST_LIMIT = 32_768
"""No Gemini model takes less: a request below it needs no lookup."""
_INPUT_LIMITS: dict[str, int] = {}
"""Input-token limits read from the API, per model name, once per process."""


_IN_CALL: contextvars.ContextVar[bool] = contextvars.ContextVar("agent_in_call", default=False)


class _OwnParts(logging.Filter):
    """Drops google-genai's "non-text parts in the response" warning during our calls.

    The SDK logs it (once per process) when a response it reads as text also holds function
    calls; the loop reads every part itself, so the warning only confuses. Outside the
    agent's own calls the warning is left alone.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not (_IN_CALL.get() and "non-text parts in the response" in record.getMessage())


logging.getLogger("google_genai.types").addFilter(_OwnParts())


@contextlib.contextmanager
def _own_call() -> Iterator[None]:
    """Mark the code inside as the agent's own SDK call (see `_OwnParts`)."""
    token = _IN_CALL.set(True)
    try:
        yield
    finally:
        _IN_CALL.reset(token)


async def _next_chunk(chunks: AsyncIterator[Any]) -> Any:
    """Return the stream's next chunk (read as the agent's own call), or ``None`` at its end."""
    with _own_call():
        return await anext(chunks, None)


class Model(Protocol):
    """What a run needs from a model: the seam every model call goes through.

    `GeminiModel` is the implementation on the ``google-genai`` SDK; a batch-job model or a
    fallback chain are others. Code outside the seam never touches SDK objects: it builds
    requests with `request` and `summary_request` and reads `ModelResponse` values.
    """

    name: str
    """The model name sent with every request."""
    vertex: bool
    """Whether the model is reached through Vertex AI (for tracing's provider name)."""
    base_url: str | None
    """The endpoint requests go to, if known (for tracing's server attributes)."""

    def request(self, contents: list[Content], turn: int) -> ModelRequest:
        """Return the request of model turn ``turn`` over ``contents``."""
        ...

    def summary_request(self, contents: list[Content], turn: int) -> ModelRequest:
        """Return a request over ``contents`` with no system instruction, tools or tool config."""
        ...

    def call(
        self, request: ModelRequest, *, stream: bool
    ) -> AsyncGenerator[TextEvent | ThoughtEvent | ModelResponse, None]:
        """Make one model call; yield its pieces, then one `ModelResponse`."""
        ...

    def parse(self, raw: Any) -> ModelResponse:
        """Read a raw response object (an after-model hook's replacement)."""
        ...

    async def input_limit(self, wanted: int) -> int:
        """Return the model's input-token limit (``wanted``: the size about to be sent)."""
        ...

    async def upload_over_limit(
        self, content: Content, *, room: int | None = None, notes: bool = False
    ) -> Content:
        """Move the largest inline files of ``content`` elsewhere until ``room`` bytes stay.

        ``room`` defaults to the inline limit; with ``notes``, a file that cannot be moved
        is replaced by a note the model reads instead of failing.
        """
        ...


class GeminiModel:
    """One Gemini model on one client, with the config every request of an agent carries."""

    def __init__(self, name: str, config: Config, clients: Clients) -> None:
        self.vertex = bool(clients.genai.vertexai)
        """Whether the client talks to Vertex AI."""
        self.base_url = _base_url(clients.genai)
        """The endpoint the client calls, as the SDK resolved it (``None`` if unknown)."""
        self.name = name
        """The model name sent with every request (verbatim)."""
        self.config = config
        """The request config: system instruction, tools, generation options."""
        self.clients = clients
        """The SDK client and the HTTP pieces the agent owns."""
        self.api_key = api_key_of(clients.genai)
        """The key the client sends; scrubbed from every error message and log line."""

    @functools.cached_property
    def caches(self) -> Caches:
        """The account's context caches (``cachedContents``), for `ContextCache`.

        Made on first use, so an agent without a context cache never loads that module.
        """
        from agent._caches import Caches

        return Caches(self.clients.genai, self.api_key, self.base_url)

    @classmethod
    def build(
        cls,
        name: str,
        *,
        system: str | None,
        declarations: Sequence[Mapping[str, Any]],
        options: Mapping[str, Any] | None,
        client: genai.Client | None,
        settings: ClientSettings,
        builtin: Sequence[Any] = (),
    ) -> GeminiModel:
        """Build the model from an agent's settings.

        Args:
            name: The model name.
            system: The system instruction, or ``None``.
            declarations: The function declarations to send.
            options: More ``GenerateContentConfig`` fields.
            client: A ready SDK client to use as is; ``None`` builds one from ``settings``.
            settings: How to build the client.
            builtin: Gemini's built-in tools (SDK ``Tool`` objects) to send as well.

        Returns:
            The model.

        Raises:
            ConfigurationError: No API key, client settings that do not fit together, or
                ``options`` that are not a valid generation config.
        """
        config = make_config(system, declarations, options, builtin)
        clients = Clients(client) if client is not None else build_client(settings)
        return cls(name, config, clients)

    def with_system(self, system: str | None) -> GeminiModel:
        """Return this model on the same client with another system instruction.

        Args:
            system: The system instruction, or ``None`` for none.

        Returns:
            A copy sharing the client (closing it stays with the original).
        """
        config = self.config.model_copy(update={"system_instruction": system})
        return GeminiModel(self.name, config, self.clients)

    def request(self, contents: list[Content], turn: int) -> ModelRequest:
        """Return the request for model turn ``turn`` (1-based) over ``contents``."""
        return ModelRequest(self.name, contents, self.config, turn)

    def summary_request(self, contents: list[Content], turn: int) -> ModelRequest:
        """Return a request over ``contents`` without system instruction, tools or tool config.

        The agent's generation settings stay (a compaction summary is asked for this way).
        """
        config = self.config.model_copy(
            update={"tools": None, "tool_config": None, "system_instruction": None}
        )
        return ModelRequest(self.name, contents, config, turn)

    async def input_limit(self, wanted: int) -> int:
        """Return the model's input-token limit, read from the API once per process.

        A request under the smallest Gemini limit never needs it, so none is read for it;
        a lookup that fails falls back to 1,048,576 (every current Gemini model's).

        Args:
            wanted: The size of the request about to be sent, in tokens.

        Returns:
            The input-token limit.
        """
        if self.name in _INPUT_LIMITS:
            return _INPUT_LIMITS[self.name]
        if wanted < _SMALLEST_LIMIT:
            return _FALLBACK_INPUT_LIMIT
        limit = _FALLBACK_INPUT_LIMIT
        try:
            info = await self.clients.genai.aio.models.get(model=self.name)
            limit = int(info.input_token_limit or limit)
        except Exception as exc:  # any failure: the common figure will do
            logger.info(
                "could not read %s's input-token limit (%s); using %d",
                self.name,
                type(exc).__name__,
                limit,
            )
        _INPUT_LIMITS[self.name] = limit
        return limit

    async def call(
        self, request: ModelRequest, *, stream: bool
    ) -> AsyncGenerator[TextEvent | ThoughtEvent | ModelResponse, None]:
        """Make one model call; yield its text pieces, then the parsed response.

        Args:
            request: What to send.
            stream: Use ``streamGenerateContent`` (pieces arrive while the model writes)
                instead of ``generateContent`` (the pieces come with the whole response).

        Yields:
            `TextEvent` / `ThoughtEvent` pieces, then exactly one `ModelResponse`.

        Raises:
            CallFailed: The call failed (HTTP error, network error, timeout).
        """
        failure = None
        try:
            if stream:
                assembler = StreamAssembler()
                chunks = await self.clients.genai.aio.models.generate_content_stream(
                    model=request.model, contents=request.contents, config=request.config
                )
                # Closed when the caller stops early, so the HTTP response is released.
                async with contextlib.aclosing(chunks):  # type: ignore[type-var]
                    while (chunk := await _next_chunk(chunks)) is not None:
                        for piece, is_thought in assembler.add(chunk):
                            yield _piece(piece, is_thought, request.turn)
                raw = assembler.response()
            else:
                with _own_call():
                    raw = await self.clients.genai.aio.models.generate_content(
                        model=request.model, contents=request.contents, config=request.config
                    )
        except Exception as exc:  # cancellation is a BaseException and passes untouched
            failure = translate(exc, self.api_key)
            if failure is None:
                raise
        if failure is not None:
            # Raised outside the handler, so the SDK error (whose text may hold the key) is
            # neither its cause nor its context.
            raise CallFailed(failure._replace(model=request.model))
        response = _parsed(raw, request)
        if not stream:
            for thought in response.thoughts:
                yield ThoughtEvent(thought, request.turn)
            for text in response.texts:
                yield TextEvent(text, request.turn)
        yield response

    async def upload_over_limit(
        self, content: Content, *, room: int | None = None, notes: bool = False
    ) -> Content:
        """Move the largest inline files of ``content`` to the Files API (see `_media`)."""
        files = self.clients.genai.aio.files
        return await upload_over_limit(files, content, room=room, notes=notes)

    def parse(self, raw: Any) -> ModelResponse:
        """Read a ``GenerateContentResponse`` (an after-model hook's replacement)."""
        return parse(raw)

    async def release_connections(self) -> None:
        """Close the pooled connections the agent owns (they belong to one event loop)."""
        if self.clients.transport is not None:
            await self.clients.transport.aclose()

    async def aclose(self) -> None:
        """Release this agent's share of the HTTP client it created (the last share closes it)."""
        if self.clients.http is not None:
            await self.clients.http.aclose()


def _base_url(client: genai.Client) -> str | None:
    """Return the endpoint ``client`` calls, or ``None`` if it cannot be read.

    The SDK resolves it (``base_url=``, ``GOOGLE_GEMINI_BASE_URL``, Vertex's regional host)
    but keeps it on a private object.
    """
    options = getattr(getattr(client, "_api_client", None), "_http_options", None)
    base = getattr(options, "base_url", None)
    return base if isinstance(base, str) else None


def _parsed(raw: Any, request: ModelRequest) -> ModelResponse:
    """Read the response to ``request``; one the SDK cannot read is a failed call, not a crash.

    The response records the model the request went to, and the tier it asked for when the
    server named none.
    """
    failure = None
    try:
        with _own_call():
            return parse(raw, model=request.model, asked_tier=requested_tier(request.config))
    except ValueError as exc:
        failure = unreadable(exc)
    raise CallFailed(failure._replace(model=request.model))


def _piece(text: str, thought: bool, turn: int) -> TextEvent | ThoughtEvent:
    return ThoughtEvent(text, turn) if thought else TextEvent(text, turn)
