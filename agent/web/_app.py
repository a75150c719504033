"""The ASGI app of ``toolnexus-agent web``: the page, and the JSON API it works with.

Routes (every ``/api/`` one needs the launch token, see `agent.web._security`):

- ``GET /``: the page; ``/static/...`` its script and styles (shipped in the package).
- ``GET /api/info``: what the page runs with (model, tools, demo prompt, ...).
- ``GET /api/runs``, ``POST /api/runs``: the conversations; start one from a prompt.
- ``GET /api/runs/{id}``: its transcript and state; ``GET .../events?after=N``: its log as
  server-sent events, from entry ``N + 1`` until no run of it is going on.
- ``POST .../messages``: another prompt; ``POST .../decision``: answer what it waits on;
  ``POST .../stop``: stop the run going on.
- ``GET .../trace`` and ``GET .../trace/{node}``: the recorded trace, and one model call's
  request and response.
- ``POST .../replay``: play it again through the fake; ``POST .../fork``: a new
  conversation from its first turns.
- ``POST /api/evals/report``: read an eval report; ``POST /api/evals/run``: run an eval
  file offline and read its report.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.web._runs import AgentOptions, Conversation, Conversations, Refused
from agent.web._security import LOOPBACK, Guard

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from agent import Prompt
    from toolnexus import Answer
    from toolnexus import Request as AskRequest

__all__ = ["PageSettings", "create_app"]

STATIC = Path(__file__).parent / "static"
"""The page's files: HTML, CSS and JavaScript, served as they are (no build step)."""

MAX_BODY = 32 * 1024 * 1024
"""The largest request body taken (a prompt with its files), in bytes."""

_KEEPALIVE = 15.0
"""Seconds between heartbeats of an event stream with nothing new."""


@dataclass(frozen=True)
class PageSettings:
    """What the page runs with, beside its conversations."""

    token: str
    """The launch token every API request must carry."""
    model: str
    """The model of new conversations."""
    tools: tuple[str, ...] = ()
    """The names of the tools the agents have."""
    prompt: str = ""
    """A prompt to offer (the demo's)."""
    demo: bool = False
    """Whether the page plays the offline demo."""
    scripted: bool = False
    """Whether the model is a scripted fake (``--fake`` / ``--demo``)."""
    models: tuple[str, ...] = ()
    """Models a fork may switch to."""
    store: str = "memory"
    """Where conversations are kept (a file, or ``memory``)."""
    hosts: tuple[str, ...] = LOOPBACK
    """The host names the page answers to."""
    eval_command: tuple[str, ...] | None = None
    """The command that runs an eval file offline (with the page's tool flags)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """More facts for ``/api/info``."""


def create_app(conversations: Conversations, settings: PageSettings) -> Starlette:
    """Return the page's ASGI app over ``conversations``.

    Args:
        conversations: The conversations (their store, and how their agents are made).
        settings: The token, the model and what the page shows.

    Returns:
        The app, behind its guard (Host, Origin, token).
    """
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    api = _Api(conversations, settings)
    routes = [
        Route("/", api.index),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
        Route("/api/info", api.info),
        Route("/api/runs", api.runs, methods=["GET"]),
        Route("/api/runs", api.start, methods=["POST"]),
        Route("/api/runs/{id}", api.conversation),
        Route("/api/runs/{id}/events", api.events),
        Route("/api/runs/{id}/messages", api.message, methods=["POST"]),
        Route("/api/runs/{id}/decision", api.decision, methods=["POST"]),
        Route("/api/runs/{id}/stop", api.stop, methods=["POST"]),
        Route("/api/runs/{id}/trace", api.trace),
        Route("/api/runs/{id}/trace/{node}", api.exchange),
        Route("/api/runs/{id}/replay", api.replay, methods=["POST"]),
        Route("/api/runs/{id}/fork", api.fork, methods=["POST"]),
        Route("/api/evals/report", api.eval_report, methods=["POST"]),
        Route("/api/evals/run", api.eval_run, methods=["POST"]),
    ]
    guard = Middleware(Guard, token=settings.token, hosts=settings.hosts)
    app = Starlette(
        routes=routes,
        middleware=[guard],
        exception_handlers={Refused: _refused},
    )
    app.state.conversations = conversations
    return app


async def _refused(request: Request, exc: Exception) -> Response:
    from starlette.responses import JSONResponse

    assert isinstance(exc, Refused)
    return JSONResponse({"error": exc.message}, status_code=exc.status)


class _Api:
    """The handlers, over one set of conversations."""

    def __init__(self, conversations: Conversations, settings: PageSettings) -> None:
        self.conversations = conversations
        self.settings = settings

    async def index(self, request: Request) -> Response:
        from starlette.responses import FileResponse

        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-store"})

    async def info(self, request: Request) -> Response:
        s = self.settings
        return _json(
            {
                "model": s.model,
                "models": list(dict.fromkeys([s.model, *s.models])),
                "tools": list(s.tools),
                "prompt": s.prompt,
                "demo": s.demo,
                "scripted": s.scripted,
                "store": s.store,
                "evals": s.eval_command is not None,
                **s.extra,
            }
        )

    async def runs(self, request: Request) -> Response:
        return _json({"runs": await self.conversations.listing()})

    async def start(self, request: Request) -> Response:
        body = await _body(request)
        prompt, note = _prompt(body)
        if prompt is None:
            raise Refused(422, "a new conversation needs a prompt")
        options = AgentOptions(
            self.conversations.new_id(),
            model=_model(body, self.settings),
            temperature=_temperature(body),
        )
        conversation = await self.conversations.start(prompt, note, options)
        return _json(conversation.summary(), status=201)

    async def conversation(self, request: Request) -> Response:
        conversation = await self._get(request)
        transcript = await self.conversations.store.get(conversation.id)
        contents = transcript.contents if transcript is not None else []
        return _json(
            {
                **conversation.summary(),
                "pending": conversation.pending,
                "contents": contents,
                "history": conversation.history,
                "entries": len(conversation.log),
            }
        )

    async def events(self, request: Request) -> Response:
        from starlette.responses import StreamingResponse

        conversation = await self._get(request)
        after = _after(request.query_params.get("after"))
        return StreamingResponse(
            _stream(conversation, after),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    async def message(self, request: Request) -> Response:
        conversation = await self._get(request)
        prompt, note = _prompt(await _body(request))
        if prompt is None:
            raise Refused(422, "the message is empty")
        await self.conversations.send(conversation, prompt, note)
        return _json(conversation.summary(), status=202)

    async def decision(self, request: Request) -> Response:
        conversation = await self._get(request)
        body = await _body(request)
        waiting = conversation.pending
        if waiting is None or waiting.get("id") != body.get("request_id"):
            raise Refused(
                409,
                f"the conversation does not wait on request {body.get('request_id')!r} now; "
                "nothing was changed",
            )
        agent = await self.conversations.agent_of(conversation)
        answer = answer_for(waiting, body, agent)
        await self.conversations.decide(conversation, body.get("request_id"), answer)
        return _json(conversation.summary(), status=202)

    async def stop(self, request: Request) -> Response:
        conversation = await self._get(request)
        await self.conversations.stop(conversation)
        return _json(conversation.summary())

    async def trace(self, request: Request) -> Response:
        conversation = await self._get(request)
        return _json(conversation.recording.to_dict())

    async def exchange(self, request: Request) -> Response:
        conversation = await self._get(request)
        found = conversation.recording.exchange(request.path_params["node"])
        if found is None:
            raise Refused(404, "no model call with this id in the trace")
        return _json(found)

    async def replay(self, request: Request) -> Response:
        from agent.web._replay import replay

        conversation = await self._get(request)
        if conversation.running:
            raise Refused(409, "wait for the run to end before replaying it")
        transcript = await self.conversations.store.get(conversation.id)
        if transcript is None or not transcript.contents:
            raise Refused(409, "the conversation has no turns to replay yet")
        model = str(transcript.metadata.get("model") or self.settings.model)
        report = await replay(transcript.contents, model)
        return _json(report.to_dict())

    async def fork(self, request: Request) -> Response:
        conversation = await self._get(request)
        body = await _body(request)
        fork = await _fork(self.conversations, conversation, body, self.settings)
        return _json(fork.summary(), status=201)

    async def eval_report(self, request: Request) -> Response:
        from agent.web._evals import eval_view

        return _json(eval_view(await _body(request)))

    async def eval_run(self, request: Request) -> Response:
        from agent.web._evals import eval_view, run_eval

        command = self.settings.eval_command
        if command is None:
            raise Refused(404, "this page does not run eval files")
        path = (await _body(request)).get("path")
        if not isinstance(path, str) or not path.strip():
            raise Refused(422, "give the path of an eval file")
        return _json(eval_view(await run_eval(command, path.strip())))

    async def _get(self, request: Request) -> Conversation:
        return await self.conversations.get(request.path_params["id"])


async def _fork(
    conversations: Conversations,
    source: Conversation,
    body: Mapping[str, Any],
    settings: PageSettings,
) -> Conversation:
    """Start a new conversation on the first ``turn`` turns of ``source``, byte for byte.

    Raises:
        Refused: 409 while ``source`` runs; 422 for a turn it does not have, or no prompt
            where the kept turns end with the model's answer.
    """
    from agent import Transcript
    from agent.web._replay import fork_point

    if source.running:
        raise Refused(409, "wait for the run to end before forking it")
    turn = body.get("turn")
    if not isinstance(turn, int) or isinstance(turn, bool):
        raise Refused(422, "give the turn to fork at, a number")
    transcript = await conversations.store.get(source.id)
    contents = transcript.contents if transcript is not None else []
    try:
        end = fork_point(contents, turn)
    except ValueError as exc:
        raise Refused(422, str(exc)) from None
    prompt, note = _prompt(body)
    if prompt is None and contents[end - 1].get("role") == "model":
        raise Refused(422, f"turn {turn} ends with the model's answer: give a prompt to go on")
    model = _model(body, settings) or (transcript.metadata.get("model") if transcript else None)
    options = AgentOptions(
        conversations.new_id(f"{source.id}-fork{turn}"),
        model=model,
        temperature=_temperature(body),
        turns_kept=turn,
    )
    kept = Transcript(contents[:end], metadata={"model": model, "forked_from": source.id})
    await conversations.store.save(options.session, kept)
    note = {**note, "note": "fork", "from": source.id, "turn": turn}
    fork = await conversations.start(prompt, note, options, history=end)
    fork.forked_from = (source.id, turn)
    fork.title = fork.title or f"{source.title} (fork at turn {turn})"
    return fork


def answer_for(request: AskRequest, body: Mapping[str, Any], agent: Any) -> Answer:
    """Turn a decision posted by the page into the `Answer` to ``request``.

    Only an explicit action in a known shape makes an answer (the approval fails closed):
    ``approve``; ``deny`` with an optional ``reason``; ``edit`` with ``args``, checked
    against the tool's schema first; for a question, ``answer`` with ``answers`` or
    ``decline``.

    Raises:
        Refused: 400, the action is unknown or malformed; 422, edited arguments the tool's
            schema refuses (nothing is sent: the request still waits).
    """
    action = body.get("action")
    request_id = request["id"]
    if request.get("kind") != "approval":
        return _question_answer(request_id, action, body)
    if action == "approve":
        return {"id": request_id, "ok": True, "data": {"approved": True}}
    if action == "deny":
        reason = body.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise Refused(400, "a reason must be text")
        data: dict[str, Any] = {"approved": False}
        if reason and reason.strip():
            data["reason"] = reason.strip()
        return {"id": request_id, "ok": True, "data": data}
    if action == "edit":
        from agent import ApprovalPolicy

        args = body.get("args")
        tool = agent.toolkit.get(str((request.get("data") or {}).get("tool", "")))
        problem = ApprovalPolicy.edit_problem(tool, args)
        if problem is not None or not isinstance(args, Mapping):
            raise Refused(422, f"the edited arguments do not fit the tool: {problem}")
        return {"id": request_id, "ok": True, "data": {"approved": True, "args": dict(args)}}
    raise Refused(400, "the decision must be approve, deny (with a reason) or edit (with args)")


def _question_answer(request_id: str, action: Any, body: Mapping[str, Any]) -> Answer:
    if action == "decline":
        return {"id": request_id, "ok": False, "data": "the user declined to answer"}
    answers = body.get("answers")
    if action != "answer" or not isinstance(answers, str | dict) or not answers:
        raise Refused(400, "a question takes answer (with answers) or decline")
    return {"id": request_id, "ok": True, "data": answers}


async def _stream(conversation: Conversation, after: int) -> AsyncIterator[str]:
    """Yield the conversation's log as server-sent events, from entry ``after + 1``.

    The entries logged since the last write go out together, in one write.
    """
    async for batch in conversation.follow(after, _KEEPALIVE):
        if not batch:
            yield ": keepalive\n\n"
            continue
        yield "".join(
            f"id: {entry.seq}\nevent: {entry.kind}\n"
            f"data: {json.dumps(entry.data, ensure_ascii=False, separators=(',', ':'))}\n\n"
            for entry in batch
        )


def _prompt(body: Mapping[str, Any]) -> tuple[Prompt | None, dict[str, Any]]:
    """Return the prompt of ``{"text", "files": [{name, mime_type, data}]}`` and its note.

    Raises:
        Refused: 422, a file that is not base64 data with a MIME type.
    """
    from toolnexus import Attachment

    text = body.get("text")
    text = text if isinstance(text, str) else ""
    files = body.get("files") or []
    if not isinstance(files, list):
        raise Refused(422, "files must be a list")
    parts: list[Any] = [text] if text.strip() else []
    shown = []
    for item in files:
        name, mime, data = _file(item)
        parts.append(Attachment(mime, data=data, name=name))
        shown.append({"name": name, "mime_type": mime, "size": len(data), "data": item["data"]})
    note = {"note": "prompt", "text": text, "files": shown}
    if not parts:
        return None, note
    return (text if len(parts) == 1 and text else parts), note


def _file(item: Any) -> tuple[str, str, bytes]:
    if not isinstance(item, Mapping) or not isinstance(item.get("data"), str):
        raise Refused(422, "each file needs name, mime_type and base64 data")
    mime = item.get("mime_type")
    if not isinstance(mime, str) or "/" not in mime:
        raise Refused(422, f"file {item.get('name')!r}: a MIME type like image/png is needed")
    try:
        data = base64.b64decode(item["data"], validate=True)
    except (binascii.Error, ValueError):
        raise Refused(422, f"file {item.get('name')!r}: the data is not base64") from None
    return str(item.get("name") or "file"), mime, data


def _model(body: Mapping[str, Any], settings: PageSettings) -> str | None:
    model = body.get("model")
    if model is None or model == "":
        return None
    if not isinstance(model, str):
        raise Refused(422, "the model must be a name")
    return model.strip()


def _temperature(body: Mapping[str, Any]) -> float | None:
    value = body.get("temperature")
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 2:
        raise Refused(422, "the temperature must be a number from 0 to 2")
    return float(value)


def _after(value: str | None) -> int:
    try:
        return max(0, int(value or 0))
    except ValueError:
        raise Refused(400, "after must be a whole number") from None


async def _body(request: Request) -> dict[str, Any]:
    """Return the JSON object of a request (at most `MAX_BODY` bytes).

    Raises:
        Refused: 413 for a larger body, 400 for one that is not a JSON object.
    """
    size = request.headers.get("content-length")
    if size is not None and size.isdigit() and int(size) > MAX_BODY:
        raise Refused(413, f"the request is over {MAX_BODY // 2**20} MB")
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise Refused(413, f"the request is over {MAX_BODY // 2**20} MB")
    try:
        data = json.loads(raw or b"{}")
    except ValueError:
        raise Refused(400, "the body is not JSON") from None
    if not isinstance(data, dict):
        raise Refused(400, "the body must be a JSON object")
    return data


def _json(data: Any, status: int = 200) -> Response:
    from starlette.responses import Response

    body = json.dumps(data, ensure_ascii=False, default=str)
    return Response(
        body,
        status_code=status,
        media_type="application/json",
        headers={"cache-control": "no-store"},
    )
