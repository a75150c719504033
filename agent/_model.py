"""`GeminiModel`: everything the loop needs from Gemini, behind one small class.

The loop hands it a `ModelRequest` and gets back text pieces as they arrive, then one parsed
`ModelResponse`; a failed call raises `CallFailed` with our own `ErrorInfo` (the API key
scrubbed out), never an SDK or httpx exception. The SDK's automatic function calling is off;
the model name is sent verbatim.

The modules behind it, each answering one question about the wire: `agent._client` (the SDK
client and the key), `agent._contents` (the transcript and the request config),
`agent._response` (reading a response, unary or streamed) and `agent._api_errors` (what a
failure means). They, and only they, import ``google.genai``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent._api_errors import translate, unreadable
from agent._client import Clients, ClientSettings, api_key_of, build_client
from agent._contents import Config, Content, make_config
from agent._media import upload_over_limit
from agent._response import ModelResponse, StreamAssembler, parse
from agent._retry import CallFailed
from agent.events import TextEvent, ThoughtEvent
from agent.hooks import ModelRequest

if TYPE_CHECKING:
    from google import genai

__all__ = ["GeminiModel"]


class GeminiModel:
    """One Gemini model on one client, with the config every request of an agent carries."""

    def __init__(self, name: str, config: Config, clients: Clients) -> None:
        self.name = name
        """The model name sent with every request (verbatim)."""
        self.config = config
        """The request config: system instruction, tools, generation options."""
        self.clients = clients
        """The SDK client and the HTTP pieces the agent owns."""
        self.api_key = api_key_of(clients.genai)
        """The key the client sends; scrubbed from every error message and log line."""

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
                    async for chunk in chunks:
                        for piece, is_thought in assembler.add(chunk):
                            yield _piece(piece, is_thought, request.turn)
                raw = assembler.response()
            else:
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
            raise CallFailed(failure)
        try:
            response = parse(raw)
        except ValueError as exc:
            failure = unreadable(exc)
        if failure is not None:
            raise CallFailed(failure)
        if not stream:
            for thought in response.thoughts:
                yield ThoughtEvent(thought, request.turn)
            for text in response.texts:
                yield TextEvent(text, request.turn)
        yield response

    async def upload_over_limit(self, content: Content) -> Content:
        """Move the largest inline parts of a prompt over the inline limit to the Files API."""
        return await upload_over_limit(self.clients.genai.aio.files, content)

    def parse(self, raw: Any) -> ModelResponse:
        """Read a ``GenerateContentResponse`` (an after-model hook's replacement)."""
        return parse(raw)

    async def release_connections(self) -> None:
        """Close the pooled connections the agent owns (they belong to one event loop)."""
        if self.clients.transport is not None:
            await self.clients.transport.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client the agent created (a supplied one is left open)."""
        if self.clients.http is not None:
            await self.clients.http.aclose()


def _piece(text: str, thought: bool, turn: int) -> TextEvent | ThoughtEvent:
    return ThoughtEvent(text, turn) if thought else TextEvent(text, turn)
