"""``FakeGemini``: a scripted, strict Gemini that speaks the real REST protocol."""

from __future__ import annotations

import copy
import itertools
import json
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import httpx

from agent._known_models import known_models, retired
from agent.errors import AgentError
from agent.testing._batches import BatchStore
from agent.testing._caches import CacheStore
from agent.testing._files import FileStore
from agent.testing._render import render_reply, split_stream, sse_event
from agent.testing._replies import (
    Checked,
    Delayed,
    ErrorReply,
    ModelFunction,
    Reply,
    ReplyLike,
    coerce,
    error,
)
from agent.testing._server import FakeServer
from agent.testing._signatures import SignatureBook
from agent.testing._strict import check_request, normalize
from agent.testing._transport import AsyncTransport, Outcome, SyncTransport

if TYPE_CHECKING:
    from google import genai

__all__ = ["FakeGemini", "FakeGeminiError", "RecordedRequest"]

_PATH = re.compile(
    r"/(?P<version>v1|v1beta|v1alpha)/models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$"
)
_METHODS = frozenset({"generateContent", "streamGenerateContent"})
_SECRET_HEADERS = frozenset({"x-goog-api-key", "authorization"})


class FakeGeminiError(AgentError, AssertionError):
    """The fake's script and the traffic it saw disagree (unused replies, too many requests...).

    It is an `AssertionError` too, so pytest reports it as a failed assertion.
    """


@dataclass
class RecordedRequest:
    """One request the fake received, for assertions."""

    index: int
    """Position in ``FakeGemini.requests`` (0-based)."""
    path: str
    """The URL path, e.g. ``/v1beta/models/gemini-2.5-flash:generateContent``."""
    api_version: str
    """``v1``, ``v1beta`` (``""`` when the path is not a Gemini path)."""
    model: str
    """The model named in the path, without ``models/``."""
    kind: Literal["unary", "stream", "batch"]
    """``unary`` for ``generateContent``, ``stream`` for ``streamGenerateContent``, ``batch``
    for a request of a batch job (recorded when the job runs)."""
    body: Any
    """The parsed JSON body with every protocol key in camelCase (user data untouched)."""
    headers: dict[str, str]
    """Request headers, lower-cased, without the API key or any authorization header."""
    status: int = 200
    """The HTTP status the fake answered."""
    error: str | None = None
    """The error message the fake answered with, if any."""

    @property
    def contents(self) -> list[dict[str, Any]]:
        """``body["contents"]`` (empty when missing)."""
        contents = self.body.get("contents") if isinstance(self.body, dict) else None
        return contents if isinstance(contents, list) else []

    @property
    def function_responses(self) -> list[dict[str, Any]]:
        """The ``functionResponse`` objects of the last content, in order."""
        if not self.contents:
            return []
        return [
            part["functionResponse"]
            for part in self.contents[-1].get("parts", [])
            if isinstance(part, dict) and "functionResponse" in part
        ]

    @property
    def declared_functions(self) -> list[str]:
        """The names of the function declarations sent with the request, in order."""
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        return [
            str(decl.get("name"))
            for tool in tools or []
            if isinstance(tool, dict)
            for decl in tool.get("functionDeclarations") or []
            if isinstance(decl, dict)
        ]

    @property
    def system_text(self) -> str:
        """The text of ``systemInstruction`` (empty when there is none)."""
        system = self.body.get("systemInstruction") if isinstance(self.body, dict) else None
        parts = system.get("parts") if isinstance(system, dict) else None
        return "".join(str(part.get("text", "")) for part in parts or [] if isinstance(part, dict))


@dataclass
class _State:
    lock: threading.Lock = field(default_factory=threading.Lock)
    position: int = 0
    shed: int = 0
    call_ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    book: SignatureBook = field(default_factory=SignatureBook)


def _error_outcome(status_code: int, status: str, message: str) -> Outcome:
    body = error(status_code, status, message).body
    return Outcome(status_code, _JSON_HEADERS, [json.dumps(body).encode()])


def _unknown_model(record: RecordedRequest) -> Outcome:
    """Gemini's answer to a model name it does not serve (a typo, a retired model)."""
    successor = retired(record.model)
    if successor is not None:
        message = (
            f"This model models/{record.model} is no longer available. Please update your "
            f"code to use models/{successor}."
        )
    else:
        method = _METHOD_OF[record.kind]
        message = (
            f"models/{record.model} is not found for API version {record.api_version}, or is "
            f"not supported for {method}. Call ListModels to see the list of available "
            "models and their supported methods."
        )
    return _error_outcome(404, "NOT_FOUND", message)


_METHOD_OF = {
    "unary": "generateContent",
    "stream": "streamGenerateContent",
    "batch": "batchGenerateContent",
}

_Entry = Reply | ErrorReply | Delayed | Checked
_JSON_HEADERS = {"content-type": "application/json; charset=UTF-8"}
_SSE_HEADERS = {"content-type": "text/event-stream"}

TIER_HEADER = "x-gemini-service-tier"
"""The response header that names the tier that served a request."""
_TIERS = {
    "standard": "standard",
    "flex": "flex",
    "priority": "priority",
    "unspecified": "standard",
    "service_tier_standard": "standard",
    "service_tier_flex": "flex",
    "service_tier_priority": "priority",
    "service_tier_unspecified": "standard",
}
SHED_MESSAGE = (
    "The flex tier has no capacity for this request right now and shed it. Retry later, "
    "or send it at the standard tier."
)
"""The message of the fake's shed flex request (the fake's wording; Gemini's may differ)."""


OVERLOADED_MESSAGE = "The model is overloaded. Please try again later."
"""Gemini's message for a request to a model that has no capacity right now."""


def _tier_problem(body: Mapping[str, Any]) -> str | None:
    """Return the API's complaint about ``serviceTier``, if its value is not a tier."""
    tier = body.get("serviceTier")
    if tier is None or (isinstance(tier, str) and tier.lower() in _TIERS):
        return None
    enum = "type.googleapis.com/google.ai.generativelanguage.v1beta.ServiceTier"
    return f"Invalid value at 'service_tier' ({enum}), {json.dumps(tier)}"


def _served(body: Mapping[str, Any] | None) -> str:
    """Return the tier a (valid) request is served at: the one it names, else standard."""
    tier = body.get("serviceTier") if isinstance(body, Mapping) else None
    return _TIERS.get(str(tier).lower(), "standard") if tier is not None else "standard"


class FakeGemini:
    """A scripted Gemini model behind the real REST protocol, strict like the real API.

    ``script`` is either a sequence of replies, served one per request, or a function that
    receives each request body (camelCase keys) and returns the reply. A reply is a string
    (a text answer), a builder value (``reply``, ``function_call``, ``error``, ``delay``,
    ``blocked``...) or a raw ``GenerateContentResponse`` dict. An entry of the sequence may
    itself be a function, to compute one step from the request; an ``AssertionError`` it
    raises fails that request (HTTP 400 ``FAILED_PRECONDITION``, which clients do not retry)
    and ``assert_consumed()``.

    With ``strict=True`` (the default) every request is first checked the way Gemini checks
    it: a broken rule gets ``400 INVALID_ARGUMENT`` with a precise message and does not use
    up a scripted reply. Every request is recorded in ``requests``.

    Example::

        from google import genai
        from google.genai import types
        from agent.testing import FakeGemini, function_call

        fake = FakeGemini([function_call("read", {"path": "README.md"}), "It is a README."])
        client = genai.Client(api_key="test", http_options=types.HttpOptions(
            httpx_async_client=fake.http_client()))
        ...
        fake.assert_consumed()
    """

    def __init__(
        self,
        script: Sequence[ReplyLike | ModelFunction] | ModelFunction,
        *,
        strict: bool = True,
        api_key: str | None = None,
        chunk_delay: float = 0.0,
        sign_text: bool = False,
        signing_key: bytes | str | None = None,
        extra_models: Iterable[str] = (),
        shed_flex: int = 0,
        shed_retry_delay: float | None = 1.0,
        served_tiers: Mapping[str, str] | None = None,
        overloaded: Iterable[str] = (),
    ) -> None:
        """Create a fake.

        Args:
            script: The replies in order, or a function playing the model.
            strict: Validate every request like the real API (400 on a broken rule).
            api_key: When set, requests must carry exactly this key (else 400
                ``API_KEY_INVALID``); any non-empty key is accepted otherwise.
            chunk_delay: Seconds between SSE chunks of streamed replies.
            sign_text: Also sign replies without function calls, on their last text part
                (streamed: on a final empty-text part), as Gemini 3 does. Echoing these
                signatures is recommended, not enforced.
            signing_key: The secret thought signatures are derived from (an HMAC of the
                signed call). Fakes with the same key, even in another process, accept each
                other's signatures (e.g. a resumed conversation); the default is one fixed
                key shared by every ``FakeGemini``.
            extra_models: Model names to serve beside the ones Gemini serves (the priced
                models and a few more, ``agent._known_models.known_models()``). Any other
                name gets Gemini's ``404 NOT_FOUND``, as a misspelt or retired model does
                (with ``strict=True``).
            shed_flex: Shed this many ``serviceTier: flex`` requests, the first ones to
                arrive, as Gemini does when flex capacity runs out: ``503 UNAVAILABLE``
                with `SHED_MESSAGE` (and a ``RetryInfo`` of ``shed_retry_delay`` seconds,
                if not ``None``). A shed request uses up no scripted reply. Every answer
                names the tier that served it in the ``x-gemini-service-tier`` header.
            shed_retry_delay: The ``RetryInfo`` delay of a shed request, in seconds.
            served_tiers: Serve an asked-for tier at another, as Gemini serves a
                ``priority`` request over its limit at ``standard``
                (``{"priority": "standard"}``); the header names the tier served.
            overloaded: Model names answered ``503 UNAVAILABLE`` ("The model is overloaded")
                on every request, using up no scripted reply: to test a fallback to another
                model. `overloaded` is a set the test may change (a model that recovers).

        Raises:
            TypeError: ``script`` is a single reply rather than a sequence, or holds a value
                the fake cannot send.
        """
        if callable(script):
            self._function: ModelFunction | None = script
            self._script: list[_Entry | ModelFunction] = []
        else:
            if isinstance(script, str | bytes | Mapping):
                raise TypeError("script must be a sequence of replies or a function, not one reply")
            self._function = None
            self._script = [item if callable(item) else coerce(item) for item in script]
        self.strict = strict
        self.api_key = api_key
        self.chunk_delay = chunk_delay
        self.sign_text = sign_text
        self.models: frozenset[str] = known_models() | {
            name.removeprefix("models/") for name in extra_models
        }
        """The model names this fake serves (any other gets ``404 NOT_FOUND``)."""
        self.requests: list[RecordedRequest] = []
        """Every model request received, in order (Files API requests are in ``files``,
        Batch API requests in ``batches``, context-cache requests in ``caches``; a batch
        job's own requests are recorded here, kind ``batch``, when the job runs)."""
        self.files = FileStore()
        """The Files API: uploaded files, their requests, how long they stay processing."""
        self.batches = BatchStore()
        """The Batch API: its jobs, how they progress and end, its requests."""
        self.caches = CacheStore()
        """Context caches (``cachedContents``): the live ones, their requests, the clock."""
        self.failures: list[str] = []
        """Problems of the script itself (exhausted, model function raised, failed ``expect``)."""
        self.shed_retry_delay = shed_retry_delay
        self.served_tiers = dict(served_tiers or {})
        self.overloaded: set[str] = {name.removeprefix("models/") for name in overloaded}
        """The models every request to which gets ``503 UNAVAILABLE``."""
        self._state = _State(shed=shed_flex)
        if signing_key is not None:
            key = signing_key.encode() if isinstance(signing_key, str) else bytes(signing_key)
            self._state.book.key = key

    def __repr__(self) -> str:
        size = "function" if self._function else f"{len(self._script)} replies"
        return f"<FakeGemini {size}, {len(self.requests)} requests>"

    # ----------------------------------------------------------------- ways in

    def http_client(self, **kwargs: Any) -> httpx.AsyncClient:
        """Return an async HTTP client whose requests go to this fake, whatever the host.

        Example::

            client = genai.Client(api_key="test", http_options=types.HttpOptions(
                httpx_async_client=fake.http_client()))

        Args:
            **kwargs: Passed on to ``httpx.AsyncClient``.

        Returns:
            An ``httpx.AsyncClient`` answered in process, for ``HttpOptions(httpx_async_client=)``.
        """
        return httpx.AsyncClient(transport=self.async_transport(), **kwargs)

    def sync_http_client(self, **kwargs: Any) -> httpx.Client:
        """Return a sync HTTP client whose requests go to this fake, whatever the host.

        Args:
            **kwargs: Passed on to ``httpx.Client``.

        Returns:
            An ``httpx.Client`` answered in process, for ``HttpOptions(httpx_client=)``.
        """
        return httpx.Client(transport=self.transport(), **kwargs)

    def async_transport(self) -> httpx.AsyncBaseTransport:
        """Return the in-process async transport, to build your own ``httpx.AsyncClient``.

        Returns:
            A transport that sends every request to this fake.
        """
        return AsyncTransport(self._handle)

    def transport(self) -> httpx.BaseTransport:
        """Return the in-process sync transport, to build your own ``httpx.Client``.

        Returns:
            A transport that sends every request to this fake.
        """
        return SyncTransport(self._handle)

    def client(self, *, api_version: str | None = None, api_key: str = "fake-key") -> genai.Client:
        """Return a real ``google.genai.Client`` wired to this fake (sync and async methods).

        Example::

            client = fake.client(api_version="v1beta")
            client.models.generate_content(model="gemini-2.5-flash", contents="hi")

        Args:
            api_version: The API version the client puts in its paths (the SDK's default
                when None).
            api_key: The key the client sends; it must match ``api_key`` if the fake has one.

        Returns:
            A client whose every request is answered by this fake, in process.
        """
        from google import genai
        from google.genai import types

        options = types.HttpOptions(
            httpx_client=self.sync_http_client(),
            httpx_async_client=self.http_client(),
            api_version=api_version,
        )
        return genai.Client(api_key=api_key, http_options=options)

    def serve(self, host: str = "127.0.0.1", port: int = 0) -> FakeServer:
        """Return a real HTTP server for this fake, for clients in other threads or processes.

        Use it as a context manager; ``server.base_url`` is the URL to give the SDK
        (``HttpOptions(base_url=...)``) or a subprocess (``GOOGLE_GEMINI_BASE_URL``).

        Example::

            with fake.serve() as server:
                subprocess.run(["toolnexus-agent", "run", "hi"],
                               env={**os.environ, "GOOGLE_GEMINI_BASE_URL": server.base_url,
                                    "GEMINI_API_KEY": "fake"})

        Args:
            host: The address to listen on.
            port: The TCP port; 0 picks a free one.

        Returns:
            The server, bound but not yet serving: ``with`` (or ``start()``) starts it.

        Raises:
            OSError: the address cannot be bound.
        """
        return FakeServer(self, host, port)

    # ------------------------------------------------------------- assertions

    @property
    def remaining(self) -> int:
        """How many scripted replies have not been served yet (0 for a model function)."""
        return len(self._script) - self._state.position

    def assert_consumed(self) -> None:
        """Fail unless every scripted reply was served and the script had no problem.

        Call it at the end of a test: a script the code under test did not play to the end,
        a model function that raised or a failed ``expect`` all show up here.

        Raises:
            FakeGeminiError: The message lists the unused replies and the recorded problems.
        """
        problems = list(self.failures)
        if self.remaining > 0:
            problems.append(
                f"{self.remaining} of {len(self._script)} scripted replies were never requested "
                f"(next unused: #{self._state.position})"
            )
        if problems:
            raise FakeGeminiError("FakeGemini: " + "; ".join(problems))

    # ------------------------------------------------------------ the protocol

    def _handle(
        self, method: str, path: str, query: str, headers: Mapping[str, str], raw: bytes
    ) -> Outcome:
        """Answer one HTTP request (thread-safe; the transports and the server call this)."""
        with self._state.lock:
            if self.files.owns(path):
                return self.files.handle(method, path, query, headers, raw, self._check_key)
            if self.batches.owns(path):
                return self._handle_batches(method, path, query, headers, raw)
            if self.caches.owns(path):
                refused = self._check_key(headers, query)
                return refused or self.caches.handle(method, path, query, raw, self._check_cache)
            return self._handle_locked(method, path, query, headers, raw)

    def _handle_batches(
        self, method: str, path: str, query: str, headers: Mapping[str, str], raw: bytes
    ) -> Outcome:
        def models(model: str) -> Outcome | None:
            if not self.strict or model in self.models:
                return None
            version = path.split("/")[1]
            return _unknown_model(RecordedRequest(0, path, version, model, "batch", None, {}))

        return self.batches.handle(
            method,
            path,
            query,
            raw,
            check_key=lambda: self._check_key(headers, query),
            models=models,
            files=self.files,
            answer=self._answer_batched,
        )

    def _answer_batched(self, api_version: str, model: str, body: Any) -> Outcome:
        """Answer one request of a batch job as ``generateContent`` would (checks, script)."""
        path = f"/{api_version}/models/{model}:batchGenerateContent"
        record = RecordedRequest(len(self.requests), path, api_version, model, "batch", body, {})
        self.requests.append(record)
        outcome = self._play_batched(record, body, model)
        record.status = outcome.status
        if outcome.status != 200:
            record.error = json.loads(outcome.chunks[0]).get("error", {}).get("message")
        return outcome

    def _play_batched(self, record: RecordedRequest, body: Any, model: str) -> Outcome:
        """Check and play one request of a batch job (a cache it names, as generateContent)."""
        expanded = self.caches.expand(body, model)
        if isinstance(expanded, Outcome):
            return expanded
        seen, cached = expanded
        refused = self._refused(record, seen)
        if refused is not None:
            return refused
        value = self._next_reply(record, seen)
        return value if isinstance(value, Outcome) else self._emit(value, record, False, cached)

    def _handle_locked(
        self, method: str, path: str, query: str, headers: Mapping[str, str], raw: bytes
    ) -> Outcome:
        match = _PATH.search(path)
        clean = {k.lower(): v for k, v in headers.items() if k.lower() not in _SECRET_HEADERS}
        record = RecordedRequest(
            index=len(self.requests),
            path=path,
            api_version=match["version"] if match else "",
            model=match["model"] if match else "",
            kind="stream" if match and match["method"] == "streamGenerateContent" else "unary",
            body=None,
            headers=clean,
        )
        self.requests.append(record)
        outcome = self._answer(record, match, method, query, headers, raw)
        record.status = outcome.status
        if outcome.status != 200:
            record.error = json.loads(outcome.chunks[0]).get("error", {}).get("message")
        return outcome

    def _answer(
        self,
        record: RecordedRequest,
        match: re.Match[str] | None,
        method: str,
        query: str,
        headers: Mapping[str, str],
        raw: bytes,
    ) -> Outcome:
        if match is None or method != "POST" or match["method"] not in _METHODS:
            return _error_outcome(
                404,
                "NOT_FOUND",
                "FakeGemini serves POST generateContent and streamGenerateContent only; "
                f"got {method} {record.path}.",
            )
        stream = record.kind == "stream"
        if stream and "alt=sse" not in query.split("&"):
            return _error_outcome(
                400, "INVALID_ARGUMENT", "FakeGemini streams Server-Sent Events only: add ?alt=sse."
            )
        key_problem = self._check_key(headers, query)
        if key_problem is not None:
            return key_problem
        if self.strict and record.model not in self.models:
            return _unknown_model(record)
        try:
            record.body = normalize(json.loads(raw or b"null"))
        except (ValueError, UnicodeDecodeError) as exc:
            return _error_outcome(400, "INVALID_ARGUMENT", f"Invalid JSON payload received. {exc}.")
        # A request naming a context cache is checked and played as the model sees it,
        # with the cache's parts in it.
        expanded = self.caches.expand(record.body, record.model)
        if isinstance(expanded, Outcome):
            return expanded
        seen, cached = expanded
        refused = self._refused(record, seen)
        if refused is not None:
            return refused
        value = self._next_reply(record, seen)
        if isinstance(value, Outcome):
            return value
        outcome = self._emit(value, record, stream, cached)
        if outcome.status == 200:
            asked = _served(record.body)
            outcome.headers = {**outcome.headers, TIER_HEADER: self.served_tiers.get(asked, asked)}
        return outcome

    def _refused(self, record: RecordedRequest, seen: Any) -> Outcome | None:
        """Return the answer to a request the API would refuse (strict) or shed (flex).

        ``seen`` is the request as the model sees it (a context cache's parts in it).
        """
        if self.strict:
            problem = check_request(seen, self._state.book, record.model, models=self.models)
            problem = problem or _tier_problem(record.body)
            if problem is not None:
                return _error_outcome(400, "INVALID_ARGUMENT", problem)
            refused = self.files.check_uses(record.body)
            if refused is not None:
                return refused
        if record.model in self.overloaded:
            return _error_outcome(503, "UNAVAILABLE", OVERLOADED_MESSAGE)
        if self._state.shed > 0 and _served(record.body) == "flex":
            self._state.shed -= 1
            shed = error(503, "UNAVAILABLE", SHED_MESSAGE, retry_delay=self.shed_retry_delay)
            return Outcome(503, _JSON_HEADERS, [json.dumps(shed.body).encode()])
        return None

    def _check_key(self, headers: Mapping[str, str], query: str) -> Outcome | None:
        lowered = {k.lower(): v for k, v in headers.items()}
        key = lowered.get("x-goog-api-key")
        if key is None:
            key = next((p[4:] for p in query.split("&") if p.startswith("key=")), None)
        if not key:
            return _error_outcome(
                403,
                "PERMISSION_DENIED",
                "Method doesn't allow unregistered callers (callers "
                "without established identity). Please use API Key or other form of API consumer "
                "identity to call this API.",
            )
        if self.api_key is not None and key != self.api_key:
            return _error_outcome(
                400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."
            )
        return None

    def _next_reply(
        self, record: RecordedRequest, seen: Any
    ) -> Reply | ErrorReply | Delayed | Outcome:
        entry: _Entry | ModelFunction
        if self._function is not None:
            entry = self._function
        else:
            position = self._state.position
            if position >= len(self._script):
                return self._fail(
                    f"script exhausted: request #{record.index} arrived but the script has only "
                    f"{len(self._script)} replies"
                )
            self._state.position += 1
            entry = self._script[position]
        if callable(entry):
            try:
                entry = coerce(entry(copy.deepcopy(seen)))
            except AssertionError as exc:
                return self._fail(f"request #{record.index} failed its expectation: {exc}")
            except Exception as exc:
                return self._fail(
                    f"the model function raised {type(exc).__name__}: {exc} "
                    f"(request #{record.index})"
                )
        if isinstance(entry, Checked):
            try:
                problem = entry.check(copy.deepcopy(seen))
            except Exception as exc:
                problem = f"the check raised {type(exc).__name__}: {exc}"
            if problem is not None:
                return self._fail(f"request #{record.index} failed its expectation: {problem}")
            return entry.reply
        return entry

    def _fail(self, message: str) -> Outcome:
        # 400, not 500: a client (the agent included) retries a 5xx with backoff, which would
        # only delay the test's failure; FAILED_PRECONDITION is final and names the problem.
        self.failures.append(message)
        return _error_outcome(400, "FAILED_PRECONDITION", f"FakeGemini: {message}")

    def _emit(
        self,
        value: Reply | ErrorReply | Delayed,
        record: RecordedRequest,
        stream: bool,
        cached: int,
    ) -> Outcome:
        wait = 0.0
        if isinstance(value, Delayed):
            wait, value = value.seconds, value.reply
        if isinstance(value, ErrorReply):
            if stream and value.mid_stream:
                return Outcome(200, _SSE_HEADERS, [sse_event(value.body)], wait)
            return Outcome(
                value.status_code, _JSON_HEADERS, [json.dumps(value.body).encode()], wait
            )
        body = render_reply(
            value,
            record.body,
            model=record.model,
            response_id=f"fake-{record.index}",
            new_call_id=lambda: f"call_{next(self._state.call_ids)}",
            new_signature=lambda part: self._state.book.sign(part, record.model),
            sign_text=self.sign_text,
            cached_tokens=cached,
        )
        candidates = body.get("candidates") or [{}]
        parts = (candidates[0].get("content") or {}).get("parts") or []
        self._state.book.record_step(parts)
        if not stream:
            return Outcome(200, _JSON_HEADERS, [json.dumps(body).encode()], wait)
        events = [sse_event(chunk) for chunk in split_stream(body)]
        return Outcome(200, _SSE_HEADERS, events, wait, self.chunk_delay)

    def _check_cache(self, parts: dict[str, Any], model: str) -> Outcome | None:
        """Check the parts of a cache to create as a request of ``model`` would be checked."""
        if self.strict and model not in self.models:
            method = "createCachedContent"
            return _error_outcome(
                404,
                "NOT_FOUND",
                f"models/{model} is not found for API version v1beta, or is not supported for "
                f"{method}. Call ListModels to see the list of available models and their "
                "supported methods.",
            )
        if not self.strict:
            return None
        # A request of the cache's parts and one user turn after them.
        turn = {"role": "user", "parts": [{"text": "."}]}
        body = {**parts, "contents": [*parts.get("contents", []), turn]}
        problem = check_request(body, None, model)
        if problem is not None:
            return _error_outcome(400, "INVALID_ARGUMENT", problem)
        return self.files.check_uses(parts)
