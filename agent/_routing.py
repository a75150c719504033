"""Model fallback: a chain of Gemini models behind the seam, and the capability that walks it.

``Agent(model=["gemini-3.1-pro-preview", "gemini-3-flash-preview"])`` gives the agent a
`ModelChain`: the first model is the agent's, the others stand by.

- `ModelChain` is the `Model` of such an agent. A request goes to the model it names, in
  the form that model takes: the thinking setting in its form (a level for Gemini 3, a
  budget for 2.x), and a history without the thought signatures another model issued
  (`agent._signatures`): Gemini refuses those with ``400 "Corrupted thought signature."``.
  New turns name the first model that is not cooling down.
- `Routing` is the capability of each run: when a call fails for good (the retry policy gave
  up: a 429 with a long ``RetryInfo`` or a daily quota, a 5xx, a timeout), the turn is sent
  to the next model of the chain with a `FallbackEvent`, and the model that failed cools
  down for `RunLimits.fallback_cooldown` seconds (every run of the agent skips it
  meanwhile); then it is tried again. A model that refuses the signatures of a history
  saved elsewhere gets the history once more without them.

Which model answered each turn is in ``RunResult.turn_models`` (each turn is priced at its
model) and on each ``generate_content`` span. In a durable run the decisions replay the
same way: each rests on what the recorded model step returned (the model a response or a
failure names), not on the clock.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import TYPE_CHECKING, Any

from agent._capability import Capability, RunCapability
from agent._contents import with_thinking
from agent._retry import label
from agent._settings import thinking_for
from agent._signatures import SignatureLedger, is_signature_refusal
from agent.events import FallbackEvent

if TYPE_CHECKING:
    from agent._contents import Content
    from agent._model import GeminiModel
    from agent._options import RunLimits
    from agent._response import ModelResponse
    from agent._retry import ErrorInfo
    from agent._state import RunState
    from agent.events import TextEvent, ThoughtEvent
    from agent.hooks import ModelRequest

__all__ = ["FALLBACK_CODES", "ModelChain", "Routing", "SignatureRepair"]

logger = logging.getLogger("agent")

FALLBACK_CODES = frozenset({429, 500, 502, 503, 504})
"""HTTP statuses of a failure that sends the turn to the next model (timeouts too)."""


@dataclasses.dataclass
class _Standby:
    """What every run of one agent shares: cool-downs and which model signed what."""

    cooling: dict[str, float] = dataclasses.field(default_factory=dict)
    """Model -> the clock reading until which new turns skip it."""
    ledger: SignatureLedger = dataclasses.field(default_factory=SignatureLedger)
    """Which model issued each thought signature seen."""
    clock: Callable[[], float] = time.monotonic


class ModelChain:
    """Several Gemini models on one client: each request goes to the model it names.

    The first model is the agent's (its name is the chain's `name`); requests for new turns
    name the first model that is not cooling down.
    """

    def __init__(
        self, gemini: GeminiModel, models: Sequence[str], standby: _Standby | None = None
    ) -> None:
        self.gemini = gemini
        """The first model, whose client and request config every model uses."""
        self.models = tuple(models)
        """The models, first the agent's, then the ones it falls back to, in order."""
        self.name = self.models[0]
        """The agent's model (the first)."""
        self.vertex = gemini.vertex
        self.base_url = gemini.base_url
        self.caches = gemini.caches
        """The account's context caches (a cache is made per model: see `ContextCache`)."""
        self.standby = standby or _Standby()

    @property
    def ledger(self) -> SignatureLedger:
        """Which model issued each thought signature seen."""
        return self.standby.ledger

    # -- which model -----------------------------------------------------------------------

    def preferred(self) -> str:
        """Return the first model that is not cooling down (the first one if all are)."""
        cooling, now = self.standby.cooling, self.standby.clock()
        return next((m for m in self.models if cooling.get(m, now) <= now), self.name)

    def cool(self, model: str, seconds: float) -> None:
        """Skip ``model`` for new turns during ``seconds``."""
        self.standby.cooling[model] = self.standby.clock() + seconds

    def next_after(self, model: str, tried: set[str]) -> str | None:
        """Return the model to try after ``model`` failed: the next in order not yet tried.

        The order wraps around, so a turn that started on a later model (the first was
        cooling down) may still end on the first; a model outside the chain (a per-turn
        choice) is followed by the chain from its start.
        """
        start = self.models.index(model) + 1 if model in self.models else 0
        order = self.models[start:] + self.models[:start]
        return next((m for m in order if m not in tried and m != model), None)

    # -- the Model protocol ----------------------------------------------------------------

    def request(self, contents: list[Content], turn: int) -> ModelRequest:
        """Return the request of model turn ``turn``, for the preferred model."""
        return dataclasses.replace(self.gemini.request(contents, turn), model=self.preferred())

    def summary_request(self, contents: list[Content], turn: int) -> ModelRequest:
        """Return a summary request (no system instruction or tools), for the preferred model."""
        request = self.gemini.summary_request(contents, turn)
        return dataclasses.replace(request, model=self.preferred())

    def fit(self, request: ModelRequest) -> ModelRequest:
        """Return ``request`` as the model it names takes it (signatures, thinking form)."""
        contents = self.ledger.for_model(request.contents, request.model)
        config = _thinking_fit(request.model, request.config)
        if contents is request.contents and config is request.config:
            return request
        return dataclasses.replace(request, contents=contents, config=config)

    async def call(
        self, request: ModelRequest, *, stream: bool
    ) -> AsyncGenerator[TextEvent | ThoughtEvent | ModelResponse, None]:
        """Make one call to the model ``request`` names (see `GeminiModel.call`)."""
        async for item in self.gemini.call(self.fit(request), stream=stream):
            yield item

    def parse(self, raw: Any) -> ModelResponse:
        """Read a raw response object (an after-model hook's replacement)."""
        return self.gemini.parse(raw)

    async def input_limit(self, wanted: int) -> int:
        """Return the first model's input-token limit."""
        return await self.gemini.input_limit(wanted)

    async def upload_over_limit(
        self, content: Content, *, room: int | None = None, notes: bool = False
    ) -> Content:
        """Move the largest inline files of ``content`` to the Files API."""
        return await self.gemini.upload_over_limit(content, room=room, notes=notes)

    def with_system(self, system: str | None) -> ModelChain:
        """Return this chain with another system instruction (sharing cool-downs and ledger)."""
        return ModelChain(self.gemini.with_system(system), self.models, self.standby)

    async def release_connections(self) -> None:
        """Close the pooled connections the agent owns."""
        await self.gemini.release_connections()

    async def aclose(self) -> None:
        """Release this agent's share of the HTTP client it created."""
        await self.gemini.aclose()


def _thinking_fit(model: str, config: Any) -> Any:
    """Return ``config`` with its thinking setting in the form ``model`` takes."""
    thinking = getattr(config, "thinking_config", None)
    if thinking is None:
        return config
    level = thinking.thinking_level
    level = getattr(level, "value", level)
    update = thinking_for(model, level, thinking.thinking_budget)
    return with_thinking(config, update) if update else config


class Routing(Capability):
    """Falls back along the agent's `ModelChain`, and learns who signed what."""

    def __init__(self, models: Sequence[str], cooldown: float) -> None:
        self.models = tuple(models)
        self.cooldown = cooldown
        self.chain: ModelChain | None = None
        """The agent's model seam, once `bind` built it."""

    @classmethod
    def of(
        cls, models: Sequence[str], capabilities: Sequence[object], limits: RunLimits
    ) -> Routing | None:
        """Return the capability of an agent that may send turns to several models.

        That is an agent with a fallback chain, or one whose ``prepare_turn`` hook may
        choose a model per turn; ``None`` for any other (its one model needs neither).
        """
        per_turn = any(getattr(c, "prepare_turn", None) is not None for c in capabilities)
        if len(models) < 2 and not per_turn:
            return None
        return cls(models, limits.fallback_cooldown)

    def bind(self, gemini: GeminiModel) -> ModelChain:
        """Return the agent's model seam: the chain over ``gemini``'s client and config."""
        self.chain = ModelChain(gemini, self.models)
        return self.chain

    def start(self, run: RunState) -> RunCapability:
        """Return the run's routing state."""
        assert self.chain is not None, "the agent binds its chain before any run"
        return _RoutingRun(self.chain, self.cooldown)


class SignatureRepair(Capability):
    """For an agent of one model: a history signed by another model is sent again without.

    A stored session continued on another model (``chat --session`` with another
    ``--model``, a run forked to another model on the web page) carries thought signatures
    the new model refuses with ``400 "Corrupted thought signature."``. The turn is then sent
    once more without them (the placeholder where Gemini requires a signature). An agent of
    several models gets the same from `Routing`, which also knows which signatures it issued.
    """

    def start(self, run: RunState) -> RunCapability:
        """Return the run's state: the turns already sent again."""
        return _OneModelRun(None)


class _RepairRun(RunCapability):
    def __init__(self, ledger: SignatureLedger | None) -> None:
        self.ledger = ledger
        """Who issued which signature, as far as this agent knows (``None``: no refusal yet
        and one model, so nothing to know)."""
        self.repaired: set[int] = set()
        """The turns whose history was sent again without foreign signatures."""

    def failed(self, run: RunState, request: ModelRequest, info: ErrorInfo) -> ModelRequest | None:
        if not is_signature_refusal(info.code, info.message) or request.turn in self.repaired:
            return None
        self.repaired.add(request.turn)
        model = info.model or request.model
        if self.ledger is None:
            self.ledger = SignatureLedger()
        ledger = self.ledger
        ledger.disown(request.contents, model)
        contents = ledger.for_model(request.contents, model, repair=True)
        logger.info("%s refused the history's thought signatures; sending it without them", model)
        return dataclasses.replace(request, model=model, contents=contents)


class _OneModelRun(_RepairRun):
    async def before_call(self, run: RunState, request: ModelRequest) -> ModelRequest:
        # Once the model refused the history, its later turns go without what it refused
        # (the transcript itself stays as recorded). Until then the history goes unchanged.
        if self.ledger is None:
            return request
        contents = self.ledger.for_model(request.contents, request.model)
        return dataclasses.replace(request, contents=contents)


class _RoutingRun(_RepairRun):
    def __init__(self, chain: ModelChain, cooldown: float) -> None:
        super().__init__(chain.ledger)
        self.chain = chain
        self.cooldown = cooldown
        self.tried: dict[int, set[str]] = {}
        """Turn -> the models that failed it for good."""

    def failed(self, run: RunState, request: ModelRequest, info: ErrorInfo) -> ModelRequest | None:
        model = info.model or request.model
        if is_signature_refusal(info.code, info.message):
            return super().failed(run, request, info)
        if info.code not in FALLBACK_CODES and info.status != "TIMEOUT":
            return None
        self.chain.cool(model, self.cooldown)
        tried = self.tried.setdefault(request.turn, set())
        tried.add(model)
        fallback = self.chain.next_after(model, tried)
        if fallback is None:
            return None
        logger.info(
            "Gemini call to %s failed for good (%s); sending turn %d to %s",
            model,
            label(info),
            request.turn,
            fallback,
        )
        run.emit(FallbackEvent(model, fallback, info.code, info.status, request.turn))
        return dataclasses.replace(request, model=fallback)

    async def received(
        self, run: RunState, request: ModelRequest, response: ModelResponse
    ) -> ModelResponse:
        self.chain.ledger.learn(response.content, response.model or request.model)
        return response
